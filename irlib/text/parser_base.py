"""Shared machinery of the text-format parser: token cursor, errors, scopes, the trampoline.

NOTE: [Parsing without recursion]
Every grammar rule that can nest is a *generator*. A rule asks for a sub-parse by yielding
the sub-rule's generator (``body = yield self.p_block()``) and receives its result back.
:meth:`ParserBase.run` drives the generators with an explicit stack, so the parser reads like
recursive descent but its Python stack depth stays constant: a 100,000-deep nested call,
parenthesis, block, ``if`` or let chain parses without RecursionError. (``yield from`` is not
used: a chain of delegating generators makes every resume walk the chain, which is quadratic.)
"""

from __future__ import annotations

import difflib

from ..errors import ParseError
from ..ir.span import Span
from .lexer import SourceText, Token


class ParserBase:
    """Token cursor, error helpers, scopes and the generator trampoline.

    Args:
        source: the source text (for error messages).
        tokens: the token list, ending with an ``EOF`` token.
    """

    def __init__(self, source: SourceText, tokens: list):
        self.source = source
        self.tokens = tokens
        self.index = 0
        self.prev: Token = tokens[0]
        # local scopes: dicts from a variable name (str) or graph number (int) to the node
        self.scopes: list = []
        self.free_vars: dict = {}
        self.type_scopes: list = []

    # -- the trampoline -----------------------------------------------------------------------
    @staticmethod
    def run(generator):
        """Drive a rule generator (and the sub-rules it yields) to its result."""
        stack = [generator]
        value = None
        while True:
            try:
                child = stack[-1].send(value)
            except StopIteration as stop:
                stack.pop()
                if not stack:
                    return stop.value
                value = stop.value
                continue
            stack.append(child)
            value = None

    # -- tokens -------------------------------------------------------------------------------
    def peek(self, ahead: int = 0) -> Token:
        """The token ``ahead`` positions after the current one (EOF past the end)."""
        position = self.index + ahead
        if position >= len(self.tokens):
            return self.tokens[-1]
        return self.tokens[position]

    def advance(self) -> Token:
        """Consume and return the current token."""
        token = self.tokens[self.index]
        if token.kind != "EOF":
            self.index += 1
        self.prev = token
        return token

    def accept(self, kind: str):
        """Consume the current token if it is of ``kind``; return it or None."""
        if self.tokens[self.index].kind == kind:
            return self.advance()
        return None

    def expect(self, kind: str, what: str | None = None) -> Token:
        """Consume a token of ``kind`` or raise "expected X but found Y".

        Args:
            kind: the token kind wanted.
            what: how to name it in the error (default: ``kind``).
        """
        token = self.tokens[self.index]
        if token.kind != kind:
            raise self.error_at(token, f"expected {what or repr(kind)} but found "
                                       f"{token.describe()}")
        return self.advance()

    # -- spans and errors ---------------------------------------------------------------------
    def span_from(self, start: Token) -> Span:
        """The span from ``start`` to the end of the last consumed token."""
        end = self.prev
        if (end.line, end.end_col) < (start.line, start.col) and end.line <= start.line:
            end = start
        return Span(self.source.name, start.line, start.col, end.end_line, end.end_col)

    def token_span(self, token: Token) -> Span:
        """The span of one token."""
        return Span(self.source.name, token.line, token.col, token.end_line, token.end_col)

    def error_at(self, token: Token, message: str) -> ParseError:
        """A ParseError pointing at ``token``.

        Args:
            token: the token.
            message: what is wrong.
        """
        return ParseError(message, self.token_span(token), self.source.line(token.line))

    def error_span(self, span: Span, message: str) -> ParseError:
        """A ParseError pointing at ``span``.

        Args:
            span: the source range.
            message: what is wrong.
        """
        return ParseError(message, span, self.source.line(span.line))

    @staticmethod
    def suggest(name: str, candidates, prefix: str = "") -> str:
        """``"; did you mean %x, %y?"`` for close names, or ``""``.

        Args:
            name: the unknown name.
            candidates: the names in scope.
            prefix: the sigil written before each suggestion (``%``, ``@``).
        """
        close = difflib.get_close_matches(name, list(candidates), n=3, cutoff=0.6)
        if not close:
            return ""
        return "; did you mean " + ", ".join(prefix + c for c in close) + "?"

    # -- local scopes -------------------------------------------------------------------------
    def lookup_local(self, token: Token):
        """The node a ``%name`` or ``%n`` token refers to.

        Raises:
            ParseError: if no enclosing scope (or free_var declaration) binds it.
        """
        key = token.value
        for scope in reversed(self.scopes):
            node = scope.get(key)
            if node is not None:
                return node
        node = self.free_vars.get(key)
        if node is not None:
            return node
        if token.kind == "GRAPH":
            raise self.error_at(token, f"unknown graph variable %{key} (graph bindings "
                                       f"'%{key} = ...;' must come before their uses)")
        names = {name for scope in self.scopes for name in scope if isinstance(name, str)}
        names |= set(self.free_vars)
        raise self.error_at(token, f"unknown variable %{key}" + self.suggest(key, names, "%"))

    def lookup_type_var(self, name: str):
        """The TypeVar ``name`` is bound to in the enclosing ``[...]`` lists, or None."""
        for scope in reversed(self.type_scopes):
            type_var = scope.get(name)
            if type_var is not None:
                return type_var
        return None
