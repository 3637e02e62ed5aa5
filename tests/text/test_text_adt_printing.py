"""Printer: modules, ADTs, match, patterns, types and other standalone objects.

Expected texts are written by hand from docs/text-format.md.
"""

import pytest

import irlib
from irlib import (Clause, Constructor, Function, GlobalTypeVar, IRModule, Match, PatternConstructor,
                   PatternTuple, PatternVar, PatternWildcard, TensorType, TypeCall, TypeData,
                   TypeVar, const, var)

from text_test_helpers import check


def make_list_module():
    a = TypeVar("A")
    list_type = GlobalTypeVar("List")
    cons = Constructor("Cons", [a, TypeCall(list_type, [a])], list_type)
    nil = Constructor("Nil", [], list_type)
    mod = IRModule()
    mod[list_type] = TypeData(list_type, [a], [cons, nil])
    return mod, list_type, cons, nil


def test_module_with_adt_and_recursive_match():
    mod, list_type, cons, nil = make_list_module()
    length = irlib.GlobalVar("length")
    b = TypeVar("A")
    items, tail = var("l", TypeCall(list_type, [b])), var("t")
    body = Match(items, [
        Clause(PatternConstructor(cons, [PatternWildcard(), PatternVar(tail)]),
               irlib.add(const(1), length(tail))),
        Clause(PatternConstructor(nil), const(0)),
    ])
    mod[length] = Function([items], body, TensorType((), "int32"), [b])
    mod["main"] = Function([], length(cons(const(1), cons(const(2), nil()))))
    expected = ("type List[A] {\n"
                "  Cons(A, List[A]),\n"
                "  Nil,\n"
                "}\n"
                "\n"
                "def @length[A](%l: List[A]) -> int32 {\n"
                "  match (%l) {\n"
                "    Cons(_, %t) => {\n"
                "      %0 = @length(%t);\n"
                "      add(1, %0)\n"
                "    },\n"
                "    Nil => {\n"
                "      0\n"
                "    },\n"
                "  }\n"
                "}\n"
                "\n"
                "def @main() {\n"
                "  %1 = Cons(2, Nil);\n"
                "  %2 = Cons(1, %1);\n"
                "  @length(%2)\n"
                "}")
    check(str(mod), expected)
    check(mod.astext(), '#[version = "0.0.5"]\n' + expected + "\n")


def test_definitions_sorted_by_name_and_names_restart_per_def():
    mod = IRModule()
    for name in ["zeta", "alpha"]:
        x = var("x", "float32")
        mod[name] = Function([x], irlib.exp(x))
    check(str(mod), "def @alpha(%x: float32) {\n"
                    "  exp(%x)\n"
                    "}\n"
                    "\n"
                    "def @zeta(%x: float32) {\n"
                    "  exp(%x)\n"
                    "}")


def test_empty_module():
    assert str(IRModule()) == ""
    assert IRModule().astext() == '#[version = "0.0.5"]\n'


def test_partial_match_as_binding_value_with_tuple_pattern():
    pair, a, b = var("p"), var("a"), var("b")
    match = Match(pair, [Clause(PatternTuple([PatternVar(a), PatternVar(b)]),
                                irlib.exp(irlib.add(a, b)))], complete=False)
    check(str(irlib.exp(match)), "free_var %p;\n"
                                 "%1 = match? (%p) {\n"
                                 "  (%a, %b) => {\n"
                                 "    %0 = add(%a, %b);\n"
                                 "    exp(%0)\n"
                                 "  },\n"
                                 "};\n"
                                 "exp(%1)")


def test_match_as_let_value_and_nested_patterns():
    _, list_type, cons, nil = make_list_module()
    xs, head, out = var("xs"), var("h", "int32"), var("out")
    match = Match(xs, [
        Clause(PatternConstructor(cons, [PatternVar(head), PatternConstructor(nil)]), head),
        Clause(PatternWildcard(), const(0)),
    ])
    check(str(irlib.Let(out, match, out)), "free_var %xs;\n"
                                           "let %out = match (%xs) {\n"
                                           "  Cons(%h: int32, Nil) => {\n"
                                           "    %h\n"
                                           "  },\n"
                                           "  _ => {\n"
                                           "    0\n"
                                           "  },\n"
                                           "};\n"
                                           "%out")


def test_binding_using_a_pattern_var_stays_in_its_clause():
    _, _, cons, nil = make_list_module()
    xs, head, rest = var("xs"), var("h"), var("r")
    shared = irlib.exp(const(1.0))
    match = Match(xs, [
        Clause(PatternConstructor(cons, [PatternVar(head), PatternVar(rest)]),
               irlib.add(irlib.multiply(head, shared), shared)),
        Clause(PatternConstructor(nil), shared),
    ])
    check(str(match), "free_var %xs;\n"
                      "%0 = exp(1f);\n"
                      "match (%xs) {\n"
                      "  Cons(%h, %r) => {\n"
                      "    %1 = multiply(%h, %0);\n"
                      "    add(%1, %0)\n"
                      "  },\n"
                      "  Nil => {\n"
                      "    %0\n"
                      "  },\n"
                      "}")


def test_match_without_clauses():
    x = var("x")
    check(str(Match(x, [])), "free_var %x;\nmatch (%x) {\n}")


def test_constructors_as_values_and_nullary_calls():
    _, _, cons, nil = make_list_module()
    fmap = irlib.GlobalVar("map")
    check(str(fmap(cons, nil())), "@map(Cons, Nil)")
    assert str(cons) == "Cons"
    assert str(nil()) == "Nil"


def test_patterns_print_standalone():
    _, _, cons, nil = make_list_module()
    h = var("h")
    assert str(PatternConstructor(cons, [PatternVar(h), PatternWildcard()])) == "Cons(%h, _)"
    assert str(PatternTuple([PatternVar(var("a"))])) == "(%a,)"
    assert str(PatternTuple([])) == "()"
    assert str(PatternConstructor(nil)) == "Nil"
    assert irlib.astext(PatternWildcard()) == '#[version = "0.0.5"]\n_'


def test_clause_prints_pattern_and_body():
    _, _, cons, _ = make_list_module()
    h, t = var("h"), var("t")
    clause = Clause(PatternConstructor(cons, [PatternVar(h), PatternVar(t)]),
                    irlib.add(irlib.exp(h), h))
    check(str(clause), "Cons(%h, %t) => {\n"
                       "  %0 = exp(%h);\n"
                       "  add(%0, %h)\n"
                       "}")


@pytest.mark.parametrize("ty, text", [
    (TensorType((10,), "float32"), "Tensor[(10), float32]"),
    (TensorType((), "bool"), "bool"),
    (TensorType((1, 3), "float32"), "Tensor[(1, 3), float32]"),
    (irlib.TupleType([TensorType((), "int32")]), "(int32,)"),
    (irlib.FuncType([TensorType((), "int32")], irlib.TupleType([])), "fn (int32) -> ()"),
    (irlib.RefType(TensorType((), "float32")), "ref(float32)"),
    (irlib.IncompleteType(), "_"),
    (TensorType((irlib.size_var("n"), irlib.size_var("n") * 2 + 1), "float32"),
     "Tensor[(n, 2*n + 1), float32]"),
    (TensorType((irlib.Any,), "float32"), "Tensor[(?), float32]"),
])
def test_types_print_their_syntax(ty, text):
    assert irlib.pretty_print(ty) == text
    assert irlib.astext(ty) == '#[version = "0.0.5"]\n' + text


def test_type_data_prints_definition():
    mod, list_type, _, _ = make_list_module()
    check(irlib.pretty_print(mod[list_type]), "type List[A] {\n"
                                              "  Cons(A, List[A]),\n"
                                              "  Nil,\n"
                                              "}")


def test_unprintable_object_raises_type_error():
    with pytest.raises(TypeError, match="cannot print a int"):
        irlib.pretty_print(3)
