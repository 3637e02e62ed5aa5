"""A fused group's dense/matmul anchor prepared once per set of arrays
(jitkernels.codegen.prepared_product): numpy's answer run after run as the data changes,
re-prepared when a weight is replaced, not used for int8-valued weights or with the packed
path off."""

import numpy as np
import pytest

import irlib
import interp

pytest.importorskip("numba")
from jitkernels.cpu import int8_vnni, packed_gemm  # noqa: E402

needs_avx512 = pytest.mark.skipif(not packed_gemm.available(),
                                  reason="no AVX-512 (or IRLIB_PACKED_GEMM=0)")


def _module(op, rows=16, depth=256, units=80):
    x = irlib.var("x", shape=(1, rows, depth) if op == "matmul" else (rows, depth))
    shape = (depth, units) if op == "matmul" else (units, depth)
    w = irlib.var("w", shape=shape)
    b = irlib.var("b", shape=(units,))
    call = irlib.nn.matmul(x, w) if op == "matmul" else irlib.nn.dense(x, w)
    body = irlib.nn.relu(irlib.add(call, b))
    return irlib.IRModule.from_expr(irlib.Function([x, w, b], body)), shape


def _fused_kernels(gmod):
    runtime = gmod._runtime
    return [fn for fn, _ in runtime.calls if type(fn).__name__ == "FusedKernel"]


def _oracle(op, data, weight, bias):
    right = weight if op == "matmul" else weight.T
    return np.maximum(data.astype("float64") @ right + bias, 0)


@needs_avx512
@pytest.mark.parametrize("op", ["matmul", "dense"])
def test_prepared_runs_follow_the_data_and_a_replaced_weight(op):
    mod, shape = _module(op)
    rng = np.random.default_rng(0)
    weight = rng.standard_normal(shape).astype("float32")
    bias = rng.standard_normal(80).astype("float32")
    factory = interp.build(mod, target="cpu", params={"w": weight, "b": bias})
    gmod = interp.graph_executor.GraphModule(factory["default"](interp.cpu(0)))
    kernels = _fused_kernels(gmod)
    assert len(kernels) == 1 and kernels[0]._product is not None
    data_shape = (1, 16, 256) if op == "matmul" else (16, 256)
    for run in range(3):
        data = rng.standard_normal(data_shape).astype("float32")
        gmod.set_input("x", data)
        gmod.run()
        np.testing.assert_allclose(gmod.get_output(0).numpy(),
                                   _oracle(op, data, weight, bias), rtol=1e-5, atol=1e-4)
    assert kernels[0]._product._local.entry[3] is not None      # the packed call ran
    other = rng.standard_normal(shape).astype("float32")
    runtime = gmod._runtime
    name = [n for i, n in enumerate(runtime.input_names)
            if runtime.input_array(i).shape == shape][0]
    gmod.set_input(name, other)                                  # a new weight array
    gmod.run()
    np.testing.assert_allclose(gmod.get_output(0).numpy(), _oracle(op, data, other, bias),
                               rtol=1e-5, atol=1e-4)


@needs_avx512
def test_switch_off_and_int8_weights_take_the_kernel_path(monkeypatch):
    mod, shape = _module("matmul")
    rng = np.random.default_rng(1)
    weight = rng.integers(-128, 128, shape).astype("float32")      # int8-valued
    bias = np.zeros(80, "float32")
    factory = interp.build(mod, target="cpu", params={"w": weight, "b": bias})
    gmod = interp.graph_executor.GraphModule(factory["default"](interp.cpu(0)))
    data = rng.integers(0, 200, (1, 16, 256)).astype("float32")
    gmod.set_input("x", data)
    gmod.run()
    np.testing.assert_array_equal(gmod.get_output(0).numpy(),
                                  _oracle("matmul", data, weight, bias).astype("float32"))
    kernel = _fused_kernels(gmod)[0]
    if int8_vnni.available():
        assert kernel._product._local.entry[3] is None           # left to the int8 kernel
    monkeypatch.setenv(packed_gemm.ENV_SWITCH, "0")
    data = rng.standard_normal((1, 16, 256)).astype("float32")
    gmod.set_input("x", data)
    gmod.run()
    np.testing.assert_allclose(gmod.get_output(0).numpy(),
                               _oracle("matmul", data, weight, bias), rtol=1e-5, atol=1e-3)
