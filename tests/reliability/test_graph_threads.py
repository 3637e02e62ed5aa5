"""Regression (issue #19): one GraphModule shared by threads gives every thread its own
executor state, so concurrent set_input/run/get_output are correct (before: 399 of 400 wrong).
"""

import threading

import numpy as np

import interp
import irlib
from interp import graph_executor


def shared_module(symbolic=False):
    rows = irlib.size_var("n") if symbolic else 16
    x = irlib.var("x", shape=(rows, 16))
    w = irlib.var("w", shape=(16, 16))
    mod = irlib.IRModule.from_expr(irlib.Function([x, w], irlib.nn.relu(irlib.nn.dense(x, w))))
    gm = graph_executor.GraphModule(interp.build(mod, target="cpu")["default"](interp.cpu(0)))
    weight = np.random.default_rng(0).standard_normal((16, 16)).astype("float32")
    gm.set_input("w", weight)
    return gm, weight


def hammer(gm, weight, threads=8, runs=60, rows=lambda rng: 16):
    wrong, errors = [], []

    def work(seed):
        rng = np.random.default_rng(seed)
        for _ in range(runs):
            x = rng.standard_normal((rows(rng), 16)).astype("float32")
            try:
                gm.set_input("x", x)
                gm.run()
                out = gm.get_output(0).numpy()
            except Exception as error:  # noqa: BLE001 - recorded and asserted on
                errors.append(repr(error))
                continue
            if not np.allclose(out, np.maximum(x @ weight.T, 0), rtol=1e-4, atol=1e-4):
                wrong.append(seed)

    pool = [threading.Thread(target=work, args=(seed,)) for seed in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return wrong, errors


def test_shared_static_module_is_correct_under_threads():
    gm, weight = shared_module()
    wrong, errors = hammer(gm, weight)
    assert errors == [] and wrong == []


def test_shared_symbolic_module_is_correct_under_threads():
    gm, weight = shared_module(symbolic=True)
    wrong, errors = hammer(gm, weight, runs=30, rows=lambda rng: int(rng.integers(1, 9)))
    assert errors == [] and wrong == []


def test_other_threads_start_from_the_creating_threads_inputs():
    gm, weight = shared_module()
    x = np.ones((16, 16), "float32")
    gm.set_input("x", x)
    seen = {}

    def read():
        seen["x"] = gm.get_input("x").numpy().copy()
        gm.set_input("x", np.zeros((16, 16), "float32"))   # its own copy
        gm.run()
        seen["out"] = gm.get_output(0).numpy().copy()

    thread = threading.Thread(target=read)
    thread.start()
    thread.join()
    np.testing.assert_array_equal(seen["x"], x)
    np.testing.assert_array_equal(seen["out"], np.zeros((16, 16), "float32"))
    np.testing.assert_array_equal(gm.get_input("x").numpy(), x)   # creator's input untouched
