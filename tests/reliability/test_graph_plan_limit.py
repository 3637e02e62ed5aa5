"""Regression (issue #19): the graph executor checks its memory plan against the size limit
(irlib.limits) before allocating: an input declared [1e6, 1e6] is a TensorTooLargeError."""

import numpy as np
import pytest

import interp
import irlib
from irlib.errors import TensorTooLargeError


def test_huge_declared_input_is_refused_before_allocating():
    x = irlib.var("big_input", shape=(10 ** 6, 10 ** 6))
    mod = irlib.IRModule.from_expr(irlib.Function([x], irlib.nn.relu(x)))
    lib = interp.build(mod, target="cpu")
    with pytest.raises(TensorTooLargeError, match=r"big_input.*4000000000000 bytes") as info:
        lib["default"](interp.cpu(0))
    assert info.value.size == 4 * 10 ** 12


def test_limit_is_configurable_for_the_plan(monkeypatch):
    x = irlib.var("x", shape=(64, 64))
    mod = irlib.IRModule.from_expr(irlib.Function([x], irlib.nn.relu(x)))
    lib = interp.build(mod, target="cpu")
    monkeypatch.setenv("IRLIB_MAX_TENSOR_BYTES", "1000")
    with pytest.raises(TensorTooLargeError, match="16384 bytes"):
        lib["default"](interp.cpu(0))
    monkeypatch.setenv("IRLIB_MAX_TENSOR_BYTES", str(64 * 64 * 4))
    gm = interp.graph_executor.GraphModule(lib["default"](interp.cpu(0)))
    x_value = np.linspace(-1, 1, 64 * 64, dtype="float32").reshape(64, 64)
    gm.set_input("x", x_value)
    gm.run()
    np.testing.assert_array_equal(gm.get_output(0).numpy(), np.maximum(x_value, 0))


def test_symbolic_graph_buffer_over_the_limit(monkeypatch):
    x = irlib.var("x", shape=(irlib.size_var("n"), 4))
    mod = irlib.IRModule.from_expr(irlib.Function([x], irlib.nn.relu(x)))
    gm = interp.graph_executor.GraphModule(interp.build(mod, target="cpu")["default"](
        interp.cpu(0)))
    gm.set_input("x", np.ones((2, 4), "float32"))
    gm.run()
    monkeypatch.setenv("IRLIB_MAX_TENSOR_BYTES", "4096")
    with pytest.raises(TensorTooLargeError):
        gm.set_input("x", np.ones((1000, 4), "float32"))
        gm.run()
