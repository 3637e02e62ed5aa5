"""The union-find unifier, on types written by hand."""

import pytest

from irlib import (Any, FuncType, GlobalTypeVar, IncompleteType, RefType, TensorType, TupleType,
                   TypeCall, TypeVar, size_var)
from irlib.typeinf.unifier import UnificationError, Unifier, instantiate, substitute

F32 = TensorType((), "float32")
I32 = TensorType((), "int32")


def test_hole_learns_a_type():
    u = Unifier()
    hole = IncompleteType()
    assert u.unify(hole, F32) == F32
    assert u.resolve(hole) == F32
    assert u.free_holes(hole) == []


def test_two_holes_share_what_they_learn():
    u = Unifier()
    a, b = IncompleteType(), IncompleteType()
    u.unify(a, b)
    u.unify(b, TensorType((2,), "int32"))
    assert u.resolve(a) == TensorType((2,), "int32")


def test_holes_inside_structures():
    u = Unifier()
    a, b = IncompleteType(), IncompleteType()
    u.unify(TupleType([a, RefType(b)]), TupleType([F32, RefType(I32)]))
    assert u.resolve(TupleType([a, b])) == TupleType([F32, I32])


def test_symbolic_dims_compare_canonically():
    n = size_var("n")
    u = Unifier()
    assert u.unify(TensorType((n * 2,)), TensorType((n + n,))) == TensorType((2 * n,))
    with pytest.raises(UnificationError, match=r"dimension 0: n vs n \+ 1"):
        u.unify(TensorType((n,)), TensorType((n + 1,)))


def test_any_dims_merge_to_any_and_rebind_holes():
    u = Unifier()
    hole = IncompleteType()
    u.unify(hole, TensorType((4, 3)))
    merged = u.unify(hole, TensorType((Any, 3)))
    assert merged == TensorType((Any, 3))
    assert u.resolve(hole) == TensorType((Any, 3))


@pytest.mark.parametrize("lhs, rhs, detail", [
    (F32, I32, r"dtype float32 vs int32"),
    (TensorType((2,)), TensorType((2, 1)), r"rank 1 vs 2"),
    (TupleType([F32]), TupleType([F32, F32]), r"a 1-tuple vs a 2-tuple"),
    (FuncType([F32], F32), FuncType([F32, F32], F32), r"1 argument\(s\) vs one of 2"),
    (F32, TupleType([]), r"a tensor vs a tuple"),
    (RefType(F32), F32, r"a reference vs a tensor"),
])
def test_mismatches(lhs, rhs, detail):
    with pytest.raises(UnificationError, match=detail):
        Unifier().unify(lhs, rhs)


def test_adt_values_unify_per_type_and_argument():
    list_type, tree_type = GlobalTypeVar("List"), GlobalTypeVar("Tree")
    u = Unifier()
    hole = IncompleteType()
    u.unify(TypeCall(list_type, [hole]), TypeCall(list_type, [I32]))
    assert u.resolve(hole) == I32
    with pytest.raises(UnificationError, match=r"type List vs Tree"):
        u.unify(TypeCall(list_type, [I32]), TypeCall(tree_type, [I32]))


def test_bare_adt_name_means_the_adt_without_arguments():
    nat = GlobalTypeVar("nat")
    assert Unifier().unify(nat, TypeCall(nat, [])) == TypeCall(nat, [])


def test_type_variables_are_rigid():
    a, b = TypeVar("A"), TypeVar("B")
    u = Unifier()
    assert u.unify(a, a) is a
    with pytest.raises(UnificationError, match=r"A is not B"):
        u.unify(a, b)
    with pytest.raises(UnificationError):
        u.unify(a, F32)


def test_occurs_check():
    u = Unifier()
    hole = IncompleteType()
    with pytest.raises(UnificationError, match=r"recursive type"):
        u.unify(hole, TupleType([hole]))


def test_polymorphic_function_unifies_with_a_monomorphic_one():
    a = TypeVar("A")
    ident = FuncType([a], a, [a])
    u = Unifier()
    hole = IncompleteType()
    merged = u.unify(FuncType([I32], hole), ident)
    assert merged == FuncType([I32], I32)
    assert u.resolve(hole) == I32


def test_polymorphic_functions_unify_up_to_renaming():
    a, b = TypeVar("A"), TypeVar("B")
    u = Unifier()
    assert u.unify(FuncType([a], a, [a]), FuncType([b], b, [b])) == FuncType([a], a, [a])


def test_instantiate_with_fresh_holes_and_given_arguments():
    a = TypeVar("A")
    list_type = GlobalTypeVar("List")
    cons = FuncType([a, TypeCall(list_type, [a])], TypeCall(list_type, [a]), [a])
    mono, (hole,) = instantiate(cons)
    assert isinstance(hole, IncompleteType)
    assert mono == FuncType([hole, TypeCall(list_type, [hole])], TypeCall(list_type, [hole]))
    mono, args = instantiate(cons, (F32,))
    assert args == (F32,) and mono.ret_type == TypeCall(list_type, [F32])


def same_deep_type(lhs, rhs) -> bool:
    """Structural equality of (possibly very deep) tuple/tensor types, without recursion."""
    stack = [(lhs, rhs)]
    while stack:
        a, b = stack.pop()
        if isinstance(a, TupleType) and isinstance(b, TupleType):
            if len(a.fields) != len(b.fields):
                return False
            stack.extend(zip(a.fields, b.fields))
        elif not (isinstance(a, TensorType) and a == b):
            return False
    return True


def test_deep_types_need_no_recursion():
    depth = 20_000
    a = TypeVar("A")
    nested, expected, holey = a, F32, IncompleteType()
    top_hole = holey
    for _ in range(depth):
        nested, expected = TupleType([nested]), TupleType([expected])
        holey = TupleType([holey])
    assert same_deep_type(substitute(nested, {a: F32}), expected)
    u = Unifier()
    u.unify(holey, expected)
    assert u.resolve(top_hole) == F32
    assert same_deep_type(u.resolve(holey), expected)


def test_poison_follows_links():
    u = Unifier()
    a, b = IncompleteType(), IncompleteType()
    u.poison(a)
    u.unify(a, b)
    assert u.is_poisoned(b)
