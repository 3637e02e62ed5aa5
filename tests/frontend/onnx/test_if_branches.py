"""from_onnx on run-time ``If`` nodes whose branches differ in shape, checked against
onnxruntime: lengths that differ join to ``Any`` dims, and torch's exported ``squeeze(dim)``
(``If(shape[d] == 1, Squeeze, Identity)``) types as the squeezed rank."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

import interp  # noqa: E402
from irlib import TensorType, size_var  # noqa: E402
from irlib.errors import InterpreterError  # noqa: E402
from irlib.frontend.onnx import OpNotImplemented, from_onnx  # noqa: E402
from irlib.ir.dims import Any  # noqa: E402
from irlib.transform import InferType  # noqa: E402


def _model(nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _branch(name, nodes, output):
    return helper.make_graph(nodes, name, [],
                             [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)])


def _strided_sum_if():
    """y = c ? 4-tap stride-4 moving sum of x : 2-tap stride-2 one, x of length n."""
    ones = [helper.make_tensor(f"w{k}", TensorProto.FLOAT, [1, 1, k], [1.0] * k) for k in (4, 2)]
    then_graph = _branch("then", [helper.make_node("Conv", ["x", "w4"], ["t"], strides=[4])],
                         "t")
    else_graph = _branch("else", [helper.make_node("Conv", ["x", "w2"], ["e"], strides=[2])],
                         "e")
    node = helper.make_node("If", ["c"], ["y"], then_branch=then_graph, else_branch=else_graph)
    return _model([node], [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                           helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, "n"])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, None])], ones)


def test_branches_of_different_lengths_join_and_run():
    model = _strided_sum_if()
    mod, _ = from_onnx(model)
    main = InferType()(mod)["main"]
    assert main.params[1].type_annotation == TensorType((1, 1, size_var("n")))
    assert main.checked_type.ret_type == TensorType((1, 1, Any))
    run = interp.create_executor("debug", mod=mod).evaluate()
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for flag, length in ((True, 16), (False, 16), (True, 12), (False, 6)):
        feeds = {"c": np.array(flag), "x": rng.standard_normal((1, 1, length)).astype("float32")}
        (want,) = session.run(None, feeds)
        got = run(feeds["c"], feeds["x"]).numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _torch_squeeze_model():
    """torch's ``x.squeeze(2)`` on a dynamic length, then a MatMul that needs rank 2."""
    consts = [helper.make_tensor("two", TensorProto.INT64, [], [2]),
              helper.make_tensor("one", TensorProto.INT64, [], [1]),
              helper.make_tensor("axes", TensorProto.INT64, [1], [2]),
              helper.make_tensor("w", TensorProto.FLOAT, [3, 4],
                                 np.arange(12, dtype="float32").tolist())]
    then_graph = _branch("then", [helper.make_node("Squeeze", ["x", "axes"], ["s"])], "s")
    else_graph = _branch("else", [helper.make_node("Identity", ["x"], ["i"])], "i")
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "two"], ["length"]),
             helper.make_node("Equal", ["length", "one"], ["is_one"]),
             helper.make_node("If", ["is_one"], ["squeezed"], then_branch=then_graph,
                              else_branch=else_graph),
             helper.make_node("MatMul", ["squeezed", "w"], ["y"])]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "n"])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], consts)


def test_torch_squeeze_if_types_as_the_squeezed_rank():
    model = _torch_squeeze_model()
    mod, _ = from_onnx(model)
    assert InferType()(mod)["main"].checked_type.ret_type == TensorType((1, 4))
    run = interp.create_executor("debug", mod=mod).evaluate()
    x = np.array([[[1.0], [-2.0], [0.5]]], "float32")
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    (want,) = session.run(None, {"x": x})
    np.testing.assert_allclose(run(x).numpy(), want, rtol=1e-6)
    # A length other than 1 takes the Identity branch, whose rank-3 value irlib's typed IR
    # cannot hold: it fails at run time instead (onnxruntime returns a (1, 3, 4) tensor).
    with pytest.raises(InterpreterError,
                       match=r"squeeze: dimension 2 of \(1, 3, 2\) is 2, not 1"):
        run(np.ones((1, 3, 2), "float32"))


def test_branches_of_different_dtypes_are_rejected_by_name():
    then_graph = _branch("then", [helper.make_node("Identity", ["x"], ["t"])], "t")
    else_graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["e"], to=TensorProto.INT32)], "else", [],
        [helper.make_tensor_value_info("e", TensorProto.INT32, None)])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then_graph, else_branch=else_graph)
    model = _model([node], [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    with pytest.raises(OpNotImplemented, match="If output 0: the branches have types"):
        from_onnx(model)


def test_branch_initializers_are_constants_of_their_branch():
    """Subgraphs may carry their own initializers (onnx.checker accepts them)."""
    def branch(name, scale):
        init = helper.make_tensor(f"{name}_k", TensorProto.FLOAT, [2], [scale, -scale])
        graph = helper.make_graph([helper.make_node("Mul", ["x", f"{name}_k"], [f"{name}_y"])],
                                  name, [],
                                  [helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT,
                                                                 [2])], [init])
        return graph
    node = helper.make_node("If", ["c"], ["y"], then_branch=branch("then", 2.0),
                            else_branch=branch("else", 3.0))
    model = _model([node], [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    onnx.checker.check_model(model)
    mod, _ = from_onnx(model)
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    x = np.array([1.5, -4.0], "float32")
    for executor in ("debug", "graph"):
        run = interp.create_executor(executor, mod=mod).evaluate()
        for flag in (True, False):
            (want,) = session.run(None, {"c": np.array(flag), "x": x})
            np.testing.assert_array_equal(run(np.array(flag), x).numpy(), want)
            assert want[0] == x[0] * (2.0 if flag else 3.0)
