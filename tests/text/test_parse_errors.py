"""Parser errors: each kind is a ParseError (a SyntaxError) with line, column, the offending
line with a caret under the problem, and a message saying what was expected or wrong."""

import pytest

import irlib
from irlib import ParseError, TypeInferenceError

HEADER = '#[version = "0.0.5"]\n'
LIST = HEADER + "type List[A] {\n  Cons(A, List[A]),\n  Nil,\n}\n"


def error_of(call, text, **kwargs) -> ParseError:
    with pytest.raises(ParseError) as info:
        call(text, **kwargs)
    return info.value


@pytest.mark.parametrize("text, line, column, message", [
    ("(1", 1, 3, "expected ',' or ')' but found end of input"),
    ("add(1, 2 }", 1, 10, "expected ',' or ')' but found '}'"),
    ("fn (%x: float32; %y) { %x }", 1, 16, "expected ',' or ')' but found ';'"),
    ("fn (%x) {\n  %x\n", 3, 1, "expected '}' but found end of input"),
    ("let x = 1; x", 1, 5, "expected a local variable (%name) after 'let' but found "
                           "identifier 'x'"),
    ("let @x = 1; @x", 1, 5, "after 'let' but found '@x'"),
    ("if (True) { 1 } { 2 }", 1, 17, "expected 'else' but found '{'"),
    ("1.5", 1, 1, "a float literal needs the 'f' suffix"),
    ("1 + 2147483648i32", 1, 5, "out of range for int32"),
    ("32768i16", 1, 1, "out of range for int16"),
    ("65505f16", 1, 1, "out of range for float16"),
    ("3.5e38f32", 1, 1, "out of range for float32"),
    ("1i8", 1, 1, "unknown literal suffix 'i8'"),
    ("/* open /* nested */", 1, 1, "unterminated block comment"),
    ('"no end', 1, 1, "unterminated string"),
    ("1 $ 2", 1, 3, "unexpected character '$'"),
    ("#[other]\n1", 1, 1, "unsupported attribute"),
    ("meta[relay.Constant][3]", 1, 1, "out of range"),
    ("fn (%x: Tensor[(2), float33]) { %x }", 1, 21, "unknown dtype 'float33'"),
    ("fn (%x: Tensor[2, float32]) { %x }", 1, 16, "expected '(' starting the shape"),
])
def test_syntax_errors_in_expressions(text, line, column, message):
    error = error_of(irlib.parse_expr, text)
    assert isinstance(error, SyntaxError)
    assert (error.span.line, error.span.column) == (line, column), str(error)
    assert message in error.message, str(error)
    rendered = str(error).splitlines()
    assert rendered[0].startswith(f"from_string:{line}:{column}: ")
    assert rendered[1] == text.split("\n")[line - 1]
    assert rendered[2].startswith(" " * (column - 1) + "^")


@pytest.mark.parametrize("text, column, message", [
    ("add(%x, 1f)", 5, "unknown variable %x"),
    ("fn (%value: int32) { %valeu }", 22, "unknown variable %valeu; did you mean %value?"),
    ("%3", 1, "unknown graph variable %3"),
    ("nn.conv2(1f, 1f)", 1, "unknown operator or constructor nn.conv2; did you mean nn.conv2d"),
    ("fn (%x: Lst[int32]) { %x }", 9, "unknown type Lst"),
    ("add(1, 2, 3)", 1, "add takes 2 argument(s)"),
    ("nn.relu(1f, alpha=2)", 13, "bad attributes for nn.relu"),
    ("fn (%x, %x) { %x }", 9, "duplicate parameter %x"),
])
def test_unknown_names_and_arity(text, column, message):
    error = error_of(irlib.parse_expr, text)
    assert error.span.line == 1 and error.span.column == column, str(error)
    assert message in error.message, str(error)


def test_unknown_global_points_at_its_first_use():
    error = error_of(irlib.parse, HEADER + "def @main() {\n  @helpr(1)\n}\n"
                                           "def @helper(%x: int32) { %x }")
    assert (error.span.line, error.span.column) == (3, 3)
    assert "unknown global @helpr; did you mean @helper?" in error.message


def test_duplicate_definitions_point_at_both():
    error = error_of(irlib.parse, HEADER + "def @f() { 1 }\ndef @f() { 2 }")
    assert (error.span.line, error.span.column) == (3, 5)
    assert "duplicate definition of @f (first defined at from_string:2:5)" in error.message
    error = error_of(irlib.parse, LIST + "type Other {\n  Nil,\n}")
    assert (error.span.line, error.span.column) == (7, 3)
    assert "constructor Nil (first defined at from_string:4:3)" in error.message
    error = error_of(irlib.parse, LIST + "type List {\n}")
    assert "duplicate definition of type List" in error.message


def test_constructor_arity_mismatch_in_calls_and_patterns():
    error = error_of(irlib.parse, LIST + "def @main() { Cons(1) }")
    assert (error.span.line, error.span.column) == (6, 15)
    assert "constructor Cons takes 2 argument(s) but 1 were given" in error.message
    error = error_of(irlib.parse, LIST + "def @f(%l: List[int32]) {\n"
                                         "  match (%l) { Cons(%h) => 1, Nil => 0 }\n}")
    assert (error.span.line, error.span.column) == (7, 16)
    assert "constructor Cons has 2 field(s) but the pattern gives 1" in error.message
    error = error_of(irlib.parse, LIST + "def @f(%l: List[int32]) {\n"
                                         "  match (%l) { Kons(%h, _) => 1, _ => 0 }\n}")
    assert "unknown constructor Kons in pattern; did you mean Cons?" in error.message


@pytest.mark.parametrize("text, message", [
    ("def @f() { 1 }", "expected the version header"),
    ('#[version = "0.0.4"]\ndef @f() { 1 }', "unsupported text format version '0.0.4'"),
    (HEADER + "1", "expected a definition"),
    (HEADER + "type int_list { A }", "would be read as a dtype"),
])
def test_module_level_errors(text, message):
    assert message in error_of(irlib.parse, text).message


def test_source_name_appears_in_the_error():
    error = error_of(irlib.parse_expr, "(1", source_name="model.rly")
    assert str(error).startswith("model.rly:1:3: ")
    assert error.filename == "model.rly" and error.lineno == 1 and error.offset == 3


def test_ill_typed_module_raises_type_inference_error():
    with pytest.raises(TypeInferenceError):
        irlib.parse(HEADER + "def @main(%x: float32) { add(%x, 1) }")


def test_incomplete_match_is_a_type_inference_error():
    with pytest.raises(TypeInferenceError, match="does not handle"):
        irlib.parse(LIST + "def @f(%l: List[int32]) -> int32 {\n"
                           "  match (%l) { Nil => 0 }\n}")
