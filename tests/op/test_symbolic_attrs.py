"""Op relations with symbolic dims in types and attributes, checked against numpy.

For each case the inferred type (with size variables) is substituted at concrete sizes and
compared with the shape numpy gives on arrays of those sizes; the calls are also run on the
interpreter through a function that binds the sizes from its arguments.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import interp
import irlib
from irlib import size_var
from irlib.ir.dims import DimExpr, substitute_dim
from irlib.ir.types import TensorType
from helpers import tvar as _t

N, M = size_var("n"), size_var("m")


def infer(expr):
    mod = irlib.transform.InferType()(irlib.IRModule.from_expr(expr))
    return mod["main"].body.checked_type


def concrete(shape, sizes):
    return tuple(substitute_dim(dim, sizes) for dim in shape)


def run_function(params, body, args):
    """``fn (params) { body }`` run on the interpreter with numpy ``args``."""
    mod = irlib.IRModule.from_expr(irlib.Function(params, body))
    return interp.create_executor("debug", mod).evaluate()(*args)


# -- reshape ---------------------------------------------------------------------------------

@st.composite
def reshape_cases(draw):
    """(input symbolic shape, sizes, newshape codes, expected concrete output shape)."""
    rank = draw(st.integers(1, 4))
    static = draw(st.lists(st.sampled_from([1, 2, 3, 4, 6]), min_size=rank, max_size=rank))
    sym_axis = draw(st.integers(0, rank - 1))
    nv = draw(st.integers(1, 5))
    shape = [N if i == sym_axis else d for i, d in enumerate(static)]
    real = [nv if i == sym_axis else d for i, d in enumerate(static)]
    codes, expected = [], []
    used_infer = False
    i = 0
    while i < rank:
        choice = draw(st.sampled_from(["copy", "literal", "infer", "merge", "split", "rest"]))
        if choice == "rest":
            codes.append(-2)
            expected.extend(real[i:])
            break
        if choice == "merge" and i + 1 < rank:
            codes.append(-3)
            expected.append(real[i] * real[i + 1])
            i += 2
            continue
        if choice == "split" and i != sym_axis and static[i] in (4, 6):
            first = 2
            second = static[i] // 2
            codes.extend([-4, first, draw(st.sampled_from([second, -1]))])
            expected.extend([first, second])
            i += 1
            continue
        if choice == "infer" and not used_infer:
            used_infer = True
            codes.append(-1)
        elif choice == "copy":
            codes.append(0)
        else:
            codes.append(shape[i] if shape[i] != 0 else 1)
        expected.append(real[i])
        i += 1
    return shape, {"n": nv}, codes, tuple(expected)


@settings(max_examples=60, deadline=None)
@given(reshape_cases())
def test_reshape_relation_with_symbolic_codes(case):
    shape, sizes, codes, expected = case
    x = irlib.var("x", shape=shape)
    call = irlib.reshape(x, codes)
    ty = infer(irlib.Function([x], call))
    assert all(isinstance(d, (int, DimExpr)) for d in ty.shape), ty   # never Any
    assert concrete(ty.shape, sizes) == expected
    data = np.arange(int(np.prod(concrete(shape, sizes))), dtype="float32").reshape(
        concrete(shape, sizes))
    out = run_function([x], call, [data])
    np.testing.assert_array_equal(out.numpy(), data.reshape(expected))


def test_reshape_symbolic_newshape_examples():
    x = irlib.var("x", shape=(1, N, 64))
    assert infer(irlib.reshape(x, [1, N, 4, 16])) == TensorType((1, N, 4, 16))
    assert infer(irlib.reshape(x, [N, -1])) == TensorType((N, 64))
    assert infer(irlib.reshape(x, [-1, 2 * N, 32])) == TensorType((1, 2 * N, 32))
    flat = irlib.var("f", shape=(64 * N,))
    assert infer(irlib.reshape(flat, [N, -1])) == TensorType((N, 64))
    packed = irlib.var("p", shape=(4 * N, 3))
    assert infer(irlib.reshape(packed, [-4, N, -1, 0])) == TensorType((N, 4, 3))
    assert infer(irlib.reshape(packed, [-4, -1, N, 0])) == TensorType((4, N, 3))
    with pytest.raises(irlib.TypeInferenceError, match="more than one -1"):
        infer(irlib.reshape(x, [N, -1, -1]))


# -- strided_slice ---------------------------------------------------------------------------

@st.composite
def slice_cases(draw):
    """(n value, begin, end, stride) in bounds at that n; begin/end may be symbolic."""
    nv = draw(st.integers(2, 8))
    k1 = draw(st.integers(0, nv))
    k2 = draw(st.integers(0, nv - k1))
    # begin = k1 (int) or nv - (nv - k1) spelled n - c; end likewise, end >= begin
    begin = draw(st.sampled_from([k1, N - (nv - k1)]))
    end_value = k1 + k2
    end = draw(st.sampled_from([end_value, N - (nv - end_value)]))
    if not isinstance(begin, DimExpr) and not isinstance(end, DimExpr):
        end = N - (nv - end_value)
    stride = draw(st.integers(1, 3))
    return nv, begin, end, stride


@settings(max_examples=60, deadline=None)
@given(slice_cases(), st.booleans())
def test_strided_slice_relation_with_symbolic_bounds(case, static_axis):
    nv, begin, end, stride = case
    axis_dim = nv if static_axis else N
    x = irlib.var("x", shape=(3, axis_dim))
    call = irlib.strided_slice(x, begin=[0, begin], end=[3, end], strides=[1, stride])
    ty = infer(irlib.Function([x], call))
    b, e = substitute_dim(begin, {"n": nv}), substitute_dim(end, {"n": nv})
    data = np.arange(3 * nv, dtype="float32").reshape(3, nv)
    expected = data[:, b:e:stride]
    assert concrete(ty.shape, {"n": nv}) == expected.shape
    # the sizes come from the argument (axis n) or, for a static axis, from a size parameter
    if static_axis:
        n_param = irlib.var("n", shape=(), dtype="int64")
        mod = irlib.IRModule.from_expr(irlib.Function([x, n_param], call,
                                                      attrs={"size_params": ["n"]}))
        out = interp.create_executor("debug", mod).evaluate()(data, np.int64(nv))
    else:
        out = run_function([x], call, [data])
    np.testing.assert_array_equal(out.numpy(), expected)


def test_strided_slice_symbolic_examples():
    cache = irlib.var("k", shape=(2048, 64))
    assert infer(irlib.strided_slice(cache, [0, 0], [M, 64])) == TensorType((M, 64))
    x = irlib.var("x", shape=(1, N, 64))
    assert infer(irlib.strided_slice(x, [0, N - 1], [1, N])) == TensorType((1, 1, 64))
    assert infer(irlib.strided_slice(x, [0, 1], [1, N])) == TensorType((1, N - 1, 64))
    assert infer(irlib.strided_slice(x, [0, 0], [1, N], [1, 2])).shape[1] == (N + 1) // 2
    assert infer(irlib.strided_slice(x, [0, M], [1, 4], axes=None,
                                     slice_mode="size")) == TensorType((1, 4, 64))
    # int bounds on a symbolic axis stay unknown (n may be smaller than 3)
    assert infer(irlib.strided_slice(x, [0, 1], [1, 3])).shape[1] == irlib.Any


# -- other ops keep symbolic dims --------------------------------------------------------------

def _cases():
    """(name, input shapes/dtypes, builder of the call from vars, numpy of the arrays)."""
    return [
        ("take", [((50, 8), "float32"), ((1, N), "int32")],
         lambda w, i: irlib.take(w, i, axis=0), lambda w, i: np.take(w, i, axis=0)),
        ("concatenate", [((1, N, 4), "float32"), ((1, M, 4), "float32")],
         lambda a, b: irlib.concatenate([a, b], axis=1),
         lambda a, b: np.concatenate([a, b], axis=1)),
        ("split", [((1, N, 6), "float32")],
         lambda a: irlib.split(a, 3, axis=2)[1], lambda a: np.split(a, 3, axis=2)[1]),
        ("squeeze", [((1, N, 1), "float32")],
         lambda a: irlib.squeeze(a, axis=[2]), lambda a: np.squeeze(a, axis=2)),
        ("expand_dims", [((N, 4), "float32")],
         lambda a: irlib.expand_dims(a, axis=0), lambda a: a[None]),
        ("transpose", [((1, N, 2, 3), "float32")],
         lambda a: irlib.transpose(a, [0, 2, 1, 3]), lambda a: a.transpose(0, 2, 1, 3)),
        ("batch_matmul", [((2, N, 3), "float32"), ((2, M, 3), "float32")],
         lambda a, b: irlib.nn.batch_matmul(a, b),
         lambda a, b: np.einsum("bik,bjk->bij", a, b)),
        ("dense", [((N, 4), "float32"), ((5, 4), "float32")],
         lambda a, w: irlib.nn.dense(a, w), lambda a, w: a @ w.T),
        ("matmul", [((N, 4), "float32"), ((4, M), "float32")],
         lambda a, b: irlib.nn.matmul(a, b), lambda a, b: a @ b),
        ("softmax", [((1, N, M), "float32")],
         lambda a: irlib.nn.softmax(a),
         lambda a: np.exp(a - a.max(-1, keepdims=True))
         / np.exp(a - a.max(-1, keepdims=True)).sum(-1, keepdims=True)),
        ("layer_norm", [((1, N, 4), "float32"), ((4,), "float32"), ((4,), "float32")],
         lambda a, g, b: irlib.nn.layer_norm(a, g, b),
         lambda a, g, b: (a - a.mean(-1, keepdims=True))
         / np.sqrt(a.var(-1, keepdims=True) + 1e-5) * g + b),
        ("mean", [((1, N, 4), "float32")],
         lambda a: irlib.mean(a, axis=-1, keepdims=True),
         lambda a: a.mean(-1, keepdims=True)),
        ("sum", [((1, N, 4), "float32")],
         lambda a: irlib.sum(a, axis=2), lambda a: a.sum(2)),
        ("where", [((1, 1, N, M), "bool"), ((1, 2, N, M), "float32"), ((1,), "float32")],
         lambda c, a, b: irlib.where(c, a, b), lambda c, a, b: np.where(c, a, b)),
        ("trilu", [((N, M), "float32"), ((), "int64")],
         lambda a, k: irlib.op.registry.make_call("dyn.trilu", (a, k), {"upper": True}),
         lambda a, k: np.triu(a, int(k))),
        ("full", [((N,), "float32")],
         lambda a: irlib.add(irlib.full(irlib.const(2.0), shape=[N, N], dtype="float32"), a),
         lambda a: np.full((a.shape[0], a.shape[0]), 2.0, "float32") + a),
        ("zeros_ones", [((M, N), "float32")],
         lambda a: irlib.add(irlib.zeros([M, N], "float32"),
                             irlib.multiply(irlib.ones([1, N], "float32"), a)),
         lambda a: a + 0.0),
        ("broadcast_to", [((1, N, 1), "float32"), ((M,), "float32")],
         lambda a, b: irlib.broadcast_to(a, [2, N, M]),
         lambda a, b: np.broadcast_to(a, (2, a.shape[1], b.shape[0]))),
    ]


@pytest.mark.parametrize("case", _cases(), ids=lambda case: case[0])
def test_ops_keep_symbolic_dims(case):
    _, inputs, build, reference = case
    params = [_t(f"a{i}", shape, dtype) for i, (shape, dtype) in enumerate(inputs)]
    call = build(*params)
    ty = infer(irlib.Function(params, call))
    assert any(isinstance(d, DimExpr) for d in ty.shape), ty
    assert not any(d is irlib.Any for d in ty.shape), ty
    rng = np.random.default_rng(0)
    for nv, mv in ((2, 3), (5, 1)):
        sizes = {"n": nv, "m": mv}
        args = []
        for shape, dtype in inputs:
            real = concrete(shape, sizes)
            if dtype == "bool":
                args.append(rng.random(real) > 0.5)
            elif dtype.startswith("int"):
                args.append(rng.integers(0, 3, real).astype(dtype))
            else:
                args.append(rng.standard_normal(real).astype(dtype))
        expected = reference(*args)
        assert concrete(ty.shape, sizes) == expected.shape
        out = run_function(params, call, args)
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-4, atol=1e-5)


# -- text format ----------------------------------------------------------------------------------

def test_print_parse_round_trip_of_symbolic_attrs():
    seq = size_var("seq_len")
    x = irlib.var("x", shape=(1, seq, 64))
    y = irlib.var("y", shape=(M,))
    body = irlib.strided_slice(irlib.reshape(x, [1, seq, 4, 16]), begin=[0, 1],
                               end=[1, seq - 1])
    body = irlib.broadcast_to(irlib.sum(body, axis=[2, 3], keepdims=True),
                              [2, seq - 2, 2 * M, seq // 2 + M])
    mod = irlib.transform.InferType()(irlib.IRModule.from_expr(irlib.Function([x, y], body)))
    text = mod.astext()
    assert "newshape=[1, seq_len, 4, 16]" in text
    assert "end=[1, seq_len - 1]" in text
    assert "shape=[2, seq_len - 2, 2*m, m + floordiv(seq_len, 2)]" in text
    again = irlib.parse(text)
    irlib.assert_structural_equal(again["main"], mod["main"])
    assert again.astext() == text


# -- passes ---------------------------------------------------------------------------------------

def test_passes_leave_symbolic_attrs_for_run_time():
    x = irlib.var("x", shape=(N, N))
    body = irlib.add(x, irlib.full(irlib.const(1.0), shape=[N, N], dtype="float32"))
    body = irlib.add(body, irlib.reshape(irlib.zeros([N * N], "float32"), [N, N]))
    body = irlib.add(body, irlib.strided_slice(irlib.ones([8, N], "float32"), [0, 0], [N, N]))
    mod = irlib.transform.InferType()(irlib.IRModule.from_expr(irlib.Function([x], body)))
    data = np.arange(9, dtype="float32").reshape(3, 3)
    expected = data + 2.0
    for transform in (irlib.transform.FoldConstant(), irlib.transform.PartialEvaluate(),
                      irlib.transform.ToANormalForm(),
                      irlib.transform.EliminateCommonSubexpr(),
                      irlib.transform.DeadCodeElimination()):
        out_mod = transform(mod)
        got = interp.create_executor("debug", out_mod).evaluate()(data)
        np.testing.assert_array_equal(got.numpy(), expected)
    folded = irlib.transform.FoldConstant()(mod)
    assert "full(1f" in folded.astext()   # not folded: its size is known only at run time


@pytest.mark.parametrize("nv,mv", [(5, 2), (4, 4), (3, 0)])
def test_split_at_symbolic_index(nv, mv):
    x = irlib.var("x", shape=(1, N, 3))
    m_param = irlib.var("m", shape=(), dtype="int64")
    body = irlib.split(x, [M], axis=1).astuple()
    ty = infer(irlib.Function([x, m_param], body, attrs={"size_params": ["m"]}))
    assert [f.shape for f in ty.fields] == [(1, M, 3), (1, N - M, 3)]
    mod = irlib.IRModule.from_expr(irlib.Function([x, m_param], body,
                                                  attrs={"size_params": ["m"]}))
    data = np.arange(3 * nv, dtype="float32").reshape(1, nv, 3)
    out = interp.create_executor("debug", mod).evaluate()(data, np.int64(mv))
    np.testing.assert_array_equal(out[0].numpy(), data[:, :mv])
    np.testing.assert_array_equal(out[1].numpy(), data[:, mv:])
