"""Grammar rules for expressions: binding chains, binary operators, calls, atoms.

Part of the text-format parser (see :mod:`irlib.text.parser`). Every rule that can nest is a
generator driven by :meth:`~irlib.text.parser_base.ParserBase.run`. Binary operators are
parsed by operator-precedence climbing over an explicit operand/operator stack.
"""

from __future__ import annotations

import numpy as np

from ..ir import expr as E
from ..ir.attrs import Attrs
from .meta import CONSTANT_KEY
from .parse_types import TypeRules

# token kind -> (precedence, op name); all left-associative
BINARY_OPERATORS = {
    "*": (12, "multiply"), "/": (12, "divide"), "+": (10, "add"), "-": (10, "subtract"),
    "<": (8, "less"), "<=": (8, "less_equal"), ">": (8, "greater"), ">=": (8, "greater_equal"),
    "==": (7, "equal"), "!=": (7, "not_equal"),
}

_SIMPLE_ATOMS = frozenset(["INT", "FLOAT", "BOOL", "LOCAL", "GRAPH", "GLOBAL", "META"])


class ExprRules(TypeRules):
    """Expressions."""

    # -- expression: a chain of bindings and sequenced statements -----------------------------
    def p_expr(self):
        """``(let ... ; | %n = ... ; | free_var ... ; | stmt ;)* stmt`` (generator).

        Lets and sequencing (``a; b`` is ``let _ = a; b``) are collected in a list and
        folded into nested :class:`~irlib.ir.expr.Let` nodes at the end, so a 100,000-long
        chain is one loop.
        """
        bindings = []
        scope = None
        while True:
            token = self.peek()
            kind = token.kind
            if kind == "let":
                self.advance()
                name_token = self.peek()
                if name_token.kind != "LOCAL":
                    raise self.error_at(name_token, "expected a local variable (%name) after "
                                        f"'let' but found {name_token.describe()}")
                self.advance()
                annotation = None
                if self.accept(":"):
                    annotation = yield self.p_type()
                self.expect("=", "'='")
                var = E.Var(name_token.value, annotation, span=self.span_from(name_token))
                if scope is None:
                    scope = {}
                    self.scopes.append(scope)
                scope[name_token.value] = var  # bound before the value: let is recursive
                value = yield self.p_value()
                self.expect(";", "';' after the let value")
                bindings.append((var, value, token))
            elif kind == "GRAPH" and self.peek(1).kind == "=":
                self.advance()
                self.advance()
                value = yield self.p_value()
                self.expect(";", "';' after the graph binding")
                if scope is None:
                    scope = {}
                    self.scopes.append(scope)
                scope[token.value] = value
            elif kind == "free_var":
                self.advance()
                name_token = self.expect("LOCAL", "a local variable (%name)")
                annotation = None
                if self.accept(":"):
                    annotation = yield self.p_type()
                self.free_vars[name_token.value] = E.Var(name_token.value, annotation,
                                                         span=self.span_from(name_token))
                self.expect(";", "';' after the free_var declaration")
            else:
                value = yield self.p_value()
                if self.peek().kind == ";":
                    self.advance()
                    bindings.append((E.Var(""), value, token))
                    continue
                body = value
                break
        if scope is not None:
            self.scopes.pop()
        for var, value, start in reversed(bindings):
            body = E.Let(var, value, body, span=self.span_from(start))
        return body

    def p_value(self):
        """A statement: a block, a match, or a binary-operator expression (generator)."""
        kind = self.peek().kind
        if kind == "{":
            return (yield self.p_block())
        return (yield self.p_binop())

    def p_block(self):
        """``{ expr }`` (generator)."""
        self.expect("{", "'{'")
        body = yield self.p_expr()
        self.expect("}", "'}'")
        return body

    # -- binary operators ---------------------------------------------------------------------
    def p_binop(self):
        """``operand (BINOP operand)*`` by precedence climbing (generator)."""
        start = self.peek()
        first = yield self.p_postfix_only()
        if self.peek().kind not in BINARY_OPERATORS:
            return first
        operands = [(first, start)]
        operators = []
        while self.peek().kind in BINARY_OPERATORS:
            token = self.advance()
            precedence, name = BINARY_OPERATORS[token.kind]
            while operators and operators[-1][0] >= precedence:
                self._reduce(operands, operators)
            operators.append((precedence, name))
            operand_start = self.peek()
            operands.append(((yield self.p_postfix_only()), operand_start))
        while operators:
            self._reduce(operands, operators)
        return operands[0][0]

    def _reduce(self, operands, operators) -> None:
        _, name = operators.pop()
        right, _ = operands.pop()
        left, start = operands.pop()
        op_def = self.op_def(name)
        call = E.Call(op_def.op, (left, right), op_def.make_attrs({}), span=self.span_from(start))
        operands.append((call, start))

    # -- postfix: calls and projections -------------------------------------------------------
    def p_postfix_only(self):
        """``atom ('(' args ')' | '.' INT)*`` (generator)."""
        start = self.peek()
        if start.kind in _SIMPLE_ATOMS:
            node = self.simple_atom()
        elif start.kind == "IDENT":
            node = self.name_atom()
        else:
            node = yield self.p_complex_atom()
        while True:
            kind = self.peek().kind
            if kind == "(":
                node = yield self.p_call(node, start)
            elif kind == "." and self.peek(1).kind == "INT":
                self.advance()
                index_token = self.advance()
                index = index_token.value[0]
                if index < 0:
                    raise self.error_at(index_token, "a tuple index cannot be negative")
                node = E.TupleGetItem(node, index, span=self.span_from(start))
            else:
                return node

    def p_call(self, callee, start):
        """``'(' args ')'`` after ``callee``; builds the Call (generator).

        Args:
            callee: the parsed callee expression.
            start: the callee's first token (the Call's span starts there).
        """
        self.expect("(")
        args, attrs, attr_tokens = [], {}, {}
        meta_token = None
        while not self.accept(")"):
            if self._at_meta_attrs():
                meta_token = self.advance()
            elif self.at_attr():
                name, value, name_token = yield self.p_attr()
                if name in attrs:
                    raise self.error_at(name_token, f"attribute {name} given twice")
                attrs[name] = value
                attr_tokens[name] = name_token
            else:
                if attrs:
                    raise self.error_at(self.peek(), "positional argument after attributes")
                args.append((yield self.p_expr()))
            if not self.accept(","):
                self.expect(")", "',' or ')'")
                break
        if meta_token is not None:
            if attrs:
                raise self.error_at(meta_token, "attributes given both as keywords and as "
                                                "metadata")
            return self.make_meta_attrs_call(callee, args, meta_token, start)
        return self.make_call(callee, args, attrs, attr_tokens, start)

    def _at_meta_attrs(self) -> bool:
        # relay_spec §2.3: a lone trailing meta[...] argument that is not a constant is the
        # call's attrs object.
        token = self.peek()
        if token.kind != "META" or token.value[0] == CONSTANT_KEY:
            return False
        after = self.peek(1).kind
        return after == ")" or (after == "," and self.peek(2).kind == ")")

    def make_meta_attrs_call(self, callee, args, meta_token, start):
        """The Call of ``callee(args, meta[Key][k])`` whose attrs come from the metadata.

        Args:
            callee: the callee.
            args: the parsed arguments.
            meta_token: the ``meta[...]`` token naming the attrs.
            start: the first token of the call (for its span).
        """
        meta_attrs = self.meta_attrs(meta_token)
        if type(callee) is E.Op:
            op_def = self.op_def(callee.name)
            schema = op_def.attrs
            if schema is None or schema.type_key != meta_attrs.type_key:
                expected = schema.type_key if schema is not None else "no attributes"
                raise self.error_at(meta_token, (
                    f"{callee.name} takes {expected}, not {meta_attrs.type_key}"))
            tokens = {name: meta_token for name in meta_attrs}
            return self.make_call(callee, args, dict(meta_attrs), tokens, start)
        if type(callee) is E.Constructor:
            raise self.error_at(meta_token, "a constructor call takes no attributes")
        return E.Call(callee, tuple(args), meta_attrs, span=self.span_from(start))

    def make_call(self, callee, args, attrs, attr_tokens, start):
        """The Call node of ``callee(args, attrs)``, checking arities and attributes.

        Args:
            callee: the callee.
            args: the parsed arguments.
            attrs: the parsed attribute values.
            attr_tokens: attribute name -> its token (to point errors at it).
            start: the first token of the call (for its span).
        """
        span = self.span_from(start)
        if type(callee) is E.Op:
            op_def = self.op_def(callee.name)
            if len(args) != op_def.num_inputs:
                raise self.error_span(span, (
                    f"{callee.name} takes {op_def.num_inputs} argument(s) "
                    f"({', '.join(op_def.arg_names)}) but {len(args)} were given"))
            try:
                call_attrs = op_def.make_attrs(attrs)
            except (TypeError, ValueError) as error:
                token = next(iter(attr_tokens.values()), start)
                raise self.error_at(token, f"bad attributes for {callee.name}: {error}") from None
            return E.Call(callee, tuple(args), call_attrs, span=span)
        if type(callee) is E.Constructor:
            if len(args) != len(callee.inputs):
                raise self.error_span(span, (
                    f"constructor {callee.name_hint} takes {len(callee.inputs)} argument(s) "
                    f"but {len(args)} were given"))
            if attrs:
                raise self.error_at(next(iter(attr_tokens.values())),
                                    "a constructor call takes no attributes")
            return E.Call(callee, tuple(args), span=span)
        call_attrs = None
        if attrs:
            type_key = attrs.pop("attrs_type_key", None)
            if not isinstance(type_key, str):
                raise self.error_at(next(iter(attr_tokens.values())), (
                    "attributes on a call of a non-operator need attrs_type_key=\"...\" "
                    "first"))
            call_attrs = Attrs(attrs, type_key)
        return E.Call(callee, tuple(args), call_attrs, span=span)

    # -- atoms --------------------------------------------------------------------------------
    def simple_atom(self):
        """A literal, variable, global or metadata constant (one token)."""
        token = self.advance()
        kind = token.kind
        if kind == "INT" or kind == "FLOAT":
            value, dtype, _ = token.value
            return E.Constant(np.array(value, dtype=dtype), span=self.token_span(token))
        if kind == "BOOL":
            return E.Constant(np.array(token.value), span=self.token_span(token))
        if kind == "LOCAL" or kind == "GRAPH":
            return self.lookup_local(token)
        if kind == "GLOBAL":
            return self.intern_global(token)
        return self.meta_constant(token)

    def name_atom(self):
        """A constructor (nullary ones applied) or an operator, by (dotted) name."""
        name, token = self.dotted_name()
        ctor = self.lookup_ctor(name)
        if ctor is not None:
            if not ctor.inputs and self.peek().kind != "(":
                return E.Call(ctor, (), span=self.span_from(token))
            return ctor
        if self.op_exists(name):
            return self.op_def(name).op
        candidates = self.op_names() + self.ctor_names()
        raise self.error_span(self.span_from(token), (
            f"unknown operator or constructor {name}" + self.suggest(name, candidates)))

    def p_complex_atom(self):
        """``fn``, ``if``, ``match``, ``ref`` forms, parentheses and blocks (generator)."""
        token = self.peek()
        kind = token.kind
        if kind == "(":
            return (yield self.p_paren())
        if kind == "fn":
            self.advance()
            return (yield self.p_function(token))
        if kind == "if":
            return (yield self.p_if())
        if kind == "match" or kind == "match?":
            return (yield self.p_match())
        if kind == "{":
            return (yield self.p_block())
        if kind in ("ref", "ref_read", "ref_write"):
            self.advance()
            self.expect("(")
            first = yield self.p_expr()
            if kind == "ref_write":
                self.expect(",", "',' and the value to write")
                second = yield self.p_expr()
                self.expect(")")
                return E.RefWrite(first, second, span=self.span_from(token))
            self.expect(")")
            node_class = E.RefCreate if kind == "ref" else E.RefRead
            return node_class(first, span=self.span_from(token))
        raise self.error_at(token, f"expected an expression but found {token.describe()}")

    def p_paren(self):
        """``()``, ``(e)``, ``(e,)`` or ``(e1, e2, ...)`` (generator)."""
        start = self.expect("(")
        if self.accept(")"):
            return E.Tuple((), span=self.span_from(start))
        first = yield self.p_expr()
        if self.accept(")"):
            return first
        self.expect(",", "',' or ')'")
        fields = [first]
        while not self.accept(")"):
            fields.append((yield self.p_expr()))
            if not self.accept(","):
                self.expect(")", "',' or ')'")
                break
        return E.Tuple(fields, span=self.span_from(start))

    def p_function(self, start):
        """``[T](params, attrs) -> ret { body }`` after ``fn`` or ``def @f`` (generator).

        Args:
            start: the ``fn``/``def`` token (the Function's span starts there).
        """
        type_params = []
        if self.peek().kind == "[":
            type_params = self.p_type_params()
        self.expect("(", "'(' starting the parameters")
        scope, params, attrs = {}, [], {}
        while not self.accept(")"):
            token = self.peek()
            if token.kind == "LOCAL":
                if attrs:
                    raise self.error_at(token, "parameter after function attributes")
                self.advance()
                if token.value in scope:
                    raise self.error_at(token, f"duplicate parameter %{token.value}")
                annotation = None
                if self.accept(":"):
                    annotation = yield self.p_type()
                var = E.Var(token.value, annotation, span=self.span_from(token))
                scope[token.value] = var
                params.append(var)
            elif self.at_attr():
                name, value, _ = yield self.p_attr()
                attrs[name] = value
            else:
                raise self.error_at(token, "expected a parameter (%name) or an attribute "
                                           f"but found {token.describe()}")
            if not self.accept(","):
                self.expect(")", "',' or ')'")
                break
        ret_type = None
        if self.accept("->"):
            ret_type = yield self.p_type()
        self.scopes.append(scope)
        body = yield self.p_block()
        self.scopes.pop()
        if type_params:
            self.type_scopes.pop()
        return E.Function(params, body, ret_type, type_params, Attrs(attrs) if attrs else None,
                          span=self.span_from(start))

    def p_if(self):
        """``if (cond) { then } else { otherwise }`` (generator)."""
        start = self.advance()
        self.expect("(", "'(' around the condition")
        cond = yield self.p_expr()
        self.expect(")", "')' after the condition")
        then = yield self.p_block()
        self.expect("else", "'else'")
        otherwise = yield self.p_block()
        return E.If(cond, then, otherwise, span=self.span_from(start))

    def p_match(self):
        """``match (data) { pattern => body, ... }`` or ``match?`` (generator)."""
        start = self.advance()
        data = yield self.p_postfix_only()
        self.expect("{", "'{' starting the match clauses")
        clauses = []
        while not self.accept("}"):
            clause_start = self.peek()
            scope = {}
            pattern = yield self.p_pattern(scope)
            self.expect("=>", "'=>'")
            self.scopes.append(scope)
            body = yield self.p_expr()
            self.scopes.pop()
            clauses.append(E.Clause(pattern, body, span=self.span_from(clause_start)))
            if not self.accept(","):
                self.expect("}", "',' or '}'")
                break
        return E.Match(data, clauses, start.kind == "match", span=self.span_from(start))
