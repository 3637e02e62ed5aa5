"""Regression (issue #19): deep types print without recursion, nested ``if`` in linear size."""

import irlib
from irlib.text.printer import MAX_INDENT_LEVELS


def nested_tuple_type(depth):
    ty = irlib.TensorType((), "float32")
    for _ in range(depth):
        ty = irlib.TupleType([ty])
    return ty


def test_tuple_type_nested_5000_deep_prints():
    text = str(nested_tuple_type(5000))
    # Hand-derived: 5000 "(" then the dtype then 5000 ",)".
    assert text == "(" * 5000 + "float32" + ",)" * 5000


def test_deep_type_inside_a_function_signature_prints_and_parses():
    ty = nested_tuple_type(3000)
    x = irlib.var("x", type_annotation=ty)
    fn = irlib.Function([x], x)
    text = fn.astext()
    again = irlib.parse_expr(text.split("\n", 1)[1])
    assert irlib.structural_equal(again, fn, map_free_vars=True)


def test_small_type_spellings_unchanged():
    f = irlib.FuncType([irlib.TensorType((1, 2), "int8"), irlib.TupleType([])],
                       irlib.TupleType([irlib.TensorType((), "float32")] * 2))
    assert str(f) == "fn (Tensor[(1, 2), int8], ()) -> (float32, float32)"
    assert str(irlib.RefType(irlib.TupleType([irlib.TensorType((3,), "int32")]))) == \
        "ref((Tensor[(3), int32],))"


def nested_if(depth):
    x = irlib.var("x", shape=(), dtype="bool")
    body = irlib.const(1.0)
    for _ in range(depth):
        body = irlib.If(x, body, irlib.const(0.0))
    return irlib.Function([x], body)


def test_nested_if_output_is_linear_in_depth():
    small = len(nested_if(2000).astext())
    large = len(nested_if(8000).astext())
    # Quadratic indentation would make the 4x deeper program ~16x longer.
    assert large < 4.2 * small
    widest = max(len(line) - len(line.lstrip(" ")) for line in nested_if(200).astext().split("\n"))
    assert widest == 2 * MAX_INDENT_LEVELS


def test_capped_indentation_still_round_trips():
    fn = nested_if(300)
    again = irlib.parse_expr(fn.astext().split("\n", 1)[1])
    assert irlib.structural_equal(again, fn, map_free_vars=True)
