"""GEMM, pooling, reduction, normalisation and resize kernels vs the numpy reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irlib.testing.budget import examples
from jit_helpers import check_kernel, randn

seeds = st.integers(0, 2 ** 16)
dims = st.integers(1, 6)


@settings(max_examples=examples(20), deadline=None)
@given(seeds, st.integers(1, 3), dims, dims, dims, st.booleans(), st.booleans())
def test_gemm_kernels(seed, batch, m, k, n, trans_a, trans_b):
    rng = np.random.default_rng(seed)
    check_kernel("nn.dense", (randn(rng, batch, m, k), randn(rng, n, k)))
    a = randn(rng, k, m) if trans_a else randn(rng, m, k)
    b = randn(rng, n, k) if trans_b else randn(rng, k, n)
    check_kernel("nn.matmul", (a, b), dict(transpose_a=trans_a, transpose_b=trans_b))
    a3 = np.stack([a] * batch)
    b3 = np.stack([b] * (1 if seed % 2 else batch)) + np.float32(0.5)
    check_kernel("nn.batch_matmul", (a3, b3), dict(transpose_a=trans_a, transpose_b=trans_b))


@settings(max_examples=examples(15), deadline=None)
@given(seeds, st.lists(st.integers(1, 3), min_size=1, max_size=2), dims, dims, st.booleans())
def test_matmul_kernel_takes_nd_rows_and_transposed_weight_views(seed, lead, k, n, trans_b):
    """nn.matmul with an n-D ``a`` (its rows flattened) and a ``b`` given as the transposed
    view of a contiguous weight (an LM head tied to an embedding) agrees with the reference."""
    rng = np.random.default_rng(seed)
    a = randn(rng, *lead, k)
    weight = randn(rng, k, n) if trans_b else randn(rng, n, k)
    b = weight.T                                  # a non-contiguous view
    check_kernel("nn.matmul", (a, b), dict(transpose_b=trans_b))


@st.composite
def pool_cases(draw, n):
    pool = tuple(draw(st.integers(1, 3)) for _ in range(n))
    strides = tuple(draw(st.integers(1, 3)) for _ in range(n))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(n))
    padding = tuple(draw(st.integers(0, (pool[i % n] - 1) // 2 + 1)) for i in range(2 * n))
    spatial = tuple(draw(st.integers(dilation[i] * (pool[i] - 1) + 1, 7)) for i in range(n))
    rng = np.random.default_rng(draw(seeds))
    x = randn(rng, draw(st.integers(1, 2)), draw(st.integers(1, 3)), *spatial)
    return x, dict(pool_size=pool, strides=strides, dilation=dilation, padding=padding,
                   ceil_mode=draw(st.booleans()))


@settings(max_examples=examples(30), deadline=None)
@given(st.sampled_from([1, 2, 3]).flatmap(lambda n: st.tuples(st.just(n), pool_cases(n))),
       st.booleans(), st.booleans())
def test_pools(n_case, channels_last, include_pad):
    n, (x, attrs) = n_case
    canonical = "NC" + "DHW"[3 - n:]
    layout = canonical
    if channels_last:
        layout = "N" + canonical[2:] + "C"
        x = np.ascontiguousarray(np.moveaxis(x, 1, -1))
        attrs["layout"] = layout
    check_kernel(f"nn.max_pool{n}d", (x,), attrs)
    check_kernel(f"nn.avg_pool{n}d", (x,), dict(attrs, count_include_pad=include_pad))


@settings(max_examples=examples(20), deadline=None)
@given(st.sampled_from([1, 2, 3]), seeds, st.data())
def test_adaptive_and_global_pools(n, seed, data):
    rng = np.random.default_rng(seed)
    spatial = tuple(data.draw(st.integers(1, 7)) for _ in range(n))
    out = tuple(data.draw(st.integers(1, 8)) for _ in range(n))
    x = randn(rng, 2, 3, *spatial)
    for kind in ("avg", "max"):
        check_kernel(f"nn.adaptive_{kind}_pool{n}d", (x,), dict(output_size=out))
    if n == 2:
        for kind in ("avg", "max"):
            check_kernel(f"nn.global_{kind}_pool2d", (x,))
            check_kernel(f"nn.global_{kind}_pool2d",
                         (np.ascontiguousarray(x.transpose(0, 2, 3, 1)),), dict(layout="NHWC"))


@settings(max_examples=examples(30), deadline=None)
@given(seeds, st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data())
def test_reductions(seed, shape, data):
    x = randn(np.random.default_rng(seed), *shape)
    axis = data.draw(st.none() | st.lists(st.integers(0, len(shape) - 1), min_size=1,
                                          max_size=len(shape), unique=True))
    if axis is not None and data.draw(st.booleans()):
        axis = [a - len(shape) for a in axis]
    attrs = dict(axis=axis, keepdims=data.draw(st.booleans()),
                 exclude=data.draw(st.booleans()))
    for op in ("sum", "mean", "max", "min", "prod"):
        check_kernel(op, (x,), attrs)


@settings(max_examples=examples(25), deadline=None)
@given(seeds, st.lists(st.integers(1, 5), min_size=2, max_size=4), st.data())
def test_softmax_and_norms(seed, shape, data):
    rng = np.random.default_rng(seed)
    x = randn(rng, *shape) * 3
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    check_kernel("nn.softmax", (x,), dict(axis=axis))
    check_kernel("nn.log_softmax", (x,), dict(axis=axis))
    extent = shape[axis]
    flags = dict(center=data.draw(st.booleans()), scale=data.draw(st.booleans()))
    vectors = [randn(rng, extent) for _ in range(3)] + [np.abs(randn(rng, extent)) + 0.1]
    check_kernel("nn.batch_norm", (x, *vectors), dict(axis=axis, **flags))
    check_kernel("nn.layer_norm", (x, vectors[0], vectors[1]), dict(axis=axis, **flags))
    channels = shape[1]
    groups = data.draw(st.sampled_from([g for g in range(1, channels + 1) if channels % g == 0]))
    check_kernel("nn.group_norm", (x, randn(rng, channels), randn(rng, channels)),
                 dict(num_groups=groups, **flags))


@settings(max_examples=examples(25), deadline=None)
@given(seeds, st.sampled_from(["nearest_neighbor", "linear", "cubic"]),
       st.sampled_from(["half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
                        "tf_half_pixel_for_nn", "tf_crop_and_resize"]),
       st.sampled_from(["", "round", "round_prefer_floor", "round_prefer_ceil", "floor",
                        "ceil"]),
       st.tuples(st.integers(1, 6), st.integers(1, 6)), st.tuples(st.integers(1, 9),
                                                                   st.integers(1, 9)),
       st.booleans(), st.booleans())
def test_resize2d(seed, method, mode, rounding, in_size, size, exclude, nhwc):
    x = randn(np.random.default_rng(seed), 1, 2, *in_size)
    attrs = dict(size=size, method=method, coordinate_transformation_mode=mode,
                 rounding_method=rounding if method == "nearest_neighbor" else "",
                 cubic_exclude=int(exclude), roi=(0.1, 0.2, 0.8, 1.1), extrapolation_value=-2.0)
    if nhwc:
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
        attrs["layout"] = "NHWC"
    check_kernel("image.resize2d", (x,), attrs)


@pytest.mark.parametrize("op,attrs", [("sum", {}), ("max", {"axis": 0}),
                                      ("nn.softmax", {}), ("nn.max_pool2d", {})])
def test_edge_cases_follow_the_reference(op, attrs):
    if op == "nn.max_pool2d":
        check_kernel(op, (np.arange(16, dtype="int32").reshape(1, 1, 4, 4),), attrs)
        return
    check_kernel(op, (np.array([[1.0, np.nan], [2.0, 3.0]], "float32"),), attrs)
