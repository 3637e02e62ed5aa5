"""``if`` on the graph executor (interp.graph_control): the model stays on the graph
executor (no interpreter fallback) and agrees with onnxruntime / numpy on both branches."""

import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import irlib
import interp

onnxruntime = pytest.importorskip("onnxruntime")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
from small_models import vad_inputs, vad_model  # noqa: E402
from graph_helpers import graph_function  # noqa: E402

TINY = {"chunk": 32, "frames": 2, "features": 4, "hidden": 8}


@pytest.fixture(scope="module")
def vad():
    from irlib.frontend.onnx import from_onnx
    model = vad_model(seed=1, sizes=TINY)
    mod, params = from_onnx(model)
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    return graph_function(mod, params), session


@settings(max_examples=8, deadline=None)
@given(sr=st.sampled_from([16000, 8000, 0]), seed=st.integers(0, 1000))
def test_vad_if_matches_onnxruntime(vad, sr, seed):
    func, session = vad
    inputs = vad_inputs(seed, TINY, sr)
    names = [i.name for i in session.get_inputs()]
    expected = session.run(None, dict(zip(names, inputs)))
    got = func(*inputs)
    for value, want in zip(got, expected):
        np.testing.assert_allclose(value.numpy(), want, rtol=1e-5, atol=1e-6)


def test_if_tuple_result_outer_values_constants_and_nesting():
    """Branches returning an outer value unchanged, reading a value both share, with
    constants of their own, a tuple result and an if nested in a branch."""
    x = irlib.var("x", shape=(2, 3))
    y = irlib.var("y", shape=(2, 3))
    c = irlib.var("c", shape=(), dtype="bool")
    d = irlib.var("d", shape=(), dtype="bool")
    shared = irlib.exp(irlib.tanh(x))                      # read by both branches
    inner = irlib.If(d, irlib.add(shared, irlib.const(1.0)), irlib.negative(y))
    then = irlib.Tuple([irlib.multiply(shared, irlib.const(2.0)), y])
    other = irlib.Tuple([inner, irlib.subtract(shared, x)])
    body = irlib.If(c, then, other)
    out = irlib.Tuple([irlib.add(irlib.TupleGetItem(body, 0), irlib.const(0.5)),
                       irlib.TupleGetItem(body, 1)])
    mod = irlib.IRModule.from_expr(irlib.Function([x, y, c, d], out))
    func = graph_function(mod)
    rng = np.random.default_rng(0)
    xv, yv = rng.standard_normal((2, 3), "float32"), rng.standard_normal((2, 3), "float32")
    s = np.exp(np.tanh(xv))
    for cv in (True, False):
        for dv in (True, False):
            got = func(xv, yv, np.array(cv), np.array(dv))
            first = s * 2 if cv else (s + 1 if dv else -yv)
            second = yv if cv else s - xv
            np.testing.assert_allclose(got[0].numpy(), first + 0.5, rtol=1e-5)
            np.testing.assert_allclose(got[1].numpy(), second, rtol=1e-5)


def test_export_library_stores_if_nodes(tmp_path):
    """A graph with an ``__if`` node is written by export_library and runs after
    load_module (both branches) as it did before."""
    x = irlib.var("x", shape=(2,))
    c = irlib.var("c", shape=(), dtype="bool")
    mod = irlib.IRModule.from_expr(irlib.Function(
        [x, c], irlib.If(c, irlib.exp(x), irlib.negative(irlib.add(x, irlib.const(1.0))))))
    factory = interp.build(mod, target="cpu")
    factory.export_library(str(tmp_path / "m.irlib"))
    loaded = interp.load_module(str(tmp_path / "m.irlib"))
    module = interp.graph_executor.GraphModule(loaded["default"](interp.cpu(0)))
    xv = np.array([0.5, -2.0], np.float32)
    for cv, want in ((True, np.exp(xv)), (False, -(xv + 1))):
        module.set_input("x", xv)
        module.set_input("c", np.array(cv))
        module.run()
        np.testing.assert_allclose(module.get_output(0).numpy(), want, rtol=1e-6)
