"""Forward/BackwardFoldScaleAxis: what folds, what must not, and numerics before == after."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import irlib
from irlib import Function, IRModule, var
from irlib.ir.expr import Constant as const
from irlib.testing.budget import examples
from irlib.transform import (BackwardFoldScaleAxis, FoldScaleAxis,
                             ForwardFoldScaleAxis, PassContext)

from _graph_opt_helpers import assert_close, op_names, run

RNG = np.random.default_rng(0)


def f64(*shape, positive=False):
    data = RNG.uniform(0.5, 2.0, shape) if positive else RNG.standard_normal(shape)
    return data.astype("float64")


def check(mod_fn, pass_, inputs, folded):
    mod = IRModule.from_expr(mod_fn)
    out = pass_(mod)
    # the scale multiply on the activations is gone exactly when it should fold
    activations = [n for n in op_names(out["main"]) if n == "multiply"]
    weight_side = _weight_multiplies(out["main"])
    assert (len(activations) == weight_side) == folded
    assert_close(run(out, inputs), run(mod, inputs))
    return out


def _weight_multiplies(func):
    """Multiplies whose result feeds a conv/dense weight or a bias (not the data path)."""
    from irlib.ir import expr as E
    from irlib.ir.functor import post_order
    count = 0
    for node in post_order(func):
        if isinstance(node, E.Call) and isinstance(node.op, E.Op):
            if node.op.name in ("nn.conv2d", "nn.dense") and _is_mul(node.args[1]):
                count += 1
            if node.op.name in ("add", "subtract") and any(
                    _is_mul(a) and isinstance(a.args[1], E.Constant)
                    and not _is_mul_of_conv(a) for a in node.args):
                count += 1
    return count


def _is_mul(node):
    from irlib.ir import expr as E
    return isinstance(node, E.Call) and isinstance(node.op, E.Op) and node.op.name == "multiply"


def _is_mul_of_conv(node):
    from irlib.ir import expr as E
    arg = node.args[0]
    return isinstance(arg, E.Call) and isinstance(arg.op, E.Op) and \
        arg.op.name in ("nn.conv2d", "nn.dense", "nn.relu", "add")


def conv_net(scale, with_relu, with_bias, layout="NCHW"):
    x = var("x", shape=(1, 3, 5, 5) if layout == "NCHW" else (1, 5, 5, 3), dtype="float64")
    w = var("w", shape=(4, 3, 3, 3) if layout == "NCHW" else (3, 3, 3, 4), dtype="float64")
    conv = irlib.nn.conv2d(x, w, padding=(1, 1), data_layout=layout,
                           kernel_layout="OIHW" if layout == "NCHW" else "HWIO")
    params = [x, w]
    if with_bias:
        b = var("b", shape=(4, 1, 1) if layout == "NCHW" else (4,), dtype="float64")
        conv = irlib.add(conv, b)
        params.append(b)
    if with_relu:
        conv = irlib.nn.relu(conv)
    return Function(params, irlib.multiply(conv, const(scale)))


@pytest.mark.parametrize("with_relu", [False, True])
@pytest.mark.parametrize("with_bias", [False, True])
def test_backward_folds_positive_channel_scale(with_relu, with_bias):
    scale = f64(4, 1, 1, positive=True)
    func = conv_net(scale, with_relu, with_bias)
    inputs = [f64(1, 3, 5, 5), f64(4, 3, 3, 3)] + ([f64(4, 1, 1)] if with_bias else [])
    out = check(func, BackwardFoldScaleAxis(), inputs, folded=True)
    assert op_names(out["main"])[-1] != "multiply"


def test_backward_nhwc_layout():
    func = conv_net(f64(4, positive=True), True, True, layout="NHWC")
    check(func, BackwardFoldScaleAxis(), [f64(1, 5, 5, 3), f64(3, 3, 3, 4), f64(4)],
          folded=True)


def test_backward_refuses_negative_scale_through_relu():
    scale = -f64(4, 1, 1, positive=True)
    func = conv_net(scale, True, False)
    out = BackwardFoldScaleAxis()(IRModule.from_expr(func))
    assert op_names(out["main"])[-1] == "multiply"


def test_backward_refuses_shared_conv_and_non_channel_scale():
    x, w = var("x", shape=(1, 3, 5, 5)), var("w", shape=(4, 3, 3, 3))
    conv = irlib.nn.conv2d(x, w, padding=(1, 1))
    shared = Function([x, w], irlib.Tuple((irlib.multiply(conv, const(np.ones((4, 1, 1),
                                                                              "float32"))),
                                           conv)))
    assert op_names(BackwardFoldScaleAxis()(shared)).count("multiply") == 1
    spatial = Function([x, w], irlib.multiply(conv, const(np.ones((5, 5), "float32"))))
    out = BackwardFoldScaleAxis()(spatial)
    assert out.body.op.name == "multiply"


def test_backward_dense():
    x, w = var("x", shape=(2, 3), dtype="float64"), var("w", shape=(4, 3), dtype="float64")
    func = Function([x, w], irlib.multiply(irlib.nn.dense(x, w), const(f64(4))))
    out = check(func, BackwardFoldScaleAxis(), [f64(2, 3), f64(4, 3)], folded=True)
    assert op_names(out["main"]) == ["multiply", "nn.dense"]


@pytest.mark.parametrize("with_relu", [False, True])
def test_forward_folds_input_scale(with_relu):
    x, w = var("x", shape=(1, 3, 5, 5), dtype="float64"), var("w", shape=(4, 3, 3, 3),
                                                                dtype="float64")
    data = irlib.multiply(x, const(f64(3, 1, 1, positive=True)))
    if with_relu:
        data = irlib.nn.relu(data)
    func = Function([x, w], irlib.nn.conv2d(data, w, padding=(1, 1)))
    out = check(func, ForwardFoldScaleAxis(), [f64(1, 3, 5, 5), f64(4, 3, 3, 3)], folded=True)
    conv = out["main"].body
    assert conv.op.name == "nn.conv2d" and op_names(conv.args[1]) == ["multiply"]


def test_forward_dense_and_refusals():
    x, w = var("x", shape=(2, 3), dtype="float64"), var("w", shape=(4, 3), dtype="float64")
    func = Function([x, w], irlib.nn.dense(irlib.multiply(x, const(f64(3))), w))
    check(func, ForwardFoldScaleAxis(), [f64(2, 3), f64(4, 3)], folded=True)
    negative = Function([x, w], irlib.nn.dense(
        irlib.nn.relu(irlib.multiply(x, const(-f64(3, positive=True)))), w))
    out = ForwardFoldScaleAxis()(negative)
    assert op_names(out.body.args[1]) == []


@settings(max_examples=examples(20), deadline=None)
@given(seed=st.integers(0, 10_000), with_relu=st.booleans(), with_bias=st.booleans(),
       sign=st.sampled_from([1.0, -1.0]))
def test_fold_scale_axis_preserves_meaning(seed, with_relu, with_bias, sign):
    rng = np.random.default_rng(seed)
    scale = sign * rng.uniform(0.5, 2.0, (4, 1, 1))
    func = conv_net(scale, with_relu, with_bias)
    inputs = [rng.standard_normal(s) for s in ((1, 3, 5, 5), (4, 3, 3, 3))]
    if with_bias:
        inputs.append(rng.standard_normal((4, 1, 1)))
    mod = IRModule.from_expr(func)
    with PassContext(opt_level=3):
        out = FoldScaleAxis()(mod)
    assert_close(run(out, inputs), run(mod, inputs))
    if sign > 0 or not with_relu:
        assert op_names(out["main"])[-1] != "multiply"


def test_forward_moves_the_scale_past_a_bias_add():
    x, w = var("x", shape=(1, 3, 5, 5), dtype="float64"), var("w", shape=(4, 3, 3, 3),
                                                                dtype="float64")
    shift = const(f64(3, 1, 1))
    data = irlib.nn.relu(irlib.add(irlib.multiply(x, const(f64(3, 1, 1, positive=True))),
                                   shift))
    func = Function([x, w], irlib.nn.conv2d(data, w, padding=(1, 1)))
    out = ForwardFoldScaleAxis()(IRModule.from_expr(func))
    relu = out["main"].body.args[0]
    assert relu.op.name == "nn.relu" and op_names(relu) == ["divide", "add", "nn.relu"]
    inputs = [f64(1, 3, 5, 5), f64(4, 3, 3, 3)]
    assert_close(run(out, inputs), run(IRModule.from_expr(func), inputs))
    zero = np.zeros((3, 1, 1))
    blocked = Function([x, w], irlib.nn.conv2d(irlib.add(irlib.multiply(x, const(zero)), shift),
                                               w))
    assert "multiply" in op_names(ForwardFoldScaleAxis()(blocked).body.args[0])


def test_backward_folds_into_both_convs_of_a_residual_add():
    x = var("x", shape=(1, 3, 5, 5), dtype="float64")
    w1, w2 = var("w1", shape=(4, 3, 3, 3), dtype="float64"), var("w2", shape=(4, 3, 1, 1),
                                                                  dtype="float64")
    residual = irlib.add(irlib.nn.conv2d(x, w1, padding=(1, 1)), irlib.nn.conv2d(x, w2))
    func = Function([x, w1, w2], irlib.multiply(residual, const(f64(4, 1, 1))))
    out = BackwardFoldScaleAxis()(IRModule.from_expr(func))
    body = out["main"].body
    assert body.op.name == "add"
    assert all(arg.op.name == "nn.conv2d" and op_names(arg.args[1]) == ["multiply"]
               for arg in body.args)
    inputs = [f64(1, 3, 5, 5), f64(4, 3, 3, 3), f64(4, 3, 1, 1)]
    assert_close(run(out, inputs), run(IRModule.from_expr(func), inputs))
