"""String literals: escapes in the lexer, escaping in the printer, exact round trips."""

from hypothesis import given, settings
from hypothesis import strategies as st

import irlib
from irlib import Function, var
from irlib.text.lexer import SourceText, tokenize
from irlib.text.literals import string_text


def _string_tokens(text):
    return [token.value for token in tokenize(SourceText(text, "t")) if token.kind == "STRING"]


def test_escapes_decode_to_the_characters_they_name():
    assert _string_tokens(r'"a\"b" "c\\d" "e\nf" "g\th"') == ['a"b', "c\\d", "e\nf", "g\th"]


def test_a_backslash_before_another_character_stands_for_itself():
    assert _string_tokens(r'"C:\data\x"') == ["C:\\data\\x"]


def test_string_text_escapes_hand_written_cases():
    assert string_text('say "hi"') == r'"say \"hi\""'
    assert string_text("a\\b") == r'"a\\b"'
    assert string_text("two\nlines") == r'"two\nlines"'


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",))))
def test_any_string_reads_back_exactly(value):
    assert _string_tokens(string_text(value)) == [value]


@settings(max_examples=40, deadline=None)
@given(st.text(alphabet=st.sampled_from('ab"\\\n\t x'), max_size=12))
def test_a_string_attribute_round_trips_through_the_text_format(compiler):
    x = var("x", shape=(2,), dtype="float32")
    body = irlib.op.annotation.compiler_begin(x, compiler)
    mod = irlib.IRModule.from_expr(Function([x], body))
    text = mod.astext()
    again = irlib.parse(text)
    assert again["main"].body.attrs.compiler == compiler
    # once more from the re-printed (now type-annotated) text
    assert irlib.parse(again.astext())["main"].body.attrs.compiler == compiler
