"""Unique naming, and the scope tree's common-ancestor query used for binding placement."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from irlib.text.layout import Scope, common_scope
from irlib.text.meta import decode_constant, encode_constant
from irlib.text.names import NameTable, sanitize_type_var_name, sanitize_var_name


def test_sanitize_var_name():
    assert sanitize_var_name("x") == "x"
    assert sanitize_var_name("") == "v"
    assert sanitize_var_name("0") == "v0"
    assert sanitize_var_name("conv/weight:0") == "conv/weight_0"
    assert sanitize_var_name("_private") == "_private"
    assert sanitize_var_name("ü") == "v_"


def test_sanitize_type_var_name():
    assert sanitize_type_var_name("A") == "A"
    assert sanitize_type_var_name("float_t") == "Tfloat_t"
    assert sanitize_type_var_name("Tensor") == "TTensor"
    assert sanitize_type_var_name("_") == "T_"
    assert sanitize_type_var_name("") == "T"


def test_name_table_is_stable_and_unique():
    table = NameTable()
    a, b, c, d = object(), object(), object(), object()
    assert table.name_of(a, "x") == "x"
    assert table.name_of(a, "ignored") == "x"
    assert table.name_of(b, "x1") == "x1"
    assert table.name_of(c, "x") == "x2"
    assert table.name_of(d, "x") == "x3"
    assert a in table and table.get(b) == "x1" and table.get(object()) is None


def test_many_equal_hints_stay_linear_and_distinct():
    table = NameTable()
    names = [table.name_of(object(), "x") for _ in range(20000)]
    assert len(set(names)) == 20000
    assert names[:3] == ["x", "x1", "x2"] and names[-1] == "x19999"


def _naive_common(a, b):
    ancestors = set()
    while a is not None:
        ancestors.add(a)
        a = a.parent
    while b not in ancestors:
        b = b.parent
    return b


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=300),
       st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)), min_size=1,
                max_size=40))
def test_common_scope_matches_naive_walk(parent_choices, pairs):
    scopes = [Scope(None, None)]
    for choice in parent_choices:
        # mostly extend the newest scope, so deep chains with side branches appear
        parent = scopes[-1] if choice % 3 else scopes[choice % len(scopes)]
        scopes.append(Scope(parent, None))
    for i, j in pairs:
        a, b = scopes[i % len(scopes)], scopes[j % len(scopes)]
        assert common_scope(a, b) is _naive_common(a, b)


def test_common_scope_of_deep_chain_is_fast_enough_to_be_logarithmic():
    root = Scope(None, None)
    chain = [root]
    for _ in range(100000):
        chain.append(Scope(chain[-1], None))
    side = Scope(chain[5], None)
    # 100,000 queries against a deep scope: quadratic walking would take minutes.
    for scope in chain[::1]:
        found = common_scope(side, scope)
        assert found is (scope if scope.depth <= 5 else chain[5])


def test_encode_of_non_contiguous_array():
    array = np.arange(6, dtype="int16").reshape(2, 3).T
    back = decode_constant(encode_constant(array))
    assert back.tolist() == array.tolist()
