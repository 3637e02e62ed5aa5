"""stack, tile, repeat, broadcast_to, full, full_like, zeros, ones, arange."""

from __future__ import annotations

import numpy as np
import pytest

import irlib
from irlib import TensorType, size_var
from irlib.errors import TypeInferenceError
from irlib.ir.dims import Any
from irlib.testing.dataflow_eval import evaluate

from op_test_helpers import OpRecord, check_gradient, check_record, rand, type_of


def stack_oracle(fields, axis):
    shape = list(fields[0].shape)
    axis %= len(shape) + 1
    out = np.zeros(shape[:axis] + [len(fields)] + shape[axis:], fields[0].dtype)
    for i, field in enumerate(fields):
        index = [slice(None)] * out.ndim
        index[axis] = i
        out[tuple(index)] = field
    return out


def tile_oracle(data, reps):
    rank = max(data.ndim, len(reps))
    data = data.reshape((1,) * (rank - data.ndim) + data.shape)
    reps = (1,) * (rank - len(reps)) + tuple(reps)
    out = data
    for axis, r in enumerate(reps):
        out = np.concatenate([out] * r, axis=axis)
    return out


def repeat_oracle(data, repeats, axis):
    moved = np.moveaxis(data, axis, 0)
    rows = [row for row in moved for _ in range(repeats)]
    return np.moveaxis(np.array(rows, data.dtype), 0, axis)


RECORDS = [
    OpRecord("stack", lambda data, axis: irlib.stack(data, axis),
             [([(rand((2, 3)), rand((2, 3)))], {"axis": 1}),
              ([(rand((2,), "int32"),) * 3], {"axis": -1}),
              ([(rand((2, 3)), rand((2, 3)))], {"axis": 0})],
             stack_oracle),
    OpRecord("tile", irlib.tile,
             [([rand((2, 3))], {"reps": (2, 1)}), ([rand((2, 3))], {"reps": (2, 1, 3)}),
              ([rand((2, 3, 2))], {"reps": (2,)})],
             tile_oracle),
    OpRecord("repeat", irlib.repeat,
             [([rand((2, 3))], {"repeats": 2, "axis": 1}),
              ([rand((2, 3), "int32")], {"repeats": 3, "axis": -2})],
             repeat_oracle),
    OpRecord("broadcast_to", irlib.broadcast_to,
             [([rand((3, 1))], {"shape": (2, 3, 4)}), ([rand(())], {"shape": [2]})],
             lambda data, shape: data + np.zeros(shape, data.dtype)),
    OpRecord("full", irlib.full,
             [([np.array(2.5, "float32")], {"shape": (2, 3)}),
              ([np.array(7, "int32")], {"shape": (3,), "dtype": "float64"})],
             lambda fill, shape, dtype="": np.array(
                 [[fill.item()] * shape[-1]] * (shape[0] if len(shape) == 2 else 1),
                 dtype or fill.dtype).reshape(shape)),
    OpRecord("full_like", irlib.full_like, [([rand((2, 3)), np.array(1.5, "float32")], {})],
             lambda data, fill: data * 0 + fill),
    OpRecord("zeros", lambda: irlib.zeros((2, 3), "int32"), [([], {})],
             lambda: np.array([[0, 0, 0], [0, 0, 0]], "int32")),
    OpRecord("ones", lambda: irlib.ones([4], "float32"), [([], {})],
             lambda: np.array([1.0, 1.0, 1.0, 1.0], "float32")),
]
CASES = [(r, i) for r in RECORDS for i in range(len(r.cases))]


@pytest.mark.parametrize("record,case", CASES, ids=[f"{r.name}-{i}" for r, i in CASES])
def test_reference_matches_oracle_and_type(record, case):
    check_record(record, case)


@pytest.mark.parametrize("args,dtype,expected", [
    ((5,), "float32", [0.0, 1.0, 2.0, 3.0, 4.0]),
    ((1, 7, 2), "int32", [1, 3, 5]),
    ((2.0, 0.5, -0.5), "float64", [2.0, 1.5, 1.0]),
    ((3, 3), "int64", []),
])
def test_arange(args, dtype, expected):
    call = irlib.arange(*args, dtype=dtype)
    assert type_of(call) == TensorType((len(expected),), dtype)
    np.testing.assert_array_equal(evaluate(call), np.array(expected, dtype))


def test_arange_with_a_variable_bound_is_dynamic():
    stop = irlib.var("stop", "float32")
    call = irlib.arange(stop)
    assert type_of(call) == TensorType((Any,), "float32")
    np.testing.assert_array_equal(evaluate(call, {stop: np.array(3.0, "float32")}), [0, 1, 2])


def test_construct_relations():
    n = size_var("n")
    x = irlib.var("x", shape=(n, 3))
    assert type_of(irlib.stack([x, x], 0)) == TensorType((2, n, 3))
    assert type_of(irlib.tile(x, (2, 2))) == TensorType((2 * n, 6))
    assert type_of(irlib.repeat(x, 3, 0)) == TensorType((3 * n, 3))
    with pytest.raises(TypeInferenceError, match="stack: field 1"):
        type_of(irlib.stack([x, irlib.var("y", shape=(n, 4))], 0))
    with pytest.raises(TypeInferenceError, match="broadcast_to: shape"):
        type_of(irlib.broadcast_to(irlib.var("y", shape=(2, 3)), (3, 3)))
    with pytest.raises(TypeInferenceError, match="full: fill_value must be a scalar"):
        type_of(irlib.full(irlib.var("v", shape=(2,)), (2, 2)))


def f64(*shape):
    return np.random.default_rng(9).uniform(-2, 2, size=shape)


@pytest.mark.parametrize("builder,inputs,attrs", [
    (lambda data, axis: irlib.stack(data, axis), [(f64(2, 3), f64(2, 3))], {"axis": 1}),
    (irlib.tile, [f64(2, 3)], {"reps": (2, 3)}),
    (irlib.tile, [f64(2, 3)], {"reps": (2, 1, 2)}),
    (irlib.tile, [f64(2, 3)], {"reps": (3,)}),
    (irlib.repeat, [f64(2, 3)], {"repeats": 2, "axis": 1}),
    (irlib.repeat, [f64(2, 3, 2)], {"repeats": 3, "axis": -2}),
    (irlib.broadcast_to, [f64(3, 1)], {"shape": (2, 3, 4)}),
    (irlib.full, [np.array(1.5)], {"shape": (2, 3)}),
    (irlib.full_like, [f64(2, 2), np.array(0.5)], {}),
], ids=["stack", "tile", "tile-longer-reps", "tile-shorter-reps", "repeat", "repeat-neg",
        "broadcast_to", "full", "full_like"])
def test_gradients(builder, inputs, attrs):
    check_gradient(builder, inputs, **attrs)
