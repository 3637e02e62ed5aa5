"""MergeComposite, AnnotateTarget, MergeCompilerRegions and PartitionGraph."""

import numpy as np
import pytest

import irlib
from irlib import Function, IRModule, const, var
from irlib.analysis import count_ops
from irlib.dataflow_pattern import is_op, wildcard
from irlib.ir import expr as E
from irlib.ir.functor import post_order
from irlib.transform import (AnnotateTarget, MergeCompilerRegions, MergeComposite,
                             PartitionGraph, Sequential, register_target_op)

from _graph_opt_helpers import assert_close, op_names, run

BEGIN, END = "annotation.compiler_begin", "annotation.compiler_end"


@pytest.fixture
def supports():
    installed = []

    def install(op_name, target, predicate=True):
        register_target_op(op_name, target, predicate)
        installed.append((op_name, target))
    yield install
    for op_name, target in installed:
        register_target_op(op_name, target, None)


def annotations(expr, name):
    return [n.attrs["compiler"] for n in post_order(expr)
            if isinstance(n, E.Call) and isinstance(n.op, E.Op) and n.op.name == name]


def test_merge_composite_reference_example():
    a, b = var("a", shape=(3,)), var("b", shape=(3,))
    pattern = is_op("nn.relu")(is_op("add")(wildcard(), wildcard()))
    out = MergeComposite([("add_relu", pattern)])(IRModule.from_expr(
        Function([a, b], irlib.nn.relu(irlib.add(a, b)))))
    call = out["main"].body
    assert call.op.get_attr("Composite") == "add_relu"
    assert call.op.get_attr("PartitionedFromPattern") == "add_nn.relu_"
    assert list(call.args) == list(out["main"].params)


def test_merge_composite_priority_and_check():
    a, b = var("a", shape=(3,)), var("b", shape=(3,))
    body = irlib.nn.relu(irlib.add(a, b))
    table = [("add", is_op("add")(wildcard(), wildcard())),
             ("add_relu", is_op("nn.relu")(is_op("add")(wildcard(), wildcard())))]
    out = MergeComposite(table)(IRModule.from_expr(Function([a, b], body)))["main"]
    assert out.body.op.name == "nn.relu"                         # the first entry won
    rejected = MergeComposite([(n, p, lambda e: False) for n, p in table])(
        IRModule.from_expr(Function([a, b], body)))["main"]
    assert op_names(rejected) == ["add", "nn.relu"]


def test_annotate_target_wraps_every_call(supports):
    supports("nn.relu", "test")
    x = var("x", shape=(3,))
    r = irlib.nn.relu(x)
    mod = IRModule.from_expr(Function([x], irlib.add(irlib.abs(r), irlib.abs(r))))
    out = AnnotateTarget("test")(mod)["main"]
    relu = [n for n in post_order(out) if isinstance(n, E.Call) and
            getattr(n.op, "name", "") == "nn.relu"][0]
    assert relu.args[0].op.name == BEGIN and relu.args[0].attrs["compiler"] == "test"
    assert out.body.op.name == END and out.body.attrs["compiler"] == "default"
    assert sorted(set(annotations(out, BEGIN))) == ["default", "test"]
    again = AnnotateTarget("test")(IRModule.from_expr(out))["main"]
    assert len(annotations(again, BEGIN)) == len(annotations(out, BEGIN))


def test_merge_regions_and_partition_reference_example(supports):
    supports("abs", "t")
    supports("nn.relu", "t")
    x = var("x", shape=(3,))
    mod = IRModule.from_expr(Function([x], irlib.exp(irlib.nn.relu(irlib.abs(x)))))
    annotated = AnnotateTarget(["t"])(mod)
    merged = MergeCompilerRegions()(annotated)
    assert len(annotations(merged["main"], END)) == len(annotations(annotated["main"], END)) - 1
    out = PartitionGraph()(merged)
    names = sorted(g.name_hint for g in out.get_global_vars())
    assert names == ["main", "tvmgen_default_t_main_0"]
    lifted = out["tvmgen_default_t_main_0"]
    assert lifted.get_attr("Compiler") == "t" and lifted.get_attr("Primitive") == 1
    assert lifted.get_attr("Inline") == 1
    assert lifted.get_attr("global_symbol") == "tvmgen_default_t_main_0"
    assert [p.name_hint for p in lifted.params] == ["t_0_i0"]
    assert op_names(lifted.body) == ["abs", "nn.relu"]
    assert annotations(out["main"], BEGIN) == [] and annotations(out["main"], END) == []
    values = np.array([-1.0, 0.5, 2.0], "float32")
    assert_close(run(out, [values]), np.exp(np.abs(values)))


def test_merge_refuses_cycles(supports):
    supports("abs", "t")
    supports("add", "t")
    x = var("x", shape=(3,))
    first = irlib.abs(x)
    body = irlib.add(first, irlib.exp(first))        # exp runs on default in between
    mod = IRModule.from_expr(Function([x], body))
    out = Sequential([AnnotateTarget("t"), MergeCompilerRegions(), PartitionGraph()])(mod)
    lifted = [g for g in out.get_global_vars() if g.name_hint != "main"]
    assert len(lifted) == 2
    values = np.array([-1.0, 0.5, 2.0], "float32")
    assert_close(run(out, [values]), np.abs(values) + np.exp(np.abs(values)))


def test_partition_region_with_two_outputs_returns_a_tuple(supports):
    supports("abs", "t")
    supports("negative", "t")
    x = var("x", shape=(3,))
    a = irlib.abs(x)
    n = irlib.negative(a)
    mod = IRModule.from_expr(Function([x], irlib.subtract(irlib.exp(a), irlib.exp(n))))
    out = Sequential([AnnotateTarget("t"), MergeCompilerRegions(),
                      PartitionGraph(mod_name=None)])(mod)
    lifted = [g for g in out.get_global_vars() if g.name_hint != "main"]
    assert [g.name_hint for g in lifted] == ["tvmgen_t_main_0"]
    assert isinstance(out[lifted[0]].body, E.Tuple)
    values = np.array([-1.0, 0.5, 2.0], "float32")
    assert_close(run(out, [values]), np.exp(np.abs(values)) - np.exp(-np.abs(values)))


def test_composite_conv_bias_relu_end_to_end():
    rng = np.random.default_rng(0)
    x = var("x", shape=(1, 3, 6, 6))
    w1 = const((rng.standard_normal((4, 3, 3, 3)) * 0.1).astype("float32"))
    w2 = const((rng.standard_normal((4, 4, 3, 3)) * 0.1).astype("float32"))
    b = const((rng.standard_normal(4) * 0.1).astype("float32"))
    y = irlib.nn.relu(irlib.nn.bias_add(irlib.nn.conv2d(x, w1, padding=(1, 1)), b))
    y = irlib.nn.relu(irlib.nn.bias_add(irlib.nn.conv2d(y, w2, padding=(1, 1)), b))
    mod = IRModule.from_expr(Function([x], irlib.nn.softmax(irlib.nn.batch_flatten(y))))
    pattern = is_op("nn.relu")(is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), wildcard()),
                                                    wildcard()))
    pipeline = Sequential([MergeComposite([("dnnl.conv_bias_relu", pattern)]),
                           AnnotateTarget(["dnnl"]), MergeCompilerRegions(), PartitionGraph()])
    out = pipeline(mod)
    lifted = [g for g in out.get_global_vars() if g.name_hint != "main"]
    assert [g.name_hint for g in lifted] == ["tvmgen_default_dnnl_main_0"]
    func = out[lifted[0]]
    composites = [n.get_attr("Composite") for n in post_order(func.body)
                  if isinstance(n, Function)]
    assert composites == ["dnnl.conv_bias_relu"] * 2
    assert count_ops(out["main"]) == {"nn.batch_flatten": 1, "nn.softmax": 1}
    data = rng.standard_normal((1, 3, 6, 6)).astype("float32")
    assert_close(run(out, [data]), run(mod, [data]), rtol=1e-5)


def test_rewrite_annotated_ops():
    from irlib.transform import RewriteAnnotatedOps
    x, y, z = (var(n, shape=(3,)) for n in "xyz")
    same = Function([x, y, z], irlib.subtract(
        irlib.annotation.on_device(irlib.add(x, y), "cpu"), z))
    out = RewriteAnnotatedOps(1)(IRModule.from_expr(same))
    assert op_names(out["main"]) == ["add", "subtract"]
    values = [np.full(3, v, "float32") for v in (1, 2, 4)]
    assert_close(run(out, values), np.full(3, -1.0))
    cross = Function([x, y, z], irlib.subtract(
        irlib.annotation.on_device(irlib.add(x, y), "cuda"), z))
    out = RewriteAnnotatedOps(1)(IRModule.from_expr(cross))
    assert op_names(out["main"]) == ["add", "device_copy", "subtract"]
    assert_close(run(out, values), np.full(3, -1.0))
