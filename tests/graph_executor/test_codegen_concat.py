"""Concatenations inside fused groups (jitkernels.codegen.concat_split, loops.split_nest):
an output that reads a ``concatenate`` elementwise (DenseNet's ``relu(concat + shift)``) is
written part by part along the axis, each part reading one field with no per-element
choice. Every case is compared with numpy written here, with the split on and off."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import irlib
import interp
from irlib import var

pytest.importorskip("numba")

from jitkernels.codegen import concat_split  # noqa: E402


def _run(params, body, values):
    """Build ``fn(params) { body }`` for the CPU, run it on ``values``; the output and the
    sources of the generated kernels (the build must have generated every group)."""
    from interp import graph_executor
    factory = interp.build(irlib.IRModule.from_expr(irlib.Function(params, body)),
                           target="cpu")
    assert set(factory.report["functions"].values()) == {"codegen"}, factory.report
    gmod = graph_executor.GraphModule(factory["default"](interp.cpu(0)))
    for index, value in enumerate(values):
        gmod.set_input(index, value)
    gmod.run()
    sources = [c.kernel.source for c in factory.lib.compiled.values()]
    return gmod.get_output(0).numpy(), sources


def _fields(draw_sizes, shape, axis, dtype, rng):
    """Field shapes (``shape`` with the axis resized) and random values."""
    shapes = []
    for size in draw_sizes:
        s = list(shape)
        s[axis] = size
        shapes.append(tuple(s))
    return shapes, [rng.standard_normal(s).astype(dtype) for s in shapes]


@pytest.fixture(params=[True, False], ids=["split", "choice"])
def split(request, monkeypatch):
    """Runs a test with the split nest on and off (the off path is the oracle's twin)."""
    monkeypatch.setattr(concat_split, "SPLIT_CONCAT", request.param)
    return request.param


@settings(max_examples=8, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=4), data=st.data(),
       dtype=st.sampled_from(["float32", "float64"]),
       epilogue=st.sampled_from(["shift_relu", "scale_shift_relu", "bias_add", "none",
                                 "full"]))
def test_concat_with_an_elementwise_epilogue_matches_numpy(shape, data, dtype, epilogue):
    rank = len(shape)
    axis = data.draw(st.integers(-rank, rank - 1), label="axis")
    sizes = data.draw(st.lists(st.integers(1, 7), min_size=1, max_size=6), label="sizes")
    rng = np.random.default_rng(len(sizes) * 31 + rank)
    shapes, values = _fields(sizes, shape, axis % rank, dtype, rng)
    params = [var(f"x{k}", shape=s, dtype=dtype) for k, s in enumerate(shapes)]
    out_shape = list(shape)
    out_shape[axis % rank] = sum(sizes)
    cat = irlib.concatenate(params, axis=axis)
    expected = np.concatenate(values, axis=axis)
    per_axis = [1] * rank
    per_axis[axis % rank] = sum(sizes)
    if epilogue in ("shift_relu", "scale_shift_relu"):
        shift = rng.standard_normal(per_axis).astype(dtype)
        params.append(var("shift", shape=tuple(per_axis), dtype=dtype))
        values.append(shift)
        body = cat
        if epilogue == "scale_shift_relu":
            body = irlib.multiply(body, irlib.const(0.5, dtype=dtype))
            expected = expected * dtype_scalar(0.5, dtype)
        body = irlib.nn.relu(irlib.add(body, params[-1]))
        expected = np.maximum(expected + shift, 0)
    elif epilogue == "bias_add":
        bias = rng.standard_normal(sum(sizes)).astype(dtype)
        params.append(var("bias", shape=(sum(sizes),), dtype=dtype))
        values.append(bias)
        body = irlib.exp(irlib.nn.bias_add(cat, params[-1], axis=axis))
        expected = np.exp(expected + bias.reshape(per_axis))
    elif epilogue == "full":                   # another input of the output's shape
        other = rng.standard_normal(out_shape).astype(dtype)
        params.append(var("other", shape=tuple(out_shape), dtype=dtype))
        values.append(other)
        body = irlib.subtract(params[-1], irlib.negative(cat))
        expected = other + expected
    else:
        body = cat
    got, sources = _run(params, body, values)
    np.testing.assert_allclose(got, expected, rtol=1e-6 if dtype == "float32" else 1e-12)
    assert not any(" if " in s for s in sources), sources


def dtype_scalar(value, dtype):
    """``value`` as a numpy scalar of ``dtype`` (numpy's own product rounding)."""
    return np.dtype(dtype).type(value)


@settings(max_examples=4, deadline=None)
@given(rows=st.integers(1, 6), left=st.lists(st.integers(1, 5), min_size=2, max_size=4),
       right=st.lists(st.integers(1, 5), min_size=2, max_size=4))
def test_two_concatenations_with_different_boundaries(rows, left, right):
    """``concat(a, b) * concat(c, d, e) + 1``: the parts are the union of both boundary
    sets; each part reads one field of each concatenation."""
    total = sum(left)
    right = right[:-1] + [total - sum(right[:-1])] if sum(right[:-1]) < total else [total]
    rng = np.random.default_rng(rows)
    xs = [rng.standard_normal((rows, n)).astype("float32") for n in left]
    ys = [rng.standard_normal((rows, n)).astype("float32") for n in right]
    px = [var(f"x{k}", shape=(rows, n)) for k, n in enumerate(left)]
    py = [var(f"y{k}", shape=(rows, n)) for k, n in enumerate(right)]
    body = irlib.add(irlib.multiply(irlib.concatenate(px, axis=1),
                                    irlib.concatenate(py, axis=1)), irlib.const(1.0))
    got, sources = _run(px + py, body, xs + ys)
    expected = np.concatenate(xs, axis=1) * np.concatenate(ys, axis=1) + np.float32(1.0)
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert not any(" if " in s for s in sources)


def test_concatenations_on_two_axes_split_on_one_and_choose_on_the_other(split):
    """The second concatenation's axis is not the split one: it keeps its per-element
    choice (still exact)."""
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((2, 3)).astype("float32"), rng.standard_normal((2, 2)).astype(
        "float32")
    c, d = rng.standard_normal((1, 5)).astype("float32"), rng.standard_normal((1, 5)).astype(
        "float32")
    pa, pb, pc, pd = (var(n, shape=v.shape) for n, v in zip("abcd", (a, b, c, d)))
    body = irlib.nn.relu(irlib.add(irlib.concatenate([pa, pb], axis=1),
                                   irlib.concatenate([pc, pd], axis=0)))
    got, _ = _run([pa, pb, pc, pd], body, [a, b, c, d])
    expected = np.maximum(np.concatenate([a, b], 1) + np.concatenate([c, d], 0), 0)
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_concatenation_read_through_a_transpose_keeps_the_choice(split):
    """``transpose(concat(...))`` reads the concatenation at a permuted index: no split on
    the output's axes from it, the result still exact."""
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((3, 2)).astype("float32"), rng.standard_normal((3, 4)).astype(
        "float32")
    pa, pb = var("a", shape=(3, 2)), var("b", shape=(3, 4))
    body = irlib.exp(irlib.transpose(irlib.concatenate([pa, pb], axis=1), axes=(1, 0)))
    got, _ = _run([pa, pb], body, [a, b])
    np.testing.assert_allclose(got, np.exp(np.concatenate([a, b], 1).T), rtol=1e-6)


def test_densenet_shaped_group_reads_each_field_once_per_pixel(split):
    """A DenseNet transition's ``relu(concat(6 x NHWC 32 channels) + shift)``: with the
    split each field is one contiguous loop of 32 channels per pixel, no choice."""
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal((1, 5, 6, 32)).astype("float32") for _ in range(6)]
    shift = rng.standard_normal((1, 1, 1, 192)).astype("float32")
    params = [var(f"x{k}", shape=(1, 5, 6, 32)) for k in range(6)] + \
        [var("shift", shape=(1, 1, 1, 192))]
    body = irlib.nn.relu(irlib.add(irlib.concatenate(params[:6], axis=3), params[6]))
    got, (source,) = _run(params, body, xs + [shift])
    np.testing.assert_array_equal(got, np.maximum(np.concatenate(xs, 3) + shift, 0))
    if split:
        assert source.count("for i3 in range(") == 6 and " if " not in source
    else:
        assert " if " in source


def test_split_nest_runs_its_shared_loops_in_parallel_past_the_threshold(monkeypatch):
    monkeypatch.setattr(concat_split, "SPLIT_PARALLEL_MIN_ELEMENTS", 1)
    rng = np.random.default_rng(8)
    xs = [rng.standard_normal((4, 9, n)).astype("float32") for n in (3, 5)]
    params = [var("a", shape=(4, 9, 3)), var("b", shape=(4, 9, 5))]
    body = irlib.nn.relu(irlib.concatenate(params, axis=2))
    got, (source,) = _run(params, body, xs)
    np.testing.assert_array_equal(got, np.maximum(np.concatenate(xs, 2), 0))
    assert "prange(36)" in source and "parallel=True" in source


def test_split_plan_bounds_and_refusals():
    a, b, c = var("a", shape=(2, 3)), var("b", shape=(2, 4)), var("c", shape=(2, 7))
    body = irlib.add(irlib.concatenate([a, b], axis=1), irlib.concatenate([b, a], axis=-1))
    typed = irlib.transform.InferType()(irlib.IRModule.from_expr(
        irlib.Function([a, b], body)))["main"].body
    assert concat_split.split_plan(typed, {}) == (1, [0, 3, 4, 7])
    plain = irlib.transform.InferType()(irlib.IRModule.from_expr(
        irlib.Function([c], irlib.exp(c))))["main"].body
    assert concat_split.split_plan(plain, {}) is None
