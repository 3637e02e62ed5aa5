"""The text-format printer (Relay text format v0.0.5, as docs/text-format.md specifies).

``astext(x)`` gives the version header, the text of ``x`` and, when constants need it, the
``#[metadata]`` section; ``pretty_print(x)`` (what ``str(node)`` and ``str(module)`` use)
gives the text alone. Example::

    >>> x = irlib.var("x", shape=(10,))
    >>> print(irlib.nn.relu(irlib.add(x, irlib.const(1.0))))
    free_var %x: Tensor[(10), float32];
    %0 = add(%x, 1f);
    nn.relu(%0)

How it works. :mod:`irlib.text.layout` first decides, for the whole expression DAG, which
nodes are written inline and in which scope every other node gets its ``%n = ...;`` binding.
Then one explicit-stack emitter produces the text: the stack holds text fragments, line and
indentation marks, and ``(method, argument)`` actions that push further items when they run.
Nothing recurses, so 100,000-deep let chains, call chains and constructor values print in
linear time; indentation stops growing after ``MAX_INDENT_LEVELS`` levels, so deeply nested
blocks (``if`` in ``if`` ...) also print in linear size. Numbers ``%n`` are handed out when a binding's value is complete (so a
function's inner bindings are numbered before the function, as in Relay); the binding line
holds a slot that is filled in then.
"""

from __future__ import annotations

from ..errors import IRError
from ..ir import expr as E
from ..ir.functor import pattern_vars
from ..ir.module import IRModule
from ..ir.span import SourceName
from ..ir.type_functor import iter_types
from ..ir.type_text import type_data_to_text, type_to_text
from ..ir.types import Type, TypeData, TypeVar
from ..ndarray import NDArray
from .layout import Layout, is_atomic
from .literals import attr_value_text, scalar_literal, string_text
from .meta import MetaTable
from .names import NameTable, sanitize_type_var_name, sanitize_var_name

VERSION_HEADER = '#[version = "0.0.5"]'
# Blocks nested deeper than this many levels are printed at this indentation (whitespace is
# not significant in the text format): the output of an ``if`` nested 200,000 deep stays
# linear in the program's size instead of quadratic.
MAX_INDENT_LEVELS = 32
META_OMITTED = "// meta data omitted. you can use show_meta_data=True to include meta data"

__all__ = ["astext", "pretty_print", "VERSION_HEADER"]


def astext(node, show_meta_data: bool = True, annotate=None) -> str:
    """The text format of ``node``, with the ``#[version = "0.0.5"]`` header.

    Args:
        node: an :class:`~irlib.ir.module.IRModule`, any expression, a type or type
            definition, a pattern or a clause.
        show_meta_data: write the ``#[metadata]`` section when constants need it (otherwise
            a comment says it was omitted; the ``meta[...]`` references stay).
        annotate: None to write ``/* ty=... */`` after each typed expression, or a callable
            ``node -> str | None`` whose result is written as the comment instead.

    Returns:
        The text. A module's ends with a newline, as does text with a metadata section;
        an expression's otherwise does not (as in Relay).

    Raises:
        TypeError: if ``node`` is not something the text format can show.
    """
    printer = _Printer(annotate)
    body = printer.print_any(node)
    parts = [VERSION_HEADER]
    if body:
        parts.append(body)
    if len(printer.meta):
        if show_meta_data:
            parts.extend(["#[metadata]", printer.meta.to_json()])
        else:
            parts.append(META_OMITTED)
    # NOTE: as in Relay, a module's text ends with a newline and an expression's does not
    # (`const(42, "int16").astext()` is exactly the header line plus `42i16`); a metadata
    # section (or the comment saying it was omitted) ends its line too.
    ends_line = isinstance(node, IRModule) or len(printer.meta) > 0
    return "\n".join(parts) + ("\n" if ends_line else "")


def pretty_print(node) -> str:
    """The text of ``node`` without header or metadata section (``meta[...]`` references
    stay); what ``str(node)`` gives.

    Args:
        node: as for :func:`astext`.

    Raises:
        TypeError: if ``node`` is not something the text format can show.
    """
    return _Printer(None).print_any(node)


class _Mark:
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return self.name


_NL = _Mark("newline")      # end the current line; the next one starts at the current indent
_INDENT = _Mark("indent")
_DEDENT = _Mark("dedent")


class _Printer:
    """One print call: the emitter state, names, graph-binding numbers and metadata."""

    def __init__(self, annotate=None):
        self.annotate = annotate
        self.meta = MetaTable()
        self.literal_cache: dict = {}
        self.graph_counter = 0
        self.lines: list = []       # (indent, fragments) per finished line
        self.fragments: list = []   # the current line: strs and slots ([text])
        self.indent = 0
        self.line_indent = 0
        self.stack: list = []
        self.layout = None
        self._reset_names()

    def _reset_names(self) -> None:
        # Names are per definition: two defs may both have a parameter %x.
        self.var_names = NameTable(sanitize_var_name)
        self.type_var_names: dict = {}
        self.type_name_table = NameTable(sanitize_type_var_name)
        self.type_text_cache: dict = {}
        self.node_text: dict = {}   # bound node -> "%n"

    # -- entry points --------------------------------------------------------------------------
    def print_any(self, node) -> str:
        if isinstance(node, IRModule):
            return self._print_module(node)
        if isinstance(node, E.TupleWrapper):
            node = node.astuple()
        if isinstance(node, E.Expr):
            return self._print_root(node, (), [])
        if isinstance(node, E.Clause):
            lhs = [(self._pattern, node.lhs), " => {", _INDENT, _NL]
            return self._print_root(node.rhs, pattern_vars(node.lhs), lhs,
                                    [_DEDENT, _NL, "}"])
        if isinstance(node, E.Pattern):
            self._push((self._pattern, node))
            self._run()
            return self._take_text()
        if isinstance(node, TypeData):
            return self._type_data_text(node)
        if isinstance(node, Type):
            return self._type_text(node)
        raise TypeError(f"cannot print a {type(node).__name__} in the text format")

    def _print_root(self, expr, bound_vars, before, after=()) -> str:
        self.layout = Layout(expr)
        items = list(before)
        bound = set(bound_vars)
        for var in self.layout.free_vars:
            if var not in bound:
                items.extend(["free_var ", (self._var_decl, var), ";", _NL])
        items.append((self._scope, self.layout.root_scope))
        items.extend(after)
        self._push(*items)
        self._run()
        return self._take_text()

    def _print_module(self, mod: IRModule) -> str:
        blocks = []
        for gtv in mod.get_global_type_vars():
            self._reset_names()
            blocks.append(self._type_data_text(mod[gtv]))
        for gvar, func in mod.items():
            self._reset_names()
            self.layout = Layout(func.body)
            params = set(func.params)
            items = ["def @" + gvar.name_hint, (self._function_header, func), " {", _INDENT, _NL]
            for var in self.layout.free_vars:
                if var in params:
                    continue
                items.extend(["free_var ", (self._var_decl, var), ";", _NL])
            items.extend([(self._scope, self.layout.root_scope), _DEDENT, _NL, "}"])
            self._push(*items)
            self._run()
            blocks.append(self._take_text())
        return "\n\n".join(blocks)

    # -- the emitter ---------------------------------------------------------------------------
    def _push(self, *items) -> None:
        self.stack.extend(reversed(items))

    def _run(self) -> None:
        stack = self.stack
        while stack:
            item = stack.pop()
            kind = type(item)
            if kind is tuple:
                item[0](item[1])
            elif kind is str:
                self.fragments.append(item)
            elif item is _NL:
                self._newline()
            elif item is _INDENT:
                self.indent += 1
            else:
                self.indent -= 1

    def _take_text(self) -> str:
        if self.fragments:
            self.lines.append((self.line_indent, self.fragments))
        text = "\n".join("  " * min(indent, MAX_INDENT_LEVELS)
                         + "".join(f if type(f) is str else f[0] for f in frags)
                         for indent, frags in self.lines)
        self.lines, self.fragments = [], []
        self.indent = self.line_indent = 0
        return text

    # -- scopes and bindings ---------------------------------------------------------------------
    # NOTE: handlers append text that is ready straight to ``self.fragments`` and push only
    # what must wait (nested scopes, the end of a binding); since an action runs exactly when
    # its text is due, appending directly keeps the textual order.
    def _scope(self, scope) -> None:
        stack = self.stack
        if scope.flat:
            stack.append((self._let_line, scope.root))
        else:
            stack.append((self._use, scope.root))
        stack.extend([(self._binding, node) for node in scope.bindings])  # reversed order

    def _binding(self, node) -> None:
        slot = [None]
        self.fragments.append(slot)
        self.fragments.append(" = ")
        self.stack.append((self._end_binding, (node, slot)))
        self._inline(node)

    def _end_binding(self, node_and_slot) -> None:
        node, slot = node_and_slot
        note = self._annotation_text(node)
        if note:
            self.fragments.append(note)
        # NOTE: numbered only now, after the value (and any nested scope) is written.
        text = f"%{self.graph_counter}"
        self.graph_counter += 1
        self.node_text[node] = text
        slot[0] = text
        self.fragments.append(";")
        self._newline()

    def _let_line(self, let) -> None:
        body_scope = self.layout.scopes_of[let][1]
        self.fragments.append("let " + self._var_decl_text(let.var) + " = ")
        self.stack.append((self._scope, body_scope))
        self.stack.append((self._end_statement, None))
        self._use(let.value)

    def _end_statement(self, _) -> None:
        self.fragments.append(";")
        self._newline()

    def _use(self, node) -> None:
        """Write a use of ``node`` at a root position: inline, ``%n``, or its atomic text."""
        if node in self.layout.inline:
            self.stack.append((self._annotation, node))
            self._inline(node)
        else:
            self.fragments.append(self._ref(node))

    def _ref(self, node) -> str:
        """A use of ``node`` in a non-root position (never inline): ``%n`` or atomic text."""
        text = self.node_text.get(node)
        if text is not None:
            return text
        return self._atomic_text(node)

    def _newline(self) -> None:
        self.lines.append((self.line_indent, self.fragments))
        self.fragments = []
        self.line_indent = self.indent

    def _atomic_text(self, node) -> str:
        kind = type(node)
        if kind is E.Var:
            return "%" + self.var_names.name_of(node, node.name_hint)
        if kind is E.GlobalVar:
            return "@" + node.name_hint
        if kind is E.Op:
            return node.name
        if kind is E.Constructor:
            return node.name_hint
        if kind is E.Constant:
            array = node.data.numpy()
            text = None
            if array.ndim == 0:
                # Programs repeat the same few scalars; float formatting is the slow part.
                key = (array.dtype.char, array.tobytes())
                text = self.literal_cache.get(key, key)
                if text is key:
                    text = self.literal_cache[key] = scalar_literal(array)
            if text is None:
                text = self.meta.reference(node)
            return text + self._annotation_text(node)
        if is_atomic(node):   # a nullary constructor call
            return node.op.name_hint + self._annotation_text(node)
        raise IRError(f"printer: {type(node).__name__} node used before its binding was "
                      f"written (please report this as a printer bug)")

    # -- annotations -------------------------------------------------------------------------------
    def _annotation(self, node) -> None:
        note = self._annotation_text(node)
        if note:
            self.fragments.append(note)

    def _annotation_text(self, node) -> str:
        if self.annotate is not None:
            note = self.annotate(node)
            if note is None:
                return ""
            return " /* " + str(note).replace("*/", "* /") + " */"
        ty = node._checked_type
        span = node.span
        # NOTE: only spans given a SourceName (by a user or a frontend, as Relay's
        # `Span(SourceName("conv0"), ...)`) are shown; the parser's own spans are not, so
        # printed text round-trips unchanged.
        shown_span = span is not None and type(span.source_name) is SourceName
        if ty is None and not shown_span:
            return ""
        note = " /*"
        if ty is not None:
            note += " ty=" + self._type_text(ty)
        if shown_span:
            note += f" span={span.source_name}:{span.line}:{span.column}"
        return note + " */"

    # -- types and names ---------------------------------------------------------------------------
    def _type_text(self, ty) -> str:
        # Types are values (type variables compare by identity) and a type variable keeps
        # its name for the whole definition, so equal types always print alike.
        text = self.type_text_cache.get(ty)
        if text is None:
            names = self.type_var_names
            for inner in iter_types(ty):
                if type(inner) is TypeVar and inner not in names:
                    names[inner] = self.type_name_table.fresh(inner.name_hint)
            text = self.type_text_cache[ty] = type_to_text(ty, names)
        return text

    def _type_data_text(self, data: TypeData) -> str:
        for type_var in data.type_vars:
            self._bind_type_var(type_var)
        return type_data_to_text(data, self.type_var_names)

    def _bind_type_var(self, type_var) -> str:
        name = self.type_var_names.get(type_var)
        if name is None:
            name = self.type_name_table.fresh(type_var.name_hint)
            self.type_var_names[type_var] = name
        return name

    def _var_decl(self, var) -> None:
        self.fragments.append(self._var_decl_text(var))

    def _var_decl_text(self, var) -> str:
        """``%x`` or ``%x: T`` for a variable at its binding site (allocates its name)."""
        text = "%" + self.var_names.name_of(var, var.name_hint)
        if var.type_annotation is not None:
            text += ": " + self._type_text(var.type_annotation)
        return text

    # -- attributes ----------------------------------------------------------------------------------
    def _attrs_text(self, pairs) -> list:
        return [f"{key}={attr_value_text(value, self._other_attr_text)}" for key, value in pairs]

    def _other_attr_text(self, value) -> str:
        if isinstance(value, E.Expr):
            if is_atomic(value):
                return self._atomic_text(value)
            # NOTE: an expression inside an attribute is not part of the printed DAG; write
            # it as a parenthesised block of its own.
            return "(" + " ".join(pretty_print(value).split("\n")) + ")"
        if isinstance(value, NDArray) or hasattr(value, "__array_interface__"):
            return self.meta.reference(E.Constant(value))
        # NOTE: no text form (dicts, arbitrary objects): written as a string, not lossless.
        return string_text(str(value))

    # -- inline forms of each node kind --------------------------------------------------------------
    def _inline(self, node) -> None:
        handler = _INLINE_HANDLERS.get(type(node))
        if handler is None:
            self.fragments.append(self._atomic_text(node))
        else:
            handler(self, node)

    def _inline_call(self, call) -> None:
        callee = self._ref(call.op)
        pieces = [self._ref(arg) for arg in call.args]
        attrs = call.attrs
        if attrs is not None:
            pairs = list(attrs.non_default_items())
            always = _ALWAYS_PRINTED.get(attrs.type_key)
            if always:
                printed = {name for name, _ in pairs}
                pairs = [(name, value) for name, value in attrs.items()
                         if name in printed or name in always]
            if type(call.op) is not E.Op and len(attrs):
                pairs.insert(0, ("attrs_type_key", attrs.type_key))
            pieces.extend(self._attrs_text(pairs))
        self.fragments.append(callee + "(" + ", ".join(pieces) + ")")

    def _inline_tuple(self, node) -> None:
        fields = [self._ref(field) for field in node.fields]
        if len(fields) == 1:
            self.fragments.append("(" + fields[0] + ",)")
        else:
            self.fragments.append("(" + ", ".join(fields) + ")")

    def _inline_tuple_get_item(self, node) -> None:
        self.fragments.append(f"{self._ref(node.tuple_value)}.{node.index}")

    def _inline_let(self, let) -> None:
        # A let that is not the root of a block: a parenthesised block of its own.
        value_scope = self.layout.scopes_of[let][0]
        self._push("(", _INDENT, _NL, (self._scope, value_scope), _DEDENT, _NL, ")")

    def _inline_if(self, node) -> None:
        then_scope, else_scope = self.layout.scopes_of[node]
        self._push("if (" + self._ref(node.cond) + ") {", _INDENT, _NL,
                   (self._scope, then_scope), _DEDENT, _NL, "} else {", _INDENT, _NL,
                   (self._scope, else_scope), _DEDENT, _NL, "}")

    def _inline_function(self, func) -> None:
        body_scope = self.layout.scopes_of[func][0]
        self._push("fn ", (self._function_header, func), " {", _INDENT, _NL,
                   (self._scope, body_scope), _DEDENT, _NL, "}")

    def _function_header(self, func) -> None:
        """``[A, B](%x: T, %y, attr=value) -> R`` (what follows ``fn `` or ``def @f``)."""
        text = []
        if func.type_params:
            text.append("[" + ", ".join(self._bind_type_var(t) for t in func.type_params) + "]")
        params = [self._var_decl_text(param) for param in func.params]
        if func.attrs is not None:
            params.extend(self._attrs_text(func.attrs.non_default_items()))
        text.append("(" + ", ".join(params) + ")")
        if func.ret_type is not None:
            text.append(" -> " + self._type_text(func.ret_type))
        self.fragments.append("".join(text))

    def _inline_match(self, match) -> None:
        keyword = "match (" if match.complete else "match? ("
        items = [keyword + self._ref(match.data) + ") {"]
        if not match.clauses:
            items.extend([_NL, "}"])
            self._push(*items)
            return
        items.extend([_INDENT, _NL])
        clause_scopes = self.layout.scopes_of[match]
        last = len(match.clauses) - 1
        for position, (clause, scope) in enumerate(zip(match.clauses, clause_scopes)):
            items.extend([(self._pattern, clause.lhs), " => {", _INDENT, _NL,
                          (self._scope, scope), _DEDENT, _NL, "},"])
            if position < last:
                items.append(_NL)
        items.extend([_DEDENT, _NL, "}"])
        self._push(*items)

    def _pattern(self, pattern) -> None:
        kind = type(pattern)
        if kind is E.PatternWildcard:
            self.fragments.append("_")
        elif kind is E.PatternVar:
            self._var_decl(pattern.var)
        elif kind is E.PatternConstructor and not pattern.patterns:
            self.fragments.append(pattern.constructor.name_hint)
        else:
            opener = pattern.constructor.name_hint + "(" if kind is E.PatternConstructor else "("
            items = [opener]
            for position, sub in enumerate(pattern.patterns):
                if position:
                    items.append(", ")
                items.append((self._pattern, sub))
            closer = ",)" if kind is E.PatternTuple and len(pattern.patterns) == 1 else ")"
            items.append(closer)
            self._push(*items)

    def _inline_ref_create(self, node) -> None:
        self.fragments.append("ref(" + self._ref(node.value) + ")")

    def _inline_ref_read(self, node) -> None:
        self.fragments.append("ref_read(" + self._ref(node.ref) + ")")

    def _inline_ref_write(self, node) -> None:
        self.fragments.append(f"ref_write({self._ref(node.ref)}, {self._ref(node.value)})")


# Attribute fields Relay declares without a default, so its printer always writes them
# (`nn.dense(%x, %w, units=None)`), by attrs type.
_ALWAYS_PRINTED = {"relay.attrs.DenseAttrs": ("units",), "relay.attrs.MatmulAttrs": ("units",)}

_INLINE_HANDLERS = {
    E.Call: _Printer._inline_call, E.Tuple: _Printer._inline_tuple,
    E.TupleGetItem: _Printer._inline_tuple_get_item, E.Let: _Printer._inline_let,
    E.If: _Printer._inline_if, E.Function: _Printer._inline_function,
    E.Match: _Printer._inline_match, E.RefCreate: _Printer._inline_ref_create,
    E.RefRead: _Printer._inline_ref_read, E.RefWrite: _Printer._inline_ref_write,
}
