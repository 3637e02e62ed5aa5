"""Regression (issue #19): non-ASCII letters and digits in Relay text raise ParseError.

The Relay grammar's identifiers are ``[A-Za-z_][A-Za-z0-9_]*``; before the fix a letter such
as ``é`` reached ``_word`` (``str.isalpha`` is true for it) and raised AttributeError.
"""

import pytest
from hypothesis import given, settings, strategies as st

import irlib
from irlib.errors import ParseError


@pytest.mark.parametrize("text, column", [
    ("def @maén() { 1f }", 8),
    ("é", 1),
    ("%x + é", 6),
    ("٣", 1),          # ARABIC-INDIC DIGIT THREE: isdigit() but not a Relay digit
    ("-٣", 2),
])
def test_non_ascii_is_a_located_parse_error(text, column):
    parse = irlib.parse if text.startswith("def") else irlib.parse_expr
    with pytest.raises(ParseError) as info:
        parse(text)
    assert info.value.span.column == column
    assert "unexpected character" in info.value.message


def test_non_ascii_after_sigil():
    with pytest.raises(ParseError, match="variable name after '%'"):
        irlib.parse_expr("fn (%é: float32) { %é }")


@settings(max_examples=60, deadline=None)
@given(st.characters(min_codepoint=0x80, max_codepoint=0x2FFF,
                     blacklist_categories=("Cs",)))
def test_any_non_ascii_character_in_a_name_is_a_parse_error(char):
    with pytest.raises(ParseError):
        irlib.parse(f"def @f{char}g() {{ 1f }}")


def test_non_ascii_inside_comments_and_strings_still_parses():
    mod = irlib.parse('#[version = "0.0.5"]\ndef @f() { 1f /* é */ } // ça')
    assert "f" in [g.name_hint for g in mod.get_global_vars()]
