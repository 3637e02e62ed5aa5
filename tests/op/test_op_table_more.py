"""Table-driven tests of the wider op library (elemwise.py, more reductions, transforms and
nn ops), with the same checks as test_op_table.py, plus gradient checks."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import irlib

from op_test_helpers import OpRecord, check_gradient, check_record, positive, rand


def unit(shape, dtype="float32"):
    return rand(shape, dtype, -0.9, 0.9)


def above_one(shape, dtype="float32"):
    return rand(shape, dtype, 1.2, 3.0)


def unary_record(name, maker, oracle, dtypes=("float32", "float64"), tol=1e-5):
    cases = [([maker(s, dt)], {}) for s, dt in itertools.product([(3,), (2, 3)], dtypes)]
    return OpRecord(name, getattr(irlib, name), cases, oracle, tol=tol)


def elementwise(fn):
    """An oracle applying a Python scalar function to every element."""
    def oracle(data):
        flat = [fn(float(v)) if data.dtype.kind == "f" else fn(int(v)) for v in data.flat]
        return np.array(flat).astype(np.result_type(data.dtype)).reshape(data.shape)
    return oracle


def half_even(value):
    return float(round(value))  # Python's round is half-to-even, like numpy and LLVM


RECORDS = [
    unary_record("abs", rand, elementwise(lambda v: -v if v < 0 else v),
                 ("float32", "int32")),
    unary_record("sign", rand, elementwise(lambda v: (v > 0) - (v < 0)), ("float32", "int32")),
    unary_record("ceil", rand, elementwise(math.ceil)),
    unary_record("floor", rand, elementwise(math.floor)),
    unary_record("round", lambda s, dt: rand(s, dt) * 3, elementwise(half_even)),
    unary_record("trunc", rand, elementwise(math.trunc)),
    unary_record("rsqrt", positive, elementwise(lambda v: v ** -0.5)),
    unary_record("log2", positive, elementwise(math.log2)),
    unary_record("log10", positive, elementwise(math.log10)),
    unary_record("sin", rand, elementwise(math.sin)),
    unary_record("cos", rand, elementwise(math.cos)),
    unary_record("tan", unit, elementwise(math.tan)),
    unary_record("sinh", rand, elementwise(math.sinh)),
    unary_record("cosh", rand, elementwise(math.cosh)),
    unary_record("asin", unit, elementwise(math.asin)),
    unary_record("acos", unit, elementwise(math.acos)),
    unary_record("atan", rand, elementwise(math.atan)),
    unary_record("asinh", rand, elementwise(math.asinh)),
    unary_record("acosh", above_one, elementwise(math.acosh)),
    unary_record("atanh", unit, elementwise(math.atanh)),
    unary_record("tanh", rand, elementwise(math.tanh)),
    unary_record("sigmoid", rand, elementwise(lambda v: math.exp(v) / (1 + math.exp(v)))),
    unary_record("erf", rand, elementwise(math.erf)),
    unary_record("fast_exp", rand, elementwise(math.exp)),
    unary_record("fast_tanh", rand, elementwise(math.tanh)),
    unary_record("fast_erf", rand, elementwise(math.erf)),
    unary_record("copy", rand, elementwise(lambda v: v), ("float32", "int32")),
    unary_record("logical_not", rand, elementwise(lambda v: not v), ("bool",)),
    unary_record("bitwise_not", rand, elementwise(lambda v: -v - 1), ("int32",)),
    OpRecord("isnan", irlib.isnan, [([np.array([1.0, np.nan, np.inf], "float32")], {})],
             lambda a: np.array([False, True, False])),
    OpRecord("isinf", irlib.isinf, [([np.array([1.0, np.nan, -np.inf], "float32")], {})],
             lambda a: np.array([False, False, True])),
    OpRecord("isfinite", irlib.isfinite, [([np.array([1.0, np.nan, np.inf], "float32")], {})],
             lambda a: np.array([True, False, False])),
    OpRecord("clip", irlib.clip, [([rand((2, 5))], {"a_min": -0.5, "a_max": 1.0}),
                                  ([rand((4,), "int32")], {"a_min": -2, "a_max": 3})],
             lambda a, a_min, a_max: elementwise(lambda v: min(max(v, a_min), a_max))(a)),
]


def binary_record(name, fn, dtypes=("float32", "int32"), rhs_maker=None, lhs_maker=rand):
    shapes = [((2, 3), (2, 3)), ((2, 3), (3,)), ((3, 1), (1, 2))]
    cases = [([lhs_maker(a, dt), (rhs_maker or rand)(b, dt)], {})
             for (a, b), dt in itertools.product(shapes, dtypes)]

    def oracle(lhs, rhs):
        lhs_b, rhs_b = np.broadcast_arrays(lhs, rhs)
        cast = float if lhs.dtype.kind == "f" else (bool if lhs.dtype.kind == "b" else int)
        flat = [fn(cast(a), cast(b)) for a, b in zip(lhs_b.flat, rhs_b.flat)]
        return np.array(flat).astype(lhs.dtype).reshape(lhs_b.shape)
    return OpRecord(name, getattr(irlib, name), cases, oracle, tol=1e-5)


def nonzero(shape, dtype):
    values = rand(shape, dtype)
    return np.where(values == 0, 1, values).astype(dtype)


def small_shift(shape, dtype):
    return np.random.default_rng(3).integers(0, 4, size=shape).astype(dtype)


RECORDS += [
    binary_record("power", lambda a, b: a ** b, ("float32",), rhs_maker=rand,
                  lhs_maker=positive),
    binary_record("maximum", max),
    binary_record("minimum", min),
    binary_record("mod", math.fmod, ("float32",), rhs_maker=nonzero),
    binary_record("mod", lambda a, b: int(math.fmod(a, b)), ("int32",), rhs_maker=nonzero),
    binary_record("trunc_mod", lambda a, b: int(math.fmod(a, b)), ("int32",),
                  rhs_maker=nonzero),
    binary_record("floor_mod", lambda a, b: a % b, rhs_maker=nonzero),
    binary_record("floor_divide", lambda a, b: a // b, rhs_maker=nonzero),
    binary_record("trunc_divide", lambda a, b: math.trunc(a / b), rhs_maker=nonzero),
    binary_record("logical_and", lambda a, b: a and b, ("bool",)),
    binary_record("logical_or", lambda a, b: a or b, ("bool",)),
    binary_record("logical_xor", lambda a, b: a != b, ("bool",)),
    binary_record("bitwise_and", lambda a, b: a & b, ("int32",)),
    binary_record("bitwise_or", lambda a, b: a | b, ("int32",)),
    binary_record("bitwise_xor", lambda a, b: a ^ b, ("int32",)),
    binary_record("left_shift", lambda a, b: a << b, ("int32",), rhs_maker=small_shift),
    binary_record("right_shift", lambda a, b: a >> b, ("int32",), rhs_maker=small_shift),
]

CASES = [(record, i) for record in RECORDS for i in range(len(record.cases))]


@pytest.mark.parametrize("record,case", CASES, ids=[f"{r.name}-{i}" for r, i in CASES])
def test_reference_matches_oracle_and_type(record, case):
    check_record(record, case)


RNG = np.random.default_rng(11)


def f64(*shape, low=-2.0, high=2.0):
    return RNG.uniform(low, high, size=shape)


GRAD_CASES = [(name, [f64(2, 3)]) for name in ("abs", "sin", "cos", "sinh", "cosh", "atan",
                                               "asinh", "tanh", "sigmoid", "erf", "fast_exp",
                                               "fast_tanh", "fast_erf", "copy", "sign",
                                               "floor", "ceil", "round", "trunc")]
GRAD_CASES += [(name, [f64(2, 3, low=0.3, high=2.0)]) for name in ("rsqrt", "log2", "log10")]
GRAD_CASES += [(name, [f64(2, 3, low=-0.8, high=0.8)]) for name in ("tan", "asin", "acos",
                                                                     "atanh")]
GRAD_CASES += [("acosh", [f64(3, low=1.3, high=3.0)])]
GRAD_CASES += [(name, [f64(2, 3), f64(3)]) for name in ("maximum", "minimum", "floor_divide")]
GRAD_CASES += [("power", [f64(2, 3, low=0.5, high=2.0), f64(3)])]
GRAD_CASES += [(name, [f64(2, 3), f64(3, low=0.7, high=1.3) * RNG.choice([-1, 1], 3)])
               for name in ("mod", "floor_mod", "trunc_mod")]


@pytest.mark.parametrize("name,inputs", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradient_matches_finite_differences(name, inputs):
    check_gradient(getattr(irlib, name), inputs)


def test_clip_gradient():
    check_gradient(irlib.clip, [np.array([-2.0, -0.3, 0.2, 0.9, 1.7])], a_min=-0.5, a_max=1.0)



# -- reductions --------------------------------------------------------------------------------

def loop_reduce(fn, out_dtype=None):
    """Oracle: reduce with a Python function over the chosen axes, element by element."""
    def oracle(data, axis=None, keepdims=False, exclude=False, **_):
        axes = list(range(data.ndim)) if axis is None else \
            [a % data.ndim for a in ([axis] if isinstance(axis, int) else axis)]
        if exclude:
            axes = [a for a in range(data.ndim) if a not in axes]
        kept = [a for a in range(data.ndim) if a not in axes]
        out_shape = tuple(data.shape[a] for a in kept)
        out = np.zeros(out_shape, dtype=out_dtype or data.dtype)
        for index in itertools.product(*[range(data.shape[a]) for a in kept]):
            values = []
            for inner in itertools.product(*[range(data.shape[a]) for a in axes]):
                full = [0] * data.ndim
                for a, i in zip(kept, index):
                    full[a] = i
                for a, i in zip(axes, inner):
                    full[a] = i
                values.append(data[tuple(full)].item())
            out[index] = fn(values)
        if keepdims:
            out = out.reshape(tuple(1 if a in axes else d for a, d in enumerate(data.shape)))
        return out
    return oracle


def first_index(pick, last=False):
    def fn(values):
        best = pick(values)
        indices = [i for i, v in enumerate(values) if v == best]
        return indices[-1] if last else indices[0]
    return fn


def variance_oracle(data, axis=None, keepdims=False, exclude=False, unbiased=False):
    def fn(values):
        centre = sum(values) / len(values)
        return sum((v - centre) ** 2 for v in values) / (len(values) - unbiased)
    return loop_reduce(fn)(data, axis, keepdims, exclude)


REDUCE_CASES = [([rand((2, 3, 4))], {}), ([rand((2, 3, 4))], {"axis": 1}),
                ([rand((2, 3, 4))], {"axis": [0, -1], "keepdims": True}),
                ([rand((2, 3, 4))], {"axis": [1], "exclude": True})]
BOOL_CASES = [([rand((2, 3), "bool")], {}), ([rand((2, 3), "bool")], {"axis": 0}),
              ([rand((2, 3), "bool")], {"axis": 1, "keepdims": True})]


def _arg_oracle(pick):
    def oracle(data, axis=None, keepdims=False, exclude=False, select_last_index=False):
        return loop_reduce(first_index(pick, select_last_index), "int32")(data, axis, keepdims,
                                                                         exclude)
    return oracle


def _product(values):
    result = 1.0
    for v in values:
        result *= v
    return result


REDUCE_RECORDS = [
    OpRecord("max", irlib.max, REDUCE_CASES + [([rand((3, 4), "int32")], {"axis": 1})],
             loop_reduce(lambda v: sorted(v)[-1])),
    OpRecord("min", irlib.min, REDUCE_CASES, loop_reduce(lambda v: sorted(v)[0])),
    OpRecord("prod", irlib.prod, REDUCE_CASES, loop_reduce(_product), tol=1e-4),
    OpRecord("all", irlib.all, BOOL_CASES, loop_reduce(lambda v: False not in v)),
    OpRecord("any", irlib.any, BOOL_CASES, loop_reduce(lambda v: True in v)),
    OpRecord("argmax", irlib.argmax,
             REDUCE_CASES + [([np.array([[1, 3, 3], [2, 2, 0]], "int32")],
                              {"axis": 1, "select_last_index": True})],
             _arg_oracle(lambda v: sorted(v)[-1])),
    OpRecord("argmin", irlib.argmin,
             REDUCE_CASES + [([np.array([[1, 0, 0], [2, 2, 0]], "int32")],
                              {"axis": 1, "select_last_index": True})],
             _arg_oracle(lambda v: sorted(v)[0])),
    OpRecord("variance", irlib.variance,
             REDUCE_CASES + [([rand((3, 5), "float64")], {"axis": 1, "unbiased": True})],
             variance_oracle, tol=1e-5),
]
REDUCE_CASE_LIST = [(r, i) for r in REDUCE_RECORDS for i in range(len(r.cases))]
RECORDS += REDUCE_RECORDS


@pytest.mark.parametrize("record,case", REDUCE_CASE_LIST,
                         ids=[f"{r.name}-{i}" for r, i in REDUCE_CASE_LIST])
def test_reduction_matches_oracle_and_type(record, case):
    check_record(record, case)


def _evaluate_composite(builder, data, **attrs):
    from irlib.testing.dataflow_eval import evaluate
    from op_test_helpers import call_with_vars, type_of
    expr, env = call_with_vars(builder, [data], **attrs)
    return evaluate(expr, env), type_of(expr)


def test_std_logsumexp_and_mean_variance_compositions():
    data = rand((3, 4), "float64")
    value, ty = _evaluate_composite(irlib.std, data, axis=1)
    expected = np.sqrt(variance_oracle(data, axis=1))
    np.testing.assert_allclose(value, expected)
    assert ty == irlib.TensorType((3,), "float64")
    value, ty = _evaluate_composite(irlib.logsumexp, data, axis=0)
    np.testing.assert_allclose(value, [math.log(sum(math.exp(v) for v in col))
                                       for col in data.T])
    assert ty == irlib.TensorType((4,), "float64")
    value, _ = _evaluate_composite(irlib.mean_variance, data, axis=1, keepdims=True)
    np.testing.assert_allclose(value[0], data.mean(axis=1, keepdims=True))
    np.testing.assert_allclose(value[1], variance_oracle(data, axis=1, keepdims=True))


REDUCE_GRADS = [
    ("max", irlib.max, {"axis": 1}), ("max-all", irlib.max, {}),
    ("min", irlib.min, {"axis": [0, 2], "keepdims": True}),
    ("prod", irlib.prod, {"axis": 2}), ("prod-exclude", irlib.prod, {"axis": 0, "exclude": True}),
    ("argmax", irlib.argmax, {"axis": 1}),
]


@pytest.mark.parametrize("builder,attrs", [c[1:] for c in REDUCE_GRADS],
                         ids=[c[0] for c in REDUCE_GRADS])
def test_reduction_gradients(builder, attrs):
    check_gradient(builder, [f64(2, 3, 4, low=0.5, high=2.0)], **attrs)


@pytest.mark.parametrize("attrs,mean_shape", [({"axis": 1, "keepdims": True}, (2, 1)),
                                             ({"axis": 1}, (2, 1)),
                                             ({"axis": 0, "unbiased": True}, (1, 3))])
def test_variance_gradient_with_explicit_mean(attrs, mean_shape):
    # The op's two arguments are independent here; the builder's default mean is a call.
    check_gradient(lambda d, m: irlib.variance(d, with_mean=m, **attrs),
                   [f64(2, 3), f64(*mean_shape)])
