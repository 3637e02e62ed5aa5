"""The nn builder's tensor ops (arithmetic, comparison, math, casts, matmul, sums, shapes,
indexing, creation): each exported in a tiny module, run on the interpreter and compared with
torch or numpy written here; symbolic dims exported once and run at several sizes; errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from irlib.frontend import nn
from irlib.frontend.nn import OpError, op, spec

torch = pytest.importorskip("torch")
interp = pytest.importorskip("interp")

SETTINGS = settings(max_examples=20, deadline=None)


class Apply(nn.Module):
    """A module whose forward applies ``fn`` to its (one to three) inputs."""

    def __init__(self, fn):
        self.fn = fn

    def forward(self, x, y=None, z=None):
        args = [a for a in (x, y, z) if a is not None]
        return self.fn(*args)

    def main(self, x, y=None, z=None):
        return self.forward(x, y, z)


def export(fn, *specs, method="forward"):
    """The IRModule of ``Apply(fn)`` with inputs of the given ``(shape, dtype)`` specs."""
    names = ["x", "y", "z"]
    arg_specs = {names[i]: spec.Tensor(shape, dtype) for i, (shape, dtype) in enumerate(specs)}
    mod, params = Apply(fn).export_tvm({method: arg_specs})
    assert params == []
    return mod


def evaluate(mod, *arrays, method="forward"):
    """Run ``method`` of ``mod`` on the debug interpreter; numpy results (tuples kept)."""
    func = interp.create_executor("debug", mod).evaluate(mod.get_global_var(method))
    return _to_numpy(func(*arrays))


def _to_numpy(value):
    if hasattr(value, "numpy"):
        return value.numpy()
    return tuple(_to_numpy(v) for v in value)


def run(fn, *arrays):
    """Export ``fn`` over inputs shaped like ``arrays`` and run it on them."""
    mod = export(fn, *[(a.shape, str(a.dtype)) for a in arrays])
    return evaluate(mod, *arrays)


def rand(shape, dtype="float32", seed=0):
    rng = np.random.default_rng(seed)
    if dtype.startswith("int"):
        return rng.integers(-5, 6, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


shapes = hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5)


# -- arithmetic and comparison ------------------------------------------------------------------

BINARY = {
    "add": (op.add, np.add), "subtract": (op.subtract, np.subtract),
    "multiply": (op.multiply, np.multiply), "divide": (op.divide, np.divide),
    "maximum": (op.maximum, np.maximum), "minimum": (op.minimum, np.minimum),
    "less": (op.less, np.less), "less_equal": (op.less_equal, np.less_equal),
    "greater": (op.greater, np.greater), "greater_equal": (op.greater_equal, np.greater_equal),
    "equal": (op.equal, np.equal), "not_equal": (op.not_equal, np.not_equal),
}


@SETTINGS
@given(st.sampled_from(sorted(BINARY)), hnp.mutually_broadcastable_shapes(num_shapes=2,
                                                                          max_side=4))
def test_binary_ops_broadcast_like_numpy(name, shapes_pair):
    ours, reference = BINARY[name]
    a_shape, b_shape = shapes_pair.input_shapes
    a, b = rand(a_shape, seed=1), rand(b_shape, seed=2)
    if name not in ("add", "subtract", "multiply", "divide"):
        a, b = np.round(a), np.round(b)      # small integer values: ties and equalities occur
    out = run(ours, a, b)
    expected = reference(a, b)
    assert out.shape == expected.shape and out.dtype == expected.dtype
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_python_operators_use_the_ops():
    a, b = rand((2, 3), seed=3), rand((3,), seed=4)
    outs = run(lambda x, y: (x + y, x - y, x * y, x / y, -x, x < y, x <= 0.5, x > y, x >= y,
                             x.maximum(y), x.minimum(0.0), 2.0 * x, 1.0 - x), a, b)
    expected = (a + b, a - b, a * b, a / b, -a, a < b, a <= 0.5, a > b, a >= b,
                np.maximum(a, b), np.minimum(a, 0.0), 2 * a, 1 - a)
    for got, want in zip(outs, expected):
        np.testing.assert_allclose(got, want, rtol=1e-6)


UNARY = {
    "negative": (op.negative, lambda t: -t), "exp": (op.exp, torch.exp),
    "sqrt": (op.sqrt, lambda t: torch.sqrt(t.abs())), "square": (op.square, torch.square),
    "tanh": (op.tanh, torch.tanh), "sigmoid": (op.sigmoid, torch.sigmoid),
}


@SETTINGS
@given(st.sampled_from(sorted(UNARY)), shapes)
def test_unary_ops_match_torch(name, shape):
    ours, reference = UNARY[name]
    x = rand(shape, seed=5)
    if name == "sqrt":
        x = np.abs(x)
    out = run(ours, x)
    np.testing.assert_allclose(out, reference(torch.from_numpy(x)).numpy(), rtol=1e-5,
                               atol=1e-6)


def test_where_casts_the_condition_and_takes_numbers():
    c, a, b = rand((3, 1), "int32", seed=6), rand((1, 4), seed=7), rand((3, 4), seed=8)
    out, scalar = run(lambda c_, a_, b_: (op.where(c_, a_, b_), op.where(c_, 0.5, b_)), c, a, b)
    np.testing.assert_allclose(out, np.where(c != 0, a, b))
    np.testing.assert_allclose(scalar, np.where(c != 0, np.float32(0.5), b))


@SETTINGS
@given(shapes, st.sampled_from(["float64", "int32", "float16", "bool"]))
def test_astype_matches_numpy(shape, dtype):
    x = rand(shape, seed=9) * 4
    out = run(lambda t: op.astype(t, dtype), x)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, x.astype(dtype))


def test_astype_to_the_same_dtype_is_the_tensor_itself():
    seen = {}

    def fn(t):
        seen["same"] = op.astype(t, "float32") is t
        return t
    run(fn, rand((2,)))
    assert seen["same"]


# -- matmul and sum ---------------------------------------------------------------------------

@SETTINGS
@given(st.data())
def test_matmul_broadcasts_batches_like_torch(data):
    n, k, m = (data.draw(st.integers(1, 4)) for _ in range(3))
    batch = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3))
    a_batch, b_batch = batch.input_shapes
    a_rank1 = data.draw(st.booleans()) and not a_batch
    b_rank1 = data.draw(st.booleans()) and not b_batch
    a = rand((k,) if a_rank1 else a_batch + (n, k), seed=10)
    b = rand((k,) if b_rank1 else b_batch + (k, m), seed=11)
    out = run(lambda x, y: op.matmul(x, y), a, b)
    expected = torch.matmul(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    assert out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_matmul_out_dtype_accumulates_in_it():
    a = np.full((2, 40), 100, "int8")
    b = np.full((40, 3), 100, "int8")
    out = run(lambda x, y: op.matmul(x, y, out_dtype="int32"), a, b)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, np.full((2, 3), 400000, "int32"))


@SETTINGS
@given(st.data())
def test_sum_matches_numpy(data):
    shape = data.draw(shapes)
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1)
                     | st.lists(st.integers(0, len(shape) - 1), min_size=1, unique=True))
    keepdims = data.draw(st.booleans())
    x = rand(shape, seed=12)
    out = run(lambda t: op.sum(t, axis=axis, keepdims=keepdims), x)
    expected = np.sum(x, axis=tuple(axis) if isinstance(axis, list) else axis,
                      keepdims=keepdims)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


# -- shapes ---------------------------------------------------------------------------------------

@SETTINGS
@given(shapes, st.data())
def test_reshape_and_permute_dims(shape, data):
    x = rand(shape, seed=13)
    target = list(data.draw(st.permutations(list(shape))))
    if data.draw(st.booleans()):
        target[data.draw(st.integers(0, len(target) - 1))] = -1
    axes = data.draw(st.permutations(range(len(shape))))
    out, perm, rev = run(lambda t: (op.reshape(t, target), op.permute_dims(t, axes),
                                    op.permute_dims(t)), x)
    np.testing.assert_array_equal(out, x.reshape(target))
    np.testing.assert_array_equal(perm, np.transpose(x, axes))
    np.testing.assert_array_equal(rev, x.T)


@SETTINGS
@given(shapes, st.data())
def test_broadcast_to_squeeze_unsqueeze(shape, data):
    x = rand(shape, seed=14)
    lead = tuple(data.draw(st.lists(st.integers(1, 3), max_size=2)))
    target = lead + tuple(d if d != 1 else data.draw(st.integers(1, 3)) for d in shape)
    dim = data.draw(st.integers(-len(shape) - 1, len(shape)))
    ones_at = [i for i, d in enumerate(shape) if d == 1]
    out, unsq, all_sq = run(lambda t: (op.broadcast_to(t, target), op.unsqueeze(t, dim),
                                       op.squeeze(t, axis=None)), x)
    np.testing.assert_array_equal(out, np.broadcast_to(x, target))
    np.testing.assert_array_equal(unsq, torch.unsqueeze(torch.from_numpy(x), dim).numpy())
    np.testing.assert_array_equal(all_sq, np.squeeze(x))
    if ones_at:
        axis = data.draw(st.lists(st.sampled_from(ones_at), min_size=1, unique=True))
        np.testing.assert_array_equal(run(lambda t: op.squeeze(t, axis), x),
                                      np.squeeze(x, tuple(axis)))


def test_squeeze_defaults_to_the_last_axis():
    x = rand((1, 3, 1))
    assert run(lambda t: op.squeeze(t), x).shape == (1, 3)


@SETTINGS
@given(shapes, st.data())
def test_concat_matches_torch_cat(shape, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    sizes = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    pieces = []
    for i, size in enumerate(sizes):
        piece_shape = list(shape)
        piece_shape[dim] = size
        pieces.append(rand(tuple(piece_shape), seed=20 + i))
    out = run(lambda *ts: op.concat(list(ts), dim=dim), *pieces)
    expected = torch.cat([torch.from_numpy(p) for p in pieces], dim=dim).numpy()
    np.testing.assert_array_equal(out, expected)


@SETTINGS
@given(shapes, st.data())
def test_chunk_matches_torch(shape, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    chunks = data.draw(st.integers(1, 7))
    x = rand(shape, seed=15)
    out = run(lambda t: op.chunk(t, chunks, dim=dim), x)
    expected = torch.chunk(torch.from_numpy(x), chunks, dim=dim)
    assert len(out) == len(expected)
    for got, want in zip(out, expected):
        np.testing.assert_array_equal(got, want.numpy())


@SETTINGS
@given(shapes, st.data())
def test_split_matches_numpy(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    size = shape[axis]
    if data.draw(st.booleans()):
        how = data.draw(st.sampled_from([d for d in range(1, size + 1) if size % d == 0]))
    else:
        how = sorted(data.draw(st.lists(st.integers(0, size + 2), max_size=3)))
    x = rand(shape, seed=16)
    out = run(lambda t: op.split(t, how, axis=axis), x)
    expected = np.split(x, how, axis=axis)
    assert len(out) == len(expected)
    for got, want in zip(out, expected):
        np.testing.assert_array_equal(got, want)


def test_split_sections_also_match_torch_split():
    x = rand((6, 4))
    out = run(lambda t: op.split(t, 3, axis=0), x)
    for got, want in zip(out, torch.split(torch.from_numpy(x), 2, dim=0)):
        np.testing.assert_array_equal(got, want.numpy())


# -- padding, repetition, gathering, triangles --------------------------------------------------

@SETTINGS
@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=5), st.data())
def test_pad_matches_torch(shape, data):
    mode = data.draw(st.sampled_from(["constant", "reflect", "replicate"]))
    limit = (min(shape) - 1) if mode == "reflect" else 3
    amounts = data.draw(st.lists(st.integers(0, limit), min_size=2 * len(shape),
                                 max_size=2 * len(shape)))
    value = data.draw(st.sampled_from([0, 1.5, -2]))
    x = rand(shape, seed=17)
    out = run(lambda t: op.pad(t, amounts, mode=mode, value=value), x)
    # torch lists the last axis first; reflect/replicate pad only the trailing axes of a
    # batched tensor, so add two leading unit dims and pad every axis of x.
    torch_pad = []
    for axis in reversed(range(len(shape))):
        torch_pad += [amounts[2 * axis], amounts[2 * axis + 1]]
    batched = torch.from_numpy(x)[None, None]
    if mode == "constant":
        expected = torch.nn.functional.pad(batched, torch_pad, mode="constant", value=value)
    else:
        expected = torch.nn.functional.pad(batched, torch_pad, mode=mode)
    np.testing.assert_allclose(out, expected[0, 0].numpy())


@SETTINGS
@given(shapes, st.integers(1, 3), st.data())
def test_repeat_matches_numpy(shape, repeats, data):
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    x = rand(shape, seed=18)
    out = run(lambda t: op.repeat(t, repeats, axis=axis), x)
    np.testing.assert_array_equal(out, np.repeat(x, repeats, axis=axis))


def test_repeat_example_of_the_reference():
    x = np.array([[1, 2], [3, 4]], "int32")
    flat, rows = run(lambda t: (op.repeat(t, repeats=2), op.repeat(t, repeats=2, axis=1)), x)
    np.testing.assert_array_equal(flat, [1, 1, 2, 2, 3, 3, 4, 4])
    np.testing.assert_array_equal(rows, [[1, 1, 2, 2], [3, 3, 4, 4]])


@SETTINGS
@given(shapes, hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3), st.data())
def test_take_matches_numpy(shape, index_shape, data):
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    bound = int(np.prod(shape)) if axis is None else shape[axis]
    x = rand(shape, seed=19)
    indices = np.random.default_rng(20).integers(0, bound, size=index_shape).astype("int64")
    out = run(lambda t, i: op.take(t, i, axis=axis), x, indices)
    np.testing.assert_array_equal(out, np.take(x, indices, axis=axis))


@SETTINGS
@given(hnp.array_shapes(min_dims=2, max_dims=4, min_side=1, max_side=5), st.integers(-4, 4))
def test_triu_matches_torch(shape, diagonal):
    x = rand(shape, seed=21)
    out = run(lambda t: op.triu(t, diagonal), x)
    np.testing.assert_array_equal(out, torch.triu(torch.from_numpy(x), diagonal).numpy())


# -- creation -------------------------------------------------------------------------------------

@SETTINGS
@given(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
       st.sampled_from(["float32", "int64", "float16"]))
def test_creation_ops(shape, dtype):
    def fn(t):
        fill = nn.Tensor.from_scalar(2.5, "float32")
        return (op.zeros(shape, dtype), op.ones(shape, dtype), op.empty(shape, dtype),
                op.full(shape, fill, dtype), op.full(shape, fill, dtype=None),
                op.full(shape, 7, dtype), t)
    zeros, ones, empty, full, full_own, full_number, _ = run(fn, rand((1,)))
    np.testing.assert_array_equal(zeros, np.zeros(shape, dtype))
    np.testing.assert_array_equal(ones, np.ones(shape, dtype))
    assert empty.shape == tuple(shape) and empty.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(full, np.full(shape, 2.5, "float32").astype(dtype))
    assert full_own.dtype == np.float32 and full_own.shape == tuple(shape)
    np.testing.assert_array_equal(full_number, np.full(shape, 7, dtype))
    for out in (zeros, ones, full):
        assert out.dtype == np.dtype(dtype)


# -- symbolic dims: exported once, run at several sizes -------------------------------------------

def test_symbolic_dims_export_once_and_run_at_several_sizes():
    def fn(x, w):
        n = x.shape[1]
        assert not isinstance(n, int)
        heads = op.reshape(x, [2, n, 2, 3])                     # 0 code for n
        back = op.reshape(op.permute_dims(heads, [0, 2, 1, 3]), [4, n, 3])   # -1 infers n
        mask = op.triu(op.full([n, n], nn.Tensor.from_scalar(-1.0, "float32")), 1)
        grid = op.zeros(["n", 2], "float32") + op.broadcast_to(op.ones([1, 2]), [n, 2])
        first, second = op.chunk(x, 2, dim=2)
        padded = op.pad(x, [0, 0, 1, 2, 0, 0])
        joined = op.concat([x, x], dim=1)
        scores = op.matmul(heads, op.permute_dims(heads, [0, 1, 3, 2]))
        lin = op.matmul(x, w)
        total = op.sum(x, axis=1)
        return back, mask, grid, first, second, padded, joined, scores, lin, total

    mod = export(fn, ((2, "n", 6), "float32"), ((6, 5), "float32"))
    w = rand((6, 5), seed=22)
    for n in (1, 3, 7):
        x = rand((2, n, 6), seed=n)
        (back, mask, grid, first, second, padded, joined, scores, lin,
         total) = evaluate(mod, x, w)
        heads = x.reshape(2, n, 2, 3)
        np.testing.assert_array_equal(back, heads.transpose(0, 2, 1, 3).reshape(4, n, 3))
        np.testing.assert_array_equal(mask, np.triu(np.full((n, n), -1.0, "float32"), 1))
        np.testing.assert_array_equal(grid, np.ones((n, 2), "float32"))
        np.testing.assert_array_equal(first, x[:, :, :3])
        np.testing.assert_array_equal(second, x[:, :, 3:])
        np.testing.assert_array_equal(padded, np.pad(x, [(0, 0), (1, 2), (0, 0)]))
        np.testing.assert_array_equal(joined, np.concatenate([x, x], axis=1))
        np.testing.assert_allclose(scores, heads @ heads.transpose(0, 1, 3, 2), rtol=1e-5,
                                   atol=1e-5)
        np.testing.assert_allclose(lin, x @ w, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(total, x.sum(axis=1), rtol=1e-5, atol=1e-5)


def test_chunk_and_split_along_a_symbolic_dim():
    mod = export(lambda x: (op.chunk(x, 2, dim=1), op.split(x, [1, 3], axis=1),
                            op.split(x, 2, axis=1)), ((3, "n"), "float32"))
    for n in (4, 6):
        x = rand((3, n), seed=n)
        chunks, pieces, halves = evaluate(mod, x)
        for got, want in zip(chunks + halves, np.split(x, 2, axis=1) * 2):
            np.testing.assert_array_equal(got, want)
        for got, want in zip(pieces, np.split(x, [1, 3], axis=1)):
            np.testing.assert_array_equal(got, want)


def test_symbolic_reshape_keeps_static_codes_where_it_can():
    mod = export(lambda x: (op.reshape(x, [1, x.shape[1], 4, 2]),
                            op.reshape(x, [x.shape[1] * 8])), ((1, "n", 8), "float32"))
    text = mod.astext()
    assert "newshape=[1, 0, 4, 2]" in text
    assert "newshape=[-1]" in text
    for n in (2, 5):
        x = rand((1, n, 8), seed=n)
        split_heads, flat = evaluate(mod, x)
        np.testing.assert_array_equal(split_heads, x.reshape(1, n, 4, 2))
        np.testing.assert_array_equal(flat, x.reshape(-1))


# -- graph executor -------------------------------------------------------------------------------

def test_ops_run_on_the_graph_executor():
    def fn(x, y):
        scores = op.matmul(x, op.permute_dims(y, [0, 2, 1]))
        masked = op.triu(scores, 1)
        return op.concat([op.sum(masked, axis=-1, keepdims=True),
                          op.reshape(op.pad(x, [0, 0, 0, 0, 0, 1]), [2, 3, 5])], dim=2)

    x, y = rand((2, 3, 4), seed=23), rand((2, 3, 4), seed=24)
    mod = export(fn, (x.shape, "float32"), (y.shape, "float32"), method="main")
    module = interp.create_executor("graph", mod).evaluate()
    out = module(x, y).numpy()
    scores = np.triu(x @ y.transpose(0, 2, 1), 1)
    expected = np.concatenate([scores.sum(-1, keepdims=True),
                               np.pad(x, [(0, 0), (0, 0), (0, 1)])], axis=2)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


# -- errors name the module path ---------------------------------------------------------------

class Outer(nn.Module):
    def __init__(self, fn):
        self.inner = Apply(fn)

    def forward(self, x, y=None):
        return self.inner(x, y)


@pytest.mark.parametrize("fn, message", [
    (lambda x, y: op.add(x, y), "different dtypes"),
    (lambda x, y: op.matmul(x, y), "different dtypes"),
    (lambda x, y: op.concat([x, y], dim=0), "dtype"),
    (lambda x, y: op.where(x > 0, x, y), "different dtypes"),
])
def test_dtype_mismatches_name_the_module(fn, message):
    model = Outer(fn)
    with pytest.raises(OpError, match=f"(?s)model.inner: .*{message}"):
        model.export_tvm({"forward": {"x": spec.Tensor([2, 3], "float32"),
                                      "y": spec.Tensor([2, 3], "int32")}})


@pytest.mark.parametrize("fn, message", [
    (lambda x: op.split(x, 4, axis=1), "does not split into 4 equal sections"),
    (lambda x: op.split(x, [3, 1]), "ascending"),
    (lambda x: op.sum(x, axis=2), "out of range"),
    (lambda x: op.squeeze(x, axis=5), "out of range"),
    (lambda x: op.squeeze(x), "not 1"),
    (lambda x: op.unsqueeze(x, 4), "out of range"),
    (lambda x: op.permute_dims(x, [0, 0]), "repeat"),
    (lambda x: op.concat([x], dim=-3), "out of range"),
    (lambda x: op.chunk(x, 0), "positive"),
    (lambda x: op.reshape(x, [4, 4]), "cannot reshape"),
    (lambda x: op.reshape(x, [-1, -1]), "more than one -1"),
    (lambda x: op.pad(x, [1, 1]), "two amounts per axis"),
    (lambda x: op.pad(x, [0, 0, 3, 0], mode="reflect"), "smaller than its size"),
    (lambda x: op.pad(x, [0, 0, 1, 0], mode="circular"), "mode"),
    (lambda x: op.triu(op.sum(x, axis=0)), "rank >= 2"),
    (lambda x: op.take(x, x), "integer dtype"),
    (lambda x: op.repeat(x, 0), "positive"),
    (lambda x: op.full([2], x), "scalar"),
    (lambda x: op.zeros([2, -3]), "negative dim"),
    (lambda x: op.broadcast_to(x, [4, 3]), "broadcast"),
    (lambda x: op.matmul(x, x), "reduction|columns|rows"),
    (lambda x: op.exp(op.astype(x, "int32")), "float"),
    (lambda x: op.astype(x, "nonsense"), "dtype"),
])
def test_bad_arguments_raise_op_errors_naming_the_module(fn, message):
    model = Outer(fn)
    with pytest.raises(OpError, match=f"(?s)model.inner: .*({message})"):
        model.export_tvm({"forward": {"x": spec.Tensor([2, 3], "float32")}})


def test_reshape_zero_copies_the_input_dim_as_relax_does():
    class Split(nn.Module):
        def forward(self, x):
            return op.reshape(x, [0, -1, 2, 3])

    from irlib.frontend.nn import spec as _spec
    mod, _ = Split().export_tvm({"forward": {"x": _spec.Tensor(["n", 4, 6], "float32")}})
    import interp
    func = interp.create_executor("debug", mod).evaluate(mod.get_global_var("forward"))
    x = np.arange(2 * 4 * 6, dtype="float32").reshape(2, 4, 6)
    np.testing.assert_array_equal(func(x).numpy(), x.reshape(2, 4, 2, 3))


def test_split_of_a_symbolic_size_that_does_not_divide_raises_at_run_time():
    import interp
    from irlib.errors import IRError

    class Thirds(nn.Module):
        def forward(self, x):
            return op.split(x, 3, axis=0)[2]

    mod, _ = Thirds().export_tvm({"forward": {"x": spec.Tensor(["n"], "float32")}})
    func = interp.create_executor("debug", mod).evaluate(mod.get_global_var("forward"))
    np.testing.assert_array_equal(func(np.arange(6, dtype="float32")).numpy(), [4, 5])
    with pytest.raises(IRError, match="equal sections"):
        func(np.arange(7, dtype="float32"))
