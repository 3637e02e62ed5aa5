"""Fuzzing: on any input the parser raises only ParseError, and ``parse`` (which type-checks)
also TypeInferenceError for well-formed but ill-typed modules. Never an internal exception.

Inputs are random character soups over the format's alphabet, random token sequences, and
valid programs mutated by deleting, inserting, duplicating and swapping tokens.
"""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

import irlib
from irlib import ParseError, TypeInferenceError
from irlib.prelude import std_source
from irlib.testing.budget import examples

HEADER = '#[version = "0.0.5"]\n'

CORPUS = [
    HEADER + "def @main(%x: Tensor[(2, n), float32], %y: float32) -> Tensor[(2, n), float32] {\n"
             "  %0 = add(%x, %y);\n  %1 = nn.relu(%0);\n  let %z = (%1, %0);\n"
             "  if (less(%y, 1f)) { %z.0 } else { multiply(%z.1, 2f) }\n}\n",
    HEADER + "def @f(%x: int32, %r: ref(int32)) -> int32 {\n"
             "  let %g = fn (%a: int32) -> int32 { %a * 2 + 1 };\n"
             "  ref_write(%r, %g(%x)); ref_read(%r)\n}\n",
    HEADER + "def @c(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) {\n"
             "  nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3])\n}\n",
    HEADER + "def @m() { (meta[relay.Constant][0], 1i64, -2.5f16, True, inff) }\n"
             '#[metadata]\n{"relay.Constant": [{"dtype": "int8", "shape": [2], '
             '"data": "AQI="}]}\n',
    std_source("prelude.rly"),
    std_source("nat.rly").replace(HEADER, HEADER + "type List[A] {\n  Cons(A, List[A]),\n"
                                                   "  Nil,\n}\n"
                                                   "def @hd[A](%l: List[A]) -> A {\n"
                                                   "  match? (%l) { Cons(%x, _) => %x }\n}\n"
                                                   "def @tl[A](%l: List[A]) -> List[A] {\n"
                                                   "  match? (%l) { Cons(_, %t) => %t }\n}\n"),
]

_TOKEN_RE = re.compile(r'\s+|/\*|\*/|//|"[^"\n]*"|meta\[[^\]]*\]\[\d+\]|#\[|[%@]?\w+|->|=>|'
                       r'==|!=|<=|>=|.', re.S)
TOKENS = sorted({piece for text in CORPUS for piece in _TOKEN_RE.findall(text)
                 if not piece.isspace()} | {"match?", "free_var", "extern", "_", "?", "!"})


def check(text: str, module: bool) -> None:
    try:
        if module:
            irlib.parse(text)
        else:
            irlib.parse_expr(text)
    except ParseError as error:
        str(error)   # rendering the message must not fail either
    except TypeInferenceError:
        assert module, "parse_expr must not type-check"


@settings(max_examples=examples(200), deadline=None)
@given(st.text(alphabet=st.sampled_from(list('%@#[](){}<>=-+*/.,;:?!_"\n\t 0123456789'
                                             'aefimnrtxyTNFACS')), max_size=60),
       st.booleans())
def test_random_characters(text, module):
    check(text, module)
    check(HEADER + text, module)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=40), st.booleans())
def test_random_token_sequences(tokens, module):
    text = " ".join(tokens)
    check(text, module)
    check(HEADER + text, module)


@st.composite
def mutated(draw):
    text = draw(st.sampled_from(CORPUS))
    pieces = _TOKEN_RE.findall(text)
    for _ in range(draw(st.integers(1, 4))):
        if not pieces:
            break
        position = draw(st.integers(0, len(pieces) - 1))
        action = draw(st.sampled_from(["delete", "insert", "duplicate", "swap", "replace"]))
        if action == "delete":
            del pieces[position]
        elif action == "insert":
            pieces.insert(position, " " + draw(st.sampled_from(TOKENS)) + " ")
        elif action == "duplicate":
            pieces.insert(position, pieces[position])
        elif action == "swap":
            other = draw(st.integers(0, len(pieces) - 1))
            pieces[position], pieces[other] = pieces[other], pieces[position]
        else:
            pieces[position] = " " + draw(st.sampled_from(TOKENS)) + " "
    return "".join(pieces)


@settings(max_examples=examples(200), deadline=None)
@given(mutated())
def test_mutated_valid_programs(text):
    check(text, module=True)


def test_corpus_is_valid():
    for text in CORPUS:
        irlib.parse(text)
