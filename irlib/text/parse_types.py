"""Grammar rules for types, shapes, symbolic dims, patterns and attribute values.

Part of the text-format parser (see :mod:`irlib.text.parser`). Every rule that can nest is a
generator driven by :meth:`~irlib.text.parser_base.ParserBase.run` (see the NOTE there).
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir.dims import Any, floordiv, size_var
from ..ir.types import (FuncType, IncompleteType, RefType, TensorType, TupleType, TypeCall,
                        TypeVar, normalize_dtype)
from ..ndarray import NDArray
from .parser_base import ParserBase

_DTYPE_PREFIXES = ("int", "uint", "float", "bool")


def looks_like_dtype(name: str) -> bool:
    """Whether the type grammar reads identifier ``name`` as a dtype (tricky part #14)."""
    return name.startswith(_DTYPE_PREFIXES)


class TypeRules(ParserBase):
    """Types, dims, type parameters, patterns and attribute values."""

    # -- type parameters ----------------------------------------------------------------------
    def p_type_params(self) -> list:
        """``[A, B]`` (the current token is ``[``): fresh TypeVars, pushed as a type scope."""
        self.expect("[")
        params, scope = [], {}
        while True:
            token = self.expect("IDENT", "a type parameter name")
            if token.value in scope:
                raise self.error_at(token, f"duplicate type parameter {token.value}")
            type_var = TypeVar(token.value, span=self.token_span(token))
            scope[token.value] = type_var
            params.append(type_var)
            if not self.accept(","):
                break
        self.expect("]", "',' or ']'")
        self.type_scopes.append(scope)
        return params

    # -- types --------------------------------------------------------------------------------
    def p_type(self):
        """A type (generator)."""
        token = self.peek()
        kind = token.kind
        if kind == "(":
            self.advance()
            if self.accept(")"):
                return TupleType(())
            first = yield self.p_type()
            if self.accept(")"):
                return first  # a parenthesised type; (T,) is the 1-tuple
            fields = [first]
            while self.accept(","):
                if self.peek().kind == ")":
                    break
                fields.append((yield self.p_type()))
            self.expect(")", "',' or ')'")
            return TupleType(fields)
        if kind == "fn":
            self.advance()
            type_params = []
            if self.peek().kind == "[":
                type_params = self.p_type_params()
            self.expect("(")
            args = []
            if not self.accept(")"):
                while True:
                    args.append((yield self.p_type()))
                    if not self.accept(","):
                        break
                self.expect(")", "',' or ')'")
            self.expect("->", "'->' and the result type")
            ret = yield self.p_type()
            if type_params:
                self.type_scopes.pop()
            return FuncType(args, ret, type_params)
        if kind == "ref":
            self.advance()
            self.expect("(")
            value = yield self.p_type()
            self.expect(")")
            return RefType(value)
        if kind == "UNDERSCORE":
            self.advance()
            return IncompleteType()
        if kind == "IDENT":
            name = token.value
            if name == "Tensor" and self.peek(1).kind == "[":
                return (yield self.p_tensor_type())
            if looks_like_dtype(name):
                self.advance()
                return TensorType((), self.dtype_of(token))
            type_var = self.lookup_type_var(name)
            if type_var is not None:
                self.advance()
                return type_var
            self.advance()
            header = self.intern_type(token)
            args = []
            if self.accept("["):
                while True:
                    args.append((yield self.p_type()))
                    if not self.accept(","):
                        break
                self.expect("]", "',' or ']'")
            return TypeCall(header, args)
        raise self.error_at(token, f"expected a type but found {token.describe()}")

    def dtype_of(self, token) -> str:
        """The dtype an identifier token names."""
        try:
            return normalize_dtype(token.value)
        except TypeError:
            raise self.error_at(token, f"unknown dtype {token.value!r}") from None

    def p_tensor_type(self):
        """``Tensor[(d0, d1), dtype]`` (generator)."""
        start = self.advance()
        self.expect("[")
        self.expect("(", "'(' starting the shape")
        dims = []
        if not self.accept(")"):
            while True:
                dims.append((yield self.p_dim()))
                if not self.accept(","):
                    break
                if self.peek().kind == ")":
                    break
            self.expect(")", "',' or ')'")
        self.expect(",", "',' and the dtype")
        dtype_token = self.expect("IDENT", "a dtype")
        dtype = self.dtype_of(dtype_token)
        self.expect("]")
        try:
            return TensorType(dims, dtype)
        except (TypeError, ValueError) as error:
            raise self.error_span(self.span_from(start), f"bad tensor type: {error}") from None

    # -- dims ---------------------------------------------------------------------------------
    def p_dim(self):
        """One dimension: ``?`` or a dim expression (generator)."""
        if self.accept("?"):
            return Any
        if self.peek().kind == "META":
            raise self.error_at(self.peek(), "metadata references are not supported as "
                                             "dimensions")
        return (yield self.p_dim_expr())

    def p_dim_expr(self):
        """``term (('+' | '-') term)*`` over ints and size variables (generator)."""
        start = self.peek()
        total = yield self.p_dim_term()
        while True:
            token = self.peek()
            if token.kind in ("+", "-"):
                self.advance()
                term = yield self.p_dim_term()
                total = self.dim_arith(start, total, term, token.kind)
            elif token.kind == "INT" and token.value[2].startswith("-"):
                # `n -1` lexes the literal -1: read it as a subtraction
                self.advance()
                total = self.dim_arith(start, total, token.value[0], "+")
            else:
                return total

    def p_dim_term(self):
        """A product of dim factors, ``a * b * ...`` (generator, like the other rules)."""
        start = self.peek()
        product = yield self.p_dim_factor()
        while self.accept("*"):
            factor = yield self.p_dim_factor()
            product = self.dim_arith(start, product, factor, "*")
        return product

    def p_dim_factor(self):
        """One dim factor: an integer, a parenthesised dim expression, ``floordiv(a, b)`` or a size
        variable's name (generator)."""
        token = self.peek()
        if token.kind == "INT":
            self.advance()
            return token.value[0]
        if token.kind == "(":
            self.advance()
            inner = yield self.p_dim_expr()
            self.expect(")")
            return inner
        if token.kind == "IDENT":
            self.advance()
            if token.value == "floordiv" and self.accept("("):
                numerator = yield self.p_dim_expr()
                self.expect(",")
                denominator = yield self.p_dim_expr()
                self.expect(")")
                return self.dim_arith(token, numerator, denominator, "//")
            try:
                return size_var(token.value)
            except ValueError:
                raise self.error_at(token, f"bad size variable name {token.value!r}") from None
        raise self.error_at(token, f"expected a dimension but found {token.describe()}")

    def dim_arith(self, start, left, right, operator: str):
        """``left op right`` on dims, errors reported as ParseError.

        Args:
            start: the token the expression starts at (for the error).
            left: the left dim.
            right: the right dim.
            operator: ``"+"``, ``"*"`` or ``"//"`` (floordiv).
        """
        try:
            if operator == "+":
                return left + right
            if operator == "-":
                return left - right
            if operator == "*":
                return left * right
            return floordiv(left, right)
        except (ArithmeticError, TypeError, ValueError) as error:
            raise self.error_span(self.span_from(start), f"bad dimension: {error}") from None

    # -- patterns -----------------------------------------------------------------------------
    def p_pattern(self, scope: dict):
        """A match pattern; its variables are bound in ``scope`` (generator)."""
        token = self.peek()
        kind = token.kind
        if kind == "UNDERSCORE":
            self.advance()
            return E.PatternWildcard(span=self.token_span(token))
        if kind == "LOCAL":
            self.advance()
            if token.value in scope:
                raise self.error_at(token, f"variable %{token.value} is bound twice in "
                                           f"one pattern")
            annotation = None
            if self.accept(":"):
                annotation = yield self.p_type()
            var = E.Var(token.value, annotation, span=self.span_from(token))
            scope[token.value] = var
            return E.PatternVar(var, span=var.span)
        if kind == "(":
            self.advance()
            patterns = []
            while not self.accept(")"):
                patterns.append((yield self.p_pattern(scope)))
                if not self.accept(","):
                    self.expect(")", "',' or ')'")
                    break
            return E.PatternTuple(patterns, span=self.span_from(token))
        if kind == "IDENT":
            name, _ = self.dotted_name()
            ctor = self.lookup_ctor(name)
            if ctor is None:
                raise self.error_at(token, f"unknown constructor {name} in pattern"
                                    + self.suggest(name, self.ctor_names()))
            patterns = []
            if self.accept("("):
                while not self.accept(")"):
                    patterns.append((yield self.p_pattern(scope)))
                    if not self.accept(","):
                        self.expect(")", "',' or ')'")
                        break
            if len(patterns) != len(ctor.inputs):
                raise self.error_span(self.span_from(token), (
                    f"constructor {name} has {len(ctor.inputs)} field(s) but the pattern "
                    f"gives {len(patterns)}"))
            return E.PatternConstructor(ctor, patterns, span=self.span_from(token))
        raise self.error_at(token, f"expected a pattern but found {token.describe()}")

    # -- attributes ---------------------------------------------------------------------------
    def at_attr(self) -> bool:
        """Whether the next tokens start ``name = value`` (``name`` possibly dotted)."""
        ahead = 0
        if self.peek().kind != "IDENT":
            return False
        while self.peek(ahead + 1).kind == "." and self.peek(ahead + 2).kind == "IDENT":
            ahead += 2
        return self.peek(ahead + 1).kind == "="

    def p_attr(self):
        """``name = value``; returns ``(name, value, name_token)`` (generator)."""
        name, token = self.dotted_name()
        self.expect("=")
        value = yield self.p_attr_value()
        return name, value, token

    def p_attr_value(self):
        """An attribute value (generator); see docs/text-format.md for the forms."""
        token = self.peek()
        kind = token.kind
        if kind == "[":
            self.advance()
            items = []
            while not self.accept("]"):
                items.append((yield self.p_attr_value()))
                if not self.accept(","):
                    self.expect("]", "',' or ']'")
                    break
            return tuple(items)
        if kind == "INT":
            if self.peek(1).kind in ("*", "+", "-"):
                return (yield self.p_dim_expr())
            self.advance()
            return token.value[0]
        if kind == "FLOAT":
            self.advance()
            return float(token.value[2])
        if kind in ("BOOL", "STRING"):
            self.advance()
            return token.value
        if kind == "?":
            self.advance()
            return Any
        if kind == "META":
            self.advance()
            return NDArray(self.meta_array(token))
        if kind == "IDENT":
            if token.value in ("None", "nullptr"):
                self.advance()
                return None
            name, _ = self.peek_dotted_name()
            if self.lookup_ctor(name) is not None or self.op_exists(name):
                return (yield self.p_postfix_only())
            return (yield self.p_dim_expr())
        return (yield self.p_postfix_only())

    def peek_dotted_name(self):
        """The dotted name starting at the current token, without consuming it."""
        parts = [self.peek().value]
        ahead = 0
        while self.peek(ahead + 1).kind == "." and self.peek(ahead + 2).kind == "IDENT":
            parts.append(self.peek(ahead + 2).value)
            ahead += 2
        return ".".join(parts), ahead + 1

    def dotted_name(self):
        """Consume ``IDENT ('.' IDENT)*``; returns ``(name, first_token)``."""
        first = self.expect("IDENT", "a name")
        parts = [first.value]
        while self.peek().kind == "." and self.peek(1).kind == "IDENT":
            self.advance()
            parts.append(self.advance().value)
        return ".".join(parts), first

