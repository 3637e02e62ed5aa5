"""Regression (issue #19): tensors the importer or FoldConstant would materialise are checked
against a configurable size limit before numpy allocates (irlib.limits)."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import irlib
from irlib.errors import IRError, TensorTooLargeError
from irlib.frontend.onnx import from_onnx
from irlib.limits import DEFAULT_MAX_TENSOR_BYTES, ENV_VAR, max_tensor_bytes


def one_node_model(op, inits, out_type=TensorProto.FLOAT, name="n0"):
    node = helper.make_node(op, [i.name for i in inits], ["y"], name=name)
    graph = helper.make_graph([node], "g", [], [helper.make_tensor_value_info("y", out_type, [])],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def ints(name, values):
    return numpy_helper.from_array(np.array(values, "int64"), name)


HUGE = [
    ("Range", [ints("a", 0), ints("b", 10 ** 12), ints("c", 1)], TensorProto.INT64,
     8 * 10 ** 12),
    ("ConstantOfShape", [ints("s", [10 ** 6, 10 ** 6])], TensorProto.FLOAT, 4 * 10 ** 12),
    ("Expand", [numpy_helper.from_array(np.ones((1, 1), "float32"), "x"),
                ints("s", [10 ** 6, 10 ** 6])], TensorProto.FLOAT, 4 * 10 ** 12),
    ("Tile", [numpy_helper.from_array(np.ones((1, 1), "float32"), "x"),
              ints("s", [10 ** 6, 10 ** 6])], TensorProto.FLOAT, 4 * 10 ** 12),
]


@pytest.mark.parametrize("op, inits, out_type, size", HUGE, ids=[h[0] for h in HUGE])
def test_importer_refuses_huge_constants(op, inits, out_type, size):
    with pytest.raises(TensorTooLargeError) as info:
        from_onnx(one_node_model(op, inits, out_type, name="big_node"))
    message = str(info.value)
    assert "big_node" in message and str(size) in message
    assert info.value.size == size and info.value.limit == DEFAULT_MAX_TENSOR_BYTES


def test_limit_from_pass_context_and_env(monkeypatch):
    model = one_node_model("ConstantOfShape", [ints("s", [100, 100])])   # 40,000 bytes
    from_onnx(model)
    with irlib.transform.PassContext(config={"irlib.max_tensor_bytes": 39_999}):
        with pytest.raises(TensorTooLargeError, match="40000 bytes"):
            from_onnx(model)
    monkeypatch.setenv(ENV_VAR, "1000")
    assert max_tensor_bytes() == 1000
    with pytest.raises(TensorTooLargeError):
        from_onnx(model)
    with irlib.transform.PassContext(config={"irlib.max_tensor_bytes": 40_000}):
        mod, _ = from_onnx(model)      # the PassContext option wins over the env var
    out = mod["main"].body.data.numpy()
    np.testing.assert_array_equal(out, np.zeros((100, 100), "float32"))
    monkeypatch.setenv(ENV_VAR, "lots")
    with pytest.raises(IRError, match=ENV_VAR):
        max_tensor_bytes()


def test_fold_constant_checks_before_evaluating():
    x = irlib.const(np.ones((1, 2), "float32"))
    mod = irlib.IRModule.from_expr(irlib.Function([], irlib.tile(x, reps=[10 ** 5, 10 ** 5])))
    with pytest.raises(TensorTooLargeError, match=r"tile.*\(100000, 200000\).*80000000000"):
        irlib.transform.FoldConstant()(mod)
    small = irlib.IRModule.from_expr(irlib.Function([], irlib.tile(x, reps=[2, 1])))
    folded = irlib.transform.FoldConstant()(small)["main"].body
    np.testing.assert_array_equal(folded.data.numpy(), np.ones((2, 2), "float32"))
