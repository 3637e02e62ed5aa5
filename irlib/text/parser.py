"""The text-format parser: :func:`parse`, :func:`parse_expr` and :func:`fromtext`.

Reads the Relay text format v0.0.5 as docs/text-format.md describes it, including everything
:func:`irlib.astext` writes::

    >>> mod = irlib.parse('#[version = "0.0.5"]\\n'
    ...                   'def @main(%x: float32) { add(%x, 1f) }')
    >>> expr = irlib.parse_expr("fn (%x: float32) { multiply(%x, 2f) }")

The parser is hand-written recursive descent whose rules are generators driven by an
explicit stack (see the NOTE in :mod:`irlib.text.parser_base`), with precedence climbing for
binary operators. It is split over :mod:`~irlib.text.lexer` (tokens and literals),
:mod:`~irlib.text.parse_types` (types, dims, patterns, attribute values),
:mod:`~irlib.text.parse_exprs` (expressions) and this module (definitions, name tables,
entry points). Every node it builds carries a :class:`~irlib.ir.span.Span`.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager

from ..errors import ParseError
from ..ir import expr as E
from ..ir.module import IRModule
from ..ir.types import GlobalTypeVar, TypeData
from ..ndarray import NDArray
from ..op import registry
from .lexer import SourceText, tokenize
from .meta import CONSTANT_KEY, decode_attrs, load_metadata
from .parse_exprs import ExprRules
from .parse_types import looks_like_dtype

SUPPORTED_VERSION = "0.0.5"

__all__ = ["parse", "parse_expr", "fromtext", "SUPPORTED_VERSION"]


def parse(text: str, source_name: str = "from_string", init_module=None,
          init_meta_table=None) -> IRModule:
    """Parse a module and type-check it.

    Args:
        text: the source, starting with ``#[version = "0.0.5"]``.
        source_name: the name spans and errors show (a file path, say).
        init_module: an :class:`IRModule` whose globals, types and constructors the text may
            use; the result holds its definitions plus the parsed ones.
        init_meta_table: extra metadata (``{"relay.Constant": [arrays], "AttrsKey": [Attrs or
            field dicts]}``), each list appended after the text's own entries of that key.

    Returns:
        The typed module (``irlib.transform.InferType`` has run on it).

    Raises:
        ParseError: on malformed text, unknown or duplicate names, arity mismatches.
        TypeInferenceError: if the text is well-formed but ill-typed.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse expects a str, got {type(text).__name__}")
    with _collector_paused():
        mod = _Parser(text, source_name, init_module, init_meta_table).parse_module()
    from ..transform.infer_type import InferType
    return InferType()(mod)


def fromtext(text: str, source_name: str = "from_string") -> IRModule:
    """``parse(text, source_name)`` (Relay's ``fromtext``)."""
    return parse(text, source_name)


def parse_expr(text: str, source_name: str = "from_string", init_module=None,
               init_meta_table=None):
    """Parse one expression (no type inference; the version header is optional).

    Args:
        text: the source: an optional version header, an expression, an optional
            ``#[metadata]`` section.
        source_name: the name spans and errors show.
        init_module: optional module whose types and constructors the text may use.
        init_meta_table: extra metadata entries, as for :func:`parse`.

    Returns:
        The expression. Globals (``@f``) become GlobalVars by name.

    Raises:
        ParseError: on malformed text or unknown names.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_expr expects a str, got {type(text).__name__}")
    with _collector_paused():
        return _Parser(text, source_name, init_module, init_meta_table).parse_expression()


@contextmanager
def _collector_paused():
    # NOTE: parsing allocates millions of short-lived, acyclic objects (tokens, generators,
    # nodes) for a large text; the cyclic collector's repeated full passes over them cost
    # about 40% of the time and nothing it could free is made here. Refcounting still frees.
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class _Parser(ExprRules):
    """One parse: tokens, name tables and metadata."""

    def __init__(self, text, source_name, init_module, init_meta_table):
        source = SourceText(text, source_name)
        super().__init__(source, tokenize(source))
        self.init_module = init_module
        self.globals: dict = {}          # name -> GlobalVar
        self.global_uses: dict = {}      # name -> first token using it
        self.global_defs: dict = {}      # name -> defining token
        self.types: dict = {}            # name -> GlobalTypeVar
        self.type_uses: dict = {}
        self.type_defs: dict = {}
        self.ctors: dict = {}            # name -> Constructor
        self.ctor_defs: dict = {}
        self.meta_nodes: dict = {}
        self._op_names = None
        self.init_globals: set = set()
        self.init_types: set = set()
        if init_module is not None:
            if not isinstance(init_module, IRModule):
                raise TypeError("init_module must be an IRModule")
            for gvar in init_module.get_global_vars():
                self.globals[gvar.name_hint] = gvar
                self.init_globals.add(gvar.name_hint)
            for header in init_module.get_global_type_vars():
                self.types[header.name_hint] = header
                self.init_types.add(header.name_hint)
                for ctor in init_module[header].constructors:
                    self.ctors[ctor.name_hint] = ctor
        self.meta_constants = self._load_meta(init_meta_table)

    # -- metadata -----------------------------------------------------------------------------
    def _load_meta(self, init_meta_table) -> list:
        constants = []
        self.meta_other: dict = {}       # attrs type key -> entries (JSON objects or Attrs)
        last = self.tokens[-2] if len(self.tokens) > 1 else None
        if last is not None and last.kind == "METADATA":
            try:
                table = load_metadata(last.value)
            except ParseError as error:
                raise self.error_at(last, error.message) from None
            constants.extend(table.get(CONSTANT_KEY, []))
            for key, entries in table.items():
                if key != CONSTANT_KEY:
                    self.meta_other.setdefault(key, []).extend(entries)
        for key, entries in (init_meta_table or {}).items():
            if key != CONSTANT_KEY:
                self.meta_other.setdefault(key, []).extend(entries)
                continue
            for entry in entries:
                if isinstance(entry, E.Constant):
                    entry = entry.data
                constants.append(entry.numpy() if isinstance(entry, NDArray) else entry)
        return constants

    def meta_array(self, token):
        """The array a ``meta[relay.Constant][k]`` token refers to."""
        key, index = token.value
        if key != CONSTANT_KEY:
            raise self.error_at(token, f"meta[{key}][...] is not a constant: only "
                                       f"meta[{CONSTANT_KEY}][k] is an expression (other "
                                       f"metadata may only be a call's last argument, as its "
                                       f"attrs)")
        if index >= len(self.meta_constants):
            raise self.error_at(token, f"meta[{key}][{index}] is out of range: the metadata "
                                       f"has {len(self.meta_constants)} constant(s)")
        return self.meta_constants[index]

    def meta_attrs(self, token):
        """The Attrs a ``meta[AttrsTypeKey][k]`` token (a call's last argument) refers to."""
        key, index = token.value
        if key == CONSTANT_KEY:
            raise self.error_at(token, "a constant cannot be a call's attrs")
        entries = self.meta_other.get(key, [])
        if index >= len(entries):
            raise self.error_at(token, f"meta[{key}][{index}] is out of range: the metadata "
                                       f"has {len(entries)} {key} entr"
                                       f"{'y' if len(entries) == 1 else 'ies'}")
        try:
            return decode_attrs(entries[index], key)
        except ParseError as error:
            raise self.error_at(token, error.message) from None

    def meta_constant(self, token):
        """The Constant node of a metadata reference (one node per index)."""
        array = self.meta_array(token)
        node = self.meta_nodes.get(token.value)
        if node is None:
            node = self.meta_nodes[token.value] = E.Constant(array, span=self.token_span(token))
        return node

    # -- names --------------------------------------------------------------------------------
    def intern_global(self, token):
        """The GlobalVar called ``@name`` (created on first mention: forward references)."""
        name = token.value
        gvar = self.globals.get(name)
        if gvar is None:
            gvar = self.globals[name] = E.GlobalVar(name, span=self.token_span(token))
        self.global_uses.setdefault(name, token)
        return gvar

    def intern_type(self, token):
        """The GlobalTypeVar of ADT ``name`` (created on first mention)."""
        name = token.value
        header = self.types.get(name)
        if header is None:
            header = self.types[name] = GlobalTypeVar(name, span=self.token_span(token))
        self.type_uses.setdefault(name, token)
        return header

    def lookup_ctor(self, name: str):
        """The constructor called ``name``, or None."""
        return self.ctors.get(name)

    def ctor_names(self) -> list:
        """Every constructor name in scope."""
        return list(self.ctors)

    @staticmethod
    def op_exists(name: str) -> bool:
        """Whether an operator called ``name`` is registered."""
        return registry.is_registered(name)

    @staticmethod
    def op_def(name: str):
        """The registry entry of op ``name``."""
        return registry.get_def(name)

    def op_names(self) -> list:
        """Every registered op name (for suggestions)."""
        if self._op_names is None:
            self._op_names = registry.list_ops()
        return self._op_names

    # -- entry points -------------------------------------------------------------------------
    def parse_expression(self):
        """``version? expr metadata? EOF``."""
        self.accept("VERSION")
        expr = self.run(self.p_expr())
        self.accept("METADATA")
        token = self.peek()
        if token.kind != "EOF":
            raise self.error_at(token, f"expected the end of the expression but found "
                                       f"{token.describe()}")
        self._check_types_defined()
        return expr

    def parse_module(self) -> IRModule:
        """``version defn* metadata? EOF``; the module (not yet type-checked)."""
        first = self.peek()
        if first.kind != "VERSION":
            raise self.error_at(first, 'expected the version header #[version = "0.0.5"] '
                                       f"but found {first.describe()}")
        if first.value != SUPPORTED_VERSION:
            raise self.error_at(first, f"unsupported text format version {first.value!r}; "
                                       f"irlib reads version {SUPPORTED_VERSION}")
        self.advance()
        type_defs, functions = [], []
        while True:
            token = self.peek()
            if token.kind == "def":
                functions.append(self._definition())
            elif token.kind == "type":
                type_defs.append(self._type_definition())
            elif token.kind == "extern":
                self.advance()
                self.expect("type", "'type' after 'extern'")
                type_defs.append(self._type_definition(extern=True))
            elif token.kind in ("METADATA", "EOF"):
                break
            else:
                raise self.error_at(token, "expected a definition ('def', 'type' or 'extern "
                                           f"type') but found {token.describe()}")
        self.accept("METADATA")
        self._check_globals_defined()
        self._check_types_defined()
        mod = self.init_module.copy() if self.init_module is not None else IRModule()
        for data in type_defs:
            mod[data.header] = data
        for gvar, func in functions:
            mod[gvar] = func
        return mod

    # -- definitions --------------------------------------------------------------------------
    def _definition(self):
        start = self.advance()
        name_token = self.expect("GLOBAL", "a global name (@name) after 'def'")
        name = name_token.value
        self._check_new(name_token, "@" + name, self.global_defs, name in self.init_globals)
        self.global_defs[name] = name_token
        gvar = self.intern_global(name_token)
        self.free_vars = {}
        func = self.run(self.p_function(start))
        return gvar, func

    def _type_definition(self, extern: bool = False) -> TypeData:
        start = self.advance() if not extern else self.prev
        name_token = self.expect("IDENT", "a type name")
        name = name_token.value
        if looks_like_dtype(name) or name == "Tensor":
            raise self.error_at(name_token, f"type name {name!r} would be read as a dtype; "
                                            f"choose another name")
        self._check_new(name_token, "type " + name, self.type_defs, name in self.init_types)
        self.type_defs[name] = name_token
        header = self.intern_type(name_token)
        type_params = []
        if self.peek().kind == "[":
            type_params = self.p_type_params()
        ctors = []
        if not extern and self.accept("{"):
            while not self.accept("}"):
                ctor_token = self.expect("IDENT", "a constructor name")
                self._check_new(ctor_token, "constructor " + ctor_token.value, self.ctor_defs,
                                ctor_token.value in self.ctors)
                self.ctor_defs[ctor_token.value] = ctor_token
                inputs = []
                if self.accept("("):
                    while True:
                        inputs.append(self.run(self.p_type()))
                        if not self.accept(","):
                            break
                    self.expect(")", "',' or ')'")
                ctor = E.Constructor(ctor_token.value, inputs, header,
                                     span=self.span_from(ctor_token))
                self.ctors[ctor.name_hint] = ctor
                ctors.append(ctor)
                if not self.accept(","):
                    self.expect("}", "',' or '}'")
                    break
        if type_params:
            self.type_scopes.pop()
        return TypeData(header, type_params, ctors, span=self.span_from(start))

    def _check_new(self, token, what: str, defined: dict, in_init_module: bool) -> None:
        first = defined.get(token.value)
        if first is not None:
            raise self.error_at(token, f"duplicate definition of {what} (first defined at "
                                       f"{self.token_span(first)})")
        if in_init_module:
            raise self.error_at(token, f"{what} is already defined in the initial module")

    def _check_globals_defined(self) -> None:
        for name, token in self.global_uses.items():
            if name in self.global_defs or name in self.init_globals:
                continue
            known = list(self.global_defs) + list(self.init_globals)
            raise self.error_at(token, f"unknown global @{name}" +
                                self.suggest(name, known, "@"))

    def _check_types_defined(self) -> None:
        for name, token in self.type_uses.items():
            if name in self.type_defs or name in self.init_types:
                continue
            raise self.error_at(token, f"unknown type {name}" +
                                self.suggest(name, list(self.type_defs)))
