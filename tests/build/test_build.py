"""``interp.build``: targets, params, the graph JSON schema, export/load, create_executor."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import irlib
import interp
from interp import graph_executor
from irlib.errors import IRError

ROOT = __file__.rsplit("/tests/", 1)[0]


def _dense_relu_module():
    x = irlib.var("x", shape=(2, 4))
    w = irlib.var("w", shape=(3, 4))
    b = irlib.var("b", shape=(3,))
    body = irlib.nn.relu(irlib.nn.bias_add(irlib.nn.dense(x, w), b))
    return irlib.IRModule.from_expr(irlib.Function([x, w, b], body))


RNG = np.random.default_rng(0)
XV = RNG.standard_normal((2, 4)).astype("float32")
WV = RNG.standard_normal((3, 4)).astype("float32")
BV = RNG.standard_normal(3).astype("float32")
EXPECTED = np.maximum(XV @ WV.T + BV, 0)


def _run(factory, **inputs):
    gmod = graph_executor.GraphModule(factory["default"](interp.cpu(0)))
    gmod.run(**inputs)
    return gmod.get_output(0).numpy()


@pytest.mark.parametrize("target", ["cpu", "llvm", "python", "cuda"])
def test_targets(target):
    factory = interp.build(_dense_relu_module(), target=target, params={"w": WV, "b": BV})
    np.testing.assert_allclose(_run(factory, x=XV), EXPECTED, rtol=1e-5, atol=1e-6)


def test_unsupported_target():
    with pytest.raises(IRError, match=r"unsupported target 'tpu'.*'cpu'"):
        interp.build(_dense_relu_module(), target="tpu")


def test_graph_json_schema():
    factory = interp.build(_dense_relu_module(), params={"w": WV, "b": BV})
    graph = json.loads(factory.get_graph_json())
    assert list(graph) == ["nodes", "arg_nodes", "heads", "attrs", "node_row_ptr"]
    nodes = graph["nodes"]
    assert [n["name"] for n in nodes if n["op"] == "null"] == ["x", "p0", "p1"]
    assert graph["arg_nodes"] == [i for i, n in enumerate(nodes) if n["op"] == "null"]
    ops = [n for n in nodes if n["op"] == "tvm_op"]
    assert len(ops) == 1            # dense + bias_add + relu fuse into one group
    attrs = ops[0]["attrs"]
    assert attrs["func_name"] == "tvmgen_default_fused_nn_dense_nn_bias_add_nn_relu"
    assert (attrs["num_inputs"], attrs["num_outputs"], attrs["flatten_data"]) == ("3", "1", "0")
    assert all(len(e) == 3 and e[2] == 0 for e in ops[0]["inputs"])
    assert graph["node_row_ptr"] == list(range(len(nodes) + 1))
    assert graph["heads"] == [[len(nodes) - 1, 0, 0]]
    assert graph["attrs"]["dltype"] == ["list_str", ["float32"] * 4]
    assert graph["attrs"]["shape"][0] == "list_shape"
    assert graph["attrs"]["shape"][1] == [[2, 4], [3, 4], [3], [2, 3]]
    assert graph["attrs"]["storage_id"][0] == "list_int"
    params = factory.get_params()
    assert sorted(params) == ["p0", "p1"]
    assert {tuple(v.shape) for v in params.values()} == {(3, 4), (3,)}


def test_opt_level_zero_gives_one_function_per_op():
    with irlib.transform.PassContext(opt_level=0):
        factory = interp.build(_dense_relu_module(), params={"w": WV, "b": BV})
    graph = json.loads(factory.get_executor_config())
    funcs = [n["attrs"]["func_name"] for n in graph["nodes"] if n["op"] == "tvm_op"]
    assert funcs == ["tvmgen_default_fused_nn_dense", "tvmgen_default_fused_nn_bias_add",
                     "tvmgen_default_fused_nn_relu"]
    np.testing.assert_allclose(_run(factory, x=XV), EXPECTED, rtol=1e-5, atol=1e-6)


def test_identical_groups_share_one_function():
    x = irlib.var("x", shape=(4,))
    body = irlib.exp(irlib.nn.softmax(irlib.exp(irlib.nn.softmax(x))))
    factory = interp.build(irlib.IRModule.from_expr(irlib.Function([x], body)))
    graph = json.loads(factory.get_graph_json())
    funcs = [n["attrs"]["func_name"] for n in graph["nodes"] if n["op"] == "tvm_op"]
    names = [n["name"] for n in graph["nodes"] if n["op"] == "tvm_op"]
    assert funcs == ['tvmgen_default_fused_nn_softmax', 'tvmgen_default_fused_exp'] * 2
    assert len(set(names)) == 4
    value = np.array([0.1, 0.2, 0.3, 0.4], "float32")
    once = np.exp(np.exp(value) / np.exp(value).sum())
    twice = np.exp(np.exp(once) / np.exp(once).sum())
    np.testing.assert_allclose(_run(factory, x=value), twice, rtol=1e-6)


def test_groups_of_different_shapes_get_different_functions():
    x = irlib.var("x", shape=(2, 3))
    first = irlib.nn.softmax(x)
    second = irlib.nn.softmax(irlib.nn.batch_flatten(irlib.expand_dims(first, axis=0)))
    factory = interp.build(irlib.IRModule.from_expr(irlib.Function([x], second)))
    graph = json.loads(factory.get_graph_json())
    funcs = [n["attrs"]["func_name"] for n in graph["nodes"] if n["op"] == "tvm_op"]
    assert len(set(f for f in funcs if "softmax" in f)) == 2
    value = np.arange(6, dtype="float32").reshape(2, 3)
    rows = np.exp(value) / np.exp(value).sum(axis=1, keepdims=True)
    flat = rows.reshape(1, 6)
    want = np.exp(flat) / np.exp(flat).sum()
    np.testing.assert_allclose(_run(factory, x=value), want, rtol=1e-6)


def test_if_builds_and_runs_its_branches():
    """An if is one node running the taken branch's graph (interp.graph_control)."""
    x = irlib.var("x", shape=())
    body = irlib.If(irlib.less(x, irlib.const(0.0)), irlib.negative(x), x)
    factory = interp.build(irlib.IRModule.from_expr(irlib.Function([x], body)))
    for value in (-2.5, 3.0):
        np.testing.assert_allclose(_run(factory, x=np.array(value, "float32")), abs(value))


def test_dynamic_shapes_and_closures_are_rejected():
    from irlib.ir.dims import Any
    x = irlib.var("x", irlib.TensorType((Any, 3), "float32"))
    with pytest.raises(graph_executor.GraphUnsupportedError, match="static shapes"):
        interp.build(irlib.IRModule.from_expr(irlib.Function([x], irlib.exp(x))))
    y = irlib.var("y", shape=(2,))
    z = irlib.var("z", shape=(2,))
    closure = irlib.Function([z], irlib.add(y, z))
    with pytest.raises(graph_executor.GraphUnsupportedError):
        interp.build(irlib.IRModule.from_expr(irlib.Function([y], closure)))


def test_create_executor_graph_falls_back_for_references():
    x = irlib.var("x", shape=())
    body = irlib.negative(irlib.RefRead(irlib.RefCreate(x)))
    ex = interp.create_executor("graph", irlib.IRModule.from_expr(irlib.Function([x], body)))
    assert ex.evaluate()(np.float32(-2.0)).numpy() == 2.0
    assert "Ref" in ex.fallback


def test_create_executor_graph_runs_if_without_fallback():
    x = irlib.var("x", shape=())
    body = irlib.If(irlib.less(x, irlib.const(0.0)), irlib.negative(x), x)
    ex = interp.create_executor("graph", irlib.IRModule.from_expr(irlib.Function([x], body)))
    assert ex.evaluate()(np.float32(-2.0)).numpy() == 2.0
    assert ex.fallback is None


def test_report_names_reference_ops():
    factory = interp.build(_dense_relu_module(), target="python")
    report = factory.report
    assert set(report["reference_ops"]) == {"nn.dense", "nn.bias_add", "nn.relu"}
    assert set(report["functions"].values()) == {"reference"}


def test_export_and_load_in_a_new_process(tmp_path):
    factory = interp.build(_dense_relu_module(), params={"w": WV, "b": BV})
    path = tmp_path / "model.irlib"
    factory.export_library(str(path))
    np.save(tmp_path / "x.npy", XV)
    script = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {ROOT!r})
        import numpy as np, interp
        from interp import graph_executor
        lib = interp.load_module({str(path)!r})
        gmod = graph_executor.GraphModule(lib["default"](interp.cpu(0)))
        gmod.set_input("x", np.load({str(tmp_path / 'x.npy')!r}))
        gmod.run()
        np.save({str(tmp_path / 'y.npy')!r}, gmod.get_output(0).numpy())
        print(sorted(lib.get_params()))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['p0', 'p1']"
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), EXPECTED, rtol=1e-5, atol=1e-6)
    assert json.loads(interp.load_module(str(path)).get_graph_json()) == \
        json.loads(factory.get_graph_json())


def test_load_module_rejects_other_files(tmp_path):
    path = tmp_path / "junk.irlib"
    path.write_bytes(b"not a zip")
    with pytest.raises(IRError, match="not a library"):
        interp.load_module(str(path))


def test_create_executor_graph_uses_build():
    ex = interp.create_executor("graph", _dense_relu_module(), interp.cpu(0), "llvm",
                                params={"w": WV, "b": BV})
    f = ex.evaluate()
    np.testing.assert_allclose(f(XV).numpy(), EXPECTED, rtol=1e-5, atol=1e-6)
    assert ex.fallback is None
    from interp.graph_evaluate import GraphFunction
    assert isinstance(f, GraphFunction)


def test_create_executor_graph_returns_tuples():
    x = irlib.var("x", shape=(2,))
    mod = irlib.IRModule.from_expr(irlib.Function([x], irlib.Tuple([x + x, irlib.exp(x)])))
    result = interp.create_executor("graph", mod).evaluate()(np.array([1, 2], "float32"))
    np.testing.assert_allclose(result[0].numpy(), [2, 4])
    np.testing.assert_allclose(result[1].numpy(), np.exp([1, 2]), rtol=1e-6)


def test_run_model_helper():
    outputs, factory = interp.run_model(_dense_relu_module(), params={"w": WV, "b": BV},
                                        inputs={"x": XV})
    np.testing.assert_allclose(outputs[0], EXPECTED, rtol=1e-5, atol=1e-6)


def test_string_tensors_are_rejected_and_graph_kind_falls_back():
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    from irlib.frontend.onnx import from_onnx
    node = helper.make_node("StringConcat", ["a", "b"], ["c"])
    graph = helper.make_graph(
        [node], "concat", [helper.make_tensor_value_info(n, TensorProto.STRING, [2])
                           for n in ("a", "b")],
        [helper.make_tensor_value_info("c", TensorProto.STRING, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    mod, _ = from_onnx(model)
    with pytest.raises(graph_executor.GraphUnsupportedError, match="string"):
        interp.build(mod)
    ex = interp.create_executor("graph", mod)
    out = ex.evaluate()(np.array(["ab", "c"], dtype=object), np.array(["x", "yz"], dtype=object))
    assert list(np.asarray(out.numpy() if hasattr(out, "numpy") else out)) == ["abx", "cyz"]
    assert "string" in ex.fallback
