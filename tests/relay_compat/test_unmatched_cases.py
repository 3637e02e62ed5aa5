"""Relay-compatibility tests for match completeness (mirrors the behaviours of TVM's
``test_pass_unmatched_cases.py``): ``irlib.analysis.unmatched_cases`` on empty and trivial
matches, single- and multi-constructor ADTs, nested and mixed constructors, tuple patterns,
and type inference rejecting an incomplete ``match`` while accepting ``match?``. The
expected missing cases are worked out by hand.
"""

import pytest

import irlib
from irlib import TypeInferenceError
from irlib.analysis import unmatched_cases
from irlib.prelude import Prelude

SEMVER = '#[version = "0.0.5"]\n'
W = irlib.PatternWildcard


def pc(ctor, *patterns):
    return irlib.PatternConstructor(ctor, list(patterns))


def match_of(*patterns):
    v = irlib.Var("v")
    return irlib.Match(v, [irlib.Clause(p, v) for p in patterns])


@pytest.fixture(scope="module")
def lists():
    mod = irlib.IRModule()
    Prelude(mod)
    _, cons, nil = mod.get_type("List")
    return mod, cons, nil


@pytest.fixture(scope="module")
def boxes():
    mod = irlib.IRModule()
    box = irlib.GlobalTypeVar("box")
    a = irlib.TypeVar("a")
    box_ctor = irlib.Constructor("box", [a], box)
    mod[box] = irlib.TypeData(box, [a], [box_ctor])
    Prelude(mod)
    _, cons, nil = mod.get_type("List")
    return mod, box_ctor, cons, nil


def test_empty_match_misses_everything():
    unmatched = unmatched_cases(irlib.Match(irlib.Var("v"), []))
    assert len(unmatched) == 1 and isinstance(unmatched[0], irlib.PatternWildcard)


def test_wildcard_and_var_patterns_match_everything():
    assert unmatched_cases(match_of(W())) == []
    assert unmatched_cases(match_of(irlib.PatternVar(irlib.Var("w")))) == []


def test_single_constructor_adt(boxes):
    mod, box, _, _ = boxes
    assert unmatched_cases(match_of(pc(box, W())), mod) == []
    assert unmatched_cases(match_of(pc(box, pc(box, pc(box, W())))), mod) == []


def test_too_specific_match(lists):
    mod, cons, nil = lists
    unmatched = unmatched_cases(match_of(pc(cons, W(), pc(cons, W(), W()))), mod)
    # misses Nil and lists of length one
    assert len(unmatched) == 2
    by_ctor = {case.constructor: case for case in unmatched}
    assert set(by_ctor) == {cons, nil}
    single = by_ctor[cons]
    assert isinstance(single.patterns[0], irlib.PatternWildcard)
    assert single.patterns[1].constructor is nil
    assert unmatched_cases(match_of(pc(cons, W(), pc(cons, W(), W())), W()), mod) == []


def test_multiple_constructor_clauses(lists):
    mod, cons, nil = lists
    match = match_of(pc(cons, W(), pc(nil)),                 # exactly one element
                     pc(cons, W(), pc(cons, W(), pc(nil))),  # exactly two
                     pc(nil),                                # empty
                     pc(cons, W(), pc(cons, W(), W())))      # two or more
    assert unmatched_cases(match, mod) == []


def test_missing_in_the_middle(lists):
    mod, cons, nil = lists
    match = match_of(pc(cons, W(), pc(nil)),
                     pc(nil),
                     pc(cons, W(), pc(cons, W(), pc(cons, W(), W()))))
    unmatched = unmatched_cases(match, mod)
    # only lists of exactly two elements are missing: Cons(_, Cons(_, Nil))
    assert len(unmatched) == 1
    case = unmatched[0]
    assert case.constructor is cons
    assert case.patterns[1].constructor is cons
    assert case.patterns[1].patterns[1].constructor is nil


def test_mixed_adt_constructors(boxes):
    mod, box, cons, nil = boxes
    unmatched = unmatched_cases(match_of(pc(box, pc(cons, W(), W()))), mod)
    assert len(unmatched) == 1
    assert unmatched[0].constructor is box
    assert len(unmatched[0].patterns) == 1 and unmatched[0].patterns[0].constructor is nil
    assert unmatched_cases(match_of(pc(box, pc(nil)), pc(box, pc(cons, W(), W()))), mod) == []

    unmatched = unmatched_cases(match_of(pc(cons, pc(box, W()), W())), mod)
    assert len(unmatched) == 1 and unmatched[0].constructor is nil
    complete = match_of(pc(cons, pc(box, W()), pc(nil)),
                        pc(cons, pc(box, W()), pc(cons, pc(box, W()), pc(nil))),
                        pc(cons, W(), W()),
                        pc(nil))
    assert unmatched_cases(complete, mod) == []


def test_tuple_patterns():
    a, b = irlib.Var("a"), irlib.Var("b")
    clause = irlib.Clause(irlib.PatternTuple([irlib.PatternVar(a), irlib.PatternVar(b)]), a + b)
    match = irlib.Match(irlib.Tuple([irlib.const(1), irlib.const(1)]), [clause])
    assert unmatched_cases(match) == []


def test_tuple_of_lists(lists):
    mod, cons, nil = lists
    v = irlib.Var("v")
    match = irlib.Match(v, [irlib.Clause(irlib.PatternTuple([pc(nil), W()]), v),
                            irlib.Clause(irlib.PatternTuple([W(), pc(nil)]), v)])
    unmatched = unmatched_cases(match, mod)
    # (Cons(_, _), Cons(_, _)) is not handled
    assert len(unmatched) == 1
    case = unmatched[0]
    assert isinstance(case, irlib.PatternTuple)
    assert [p.constructor for p in case.patterns] == [cons, cons]


def test_constructor_of_an_unknown_type_needs_the_module(lists):
    _, cons, _ = lists
    with pytest.raises(irlib.IRError, match="mod"):
        unmatched_cases(match_of(pc(cons, W(), W())))


ARITH = """
type Arith[A] {
    Zero,
    Const(A),
    Plus(Arith[A], Arith[A])
}
"""
LIST = """
type List[A] {
    Cons(A, List[A]),
    Nil,
}
"""


def test_recursive_type_terminates():
    irlib.fromtext(SEMVER + ARITH + """
def @shallow_opt[A](%a: Arith[A]) -> Arith[A] {
    match (%a) {
        Plus(Zero, %r) => %r,
        Plus(%l, Zero) => %l,
        _ => %a
    }
}""")


def test_expanding_nullary_constructor_and_empty_tuple():
    irlib.fromtext(SEMVER + LIST + """
def @expand_on_nil_match(%a: List[(List[()],)]) -> int {
    match (%a) {
        Cons((Nil), Nil) => 1,
        _ => 2,
    }
}""")
    irlib.fromtext(SEMVER + LIST + """
def @expand_on_empty_tuple_match(%a: (List[()], ())) -> int {
    match (%a) {
        (Cons((), Nil), ()) => 1,
        _ => 2,
    }
}""")


def test_type_inference_rejects_incomplete_match_only():
    body = """
def @head_or_zero(%l: List[int32]) -> int32 {
    %s (%%l) {
        Cons(%%x, _) => %%x,
    }
}"""
    with pytest.raises(TypeInferenceError, match="Nil"):
        irlib.fromtext(SEMVER + LIST + body.replace("%s", "match").replace("%%", "%"))
    irlib.fromtext(SEMVER + LIST + body.replace("%s", "match?").replace("%%", "%"))
