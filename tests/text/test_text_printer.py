"""Printer: graph form, scoping of bindings, names, free variables, expression forms.

Every expected text here is written by hand from the conventions in docs/text-format.md.
"""

import irlib
from irlib import Function, If, Let, RefCreate, RefRead, RefWrite, Tuple, TupleGetItem, const, var
from irlib.ir.expr import Call
from irlib.op import registry

from text_test_helpers import check


# -- the spec's examples ---------------------------------------------------------------------

def test_nested_call_is_bound_and_root_is_inline():
    x = var("x", shape=(10,))
    expr = irlib.nn.relu(irlib.add(x, const(1.0)))
    check(str(expr), "free_var %x: Tensor[(10), float32];\n"
                     "%0 = add(%x, 1f);\n"
                     "nn.relu(%0)")


def test_astext_adds_header_and_no_final_newline():
    x = var("x", shape=(10,))
    expr = irlib.nn.relu(irlib.add(x, const(1.0)))
    check(irlib.astext(expr), '#[version = "0.0.5"]\n'
                              "free_var %x: Tensor[(10), float32];\n"
                              "%0 = add(%x, 1f);\n"
                              "nn.relu(%0)")
    assert expr.astext() == irlib.astext(expr)


def test_let_value_used_once_is_inline():
    x = var("x")
    check(str(Let(x, Tuple([const(0), const(0)]), x)), "let %x = (0, 0);\n%x")


def test_let_value_shared_with_body_is_bound_first():
    x = var("x")
    pair = Tuple([const(0), const(0)])
    check(str(Let(x, pair, pair)), "%0 = (0, 0);\nlet %x = %0;\n%0")


def test_local_function_numbered_after_its_inner_bindings():
    a, b, p0, p1 = var("a"), var("b"), var("p0"), var("p1")
    inner = Function([a, b], irlib.add(irlib.multiply(irlib.exp(a), b), const(1.0)))
    outer = Function([p0, p1], Call(inner, (p0, p1)))
    check(str(outer), "fn (%p0, %p1) {\n"
                      "  %2 = fn (%a, %b) {\n"
                      "    %0 = exp(%a);\n"
                      "    %1 = multiply(%0, %b);\n"
                      "    add(%1, 1f)\n"
                      "  };\n"
                      "  %2(%p0, %p1)\n"
                      "}")


# -- sharing and placement -------------------------------------------------------------------

def test_shared_subexpression_printed_once():
    x = var("x", shape=(2,))
    shared = irlib.exp(x)
    expr = irlib.add(shared, irlib.multiply(shared, shared))
    check(str(expr), "free_var %x: Tensor[(2), float32];\n"
                     "%0 = exp(%x);\n"
                     "%1 = multiply(%0, %0);\n"
                     "add(%0, %1)")


def test_shared_tuple_fields():
    x = var("x", shape=(2,))
    shared = irlib.exp(x)
    check(str(Tuple([shared, shared])), "free_var %x: Tensor[(2), float32];\n"
                                        "%0 = exp(%x);\n"
                                        "(%0, %0)")


def test_branch_only_subexpressions_stay_inside_their_branch():
    cond, y = var("c", "bool"), var("y", shape=(2,))
    shared = irlib.add(y, y)
    body = If(cond, irlib.multiply(irlib.exp(y), shared), irlib.subtract(irlib.log(y), shared))
    check(str(Function([cond, y], body)), "fn (%c: bool, %y: Tensor[(2), float32]) {\n"
                                          "  %0 = add(%y, %y);\n"
                                          "  if (%c) {\n"
                                          "    %1 = exp(%y);\n"
                                          "    multiply(%1, %0)\n"
                                          "  } else {\n"
                                          "    %2 = log(%y);\n"
                                          "    subtract(%2, %0)\n"
                                          "  }\n"
                                          "}")


def test_non_atomic_condition_is_bound():
    x, y = var("x", "float32"), var("y", "float32")
    expr = If(irlib.less(x, y), x, y)
    check(str(expr), "free_var %x: float32;\n"
                     "free_var %y: float32;\n"
                     "%0 = less(%x, %y);\n"
                     "if (%0) {\n"
                     "  %x\n"
                     "} else {\n"
                     "  %y\n"
                     "}")


def test_binding_that_uses_a_let_var_comes_after_the_let():
    x, y = var("x", shape=(2,)), var("y")
    body = irlib.add(irlib.multiply(y, y), y)
    check(str(Function([x], Let(y, irlib.exp(x), body))), "fn (%x: Tensor[(2), float32]) {\n"
                                                          "  let %y = exp(%x);\n"
                                                          "  %0 = multiply(%y, %y);\n"
                                                          "  add(%0, %y)\n"
                                                          "}")


def test_node_shared_by_let_value_and_body_is_bound_before_the_let():
    x, y = var("x", shape=(2,)), var("y")
    shared = irlib.exp(x)
    expr = Let(y, irlib.add(shared, shared), irlib.multiply(y, shared))
    check(str(expr), "free_var %x: Tensor[(2), float32];\n"
                     "%0 = exp(%x);\n"
                     "let %y = add(%0, %0);\n"
                     "multiply(%y, %0)")


def test_let_chain_flattens_and_annotated_let_var():
    x, y = var("x"), var("y", "float32")
    expr = Let(y, const(1.0), Let(x, irlib.add(y, y), x))
    check(str(expr), "let %y: float32 = 1f;\n"
                     "let %x = add(%y, %y);\n"
                     "%x")


def test_let_as_let_value_is_parenthesised():
    x, y = var("x"), var("y")
    check(str(Let(x, Let(y, const(1), y), x)), "let %x = (\n"
                                               "  let %y = 1;\n"
                                               "  %y\n"
                                               ");\n"
                                               "%x")


def test_shared_let_is_bound_as_parenthesised_block():
    y = var("y")
    inner = Let(y, const(1), y)
    check(str(Tuple([inner, inner])), "%0 = (\n"
                                      "  let %y = 1;\n"
                                      "  %y\n"
                                      ");\n"
                                      "(%0, %0)")


def test_let_inside_function_body_and_sequence_var():
    x, unit = var("x", "float32"), var("")
    func = Function([x], Let(unit, irlib.exp(x), x))
    check(str(func), "fn (%x: float32) {\n"
                     "  let %v = exp(%x);\n"
                     "  %x\n"
                     "}")


# -- names and free variables ----------------------------------------------------------------

def test_free_vars_declared_first_in_first_use_order():
    a, b = var("a", shape=(2,)), var("b")
    check(str(irlib.add(b, a)), "free_var %b;\n"
                                "free_var %a: Tensor[(2), float32];\n"
                                "add(%b, %a)")


def test_clashing_names_get_digits():
    first, second, literal_x1 = var("x"), var("x"), var("x1")
    check(str(Tuple([first, second, literal_x1])), "free_var %x;\n"
                                                   "free_var %x1;\n"
                                                   "free_var %x11;\n"
                                                   "(%x, %x1, %x11)")


def test_shadowing_let_var_gets_a_fresh_name():
    outer, inner = var("x"), var("x")
    func = Function([outer], Let(inner, irlib.add(outer, const(1)), inner))
    check(str(func), "fn (%x) {\n"
                     "  let %x1 = add(%x, 1);\n"
                     "  %x1\n"
                     "}")


def test_names_are_sanitized():
    names = [var(""), var("1a"), var("a/b.c"), var("_t"), var("x-y")]
    check(str(Tuple(names)), "free_var %v;\n"
                             "free_var %v1a;\n"
                             "free_var %a/b_c;\n"
                             "free_var %_t;\n"
                             "free_var %x_y;\n"
                             "(%v, %v1a, %a/b_c, %_t, %x_y)")


def test_a_bare_free_var_prints_its_declaration():
    check(str(var("x", "int32")), "free_var %x: int32;\n%x")


# -- forms ---------------------------------------------------------------------------------

def test_tuple_forms():
    x = var("x")
    check(str(Tuple([x])), "free_var %x;\n(%x,)")
    check(str(Tuple([])), "()")


def test_projection_of_projection_is_bound():
    t = var("t")
    check(str(TupleGetItem(TupleGetItem(t, 0), 1)), "free_var %t;\n"
                                                    "%0 = %t.0;\n"
                                                    "%0.1")


def test_reference_ops():
    x = var("x", "float32")
    cell = RefCreate(x)
    expr = Tuple([RefWrite(cell, const(1.0)), RefRead(cell)])
    check(str(expr), "free_var %x: float32;\n"
                     "%0 = ref(%x);\n"
                     "%1 = ref_write(%0, 1f);\n"
                     "%2 = ref_read(%0);\n"
                     "(%1, %2)")


def test_function_with_type_params_ret_type_and_attrs():
    a_type = irlib.TypeVar("A")
    a = var("a", a_type)
    func = Function([a], a, ret_type=a_type, type_params=[a_type])
    check(str(func), "fn [A](%a: A) -> A {\n  %a\n}")
    p0 = var("p0", shape=(3,))
    primitive = Function([p0], irlib.exp(p0), attrs={"Primitive": 1, "Compiler": "ccompiler"})
    check(str(primitive), 'fn (%p0: Tensor[(3), float32], Primitive=1, Compiler="ccompiler") {\n'
                          "  exp(%p0)\n"
                          "}")
    check(str(Function([], const(1), attrs={"Primitive": 1})), "fn (Primitive=1) {\n  1\n}")


def test_distinct_type_vars_with_the_same_name_are_kept_apart():
    first, second = irlib.TypeVar("A"), irlib.TypeVar("A")
    a, b = var("a", first), var("b", second)
    func = Function([a, b], a, type_params=[first, second])
    check(str(func), "fn [A, A1](%a: A, %b: A1) {\n  %a\n}")


def test_type_var_names_the_type_grammar_would_misread_are_prefixed():
    odd, blank = irlib.TypeVar("int_like"), irlib.TypeVar("_")
    a = var("a", odd)
    func = Function([a], a, type_params=[odd, blank])
    check(str(func), "fn [Tint_like, T_](%a: Tint_like) {\n  %a\n}")


def test_atoms_print_bare():
    assert str(registry.get("add")) == "add"
    assert str(irlib.GlobalVar("f")) == "@f"
    assert str(const(2)) == "2"
    assert str(Tuple([registry.get("nn.relu")])) == "(nn.relu,)"


def test_call_of_global_and_curried_call():
    f, x = irlib.GlobalVar("f"), var("x")
    check(str(Call(Call(f, (x,)), (x,))), "free_var %x;\n"
                                          "%0 = @f(%x);\n"
                                          "%0(%x)")


def test_if_inside_let_value_and_nested_blocks_indent():
    c, x = var("c", "bool"), var("x")
    expr = Let(x, If(c, irlib.exp(const(1.0)), const(2.0)), x)
    check(str(expr), "free_var %c: bool;\n"
                     "let %x = if (%c) {\n"
                     "  exp(1f)\n"
                     "} else {\n"
                     "  2f\n"
                     "};\n"
                     "%x")


def test_function_shared_by_two_calls_is_bound_once():
    a, x = var("a"), var("x")
    func = Function([a], irlib.exp(a))
    expr = irlib.add(Call(func, (x,)), Call(func, (x,)))
    check(str(expr), "free_var %x;\n"
                     "%0 = fn (%a) {\n"
                     "  exp(%a)\n"
                     "};\n"
                     "%1 = %0(%x);\n"
                     "%2 = %0(%x);\n"
                     "add(%1, %2)")
