"""SimplifyInference, CanonicalizeOps and their interplay with FoldScaleAxis/FoldConstant:
numpy oracles written here, and structural claims."""

import numpy as np
from hypothesis import given, settings, strategies as st

import irlib
from irlib import Function, IRModule, const, var
from irlib.ir import expr as E
from irlib.testing.budget import examples
from irlib.transform import (CanonicalizeOps, FoldConstant, FoldScaleAxis, PassContext,
                             Sequential, SimplifyInference)

from _graph_opt_helpers import assert_close, op_names, run
from helpers import assert_rewrites


def _along(vector, axis, ndim):
    shape = [1] * ndim
    shape[axis] = -1
    return vector.reshape(shape)


def np_batch_norm(x, g, b, m, v, axis, eps, center, scale):
    out = (x - _along(m, axis, x.ndim)) / np.sqrt(_along(v, axis, x.ndim) + eps)
    if scale:
        out = out * _along(g, axis, x.ndim)
    if center:
        out = out + _along(b, axis, x.ndim)
    return out


@settings(max_examples=examples(20), deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=2, max_size=4), data=st.data(),
       center=st.booleans(), scale=st.booleans())
def test_batch_norm_matches_numpy(shape, data, center, scale):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    channels = shape[axis]
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    x_val = rng.standard_normal(shape)
    g_val, b_val, m_val = (rng.standard_normal(channels) for _ in range(3))
    v_val = rng.uniform(0.5, 2.0, channels)
    x = var("x", shape=tuple(shape), dtype="float64")
    params = [var(n, shape=(channels,), dtype="float64") for n in "gbmv"]
    bn = irlib.nn.batch_norm(x, *params, axis=axis, epsilon=1e-3, center=center, scale=scale)
    mod = IRModule.from_expr(Function([x] + params, E.TupleGetItem(bn.astuple(), 0)))
    out = SimplifyInference()(mod)
    assert "nn.batch_norm" not in op_names(out["main"])
    expected = np_batch_norm(x_val, g_val, b_val, m_val, v_val, axis % len(shape), 1e-3,
                             center, scale)
    assert_close(run(out, [x_val, g_val, b_val, m_val, v_val]), expected)


def test_batch_norm_other_outputs_keep_the_call():
    x = var("x", shape=(2, 3))
    params = [var(n, shape=(3,)) for n in "gbmv"]
    bn = irlib.nn.batch_norm(x, *params).astuple()
    out = SimplifyInference()(Function([x] + params, E.Tuple((E.TupleGetItem(bn, 0),
                                                             E.TupleGetItem(bn, 1)))))
    assert op_names(out).count("nn.batch_norm") == 1


def test_dropout_becomes_identity():
    assert_rewrites(SimplifyInference(), """
    fn (%x: Tensor[(2, 3), float32]) { nn.relu(nn.dropout(%x, rate=0.3f).0) }""", """
    fn (%x: Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32] { nn.relu(%x) }""")


def test_batch_norm_becomes_scale_and_shift():
    # (x - mean) / sqrt(var + eps) * gamma + beta, with the per-channel vectors expanded
    # to broadcast over the axis (here 1 of NCHW: two trailing axes)
    assert_rewrites(SimplifyInference(), """
    fn (%x: Tensor[(1, 2, 3, 3), float32], %g: Tensor[(2), float32], %b: Tensor[(2), float32],
        %m: Tensor[(2), float32], %v: Tensor[(2), float32]) {
      nn.batch_norm(%x, %g, %b, %m, %v, epsilon=0.01f).0
    }""", """
    fn (%x: Tensor[(1, 2, 3, 3), float32], %g: Tensor[(2), float32], %b: Tensor[(2), float32],
        %m: Tensor[(2), float32], %v: Tensor[(2), float32]) -> Tensor[(1, 2, 3, 3), float32] {
      %0 = divide(1f, sqrt(add(%v, 0.01f)));
      %1 = multiply(%0, %g);
      %2 = negative(%m);
      %3 = multiply(%2, %1);
      %4 = add(%3, %b);
      %5 = multiply(%x, expand_dims(%1, axis=1, num_newaxis=2));
      add(%5, expand_dims(%4, axis=1, num_newaxis=2))
    }""")


def _norm_case(name, x_val, gamma, beta, **attrs):
    x = var("x", shape=x_val.shape, dtype="float64")
    g = var("g", shape=gamma.shape, dtype="float64")
    b = var("b", shape=beta.shape, dtype="float64")
    call = getattr(irlib.nn, name)(x, g, b, **attrs)
    mod = IRModule.from_expr(Function([x, g, b], call))
    out = SimplifyInference()(mod)
    assert "nn." + name not in op_names(out["main"])
    return run(out, [x_val, gamma, beta])


def test_layer_instance_group_norm_match_numpy():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4, 3, 3))
    gamma, beta = rng.standard_normal(4), rng.standard_normal(4)

    def normalise(data, axes):
        mean = data.mean(axis=axes, keepdims=True)
        return (data - mean) / np.sqrt(data.var(axis=axes, keepdims=True) + 1e-5)

    affine = _along(gamma, 1, 4), _along(beta, 1, 4)
    assert_close(_norm_case("layer_norm", x, gamma, beta, axis=1),
                 normalise(x, (1,)) * affine[0] + affine[1])
    assert_close(_norm_case("instance_norm", x, gamma, beta),
                 normalise(x, (2, 3)) * affine[0] + affine[1])
    grouped = normalise(x.reshape(2, 2, 2, 3, 3), (2, 3, 4)).reshape(x.shape)
    assert_close(_norm_case("group_norm", x, gamma, beta, num_groups=2),
                 grouped * affine[0] + affine[1])
    last = rng.standard_normal((3, 5))
    g5, b5 = rng.standard_normal(5), rng.standard_normal(5)
    assert_close(_norm_case("layer_norm", last, g5, b5), normalise(last, (1,)) * g5 + b5)


def test_l2_normalize_matches_numpy():
    x_val = np.random.default_rng(2).standard_normal((2, 3, 4))
    x = var("x", shape=(2, 3, 4), dtype="float64")
    mod = IRModule.from_expr(Function([x], irlib.nn.l2_normalize(x, 1e-12, axis=[1])))
    out = SimplifyInference()(mod)
    assert "nn.l2_normalize" not in op_names(out["main"])
    expected = x_val / np.sqrt(np.maximum((x_val ** 2).sum(axis=1, keepdims=True), 1e-12))
    assert_close(run(out, [x_val]), expected)


def test_canonicalize_ops_expands_bias_add():
    out = assert_rewrites(CanonicalizeOps(), """
    fn (%x: Tensor[(1, 4, 3, 3), float32], %b: Tensor[(4), float32]) { nn.bias_add(%x, %b) }
    """, """
    fn (%x: Tensor[(1, 4, 3, 3), float32], %b: Tensor[(4), float32])
        -> Tensor[(1, 4, 3, 3), float32] {
      add(%x, expand_dims(%b, axis=1, num_newaxis=2))
    }""")
    # on the last axis the bias broadcasts as it is
    assert_rewrites(CanonicalizeOps(), """
    fn (%x: Tensor[(1, 4, 3, 3), float32], %c: Tensor[(3), float32]) {
      nn.bias_add(%x, %c, axis=-1)
    }""", """
    fn (%x: Tensor[(1, 4, 3, 3), float32], %c: Tensor[(3), float32])
        -> Tensor[(1, 4, 3, 3), float32] {
      add(%x, %c)
    }""")
    rng = np.random.default_rng(3)
    x_val, b_val = rng.standard_normal((1, 4, 3, 3)).astype("float32"), \
        rng.standard_normal(4).astype("float32")
    assert_close(run(IRModule.from_expr(out), [x_val, b_val]), x_val + b_val[:, None, None])


def _conv_bn_relu(rng, channels_in=3, channels=4):
    x = var("x", shape=(1, channels_in, 6, 6))
    weight = const(rng.standard_normal((channels, channels_in, 3, 3)).astype("float32"))
    g, b, m = (const(rng.standard_normal(channels).astype("float32")) for _ in range(3))
    v = const(rng.uniform(0.5, 2, channels).astype("float32"))
    conv = irlib.nn.conv2d(x, weight, padding=(1, 1))
    bn = E.TupleGetItem(irlib.nn.batch_norm(conv, g, b, m, v).astuple(), 0)
    return IRModule.from_expr(Function([x], irlib.nn.relu(bn)))


def test_conv_batch_norm_folds_into_the_weights():
    rng = np.random.default_rng(4)
    mod = _conv_bn_relu(rng)
    pipeline = Sequential([SimplifyInference(), FoldConstant(), FoldScaleAxis(), FoldConstant()])
    with PassContext(opt_level=3):
        out = pipeline(mod)
    main = out["main"]
    names = op_names(main)
    assert "nn.batch_norm" not in names and "multiply" not in names
    assert names == ["nn.conv2d", "add", "nn.relu"]
    conv = main.body.args[0].args[0]
    assert isinstance(conv.args[1], E.Constant)              # the folded weight
    x_val = rng.standard_normal((1, 3, 6, 6)).astype("float32")
    assert_close(run(out, [x_val]), run(mod, [x_val]), rtol=1e-4, atol=1e-5)


def test_fold_scale_axis_is_skipped_below_opt_level_3():
    mod = _conv_bn_relu(np.random.default_rng(5))
    out = Sequential([SimplifyInference(), FoldConstant(), FoldScaleAxis()])(mod)
    assert "multiply" in op_names(out["main"])
