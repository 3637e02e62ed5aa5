"""irlib.ir.dim_binding: size variables bound from argument shapes, checked, substituted."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

import irlib
from irlib.ir.attrs import Attrs
from irlib.ir.dim_binding import (bind_size_vars, has_symbolic_attrs, size_param_names,
                                  substitute_attrs, substitute_shape, substitute_type,
                                  symbolic_signature)
from irlib.ir.dims import size_var
from irlib.ir.types import TensorType, TupleType

n, m = size_var("n"), size_var("m")


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 9), st.integers(0, 9))
def test_binds_first_occurrence_and_checks_compound(nv, mv):
    types = [TensorType((1, n), "int32"), TensorType((n + 1, m, 2 * n), "float32")]
    got = bind_size_vars(types, [(1, nv), (nv + 1, mv, 2 * nv)], param_names=["x", "y"])
    assert got == {"n": nv, "m": mv}


def test_compound_dim_before_its_variable_is_checked_after_binding():
    types = [TensorType((n + 1,), "float32"), TensorType((n,), "float32")]
    assert bind_size_vars(types, [(4,), (3,)]) == {"n": 3}
    with pytest.raises(irlib.ArgumentShapeError, match=r"n \+ 1 = 4 \(with n=3\), got size 5"):
        bind_size_vars(types, [(5,), (3,)], function_name="f")


def test_mismatch_message_names_function_param_dim_and_sizes():
    types = [TensorType((n, 4), "float32"), TensorType((2, n), "float32")]
    with pytest.raises(irlib.ArgumentShapeError) as info:
        bind_size_vars(types, [(3, 4), (2, 5)], param_names=["a", "b"], function_name="main")
    text = str(info.value)
    assert "%b" in text and "main" in text and "dim 1" in text and "3" in text and "5" in text
    assert isinstance(info.value, irlib.InterpreterError)


def test_static_dim_and_rank_are_checked():
    types = [TensorType((2, n), "float32")]
    with pytest.raises(irlib.ArgumentShapeError, match="dim 0 is 2, got size 3"):
        bind_size_vars(types, [(3, 1)])
    with pytest.raises(irlib.ArgumentShapeError, match="rank 2"):
        bind_size_vars(types, [(3,)])


def test_tuple_params_and_outer_bindings():
    types = [TupleType([TensorType((m,), "float32"), TensorType((n,), "float32")])]
    assert bind_size_vars(types, [((2,), (7,))], bindings={"n": 7}) == {"n": 7, "m": 2}
    with pytest.raises(irlib.ArgumentShapeError, match="enclosing function"):
        bind_size_vars(types, [((2,), (6,))], bindings={"n": 7})


def test_size_params_bind_variable_of_same_name():
    total = size_var("total")
    types = [TensorType((total, 4), "float32"), TensorType((), "int64")]
    got = bind_size_vars(types, [(6, 4), ()], {"total": 6}, param_names=["k", "total"])
    assert got == {"total": 6}
    with pytest.raises(irlib.ArgumentShapeError, match="size parameter %total"):
        bind_size_vars(types, [(6, 4), ()], {"total": 5}, param_names=["k", "total"])
    with pytest.raises(irlib.ArgumentShapeError, match="cannot be negative"):
        bind_size_vars(types[1:], [()], {"total": -1}, param_names=["total"])
    with pytest.raises(irlib.ArgumentShapeError, match="one integer"):
        bind_size_vars(types[1:], [()], {"total": 2.5}, param_names=["total"])


def test_size_param_names_validated():
    x = irlib.var("x", shape=(n,))
    k = irlib.var("k", shape=(), dtype="int64")
    func = irlib.Function([x, k], x, attrs={"size_params": ["k"]})
    assert size_param_names(func) == ("k",)
    assert symbolic_signature(func) is not None
    bad = irlib.Function([x, k], x, attrs={"size_params": ["x"]})
    with pytest.raises(irlib.IRError, match="Tensor\\[\\(\\), int64\\]"):
        size_param_names(bad)
    missing = irlib.Function([x, k], x, attrs={"size_params": ["q"]})
    with pytest.raises(irlib.IRError, match="not a parameter"):
        size_param_names(missing)
    static = irlib.Function([irlib.var("y", shape=(3,))], irlib.var("y", shape=(3,)))
    assert symbolic_signature(static) is None


def test_substitute_attrs_shape_type():
    attrs = Attrs({"newshape": (1, n, 4, 2 * m), "axis": 1}, "relay.attrs.ReshapeAttrs")
    assert has_symbolic_attrs(attrs)
    out = substitute_attrs(attrs, {"n": 3, "m": 5})
    assert out["newshape"] == (1, 3, 4, 10) and out["axis"] == 1
    assert out.type_key == "relay.attrs.ReshapeAttrs"
    plain = Attrs({"axis": 1})
    assert substitute_attrs(plain, {}) is plain
    with pytest.raises(irlib.UnboundSizeVarError, match="m"):
        substitute_attrs(attrs, {"n": 3})
    assert substitute_shape((n, n + 1), {"n": 2}) == (2, 3)
    assert substitute_type(TensorType((n, m), "float32"), {"n": 4}) == TensorType((4, m),
                                                                                  "float32")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(-5, 5), st.integers(0, 2), st.integers(0, 2)),
                min_size=1, max_size=4),
       st.integers(1, 4), st.integers(0, 2), st.integers(0, 1),
       st.integers(1, 6), st.integers(1, 6))
def test_floordiv_by_a_monomial_is_exact_division(terms, coeff, n_pow, m_pow, nv, mv):
    # p * d // d == p for a monomial d = coeff * n**n_pow * m**m_pow (sizes are positive)
    def power(var, exponent):
        result = 1
        for _ in range(exponent):
            result = result * var
        return result

    poly = sum((c * power(n, a) * power(m, b) for c, a, b in terms), 0)
    divisor = coeff * power(n, n_pow) * power(m, m_pow)
    quotient = irlib.ir.dims.floordiv(poly * divisor, divisor)
    assert quotient == poly
    values = {"n": nv, "m": mv}
    as_int = (lambda d: d.substitute(values) if isinstance(d, irlib.ir.dims.DimExpr) else d)
    assert as_int(quotient) == (as_int(poly) * as_int(divisor)) // as_int(divisor)
