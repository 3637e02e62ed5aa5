"""Relay-compatibility tests for ADTs and the Prelude (mirrors the behaviours of TVM's
``tests/python/relay/test_adt.py``): nat values, constructor types, the types and results of
every Prelude list/option/tree function, and wildcard, ordered and nested matches.

Expected values are derived by hand from the functions' definitions (relay_spec.md §1.3).
"""

import numpy as np
import pytest

import irlib
from irlib import transform
from irlib.prelude import Prelude
from interp import ConstructorValue, TupleValue, cpu, create_executor
from interp.testing import count as nat_count, make_nat_expr, make_nat_value

prelude = Prelude(irlib.IRModule({}))
prelude.mod.import_from_std("nat.rly")

nat, z, s = prelude.mod.get_type("nat")
rlist, cons, nil = prelude.mod.get_type("List")
optional, some, none = prelude.mod.get_type("Option")
tree, rose = prelude.mod.get_type("Tree")
double = prelude.mod.get_global_var("nat_double")
add = prelude.mod.get_global_var("nat_add")
int32 = irlib.scalar_type("int32")


def count(value):
    return nat_count(prelude, value)


def run(expr):
    return create_executor(mod=prelude.mod, device=cpu(0), target="llvm").evaluate(expr)


def nat_list(*numbers):
    result = nil()
    for n in reversed(numbers):
        result = cons(make_nat_expr(prelude, n), result)
    return result


def to_list(value):
    assert isinstance(value, ConstructorValue)
    items = []
    while value.tag == cons.tag:
        items.append(value.fields[0])
        value = value.fields[1]
    assert value.tag == nil.tag
    return items


def scalar(value):
    return value.numpy().item()


def test_nat_value_round_trip():
    assert count(make_nat_value(prelude, 10)) == 10
    assert count(run(s(s(z())))) == 2
    value = make_nat_value(prelude, 1)
    assert value.tag == s.tag and value.constructor is s
    assert value.fields[0].tag == z.tag and len(value.fields[0].fields) == 0


def test_nat_constructor_types():
    mod = prelude.mod.copy()
    test_z, test_sz = irlib.GlobalVar("test_z"), irlib.GlobalVar("test_sz")
    mod[test_z] = irlib.Function([], z())
    mod[test_sz] = irlib.Function([], s(z()))
    checked = transform.InferType()(mod)
    assert checked[test_z].body.checked_type == nat()
    assert checked[test_sz].body.checked_type == nat()
    assert nat() == irlib.TypeCall(nat, [])


def test_double_and_add():
    assert prelude.mod[double].checked_type == irlib.FuncType([nat()], nat())
    assert prelude.mod[add].checked_type == irlib.FuncType([nat(), nat()], nat())
    assert count(run(double(s(z())))) == 2
    assert count(run(add(s(z()), s(s(z()))))) == 3


def test_list_constructor_type():
    mod = prelude.mod.copy()
    gv = irlib.GlobalVar("test_consz")
    mod[gv] = irlib.Function([], cons(z(), nil()))
    assert transform.InferType()(mod)[gv].body.checked_type == rlist(nat())


def test_hd_tl():
    lst = nat_list(*range(5))
    got = []
    for _ in range(5):
        got.append(count(run(prelude.hd(lst))))
        lst = prelude.tl(lst)
    assert got == [0, 1, 2, 3, 4]


def test_nth_and_update():
    lst = nil()
    for i in reversed(range(6)):
        lst = cons(irlib.const(i * 10), lst)
    nth = prelude.mod.get_global_var("nth")
    assert [scalar(run(nth(lst, irlib.const(i)))) for i in range(6)] == [0, 10, 20, 30, 40, 50]
    zeros = nat_list(0, 0, 0, 0)
    for i, v in enumerate([3, 1, 4, 1]):
        zeros = prelude.update(zeros, irlib.const(i), make_nat_expr(prelude, v))
    assert [count(run(nth(zeros, irlib.const(i)))) for i in range(4)] == [3, 1, 4, 1]


def test_length():
    a = irlib.TypeVar("a")
    assert prelude.mod[prelude.length].checked_type == irlib.FuncType([rlist(a)], int32, [a])
    assert scalar(run(prelude.length(cons(z(), cons(z(), cons(z(), nil())))))) == 3


def test_map():
    a, b = irlib.TypeVar("a"), irlib.TypeVar("b")
    expected = irlib.FuncType([irlib.FuncType([a], b), rlist(a)], rlist(b), [a, b])
    assert prelude.mod[prelude.map].checked_type == expected
    # the type parameters are binders: their order matters, their names do not
    swapped = irlib.FuncType([irlib.FuncType([b], a), rlist(b)], rlist(a), [a, b])
    assert prelude.mod[prelude.map].checked_type != swapped
    x = irlib.Var("x")
    res = run(prelude.map(irlib.Function([x], s(x)), cons(z(), cons(z(), nil()))))
    assert [count(v) for v in to_list(res)] == [1, 1]


def test_foldl():
    a, b = irlib.TypeVar("a"), irlib.TypeVar("b")
    expected = irlib.FuncType([irlib.FuncType([a, b], a), a, rlist(b)], a, [a, b])
    assert prelude.mod[prelude.foldl].checked_type == expected
    acc, x = irlib.Var("acc"), irlib.Var("x")
    rev_dup = irlib.Function([acc, x], cons(x, cons(x, acc)))
    res = run(prelude.foldl(rev_dup, nil(), nat_list(1, 2, 3)))
    assert [count(v) for v in to_list(res)] == [3, 3, 2, 2, 1, 1]


def test_foldr_and_foldr1():
    a, b = irlib.TypeVar("a"), irlib.TypeVar("b")
    expected = irlib.FuncType([irlib.FuncType([a, b], b), b, rlist(a)], b, [a, b])
    assert prelude.mod[prelude.foldr].checked_type == expected
    x, y = irlib.Var("x"), irlib.Var("y")
    res = run(prelude.foldr(irlib.Function([x, y], cons(x, y)), nil(), nat_list(1, 2, 3)))
    assert [count(v) for v in to_list(res)] == [1, 2, 3]
    expected1 = irlib.FuncType([irlib.FuncType([a, a], a), rlist(a)], a, [a])
    assert prelude.mod[prelude.foldr1].checked_type == expected1
    p, q = irlib.Var("p"), irlib.Var("q")
    assert count(run(prelude.foldr1(irlib.Function([p, q], add(p, q)), nat_list(1, 2, 3)))) == 6


def test_sum():
    assert prelude.mod[prelude.sum].checked_type == irlib.FuncType([rlist(int32)], int32)
    assert scalar(run(prelude.sum(cons(irlib.const(1), cons(irlib.const(2), nil()))))) == 3


def test_concat():
    a = irlib.TypeVar("a")
    expected = irlib.FuncType([rlist(a), rlist(a)], rlist(a), [a])
    assert prelude.mod[prelude.concat].checked_type == expected
    res = run(prelude.concat(nat_list(1, 2), nat_list(3, 4)))
    assert [count(v) for v in to_list(res)] == [1, 2, 3, 4]


def test_filter():
    a = irlib.TypeVar("a")
    expected = irlib.FuncType([irlib.FuncType([a], irlib.scalar_type("bool")), rlist(a)],
                              rlist(a), [a])
    assert prelude.mod[prelude.filter].checked_type == expected
    x = irlib.Var("x", nat())
    at_least_two = irlib.Function([x], irlib.Match(x, [
        irlib.Clause(irlib.PatternConstructor(s, [irlib.PatternConstructor(
            s, [irlib.PatternWildcard()])]), irlib.const(True)),
        irlib.Clause(irlib.PatternWildcard(), irlib.const(False))]))
    res = run(prelude.filter(at_least_two, nat_list(1, 1, 3, 1, 5, 1)))
    assert [count(v) for v in to_list(res)] == [3, 5]


def test_zip():
    a, b = irlib.TypeVar("a"), irlib.TypeVar("b")
    expected = irlib.FuncType([rlist(a), rlist(b)], rlist(irlib.TupleType([a, b])), [a, b])
    assert prelude.mod[prelude.zip].checked_type == expected
    lists = cons(nil(), cons(cons(nil(), nil()), cons(cons(nil(), cons(nil(), nil())), nil())))
    zipped = to_list(run(prelude.zip(nat_list(1, 2, 3), lists)))
    assert [(count(pair[0]), len(to_list(pair[1]))) for pair in zipped] == [(1, 0), (2, 1), (3, 2)]
    truncated = to_list(run(prelude.zip(nat_list(4, 5), lists)))
    assert [(count(pair[0]), len(to_list(pair[1]))) for pair in truncated] == [(4, 0), (5, 1)]
    assert len(to_list(run(prelude.zip(nat_list(4, 5), cons(nil(), nil()))))) == 1


def test_rev():
    a = irlib.TypeVar("a")
    assert prelude.mod[prelude.rev].checked_type == irlib.FuncType([rlist(a)], rlist(a), [a])
    assert [count(v) for v in to_list(run(prelude.rev(nat_list(1, 2, 3))))] == [3, 2, 1]


def _count_down():
    x, n = irlib.Var("x", nat()), irlib.Var("n", nat())
    return irlib.Function([x], irlib.Match(x, [
        irlib.Clause(irlib.PatternConstructor(s, [irlib.PatternVar(n)]),
                     some(irlib.Tuple([n, x]))),
        irlib.Clause(irlib.PatternConstructor(z, []), none())]))


@pytest.mark.parametrize("name, expected", [("unfoldr", [3, 2, 1]), ("unfoldl", [1, 2, 3])])
def test_unfold(name, expected):
    a, b = irlib.TypeVar("a"), irlib.TypeVar("b")
    ty = irlib.FuncType([irlib.FuncType([a], optional(irlib.TupleType([a, b]))), a], rlist(b),
                        [a, b])
    function = getattr(prelude, name)
    assert prelude.mod[function].checked_type == ty
    res = run(function(_count_down(), make_nat_expr(prelude, 3)))
    assert [count(v) for v in to_list(res)] == expected


def _map_accum_type():
    a, b, c = irlib.TypeVar("a"), irlib.TypeVar("b"), irlib.TypeVar("c")
    return irlib.FuncType([irlib.FuncType([a, b], irlib.TupleType([a, c])), a, rlist(b)],
                          irlib.TupleType([a, rlist(c)]), [a, b, c])


def test_map_accumr():
    assert prelude.mod[prelude.map_accumr].checked_type == _map_accum_type()
    acc, x = irlib.Var("acc", nat()), irlib.Var("x", nat())
    both = irlib.Function([acc, x], irlib.Tuple([add(x, acc), add(x, acc)]))
    res = run(prelude.map_accumr(both, z(), nat_list(1, 2, 3)))
    assert isinstance(res, TupleValue) and len(res) == 2
    # from the right: 3 -> 3, 2 -> 5, 1 -> 6, outputs kept in the input's order
    assert count(res[0]) == 6
    assert [count(v) for v in to_list(res[1])] == [6, 5, 3]


def test_map_accuml():
    assert prelude.mod[prelude.map_accuml].checked_type == _map_accum_type()
    acc, x = irlib.Var("acc", nat()), irlib.Var("x", nat())
    keep = irlib.Function([acc, x], irlib.Tuple([add(x, acc), x]))
    res = run(prelude.map_accuml(keep, z(), nat_list(1, 2, 3)))
    assert count(res[0]) == 6
    assert [count(v) for v in to_list(res[1])] == [3, 2, 1]


def test_option_matching():
    x, y, v = irlib.Var("x"), irlib.Var("y"), irlib.Var("v")
    condense = irlib.Function([x, y], irlib.Match(x, [
        irlib.Clause(irlib.PatternConstructor(some, [irlib.PatternVar(v)]), cons(v, y)),
        irlib.Clause(irlib.PatternConstructor(none), y)]))
    options = cons(some(make_nat_expr(prelude, 3)),
                   cons(none(), cons(some(make_nat_expr(prelude, 1)), nil())))
    assert [count(v) for v in to_list(run(prelude.foldr(condense, nil(), options)))] == [3, 1]


def test_tmap_and_size():
    a, b = irlib.TypeVar("a"), irlib.TypeVar("b")
    assert prelude.mod[prelude.tmap].checked_type == irlib.FuncType(
        [irlib.FuncType([a], b), tree(a)], tree(b), [a, b])
    assert prelude.mod[prelude.size].checked_type == irlib.FuncType([tree(a)], int32, [a])
    x = irlib.Var("x")
    small = rose(z(), cons(rose(z(), nil()), cons(rose(z(), nil()), nil())))
    res = run(prelude.tmap(irlib.Function([x], s(x)), small))
    assert res.tag == rose.tag and count(res.fields[0]) == 1
    children = to_list(res.fields[1])
    assert [count(c.fields[0]) for c in children] == [1, 1]
    assert all(len(to_list(c.fields[1])) == 0 for c in children)
    big = rose(z(), cons(small, cons(small, cons(small, nil()))))
    assert scalar(run(prelude.size(big))) == 10  # 1 + 3 * (1 + 2)


def test_wildcard_match_solo_and_order():
    x = irlib.Var("x", nat())
    copy = irlib.Function([x], irlib.Match(x, [irlib.Clause(irlib.PatternWildcard(), x)]), nat())
    assert count(run(copy(s(s(s(z())))))) == 3
    lst, y, rest = irlib.Var("l", rlist(nat())), irlib.Var("y"), irlib.Var("rest")
    first_wins = irlib.Function([lst], irlib.Match(lst, [
        irlib.Clause(irlib.PatternWildcard(), z()),
        irlib.Clause(irlib.PatternConstructor(cons, [irlib.PatternVar(y), irlib.PatternVar(rest)]),
                     y),
        irlib.Clause(irlib.PatternConstructor(nil), s(z()))]), nat())
    assert count(run(first_wins(cons(s(z()), nil())))) == 0


def test_nested_matches_flatten():
    mod = prelude.mod.copy()
    a = irlib.TypeVar("a")
    x = irlib.Var("x", type_annotation=rlist(rlist(a)))
    y, w, h, t = irlib.Var("y"), irlib.Var("w"), irlib.Var("h"), irlib.Var("t")
    flatten = irlib.GlobalVar("flatten")
    inner = irlib.Match(y, [
        irlib.Clause(irlib.PatternConstructor(nil), flatten(w)),
        irlib.Clause(irlib.PatternConstructor(cons, [irlib.PatternVar(h), irlib.PatternVar(t)]),
                     cons(h, flatten(cons(t, w))))])
    mod[flatten] = irlib.Function([x], irlib.Match(x, [
        irlib.Clause(irlib.PatternConstructor(nil), nil()),
        irlib.Clause(irlib.PatternConstructor(cons, [irlib.PatternVar(y), irlib.PatternVar(w)]),
                     inner)]), rlist(a), [a])
    nested = cons(nat_list(1, 2, 3), cons(nat_list(4, 5, 6), nil()))
    res = create_executor(mod=mod).evaluate(flatten(nested))
    assert [count(v) for v in to_list(res)] == [1, 2, 3, 4, 5, 6]


def test_match_full_var_and_nested_pattern():
    x, v = irlib.Var("x"), irlib.Var("v")
    identity = irlib.Function([x], irlib.Match(x, [irlib.Clause(irlib.PatternVar(v), v)]))
    assert to_list(run(identity(nil()))) == []
    assert [count(e) for e in to_list(run(identity(cons(z(), cons(z(), nil())))))] == [0, 0]
    lst = irlib.Var("l", rlist(nat()))
    h1, h2, t = irlib.Var("h1"), irlib.Var("h2"), irlib.Var("t")
    second = irlib.Function([lst], irlib.Match(lst, [
        irlib.Clause(irlib.PatternConstructor(cons, [
            irlib.PatternVar(h1),
            irlib.PatternConstructor(cons, [irlib.PatternVar(h2), irlib.PatternVar(t)])]), h2),
        irlib.Clause(irlib.PatternWildcard(), z())]))
    assert count(run(second(cons(s(z()), cons(s(s(z())), nil()))))) == 2
    assert count(run(second(cons(s(z()), nil())))) == 0


def test_compose_and_iterate():
    n = irlib.Var("n")
    inc = irlib.Function([n], s(n))
    # compose(f, g)(x) = f(g(x)): inc(double(2)) = 5
    assert count(run(irlib.Call(prelude.compose(inc, double), [s(s(z()))]))) == 5
    # iterate(double, 2)(3) = double(double(3)) = 12
    expr = irlib.Call(prelude.iterate(double, irlib.const(2)), [make_nat_expr(prelude, 3)])
    assert count(run(irlib.Function([], expr)())) == 12


def test_constructor_value_built_in_python():
    one = ConstructorValue(s.tag, [ConstructorValue(z.tag, [], z)], s)
    x = irlib.Var("x", nat())
    res = create_executor(mod=prelude.mod).evaluate(irlib.Function([x], s(x)))(one)
    assert count(res) == 2 and res.constructor is s and res.constructor.name_hint == "succ"


def test_legacy_prelude_aliases():
    assert prelude.cons is cons and prelude.nil is nil and prelude.l is rlist
    assert prelude.some is some and prelude.none is none and prelude.optional is optional
    assert prelude.tree is tree and prelude.rose is rose
    assert prelude.nat is nat and prelude.z is z and prelude.s is s
    assert prelude.double is double and prelude.add is add
    assert prelude.mod.get_constructor(cons.tag) is cons
    assert len({c.tag for c in (cons, nil, some, none, rose, z, s)}) == 7


def test_testing_facade_exports_prelude():
    import interp.testing
    assert interp.testing.Prelude is Prelude

