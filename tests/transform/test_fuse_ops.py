"""FuseOps: hand-derived groups (Relay's fusion rules), semantics, idempotence, depth."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import irlib
from irlib import Function, IRModule, const, var
from irlib.analysis import free_vars
from irlib.ir import expr as E
from irlib.ir.functor import post_order
from irlib.ir.structural import assert_structural_equal
from irlib.testing import strategies as irst
from irlib.testing.budget import examples
from irlib.transform import FuseOps, PassContext
from _graph_opt_helpers import assert_close, run


def fused(expr, **kwargs):
    if not isinstance(expr, Function):
        expr = Function(list(free_vars(expr)), expr)
    return FuseOps(**kwargs)(IRModule.from_expr(expr))["main"]


def primitives(func):
    """The Primitive functions called in ``func``, in the order their calls are evaluated."""
    return [node.op for node in post_order(func.body)
            if isinstance(node, E.Call) and isinstance(node.op, Function)
            and node.op.get_attr("Primitive")]


def groups(func):
    """The op names of each Primitive function, in the order its calls are evaluated."""
    return [[n.op.name for n in post_order(prim.body)
             if isinstance(n, E.Call) and isinstance(n.op, E.Op)] for prim in primitives(func)]


def test_reference_example_exact_structure():
    x = var("x", shape=(1, 20))
    before = Function([x], irlib.squeeze(irlib.exp(irlib.add(x, const(1.0))), axis=[0]))
    x2 = var("x", shape=(1, 20))
    p0 = var("p0", shape=(1, 20))
    body = irlib.squeeze(irlib.exp(irlib.add(p0, const(1.0))), axis=[0])
    prim = Function([p0], body).with_attr("Primitive", 1)
    expected = IRModule.from_expr(Function([x2], E.Call(prim, (x2,))))
    out = FuseOps()(IRModule.from_expr(before))
    assert_structural_equal(out["main"], irlib.transform.InferType()(expected)["main"],
                            map_free_vars=True)


def test_resnet_block_with_batch_norm_groups():
    x = var("x", shape=(1, 4, 8, 8))
    w1, w2 = var("w1", shape=(4, 4, 3, 3)), var("w2", shape=(4, 4, 3, 3))
    g, b, m, v = (var(n, shape=(4,)) for n in "gbmv")
    c1 = irlib.nn.conv2d(x, w1, padding=(1, 1))
    bn = E.TupleGetItem(irlib.nn.batch_norm(c1, g, b, m, v).astuple(), 0)
    c2 = irlib.nn.conv2d(irlib.nn.relu(bn), w2, padding=(1, 1))
    out = irlib.nn.relu(irlib.add(c2, x))
    # conv1 cannot fuse into the opaque batch_norm; the projection fuses into relu (phase
    # 1); conv2 fuses with its elementwise add and relu (phase 0).
    assert groups(fused(out)) == [["nn.conv2d"], ["nn.batch_norm"], ["nn.relu"],
                                  ["nn.conv2d", "add", "nn.relu"]]


def test_inference_resnet_block_groups():
    x = var("x", shape=(1, 4, 8, 8))
    w1, w2 = var("w1", shape=(4, 4, 3, 3)), var("w2", shape=(4, 4, 3, 3))
    scale = const(np.full((4, 1, 1), 2.0, "float32"))
    shift = const(np.full((4, 1, 1), 0.5, "float32"))
    y = irlib.nn.relu(irlib.add(irlib.multiply(irlib.nn.conv2d(x, w1, padding=(1, 1)), scale),
                                shift))
    z = irlib.nn.relu(irlib.add(irlib.nn.conv2d(y, w2, padding=(1, 1)), x))
    func = fused(z)
    assert groups(func) == [["nn.conv2d", "multiply", "add", "nn.relu"],
                            ["nn.conv2d", "add", "nn.relu"]]
    first = primitives(func)[0]
    # the non-scalar constants become parameters p2, p3; names follow first use
    assert [p.name_hint for p in first.params] == ["p0", "p1", "p2", "p3"]


def test_reduction_takes_elementwise_inputs_but_not_outputs():
    x = var("x", shape=(4, 5))
    out = irlib.sqrt(irlib.sum(irlib.exp(irlib.multiply(x, const(2.0))), axis=[1]))
    assert groups(fused(out)) == [["multiply", "exp", "sum"], ["sqrt"]]


def test_dense_anchor_with_bias_and_tuple_root():
    x, w, b = var("x", shape=(2, 3)), var("w", shape=(4, 3)), var("b", shape=(4,))
    d = irlib.nn.relu(irlib.add(irlib.nn.dense(x, w), b))   # add is broadcast, not elemwise
    out = E.Tuple((d, irlib.exp(x)))
    # the dense -> add edge is elementwise (same shape), so dense+add+relu fuse
    assert groups(fused(out)) == [["nn.dense", "add", "nn.relu"], ["exp"]]


def test_injective_ops_fuse_into_concatenate():
    x = var("x", shape=(1, 4, 4))
    a = irlib.exp(x)
    out = irlib.concatenate(E.Tuple((irlib.reshape(a, (1, 16)), irlib.reshape(x, (1, 16)))),
                            axis=1)
    func = fused(irlib.nn.relu(out))
    assert groups(func) == [["exp", "reshape", "reshape", "concatenate", "nn.relu"]]


def test_opt_level_zero_one_op_per_function():
    x = var("x", shape=(3,))
    out = irlib.nn.relu(irlib.exp(irlib.add(x, const(1.0))))
    with PassContext(opt_level=0):
        func = fused(out)
    assert groups(func) == [["add"], ["exp"], ["nn.relu"]]
    assert groups(fused(out, fuse_opt_level=0)) == [["add"], ["exp"], ["nn.relu"]]


def test_stop_fusion_is_a_barrier_and_removed():
    x = var("x", shape=(3,))
    out = irlib.exp(irlib.annotation.stop_fusion(irlib.add(x, const(1.0))))
    func = fused(out)
    assert groups(func) == [["add"], ["exp"]]


def test_max_depth_splits_long_chains():
    x = var("x", shape=(3,))
    out = x
    for _ in range(10):
        out = irlib.exp(out)
    with PassContext(config={"relay.FuseOps.max_depth": 4}):
        func = fused(out)
    sizes = [len(g) for g in groups(func)]
    assert sum(sizes) == 10 and max(sizes) <= 4


def test_reshape_only_attribute():
    x = var("x", shape=(2, 3))
    func = fused(irlib.reshape(irlib.squeeze(irlib.expand_dims(x, 0), axis=[0]), (3, 2)))
    prim = primitives(func)[0]
    assert prim.get_attr("relay.reshape_only") == 1


def test_every_op_call_inside_a_primitive_and_idempotent():
    x = var("x", shape=(2, 3))
    y = irlib.nn.softmax(irlib.add(x, x))
    body = E.Let(var("t"), y, irlib.exp(y))
    func = fused(Function([x], body))
    again = FuseOps()(IRModule.from_expr(func))["main"]
    assert_structural_equal(again, func, map_free_vars=True)
    nested = [n for n in post_order(func.body) if isinstance(n, Function)]
    inside = {id(c) for f in nested for c in post_order(f.body)}
    for node in post_order(func.body):
        if isinstance(node, E.Call) and isinstance(node.op, E.Op):
            assert id(node) in inside


def test_input_module_is_not_mutated():
    x = var("x", shape=(3,))
    mod = IRModule.from_expr(Function([x], irlib.exp(irlib.add(x, x))))
    text = mod.astext()
    FuseOps()(mod)
    assert mod.astext() == text


@pytest.mark.parametrize("level", [0, 2])
@settings(max_examples=examples(25), deadline=None)
@given(program=irst.tensor_exprs(max_steps=10, dtypes=("float64",)), data=st.data())
def test_fusion_preserves_meaning(level, program, data):
    inputs = data.draw(program.inputs_strategy())
    args = [inputs[p] for p in program.params]
    mod = FuseOps(fuse_opt_level=level)(program.module())
    assert_close(run(mod, args), program.reference(inputs))


def test_zoo_resnet_preserves_meaning():
    import zoo
    mod, params = zoo.resnet.get_workload(batch_size=1, num_layers=8,
                                          image_shape=(3, 16, 16), num_classes=10)
    data = np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype("float32")
    names = [p.name_hint for p in mod["main"].params]
    args = [data] + [params[n].numpy() for n in names[1:]]
    expected = run(mod, args)
    fused_mod = FuseOps()(mod)
    np.testing.assert_allclose(run(fused_mod, args), expected, rtol=1e-4, atol=1e-5)
    assert any(g[:1] == ["nn.conv2d"] and len(g) > 1 for g in groups(fused_mod["main"]))


def test_hundred_thousand_node_chain():
    x = var("x", shape=(2,))
    out = x
    for i in range(100_000):
        out = irlib.exp(out) if i % 2 else irlib.negative(out)
    func = fused(out)
    sizes = [len(g) for g in groups(func)]
    assert sum(sizes) == 100_000 and max(sizes) <= 256


def test_fuse_expr_on_untyped_let_chain_depth():
    x = var("x", shape=(2,))
    body = x
    names = [var(f"v{i}") for i in range(2000)]
    for v in reversed(names):
        body = E.Let(v, irlib.exp(x), body)
    func = fused(Function([x], body))
    assert len(groups(func)) == 2000


@settings(max_examples=examples(25), deadline=None)
@given(program=irst.programs(max_steps=10, dtypes=("float64",)), data=st.data())
def test_fusion_preserves_meaning_with_control_flow(program, data):
    inputs = data.draw(program.inputs_strategy())
    args = [inputs[p] for p in program.params]
    mod = FuseOps()(program.module())
    assert_close(run(mod, args), program.reference(inputs))
    again = FuseOps()(mod)
    assert_structural_equal(again, mod, map_free_vars=True)


def test_golden_text_conv_chain():
    before = irlib.parse("""#[version = "0.0.5"]
def @main(%x: Tensor[(1, 16, 8, 8), float32], %w1: Tensor[(16, 16, 3, 3), float32],
          %w2: Tensor[(16, 16, 1, 1), float32]) {
  %0 = add(%x, 1f);
  %1 = nn.conv2d(%0, %w1, padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3]);
  %2 = add(%1, 1f);
  %3 = nn.relu(%2);
  %4 = nn.conv2d(%3, %w2, padding=[0, 0, 0, 0], channels=16, kernel_size=[1, 1]);
  add(%4, %3)
}""")
    expected = irlib.parse("""#[version = "0.0.5"]
def @main(%x: Tensor[(1, 16, 8, 8), float32], %w1: Tensor[(16, 16, 3, 3), float32],
          %w2: Tensor[(16, 16, 1, 1), float32]) {
  %0 = fn (%p0: Tensor[(1, 16, 8, 8), float32], Primitive=1) {
    add(%p0, 1f)
  };
  %1 = %0(%x);
  %2 = fn (%p01: Tensor[(1, 16, 8, 8), float32], %p1: Tensor[(16, 16, 3, 3), float32],
           Primitive=1) {
    %5 = nn.conv2d(%p01, %p1, padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3]);
    %6 = add(%5, 1f);
    nn.relu(%6)
  };
  %3 = %2(%1, %w1);
  %4 = fn (%p02: Tensor[(1, 16, 8, 8), float32], %p11: Tensor[(16, 16, 1, 1), float32],
           Primitive=1) {
    %7 = nn.conv2d(%p02, %p11, padding=[0, 0, 0, 0], channels=16, kernel_size=[1, 1]);
    add(%7, %p02)
  };
  %4(%3, %w2)
}""")
    out = FuseOps()(before)
    assert_structural_equal(out["main"], irlib.transform.InferType()(expected)["main"],
                            map_free_vars=True)
