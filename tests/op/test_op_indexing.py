"""strided_slice, strided_set, take and scatter_nd: oracle, type and gradient checks."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import irlib
from irlib import TensorType, size_var
from irlib.errors import TypeInferenceError
from irlib.ir.dims import Any

from op_test_helpers import OpRecord, check_gradient, check_record, rand, type_of


def slice_oracle(data, begin, end, strides=None, axes=None, slice_mode="end"):
    """Python slicing per axis, one axis at a time."""
    axes = list(range(len(begin))) if axes is None else [a % data.ndim for a in axes]
    strides = strides or [1] * len(begin)
    out = data
    for b, e, s, axis in zip(begin, end, strides, axes):
        if slice_mode == "size":
            e, s = (None if e < 0 else b + e), 1
        index = [slice(None)] * data.ndim
        index[axis] = slice(b, e, s)
        out = out[tuple(index)]
    return np.array(out)


def take_oracle(data, indices, axis=None, mode="clip", batch_dims=0):
    source = data.reshape(-1) if axis is None else np.moveaxis(data, axis, 0)
    size = source.shape[0]
    picked = []
    for i in indices.reshape(-1).tolist():
        i = min(max(i, 0), size - 1) if mode == "clip" else i % size
        picked.append(source[i])
    out = np.array(picked).reshape(indices.shape + source.shape[1:])
    if axis is not None:
        axis %= data.ndim
        out = np.moveaxis(out, list(range(indices.ndim)),
                          list(range(axis, axis + indices.ndim)))
    return out.astype(data.dtype)


def scatter_oracle(data, indices, updates, mode="update"):
    out = data.copy()
    depth = indices.shape[0]
    for y in itertools.product(*[range(d) for d in indices.shape[1:]]):
        where = tuple(indices[(i,) + y] for i in range(depth))
        if mode == "add":
            out[where] += updates[y]
        else:
            out[where] = updates[y]
    return out


RECORDS = [
    OpRecord("strided_slice", irlib.strided_slice,
             [([rand((4, 5))], {"begin": [0, 1], "end": [2, 3]}),
              ([rand((4, 5))], {"begin": [3], "end": [0], "strides": [-1]}),
              ([rand((4, 5, 3))], {"begin": [1], "end": [-1], "axes": [1]}),
              ([rand((4, 5))], {"begin": [-3, 0], "end": [100, 5], "strides": [2, 2]}),
              ([rand((4, 5))], {"begin": [1, 2], "end": [2, -1], "slice_mode": "size"})],
             slice_oracle),
    OpRecord("take", irlib.take,
             [([rand((4, 5)), np.array([[0, 3, 1], [2, 2, 4]], "int32")], {"axis": 1}),
              ([rand((4, 5)), np.array([7, -1, 19, 30], "int32")], {}),
              ([rand((3, 4, 2)), np.array([5, -2], "int64")], {"axis": 0, "mode": "wrap"}),
              ([rand((3, 4, 2)), np.array(1, "int32")], {"axis": -1}),
              ([rand((3, 4)), np.array([9, -4], "int32")], {"axis": 1, "mode": "clip"})],
             take_oracle),
    OpRecord("scatter_nd", irlib.scatter_nd,
             [([rand((4, 3)), np.array([[0, 2, 0]], "int64"), rand((3, 3))], {"mode": "add"}),
              ([rand((4, 3)), np.array([[1, 3], [0, 2]], "int64"), rand((2,))], {}),
              ([rand((2, 2)), np.array([[0, 1]], "int32"), rand((2, 2))], {})],
             scatter_oracle),
]
CASES = [(r, i) for r in RECORDS for i in range(len(r.cases))]


@pytest.mark.parametrize("record,case", CASES, ids=[f"{r.name}-{i}" for r, i in CASES])
def test_reference_matches_oracle_and_type(record, case):
    check_record(record, case)


def test_strided_set_reference():
    data = rand((4, 5))
    out = irlib.op.evaluate("strided_set", [data, np.ones((2, 2), "float32"),
                                            np.array([1, 0]), np.array([3, 4]),
                                            np.array([1, 2])])
    expected = data.copy()
    for r, c in itertools.product([1, 2], [0, 2]):
        expected[r, c] = 1.0
    np.testing.assert_array_equal(out, expected)


def test_symbolic_and_error_relations():
    n = size_var("n")
    x = irlib.var("x", shape=(n, 6))
    assert type_of(irlib.strided_slice(x, [0, 1], [2 ** 31 - 1, 4])) == TensorType((n, 3))
    assert type_of(irlib.strided_slice(x, [1], [3])) == TensorType((Any, 6))
    assert type_of(irlib.take(x, irlib.var("i", shape=(2,), dtype="int32"), axis=1)) == \
        TensorType((n, 2))
    with pytest.raises(TypeInferenceError, match="take: indices must be integers"):
        type_of(irlib.take(x, irlib.var("i", shape=(2,)), axis=1))
    with pytest.raises(TypeInferenceError, match="strided_slice: strides must be nonzero"):
        type_of(irlib.strided_slice(x, [0], [1], [0]))
    with pytest.raises(TypeInferenceError, match="must have the same length"):
        type_of(irlib.strided_slice(x, [0, 1], [1]))


def f64(*shape):
    return np.random.default_rng(5).uniform(-2, 2, size=shape)


@pytest.mark.parametrize("attrs", [
    {"begin": [0, 1], "end": [2, 3]},
    {"begin": [3], "end": [0], "strides": [-2]},
    {"begin": [1], "end": [-1], "axes": [-1]},
    {"begin": [1, 0], "end": [2, -1], "slice_mode": "size"},
])
def test_strided_slice_gradient(attrs):
    check_gradient(irlib.strided_slice, [f64(4, 5)], **attrs)


def test_strided_set_gradient():
    check_gradient(lambda d, v: irlib.strided_set(d, v, [1, 0], [3, 5], [1, 2]),
                   [f64(4, 5), f64(2, 3)])


@pytest.mark.parametrize("indices,attrs", [
    (np.array([[0, 3, 1], [2, 2, 4]], "int32"), {"axis": 1}),
    (np.array([7, -1, 19, 7], "int32"), {}),
    (np.array([5, -2], "int64"), {"axis": 0, "mode": "wrap"}),
    (np.array(1, "int32"), {"axis": -1}),
])
def test_take_gradient(indices, attrs):
    check_gradient(irlib.take, [f64(4, 5), indices], **attrs)
