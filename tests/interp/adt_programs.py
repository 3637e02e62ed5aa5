"""Hand-built ADTs and recursive functions for interpreter tests (no parser needed).

``list_module()`` gives a module with ``List[A] = Cons(A, List[A]) | Nil``, the Peano
``nat = zero | succ(nat)`` and these globals, written as the Prelude writes them:

* ``@length(xs)``: ``1 + length(tl)`` (not tail-recursive);
* ``@map(f, xs)``: ``Cons(f(h), map(f, t))`` (not tail-recursive);
* ``@foldl(f, acc, xs)``: tail-recursive left fold;
* ``@nat_add(a, b)``: ``succ(nat_add(p, b))`` by recursion on ``a``;
* ``@even(n)`` / ``@odd(n)``: mutually recursive on int32.

Plus converters between Python lists and List values (loops, so 100,000 elements work).
"""

import numpy as np

import irlib
from irlib import (Call, Clause, Constructor, Function, FuncType, GlobalTypeVar, GlobalVar,
                   If, Match, PatternConstructor, PatternVar, PatternWildcard,
                   TensorType, TypeCall, TypeData, TypeVar, Var, const)
from interp import ConstructorValue, NDArray
from helpers import make_list_module

INT = TensorType((), "int32")


def list_module():
    """The module described in the module docstring; returns ``(mod, names)``."""
    mod, list_type, cons, nil = make_list_module()
    nat_type = GlobalTypeVar("nat")
    zero = Constructor("zero", [], nat_type)
    succ = Constructor("succ", [TypeCall(nat_type, [])], nat_type)
    mod[nat_type] = TypeData(nat_type, [], [zero, succ])
    nat = TypeCall(nat_type, [])

    def list_of(t):
        return TypeCall(list_type, [t])

    # @length
    length = GlobalVar("length")
    t = TypeVar("A")
    xs, rest = Var("xs", list_of(t)), Var("rest")
    mod[length] = Function([xs], Match(xs, [
        Clause(PatternConstructor(cons, [PatternWildcard(), PatternVar(rest)]),
               irlib.add(const(1), Call(length, [rest]))),
        Clause(PatternConstructor(nil), const(0))]), INT, [t])
    # @map
    map_ = GlobalVar("map")
    ta, tb = TypeVar("A"), TypeVar("B")
    f, xs, h, tl = Var("f", FuncType([ta], tb)), Var("xs", list_of(ta)), Var("h"), Var("t")
    mod[map_] = Function([f, xs], Match(xs, [
        Clause(PatternConstructor(cons, [PatternVar(h), PatternVar(tl)]),
               Call(cons, [Call(f, [h]), Call(map_, [f, tl])])),
        Clause(PatternConstructor(nil), Call(nil, []))]), list_of(tb), [ta, tb])
    # @foldl
    foldl = GlobalVar("foldl")
    ta, tb = TypeVar("A"), TypeVar("B")
    f, acc = Var("f", FuncType([ta, tb], ta)), Var("acc", ta)
    xs, h, tl = Var("xs", list_of(tb)), Var("h"), Var("t")
    mod[foldl] = Function([f, acc, xs], Match(xs, [
        Clause(PatternConstructor(cons, [PatternVar(h), PatternVar(tl)]),
               Call(foldl, [f, Call(f, [acc, h]), tl])),
        Clause(PatternConstructor(nil), acc)]), ta, [ta, tb])
    # @nat_add
    nat_add = GlobalVar("nat_add")
    x, y, p = Var("a", nat), Var("b", nat), Var("p")
    mod[nat_add] = Function([x, y], Match(x, [
        Clause(PatternConstructor(zero), y),
        Clause(PatternConstructor(succ, [PatternVar(p)]), Call(succ, [Call(nat_add, [p, y])]))]),
        nat)
    # @even / @odd
    even, odd = GlobalVar("even"), GlobalVar("odd")
    n1, n2 = Var("n", INT), Var("n", INT)
    bool_t = TensorType((), "bool")
    mod[even] = Function([n1], If(irlib.equal(n1, const(0)), const(True),
                                  Call(odd, [irlib.subtract(n1, const(1))])), bool_t)
    mod[odd] = Function([n2], If(irlib.equal(n2, const(0)), const(False),
                                 Call(even, [irlib.subtract(n2, const(1))])), bool_t)
    names = dict(List=list_type, Cons=cons, Nil=nil, nat=nat_type, zero=zero, succ=succ,
                 length=length, map=map_, foldl=foldl, nat_add=nat_add, even=even, odd=odd)
    return mod, names


def to_list_value(names, items, dtype="int32"):
    """A List value holding ``items`` (each converted to a 0-d tensor of ``dtype``)."""
    cons, nil = names["Cons"], names["Nil"]
    value = ConstructorValue(nil.tag, [], nil)
    for item in reversed(list(items)):
        field = item if not np.isscalar(item) else NDArray(np.array(item, dtype=dtype))
        value = ConstructorValue(cons.tag, [field, value], cons)
    return value


def from_list_value(names, value):
    """The Python list of the fields of a List value (tensors as numpy scalars/arrays)."""
    items = []
    while value.tag == names["Cons"].tag:
        head, value = value.fields
        items.append(head.numpy().item() if isinstance(head, NDArray) and head.ndim == 0
                     else head)
    assert value.tag == names["Nil"].tag
    return items


def list_expr(names, items):
    """The expression ``Cons(c0, Cons(c1, ... Nil))`` of int32 constants."""
    expr = Call(names["Nil"], [])
    for item in reversed(list(items)):
        expr = Call(names["Cons"], [const(item), expr])
    return expr
