"""The tokenizer of the text format (Relay v0.0.5, see docs/text-format.md).

:func:`tokenize` turns a whole source text into a list of :class:`Token` s ending with an
``EOF`` token. Comments (``//`` and nesting ``/* */``) and whitespace are dropped. The
``#[version = "..."]`` header becomes one ``VERSION`` token and ``#[metadata]`` one
``METADATA`` token whose value is the rest of the text (the JSON table). Literals are
converted here, with their range checks, so the parser only sees finished values:

* ``INT`` / ``FLOAT`` tokens carry ``(value, dtype, text)``: a Python int or a numpy scalar of
  the literal's dtype, the dtype name, and the literal's digits without the suffix.
* ``BOOL`` carries True/False, ``STRING`` the text between the quotes.
* ``LOCAL`` (``%x``), ``GRAPH`` (``%0``, value an int), ``GLOBAL`` (``@f``) carry the name;
  ``META`` (``meta[relay.Constant][3]``) carries ``(type_key, index)``.
* ``IDENT`` carries the identifier; keywords are tokens of their own kind (``let``, ``fn``,
  ..., and ``match?`` for the partial match); ``_`` alone is ``UNDERSCORE``.
* Punctuation is its own kind: ``(``, ``->``, ``=>``, ``==``, ``<=``, ...

Every error is a :class:`~irlib.errors.ParseError` with the position and the source line.
"""

from __future__ import annotations

import re
import warnings

import numpy as np

from ..errors import ParseError
from ..ir.span import Span
from .literals import format_float

KEYWORDS = frozenset(["let", "fn", "def", "if", "else", "type", "match", "extern",
                      "free_var", "ref", "ref_read", "ref_write"])

_PUNCT2 = frozenset(["->", "=>", "==", "!=", "<=", ">="])
_PUNCT1 = frozenset("()[]{},.;:=+-*/<>!?")

_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_/]*")
_DIGITS_RE = re.compile(r"[0-9]+")
# The Relay grammar's identifiers and numbers are ASCII only: a non-ASCII letter or digit
# (``é``, ``٣``) is an unexpected character, reported as a ParseError at its position.
_ASCII_DIGITS = frozenset("0123456789")
_IDENT_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
# A number body: digits, an optional fraction, an optional exponent; then a dtype suffix.
# NOTE: Relay's lexer takes any run of [0-9.eE+-]; irlib takes '+'/'-' only after an
# exponent mark, so `2-1` lexes as `2` `-1` (still not a subtraction, but a clearer error).
_NUMBER_RE = re.compile(r"(-*)([0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)([if][0-9]*)?"
                        r"(?![A-Za-z0-9_.])")
_BAD_NUMBER_RE = re.compile(r"-*[0-9][0-9A-Za-z_.]*")
# A string: no raw newline or '"' inside; backslash escapes \" \\ \n \t (any other
# backslash is kept as it is, so older text with a lone backslash reads the same).
_STRING_RE = re.compile(r'"(?:[^"\\\n]|\\[^\n])*"')
_STRING_ESCAPE_RE = re.compile(r'\\(["\\nt])')
_STRING_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}
_META_RE = re.compile(r"meta\[([A-Za-z_][A-Za-z0-9_.]*)\]\[([0-9]+)\]")
_VERSION_RE = re.compile(r'#\[\s*version\s*=\s*"([^"\n]*)"\s*\]')
_METADATA_RE = re.compile(r"#\[\s*metadata\s*\]")
_SPACE_RE = re.compile(r"[ \t\n]+")
_FAST_RE = re.compile(r"(?P<space>[ \t]+)|(?P<newline>\n)"
                      r"|(?P<word>[A-Za-z_][A-Za-z0-9_/]*+)(?![\[?])"
                      r"|(?P<punct>->|=>|==|!=|<=|>=|[()\[\]{},.;:=+*<>!?])"
                      r"|(?P<local>%[A-Za-z_][A-Za-z0-9_/]*)|(?P<graph>%[0-9]+)"
                      r"|(?P<global>@[A-Za-z_][A-Za-z0-9_/]*)")
_SPECIAL_WORDS = frozenset(["True", "False", "_", "inff", "nanf", "meta"])

_INT_RANGES = {"int16": (-2 ** 15, 2 ** 15 - 1), "int32": (-2 ** 31, 2 ** 31 - 1),
               "int64": (-2 ** 63, 2 ** 63 - 1)}
_INT_SUFFIX = {"i": "int32", "i16": "int16", "i32": "int32", "i64": "int64"}
_FLOAT_SUFFIX = {"f": "float32", "f16": "float16", "f32": "float32", "f64": "float64"}


class Token:
    """One token: its kind, value and position (1-based line and column, start and end).

    Args:
        kind: the token kind (``"INT"``, ``"IDENT"``, a punctuation string, ...).
        value: the token's value (text, number, or ``(number, dtype)``).
        line: the start line.
        col: the start column.
        end_line: the end line.
        end_col: the end column.
    """

    __slots__ = ("kind", "value", "line", "col", "end_line", "end_col")

    def __init__(self, kind, value, line, col, end_line, end_col):
        self.kind = kind
        self.value = value
        self.line = line
        self.col = col
        self.end_line = end_line
        self.end_col = end_col

    def describe(self) -> str:
        """The token as an error message names it: ``';'``, ``identifier 'x'``, ..."""
        kind = self.kind
        if kind == "EOF":
            return "end of input"
        if kind in ("INT", "FLOAT"):
            return f"number {self.value[2]}"
        if kind == "BOOL":
            return f"'{self.value}'"
        if kind == "STRING":
            return f'string "{self.value}"'
        if kind == "IDENT":
            return f"identifier '{self.value}'"
        if kind == "LOCAL":
            return f"'%{self.value}'"
        if kind == "GRAPH":
            return f"'%{self.value}'"
        if kind == "GLOBAL":
            return f"'@{self.value}'"
        if kind == "META":
            return f"'meta[{self.value[0]}][{self.value[1]}]'"
        if kind == "VERSION":
            return "a version header"
        if kind == "METADATA":
            return "the metadata section"
        if kind == "UNDERSCORE":
            return "'_'"
        return f"'{kind}'"

    def __repr__(self):
        return f"Token({self.kind}, {self.value!r}, {self.line}:{self.col})"


class SourceText:
    """A source text with its name, for spans and error messages."""

    __slots__ = ("text", "name", "lines")

    def __init__(self, text: str, name: str):
        self.text = text
        self.name = name
        self.lines = text.split("\n")

    def line(self, number: int) -> str:
        """Line ``number`` (1-based), or ``""`` past the end."""
        if 1 <= number <= len(self.lines):
            return self.lines[number - 1]
        return ""

    def error(self, message: str, line: int, col: int, end_line: int = -1,
              end_col: int = -1) -> ParseError:
        """A ParseError at the given position, with the source line.

        Args:
            message: what is wrong.
            line: the line (1-based).
            col: the column (1-based).
            end_line: the line the marked range ends on (-1: ``line``).
            end_col: the column it ends at (-1: one character).
        """
        span = Span(self.name, line, col, end_line, end_col)
        return ParseError(message, span, self.line(line))


def tokenize(source: SourceText) -> list:
    """The tokens of ``source``, ending with an ``EOF`` token.

    Raises:
        ParseError: on a character that starts no token, an unterminated comment or string,
            a malformed number, an out-of-range literal, or an unsupported ``#[...]``.
    """
    return _Lexer(source).run()


class _Lexer:
    def __init__(self, source: SourceText):
        self.source = source
        self.text = source.text
        self.pos = 0
        self.line = 1
        self.line_start = 0
        self.tokens: list = []

    def col(self, pos: int) -> int:
        return pos - self.line_start + 1

    def error(self, message: str, pos: int, end: int = -1) -> ParseError:
        col = self.col(pos)
        end_col = col + max(end - pos, 1) if end > pos else -1
        return self.source.error(message, self.line, col, self.line, end_col)

    def add(self, kind, value, start: int, end: int) -> None:
        col = self.col(start)
        self.tokens.append(Token(kind, value, self.line, col, self.line, col + (end - start)))
        self.pos = end

    def run(self) -> list:
        text = self.text
        size = len(text)
        tokens = self.tokens
        fast = _FAST_RE.match
        while self.pos < size:
            pos = self.pos
            # NOTE: the common tokens go through one regex; the rest through the branches.
            match = fast(text, pos)
            if match is not None:
                group = match.lastgroup
                end = match.end()
                self.pos = end
                if group == "space":
                    continue
                if group == "newline":
                    self.line += 1
                    self.line_start = end
                    continue
                value = match.group()
                if group == "word":
                    if value in KEYWORDS or value in _SPECIAL_WORDS:
                        self._word(pos)
                        continue
                    kind = "IDENT"
                elif group == "punct":
                    kind = value
                elif group == "local":
                    kind, value = "LOCAL", value[1:]
                elif group == "graph":
                    kind, value = "GRAPH", int(value[1:])
                else:
                    kind, value = "GLOBAL", value[1:]
                col = pos - self.line_start + 1
                tokens.append(Token(kind, value, self.line, col, self.line, col + end - pos))
                continue
            char = text[pos]
            if char in " \t":
                self.pos = _SPACE_RE.match(text, pos).end() if char != "\n" else pos + 1
                self._count_newlines(pos, self.pos)
            elif char == "\n":
                self.pos = pos + 1
                self.line += 1
                self.line_start = pos + 1
            elif char == "\r":
                if not text.startswith("\n", pos + 1):
                    raise self.error("a carriage return must be followed by a newline", pos)
                self.pos = pos + 1
            elif char == "/" and text.startswith("//", pos):
                end = text.find("\n", pos)
                self.pos = size if end < 0 else end
            elif char == "/" and text.startswith("/*", pos):
                self._block_comment(pos)
            elif char == "%":
                self._sigil(pos)
            elif char == "@":
                match = _IDENT_RE.match(text, pos + 1)
                if match is None:
                    raise self.error("expected a global name after '@'", pos)
                self.add("GLOBAL", match.group(), pos, match.end())
            elif char == "#":
                self._attribute(pos)
                if self.tokens and self.tokens[-1].kind == "METADATA":
                    break
            elif char == '"':
                match = _STRING_RE.match(text, pos)
                if match is None:
                    raise self.error("unterminated string (strings end on the same line; "
                                     "write '\\\"' for a quote inside one)", pos)
                self.add("STRING", unescape_string(match.group()[1:-1]), pos, match.end())
            elif char in _ASCII_DIGITS or (char == "-" and _starts_number(text, pos)):
                self._number(pos)
            elif char == "-" and text.startswith("inff", pos + 1 + _count_dashes(text, pos + 1)):
                self._negative_inf(pos)
            elif char in _IDENT_START:
                self._word(pos)
            elif text[pos:pos + 2] in _PUNCT2:
                self.add(text[pos:pos + 2], text[pos:pos + 2], pos, pos + 2)
            elif char in _PUNCT1:
                self.add(char, char, pos, pos + 1)
            else:
                raise self.error(f"unexpected character {char!r}", pos)
        self.tokens.append(Token("EOF", None, self.line, self.col(self.pos), self.line,
                                 self.col(self.pos)))
        return self.tokens

    def _count_newlines(self, start: int, end: int) -> None:
        newline = self.text.rfind("\n", start, end)
        if newline >= 0:
            self.line += self.text.count("\n", start, end)
            self.line_start = newline + 1

    def _block_comment(self, pos: int) -> None:
        text = self.text
        depth = 0
        cursor = pos
        while True:
            opening = text.find("/*", cursor)
            closing = text.find("*/", cursor)
            if closing < 0:
                raise self.error("unterminated block comment", pos, pos + 2)
            if 0 <= opening < closing:
                depth += 1
                cursor = opening + 2
            else:
                depth -= 1
                cursor = closing + 2
                if depth == 0:
                    break
        self._count_newlines(pos, cursor)
        self.pos = cursor

    def _sigil(self, pos: int) -> None:
        text = self.text
        digits = _DIGITS_RE.match(text, pos + 1)
        if digits is not None:
            self.add("GRAPH", int(digits.group()), pos, digits.end())
            return
        match = _IDENT_RE.match(text, pos + 1)
        if match is None:
            raise self.error("expected a variable name after '%'", pos)
        self.add("LOCAL", match.group(), pos, match.end())

    def _attribute(self, pos: int) -> None:
        text = self.text
        match = _VERSION_RE.match(text, pos)
        if match is not None:
            if "\n" in match.group():
                raise self.error("the version header must be on one line", pos)
            self.add("VERSION", match.group(1), pos, match.end())
            return
        match = _METADATA_RE.match(text, pos)
        if match is not None:
            self.add("METADATA", text[match.end():], pos, match.end())
            self.pos = len(text)
            return
        end = text.find("]", pos)
        end = len(text) if end < 0 or "\n" in text[pos:end] else end + 1
        raise self.error("unsupported attribute: only #[version = \"...\"] and #[metadata] "
                         "are allowed", pos, end)

    def _word(self, pos: int) -> None:
        text = self.text
        if text.startswith("meta[", pos):
            match = _META_RE.match(text, pos)
            if match is None:
                raise self.error("malformed metadata reference; expected "
                                 "meta[TypeKey][index]", pos, pos + 4)
            self.add("META", (match.group(1), int(match.group(2))), pos, match.end())
            return
        match = _IDENT_RE.match(text, pos)
        word = match.group()
        end = match.end()
        if word == "match" and text.startswith("?", end):
            self.add("match?", "match?", pos, end + 1)
        elif word in KEYWORDS:
            self.add(word, word, pos, end)
        elif word in ("True", "False"):
            self.add("BOOL", word == "True", pos, end)
        elif word == "_":
            self.add("UNDERSCORE", "_", pos, end)
        elif word == "inff":
            self.add("FLOAT", (np.float32("inf"), "float32", "inf"), pos, end)
        elif word == "nanf":
            self.add("FLOAT", (np.float32("nan"), "float32", "nan"), pos, end)
        else:
            self.add("IDENT", word, pos, end)

    def _negative_inf(self, pos: int) -> None:
        dashes = _count_dashes(self.text, pos)
        end = pos + dashes + 4
        if end < len(self.text) and (self.text[end].isalnum() or self.text[end] in "_/"):
            raise self.error("unexpected '-'", pos)
        value = np.float32("-inf") if dashes % 2 else np.float32("inf")
        self.add("FLOAT", (value, "float32", "-inf" if dashes % 2 else "inf"), pos, end)

    def _number(self, pos: int) -> None:
        match = _NUMBER_RE.match(self.text, pos)
        if match is None:
            bad = _BAD_NUMBER_RE.match(self.text, pos)
            end = bad.end() if bad else pos + 1
            raise self.error(f"malformed number {self.text[pos:end]!r}", pos, end)
        dashes, body, suffix = match.group(1), match.group(2), match.group(3) or ""
        negative = len(dashes) % 2 == 1
        digits = ("-" if negative else "") + body
        is_float = any(c in body for c in ".eE")
        if suffix.startswith("f"):
            dtype = _FLOAT_SUFFIX.get(suffix)
        elif suffix.startswith("i"):
            dtype = _INT_SUFFIX.get(suffix)
        else:
            dtype = ""
        if dtype is None:
            raise self.error(f"unknown literal suffix {suffix!r} (use i16, i32, i64, f16, "
                             f"f32 or f64)", pos, match.end())
        if is_float and not dtype.startswith("float"):
            if dtype:
                raise self.error(f"integer suffix {suffix!r} on the float literal {body!r}",
                                 pos, match.end())
            raise self.error(f"a float literal needs the 'f' suffix: write {digits}f",
                             pos, match.end())
        if dtype.startswith("float"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value = np.dtype(dtype).type(digits)
            if not np.isfinite(value) or _beyond_max(value, digits):
                raise self.error(f"float literal {digits}{suffix} is out of range for {dtype}",
                                 pos, match.end())
            self.add("FLOAT", (value, dtype, digits), pos, match.end())
            return
        value = int(digits)
        if not dtype:
            dtype = "int32" if _fits(value, "int32") else "int64"
        if not _fits(value, dtype):
            raise self.error(f"integer literal {digits}{suffix} is out of range for {dtype}",
                             pos, match.end())
        self.add("INT", (value, dtype, digits), pos, match.end())


def _beyond_max(value, digits: str) -> bool:
    """Whether a finite literal's decimal exceeds its dtype's largest value.

    NOTE: the shortest spelling of the largest value (``3.4028235e+38f``, what the printer
    writes) is slightly above it as a decimal and must stay valid; any other decimal beyond
    the largest value (``65505f16``, which rounds down to 65504) is out of range, as in Relay.
    """
    largest = np.finfo(value.dtype).max
    if abs(value) != largest or abs(float(digits)) <= float(largest):
        return False
    return float(format_float(value)) != float(digits)


def _fits(value: int, dtype: str) -> bool:
    low, high = _INT_RANGES[dtype]
    return low <= value <= high


def _count_dashes(text: str, pos: int) -> int:
    count = 0
    while pos + count < len(text) and text[pos + count] == "-":
        count += 1
    return count


def _starts_number(text: str, pos: int) -> bool:
    after = pos + _count_dashes(text, pos)
    return after < len(text) and text[after] in _ASCII_DIGITS


def unescape_string(body: str) -> str:
    """The value of a string literal's text between the quotes (``\\"``, ``\\\\``, ``\\n``,
    ``\\t`` decoded; see :func:`irlib.text.literals.string_text` for the inverse).

    Args:
        body: the characters between the quotes, as written.
    """
    if "\\" not in body:
        return body
    return _STRING_ESCAPE_RE.sub(lambda match: _STRING_ESCAPES[match.group(1)], body)
