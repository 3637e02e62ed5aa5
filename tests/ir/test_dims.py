"""Symbolic dimensions: canonical forms, floordiv simplification, hashing, substitution."""

import pytest

from irlib.ir.dims import (Any, AnyDim, DimExpr, floordiv, format_dim, is_static, normalize_dim,
                           size_var, substitute_dim)

n, m = size_var("n"), size_var("m")


def test_like_terms_collect_into_one_canonical_form():
    assert n + n == 2 * n
    assert hash(n + n) == hash(2 * n)
    assert (n + 1) - 1 == n
    assert n * m == m * n
    assert (n + 1) * (n + 1) == n * n + 2 * n + 1
    assert n + m == m + n and hash(n + m) == hash(m + n)
    assert 3 * n - n - 2 * n == 0
    assert n != m and n + 1 != n


def test_constant_results_are_plain_ints():
    result = (n + 5) - n
    assert result == 5 and type(result) is int
    assert type(n - n) is int


def test_floordiv_simplifies_exact_and_trivial_cases():
    assert floordiv(7, 2) == 3
    assert floordiv(-7, 2) == -4
    assert floordiv(2 * n, 2) == n
    assert floordiv(4 * n + 6, 2) == 2 * n + 3
    assert floordiv(n, 1) == n
    assert floordiv(n + m, n + m) == 1
    assert n // 1 == n


def test_floordiv_that_cannot_simplify_stays_an_atom():
    half = floordiv(n, 2)
    assert isinstance(half, DimExpr)
    assert half == floordiv(n, 2) and hash(half) == hash(floordiv(n, 2))
    assert half != floordiv(n, 3)
    assert format_dim(half) == "floordiv(n, 2)"
    assert half + half == 2 * floordiv(n, 2)
    assert half.free_vars() == {"n"}


def test_floordiv_by_zero_is_an_error():
    with pytest.raises(ZeroDivisionError):
        floordiv(n, 0)


def test_any_absorbs_arithmetic():
    assert n + Any is Any and n * Any is Any and n - Any is Any
    assert floordiv(Any, 2) is Any
    assert isinstance(Any, AnyDim) and Any == AnyDim()


def test_substitute_replaces_size_variables():
    expr = 2 * n * m + floordiv(n, 2) + 1
    assert substitute_dim(expr, {"n": 4, "m": 3}) == 2 * 4 * 3 + 2 + 1
    assert substitute_dim(expr, {"m": 1}) == 2 * n + floordiv(n, 2) + 1
    assert substitute_dim(n + 1, {"n": m - 1}) == m
    assert substitute_dim(n + 1, {"n": Any}) is Any
    assert substitute_dim(7, {"n": 1}) == 7


def test_text_spelling():
    assert format_dim(3) == "3"
    assert format_dim(Any) == "?"
    assert format_dim(n) == "n"
    assert format_dim(2 * n + 1) == "2*n + 1"
    assert format_dim(n * m - 3) in ("m*n - 3", "n*m - 3")
    assert format_dim(-n) == "0 - n"


def test_normalize_dim_accepts_user_spellings_and_rejects_bad_ones():
    assert normalize_dim("?") is Any and normalize_dim(None) is Any
    assert normalize_dim("n") == n
    assert normalize_dim(4) == 4
    with pytest.raises(ValueError):
        normalize_dim(-1)
    with pytest.raises(TypeError):
        normalize_dim(True)
    with pytest.raises(TypeError):
        normalize_dim(2.5)
    with pytest.raises(ValueError):
        size_var("2n")


def test_queries():
    assert n.name == "n" and (2 * n).name is None
    assert (n * m + 1).free_vars() == {"n", "m"}
    assert is_static(3) and not is_static(n) and not is_static(Any) and not is_static(True)


def test_floordiv_of_zero_by_a_symbol_is_zero():

    assert floordiv(0, size_var("n")) == 0
