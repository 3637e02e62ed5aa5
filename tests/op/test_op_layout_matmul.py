"""layout_transform and nn.batch_matmul."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import irlib
from irlib import TensorType, size_var
from irlib.errors import TypeInferenceError

from op_test_helpers import OpRecord, check_gradient, check_record, rand, type_of


def layout_oracle(data, src_layout, dst_layout):
    """Element-by-element index mapping through the logical NCHW coordinates."""
    def logical_index(index, layout):
        coords = {}
        tokens = []
        digits = ""
        for ch in layout:
            if ch.isdigit():
                digits += ch
            else:
                tokens.append((ch, int(digits) if digits else None))
                digits = ""
        blocks = {letter.upper(): factor for letter, factor in tokens if factor}
        for (letter, factor), i in zip(tokens, index):
            if factor is None:
                coords[letter] = coords.get(letter, 0) + i * blocks.get(letter, 1)
            else:
                coords[letter.upper()] = coords.get(letter.upper(), 0) + i
        return coords, tokens, blocks

    src_coords = {}
    for index in itertools.product(*[range(d) for d in data.shape]):
        coords, _, _ = logical_index(index, src_layout)
        src_coords[tuple(sorted(coords.items()))] = data[index]
    _, dst_tokens, dst_blocks = logical_index((0,) * 8, dst_layout)
    sizes = {}
    for coords in src_coords:
        for letter, value in coords:
            sizes[letter] = max(sizes.get(letter, 0), value + 1)
    out_shape = [factor if factor else sizes[letter] // dst_blocks.get(letter, 1)
                 for letter, factor in dst_tokens]
    out = np.zeros(out_shape, data.dtype)
    for index in itertools.product(*[range(d) for d in out_shape]):
        coords, _, _ = logical_index(index, dst_layout)
        out[index] = src_coords[tuple(sorted(coords.items()))]
    return out


def matmul_oracle(a, b, out_dtype="", transpose_a=False, transpose_b=True):
    lhs = a.transpose(0, 2, 1) if transpose_a else a
    rhs = b.transpose(0, 2, 1) if transpose_b else b
    batch = max(lhs.shape[0], rhs.shape[0])
    out = np.zeros((batch, lhs.shape[1], rhs.shape[2]))
    for n, i, j in itertools.product(range(batch), range(lhs.shape[1]), range(rhs.shape[2])):
        out[n, i, j] = sum(lhs[n % lhs.shape[0], i, k] * rhs[n % rhs.shape[0], k, j]
                           for k in range(lhs.shape[2]))
    return out.astype(out_dtype or a.dtype)


RECORDS = [
    OpRecord("layout_transform", irlib.layout_transform,
             [([rand((1, 3, 2, 4))], {"src_layout": "NCHW", "dst_layout": "NHWC"}),
              ([rand((2, 8, 2, 2))], {"src_layout": "NCHW", "dst_layout": "NCHW4c"}),
              ([rand((2, 2, 2, 2, 4))], {"src_layout": "NCHW4c", "dst_layout": "NHWC"}),
              ([rand((2, 2, 3, 4))], {"src_layout": "OIHW", "dst_layout": "HWIO"})],
             layout_oracle),
    OpRecord("nn.batch_matmul", irlib.nn.batch_matmul,
             [([rand((2, 3, 4)), rand((2, 5, 4))], {}),
              ([rand((1, 4, 3)), rand((2, 4, 5))], {"transpose_a": True, "transpose_b": False}),
              ([rand((2, 3, 4), "int32"), rand((1, 5, 4), "int32")], {"out_dtype": "int64"})],
             matmul_oracle, tol=1e-4),
]
CASES = [(r, i) for r in RECORDS for i in range(len(r.cases))]


@pytest.mark.parametrize("record,case", CASES, ids=[f"{r.name}-{i}" for r, i in CASES])
def test_reference_matches_oracle_and_type(record, case):
    check_record(record, case)


def test_relations_and_errors():
    n = size_var("n")
    x = irlib.var("x", shape=(n, 32, 7, 7))
    assert type_of(irlib.layout_transform(x, "NCHW", "NCHW16c")) == \
        TensorType((n, 2, 7, 7, 16))
    with pytest.raises(TypeInferenceError, match="does not split into blocks of 5"):
        type_of(irlib.layout_transform(x, "NCHW", "NCHW5c"))
    with pytest.raises(TypeInferenceError, match="same primal axes"):
        type_of(irlib.layout_transform(x, "NCHW", "NCDW"))
    a, b = irlib.var("a", shape=(n, 3, 4)), irlib.var("b", shape=(1, 5, 4))
    assert type_of(irlib.nn.batch_matmul(a, b)) == TensorType((n, 3, 5))
    with pytest.raises(TypeInferenceError, match="reduction size 4 but tensor_b has 5"):
        type_of(irlib.nn.batch_matmul(a, b, transpose_b=False))


def f64(*shape):
    return np.random.default_rng(17).uniform(-2, 2, size=shape)


@pytest.mark.parametrize("builder,inputs,attrs", [
    (irlib.layout_transform, [f64(1, 4, 2, 3)], {"src_layout": "NCHW", "dst_layout": "NHWC2c"}),
] + [
    (irlib.nn.batch_matmul, [f64(2, *((4, 3) if ta else (3, 4))),
                             f64(1, *((5, 4) if tb else (4, 5)))],
     {"transpose_a": ta, "transpose_b": tb})
    for ta, tb in itertools.product([False, True], repeat=2)
])
def test_gradients(builder, inputs, attrs):
    check_gradient(builder, inputs, **attrs)
