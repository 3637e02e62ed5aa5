"""Fast paths of the CPU graph functions, each checked against numpy written here:
parallel generated loop nests, an anchor pooling into a kept buffer (``kernel.into``), and
single-op groups writing straight into the graph's output entry."""

import threading

import numpy as np
import pytest

import irlib
from irlib import var

from graph_helpers import graph_module, outputs

pytest.importorskip("numba")
RNG = np.random.default_rng(11)


def _rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def _module(params, body):
    return irlib.IRModule.from_expr(irlib.Function(params, body))


def _numpy_max_pool_2x2(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def test_large_elementwise_group_runs_a_prange_nest():
    from jitkernels.codegen import generator
    shape = (2, 3, 300, 600)
    assert np.prod(shape) >= generator.PARALLEL_MIN_ELEMENTS
    x, b = var("x", shape=shape), var("b", shape=(3, 1, 1))
    body = irlib.nn.relu(irlib.add(irlib.multiply(x, irlib.const(1.5)), b))
    gmod, factory = graph_module(_module([x, b], body))
    xv, bv = _rand(*shape), _rand(3, 1, 1)
    gmod.run(x=xv, b=bv)
    np.testing.assert_allclose(outputs(gmod)[0], np.maximum(xv * 1.5 + bv, 0), rtol=1e-6)
    kernel = next(iter(factory.lib.compiled.values())).kernel
    assert "prange(1800)" in kernel.source and "parallel=True" in kernel.source


def test_small_group_stays_serial():
    x = var("x", shape=(4, 5))
    _, factory = graph_module(_module([x], irlib.exp(x)))
    kernel = next(iter(factory.lib.compiled.values())).kernel
    assert "prange" not in kernel.source.split("def kernel")[1]


def test_pool_anchor_reuses_its_buffer_across_runs():
    x, s, b = var("x", shape=(1, 4, 8, 6)), var("s", shape=(4, 1, 1)), var("b", shape=(4, 1, 1))
    pooled = irlib.nn.max_pool2d(x, pool_size=(2, 2), strides=(2, 2))
    body = irlib.nn.relu(irlib.add(irlib.multiply(pooled, s), b))
    gmod, factory = graph_module(_module([x, s, b], body))
    kernel = next(iter(factory.lib.compiled.values())).kernel
    assert kernel.anchor_op == "nn.max_pool2d"
    for _ in range(3):                          # fresh inputs each run, same buffer
        xv, sv, bv = _rand(1, 4, 8, 6), _rand(4, 1, 1), _rand(4, 1, 1)
        gmod.run(x=xv, s=sv, b=bv)
        expected = np.maximum(_numpy_max_pool_2x2(xv) * sv + bv, 0)
        np.testing.assert_allclose(outputs(gmod)[0], expected, rtol=1e-6)


def test_concurrent_runs_of_one_library_stay_independent():
    from interp import graph_executor
    import interp
    x = var("x", shape=(1, 8, 16, 16))
    body = irlib.negative(irlib.nn.max_pool2d(x, pool_size=(2, 2), strides=(2, 2)))
    _, factory = graph_module(_module([x], body))
    results, errors = {}, []

    def worker(k):
        try:
            gmod = graph_executor.GraphModule(factory["default"](interp.cpu(0)))
            rng = np.random.default_rng(k)
            for _ in range(20):
                xv = rng.standard_normal((1, 8, 16, 16)).astype("float32")
                gmod.run(x=xv)
                got = outputs(gmod)[0]
                if not np.array_equal(got, -_numpy_max_pool_2x2(xv)):
                    results[k] = False
                    return
            results[k] = True
        except Exception as error:          # noqa: BLE001 (reported below)
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and results == {0: True, 1: True, 2: True}


def test_single_pool_group_writes_into_the_output():
    from interp.graph_functions import _IntoCall
    x = var("x", shape=(2, 3, 6, 4))
    for body, expected in (
            (irlib.nn.max_pool2d(x, pool_size=(2, 2), strides=(2, 2)), _numpy_max_pool_2x2),
            (irlib.nn.global_avg_pool2d(x), lambda v: v.mean(axis=(2, 3), keepdims=True))):
        gmod, factory = graph_module(_module([x], body))
        compiled = next(iter(factory.lib.compiled.values()))
        assert compiled.how == "kernels"
        assert isinstance(compiled.fn, _IntoCall)
        xv = _rand(2, 3, 6, 4)
        gmod.run(x=xv)
        np.testing.assert_allclose(outputs(gmod)[0], expected(xv), rtol=1e-5)
