"""Parser: what each construct of the text format builds, checked against hand-built IR."""

import numpy as np
import pytest

import irlib
from irlib import (Call, Constant, Function, FuncType, If, IncompleteType, Let, Match,
                   PatternConstructor, PatternTuple, PatternVar, PatternWildcard, RefType,
                   TensorType, Tuple, TupleGetItem, TupleType, const)
from irlib.ir import expr as E
from irlib.ir.dims import Any, size_var

HEADER = '#[version = "0.0.5"]\n'


def same(a, b):
    irlib.assert_structural_equal(a, b, map_free_vars=True)


# -- literals ------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, value, dtype", [
    ("42", 42, "int32"), ("-3", -3, "int32"), ("--3", 3, "int32"), ("---3", -3, "int32"),
    ("42i16", 42, "int16"), ("42i64", 42, "int64"), ("42i", 42, "int32"),
    ("2147483648", 2147483648, "int64"),
    ("3f", 3.0, "float32"), ("0.5f", 0.5, "float32"), ("1e-05f", 1e-05, "float32"),
    ("1e+10f", 1e10, "float32"), ("3f16", 3.0, "float16"), ("0.1f64", 0.1, "float64"),
    ("True", True, "bool"), ("False", False, "bool"),
])
def test_scalar_literals(text, value, dtype):
    node = irlib.parse_expr(text)
    assert isinstance(node, Constant)
    array = node.data.numpy()
    assert array.dtype == np.dtype(dtype) and array.shape == ()
    assert array == np.array(value, dtype=dtype)


def test_infinities_and_float16_max():
    assert irlib.parse_expr("inff").data.numpy() == np.float32("inf")
    assert irlib.parse_expr("-inff").data.numpy() == np.float32("-inf")
    assert irlib.parse_expr("65500f16").data.numpy() == np.float16(65504)
    assert irlib.parse_expr("3.4028235e+38f").data.numpy() == np.finfo(np.float32).max


def test_float_digits_convert_in_their_own_dtype():
    # 0.1f is the float32 nearest to 0.1, not float64(0.1) rounded twice
    assert irlib.parse_expr("0.1f").data.numpy() == np.float32(0.1)


# -- expressions ---------------------------------------------------------------------------------

def test_graph_bindings_share_one_node():
    expr = irlib.parse_expr("free_var %x: float32;\n%0 = add(%x, 1f);\nmultiply(%0, %0)")
    assert expr.args[0] is expr.args[1]
    x = irlib.var("x", "float32")
    shared = irlib.add(x, const(1.0))
    same(expr, irlib.multiply(shared, shared))


def test_let_chain_and_sequencing():
    expr = irlib.parse_expr("let %x = 1; let %y: int32 = %x; (); %y")
    assert isinstance(expr, Let) and isinstance(expr.body, Let)
    assert expr.body.var.type_annotation == TensorType((), "int32")
    seq = expr.body.body
    assert isinstance(seq, Let) and seq.var.name_hint == "" and seq.body is expr.body.var


def test_let_is_recursive():
    expr = irlib.parse_expr("let %f = fn (%n: int32) { %f(%n) }; %f")
    assert expr.value.body.op is expr.var


def test_shadowing_makes_a_new_var():
    expr = irlib.parse_expr("fn (%x: int32) { let %x = 2; %x }")
    assert expr.body.var is not expr.params[0]
    assert expr.body.body is expr.body.var


def test_binary_operators_precedence_and_associativity():
    expr = irlib.parse_expr("1 * 1 + 1 < 1 == 1")
    one = lambda: const(1)  # noqa: E731
    same(expr, irlib.equal(irlib.less(irlib.add(irlib.multiply(one(), one()), one()), one()),
                           one()))
    same(irlib.parse_expr("3 - 2 - 1"),
         irlib.subtract(irlib.subtract(const(3), const(2)), const(1)))


def test_tuples_projection_and_units():
    assert isinstance(irlib.parse_expr("()"), Tuple) and not irlib.parse_expr("()").fields
    assert isinstance(irlib.parse_expr("(1)"), Constant)
    assert len(irlib.parse_expr("(1,)").fields) == 1
    same(irlib.parse_expr("(1, 2).1"), TupleGetItem(Tuple([const(1), const(2)]), 1))


def test_function_with_type_params_attrs_and_return_type():
    func = irlib.parse_expr("fn [A](%x: A, Primitive=1) -> A { %x }")
    a = func.type_params[0]
    assert func.params[0].type_annotation is a and func.ret_type is a
    assert func.attrs["Primitive"] == 1


def test_if_and_refs():
    expr = irlib.parse_expr(
        "let %r = ref(1); if (True) { ref_write(%r, 2) } else { let %v = ref_read(%r); () }")
    assert isinstance(expr.value, E.RefCreate)
    branch = expr.body
    assert isinstance(branch, If) and isinstance(branch.true_branch, E.RefWrite)
    assert isinstance(branch.false_branch.value, E.RefRead)


def test_op_call_attrs_take_schema_defaults():
    x = irlib.var("x", shape=(1, 3, 8, 8))
    w = irlib.var("w", shape=(4, 3, 3, 3))
    expr = irlib.parse_expr("free_var %x: Tensor[(1, 3, 8, 8), float32];\n"
                            "free_var %w: Tensor[(4, 3, 3, 3), float32];\n"
                            "nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=4)")
    same(expr, irlib.nn.conv2d(x, w, padding=(1, 1, 1, 1), channels=4))
    assert expr.attrs.strides == (1, 1) and expr.attrs.data_layout == "NCHW"


def test_op_without_attrs_still_gets_default_attrs():
    expr = irlib.parse_expr("free_var %x: Tensor[(2, 3), float32]; nn.softmax(%x)")
    assert expr.attrs.axis == -1


def test_metadata_section_and_init_meta_table():
    array = np.arange(6, dtype="float32").reshape(2, 3)
    text = irlib.astext(const(array))
    expr = irlib.parse_expr(text)
    np.testing.assert_array_equal(expr.data.numpy(), array)
    extra = irlib.parse_expr("meta[relay.Constant][0]",
                             init_meta_table={"relay.Constant": [np.ones(2, "int8")]})
    np.testing.assert_array_equal(extra.data.numpy(), np.ones(2, "int8"))


def test_comments_nest_and_are_ignored():
    expr = irlib.parse_expr("/* a /* b */ c */ 1 // trailing\n /* ty=int32 */")
    assert isinstance(expr, Constant)


# -- types ---------------------------------------------------------------------------------------

def _annotation(type_text):
    return irlib.parse_expr(f"fn (%x: {type_text}) {{ %x }}").params[0].type_annotation


def test_types():
    assert _annotation("float32") == TensorType((), "float32")
    assert _annotation("Tensor[(10), float32]") == TensorType((10,), "float32")
    assert _annotation("Tensor[(1, ?), int8]") == TensorType((1, Any), "int8")
    n = size_var("n")
    assert _annotation("Tensor[(n, 2*n + 1, floordiv(n, 2)), float32]") == \
        TensorType((n, 2 * n + 1, n // 2), "float32")
    assert _annotation("Tensor[(n - 1), float32]") == TensorType((n - 1,), "float32")
    assert _annotation("(float32, (int32,), ())") == TupleType(
        [TensorType((), "float32"), TupleType([TensorType((), "int32")]), TupleType([])])
    assert _annotation("ref(bool)") == RefType(TensorType((), "bool"))
    assert isinstance(_annotation("_"), IncompleteType)
    poly = _annotation("fn [A](A) -> A")
    assert isinstance(poly, FuncType) and poly.arg_types[0] is poly.type_params[0]
    assert _annotation("int") == TensorType((), "int32")


def test_symbolic_dims_with_the_same_name_are_the_same_size():
    func = irlib.parse_expr("fn (%x: Tensor[(n), float32], %y: Tensor[(n), float32]) { %x }")
    assert func.params[0].type_annotation == func.params[1].type_annotation


# -- modules -------------------------------------------------------------------------------------

ADT_TEXT = HEADER + """
type List[A] {
  Cons(A, List[A]),
  Nil,
}

def @length[A](%l: List[A]) -> int32 {
  match (%l) {
    Cons(_, %t) => { 1 + @length(%t) },
    Nil => { 0 },
  }
}

def @main() -> int32 {
  @length(Cons(1, Cons(2, Nil())))
}
"""


def test_adt_module_structure_and_forward_references():
    mod = irlib.parse(ADT_TEXT)
    list_type, cons, nil = mod.get_type("List")
    assert cons.inputs[1].func is list_type          # List mentioned in its own definition
    match = mod["length"].body
    assert isinstance(match, Match) and match.complete
    first = match.clauses[0].lhs
    assert isinstance(first, PatternConstructor) and first.constructor is cons
    assert isinstance(first.patterns[0], PatternWildcard)
    assert isinstance(first.patterns[1], PatternVar)
    call = mod["main"].body
    assert call.op is mod.get_global_var("length")
    inner = call.args[0].args[1].args[1]
    assert inner.op is nil and inner.args == ()
    assert mod["main"].checked_type.ret_type == TensorType((), "int32")


def test_globals_may_be_used_before_their_definition():
    mod = irlib.parse(HEADER + "def @main() -> int32 { @f(1) }\n"
                               "def @f(%x: int32) -> int32 { %x }")
    assert mod["main"].body.op is mod.get_global_var("f")


def test_nullary_constructor_is_applied_and_others_are_values():
    mod = irlib.parse(ADT_TEXT)
    expr = irlib.parse_expr("(Nil, Cons)", init_module=mod)
    _, cons, nil = mod.get_type("List")
    assert isinstance(expr.fields[0], Call) and expr.fields[0].op is nil
    assert expr.fields[1] is cons


def test_partial_match_tuple_patterns_and_annotated_pattern_vars():
    mod = irlib.parse(ADT_TEXT + """
def @pair_head(%a: List[int32], %b: List[int32]) -> int32 {
  match? ((%a, %b)) {
    (Cons(%x: int32, _), _) => %x,
  }
}
""")
    match = mod["pair_head"].body
    assert not match.complete
    pattern = match.clauses[0].lhs
    assert isinstance(pattern, PatternTuple)
    assert pattern.patterns[0].patterns[0].var.type_annotation == TensorType((), "int32")


def test_extern_type_and_empty_type():
    mod = irlib.parse(HEADER + "type Empty {\n}\nextern type Storage")
    assert mod.get_type("Empty")[1:] == () and mod.get_type("Storage")[1:] == ()


def test_init_module_definitions_are_visible_and_kept():
    base = irlib.parse(ADT_TEXT)
    mod = irlib.parse(HEADER + "def @two() -> int32 { @length(Cons(1, Cons(2, Nil))) }",
                      init_module=base)
    assert {"length", "main", "two"} <= {g.name_hint for g in mod.get_global_vars()}
    assert mod["two"].body.op is base.get_global_var("length")


def test_parse_expr_accepts_the_header_and_fromtext_is_parse():
    assert isinstance(irlib.parse_expr(HEADER + "1"), Constant)
    mod = irlib.fromtext(HEADER + "def @main() { 1 }")
    assert isinstance(mod["main"], Function)


# -- spans ---------------------------------------------------------------------------------------

def test_every_node_has_a_span():
    text = "fn (%x: float32) {\n  %0 = add(%x, 1f);\n  (%0, %0.0)\n}"
    func = irlib.parse_expr(text, source_name="prog.rly")
    assert func.span.source_name == "prog.rly"
    assert (func.span.line, func.span.column) == (1, 1)
    call = func.body.fields[0]
    assert (call.span.line, call.span.column, call.span.end_column) == (2, 8, 19)
    for node in irlib.ir.post_order(func):
        if not isinstance(node, (E.Op,)):
            assert node.span is not None, node


def test_spans_survive_type_inference():
    mod = irlib.parse(ADT_TEXT, source_name="adt.rly")
    match = mod["length"].body
    assert (match.span.source_name, match.span.line, match.span.column) == ("adt.rly", 9, 3)
    nil_clause = match.clauses[1]
    assert (nil_clause.span.line, nil_clause.span.column) == (11, 5)
