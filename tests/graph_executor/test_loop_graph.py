"""Loops on the graph executor (interp.graph_loop): a tail-recursive function runs as one
``__loop`` node, the model stays on the graph executor (no interpreter fallback) and agrees
with onnxruntime (ONNX ``Loop``) or a numpy loop written here."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import irlib
import interp
from interp.graph_lower import GraphUnsupportedError
from graph_helpers import graph_function

onnx = pytest.importorskip("onnx")
onnxruntime = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _loop_model(rows: int, cols: int, threshold: float, seed: int):
    """An ONNX Loop with two states (swapped each step: x' = tanh(y @ W + b), y' = x), a
    condition computed in the body (sum(x') < threshold) and the trip count as an input."""
    rng = np.random.default_rng(seed)
    weight = (rng.standard_normal((cols, cols)) * 0.5).astype(np.float32)
    bias = rng.standard_normal(cols).astype(np.float32)
    state = [rows, cols]
    body = helper.make_graph(
        [helper.make_node("MatMul", ["y_in", "W"], ["yw"]),
         helper.make_node("Add", ["yw", "b"], ["yb"]),
         helper.make_node("Tanh", ["yb"], ["x_out"]),
         helper.make_node("Identity", ["x_in"], ["y_out"]),
         helper.make_node("ReduceSum", ["x_out"], ["total"], keepdims=0),
         helper.make_node("Less", ["total", "limit"], ["cond_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_in", TensorProto.FLOAT, state),
         helper.make_tensor_value_info("y_in", TensorProto.FLOAT, state)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_out", TensorProto.FLOAT, state),
         helper.make_tensor_value_info("y_out", TensorProto.FLOAT, state)],
        initializer=[numpy_helper.from_array(np.array(threshold, np.float32), "limit")])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "c0", "x0", "y0"], ["xf", "yf"], body=body),
         helper.make_node("Sub", ["xf", "yf"], ["diff"])],
        "loop",
        [helper.make_tensor_value_info("M", TensorProto.INT64, []),
         helper.make_tensor_value_info("x0", TensorProto.FLOAT, state),
         helper.make_tensor_value_info("y0", TensorProto.FLOAT, state)],
        [helper.make_tensor_value_info("diff", TensorProto.FLOAT, state)],
        initializer=[numpy_helper.from_array(weight, "W"), numpy_helper.from_array(bias, "b"),
                     numpy_helper.from_array(np.array(True), "c0")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@settings(max_examples=10, deadline=None)
@given(rows=st.integers(1, 3), cols=st.integers(1, 5), trips=st.integers(0, 7),
       threshold=st.sampled_from([-1.0, 0.5, 100.0]), seed=st.integers(0, 1000))
def test_onnx_loop_matches_onnxruntime(rows, cols, trips, threshold, seed):
    """Trip counts from 0, conditions that stop the loop early or never, states that swap."""
    from irlib.frontend.onnx import from_onnx
    model = _loop_model(rows, cols, threshold, seed)
    mod, params = from_onnx(model)
    func = graph_function(mod, params)
    rng = np.random.default_rng(seed + 1)
    x0 = rng.standard_normal((rows, cols)).astype(np.float32)
    y0 = rng.standard_normal((rows, cols)).astype(np.float32)
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    feeds = {"M": np.array(trips, np.int64), "x0": x0, "y0": y0}
    want = session.run(None, feeds)[0]
    got = func(np.array(trips, np.int64), x0, y0)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    again = func(np.array(trips, np.int64), x0, y0)        # state starts afresh
    np.testing.assert_allclose(again.numpy(), want, rtol=1e-5, atol=1e-6)


def test_loop_is_one_graph_node():
    from irlib.frontend.onnx import from_onnx
    mod, params = from_onnx(_loop_model(2, 3, 100.0, 0))
    with irlib.transform.PassContext(opt_level=3):
        lib = interp.build(mod, "cpu", params)
    assert '"__loop"' in lib.graph_json


LOOP_IN_ELSE = """
#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %n: int32) {
  let %f = fn (%i: int32, %acc: Tensor[(2, 3), float32], %x2: Tensor[(2, 3), float32]) {
    if (greater_equal(%i, %n)) {
      (%acc, %i)
    } else {
      %f(add(%i, 1), add(multiply(%acc, 2f), %x2), %x2)
    }
  };
  %f(0, %x, multiply(%x, 0.5f))
}
"""


@pytest.mark.parametrize("count", [0, 1, 4])
def test_loop_whose_call_is_in_the_else_branch(count):
    """The recursion in the false branch (stop when the condition holds), a tuple result,
    an outer value (%n) read inside the loop."""
    mod = irlib.parse(LOOP_IN_ELSE)
    func = graph_function(mod)
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    acc = x.copy()
    for _ in range(count):
        acc = acc * 2 + x * 0.5
    got = func(x, np.array(count, np.int32))
    np.testing.assert_allclose(got[0].numpy(), acc, rtol=1e-6)
    assert int(got[1].numpy()) == count


NOT_A_LOOP = """
#[version = "0.0.5"]
def @main(%n: int32) {
  let %fib = fn (%k: int32) -> int32 {
    if (less(%k, 2)) { %k } else { add(%fib(subtract(%k, 1)), %fib(subtract(%k, 2))) }
  };
  %fib(%n)
}
"""


def test_non_tail_recursion_falls_back_with_a_reason():
    """A recursive function that is not a loop is refused by the graph lowering (the
    executor then runs the program on the interpreter and says why)."""
    mod = irlib.parse(NOT_A_LOOP)
    with irlib.transform.PassContext(opt_level=3):
        with pytest.raises(GraphUnsupportedError, match="only as a loop"):
            interp.build(mod, "cpu", {})
        executor = interp.create_executor("graph", mod=irlib.transform.InferType()(mod),
                                          device=interp.cpu(0), target="cpu")
        assert int(executor.evaluate()(np.array(10, np.int32)).numpy()) == 55
    assert "only as a loop" in executor.fallback


def test_export_library_stores_loop_nodes(tmp_path):
    """A graph with a ``__loop`` node is written by export_library and, loaded back with
    load_module, gives what the loop written in numpy gives."""
    mod = irlib.parse(LOOP_IN_ELSE)
    with irlib.transform.PassContext(opt_level=3):
        factory = interp.build(mod, "cpu", {})
    factory.export_library(str(tmp_path / "loop.irlib"))
    loaded = interp.load_module(str(tmp_path / "loop.irlib"))
    module = interp.graph_executor.GraphModule(loaded["default"](interp.cpu(0)))
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    module.set_input("x", x)
    module.set_input("n", np.array(3, np.int32))
    module.run()
    acc = x.copy()
    for _ in range(3):
        acc = acc * 2 + x * 0.5
    np.testing.assert_allclose(module.get_output(0).numpy(), acc, rtol=1e-6)
    assert int(module.get_output(1).numpy()) == 3


@pytest.mark.parametrize("damage", ["drop go_on", "two graphs", "unknown kind", "not a dict"])
def test_load_module_refuses_a_damaged_control_description(tmp_path, damage):
    """A library whose control.json was damaged raises IRError naming the node, not an
    internal KeyError."""
    import json
    import zipfile
    mod = irlib.parse(LOOP_IN_ELSE)
    with irlib.transform.PassContext(opt_level=3):
        interp.build(mod, "cpu", {}).export_library(str(tmp_path / "good.irlib"))
    with zipfile.ZipFile(tmp_path / "good.irlib") as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    control = json.loads(files["control.json"])
    name = next(iter(control))
    if damage == "drop go_on":
        del control[name]["go_on"]
    elif damage == "two graphs":
        control[name]["graphs"] = control[name]["graphs"][:2]
    elif damage == "unknown kind":
        control[name]["kind"] = "while"
    else:
        control[name] = [1, 2]
    files["control.json"] = json.dumps(control).encode()
    with zipfile.ZipFile(tmp_path / "bad.irlib", "w") as archive:
        for file_name, data in files.items():
            archive.writestr(file_name, data)
    with pytest.raises(irlib.IRError, match=name):
        interp.load_module(str(tmp_path / "bad.irlib"))
