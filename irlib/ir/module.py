"""IRModule: the unit of compilation — global functions and algebraic data type definitions.

A module maps :class:`~irlib.ir.expr.GlobalVar` s to :class:`~irlib.ir.expr.Function` s and
:class:`~irlib.ir.types.GlobalTypeVar` s to :class:`~irlib.ir.types.TypeData`. Names are
interned: ``mod.get_global_var("main")`` always returns the same GlobalVar, and assigning
``mod["f"] = fn`` reuses the existing GlobalVar named ``f``.

The module itself is mutable (like ``tvm.IRModule``), but passes never mutate the module they
are given: they return a new one.
"""

from __future__ import annotations

from typing import Iterator

from ..errors import UnknownNameError
from . import hooks
from .expr import Constructor, Expr, Function, GlobalVar
from .functor import free_vars
from .types import GlobalTypeVar, TypeData


class IRModule:
    """Global functions and type definitions.

    Args:
        functions: a dict from GlobalVar (or name) to Function.
        type_definitions: a dict from GlobalTypeVar (or name) to TypeData.
        attrs: module attributes (a dict).
    """

    def __init__(self, functions=None, type_definitions=None, attrs=None):
        self._functions: dict = {}
        self._global_vars: dict = {}
        self._types: dict = {}
        self._type_vars: dict = {}
        self._constructors: dict = {}
        self.attrs: dict = dict(attrs or {})
        self.imported_paths: set = set()
        for key, data in (type_definitions or {}).items():
            self._add_type(key, data)
        for key, func in (functions or {}).items():
            self._add_function(key, func)

    # -- construction ---------------------------------------------------------------------
    @staticmethod
    def from_expr(expr, functions=None, type_defs=None) -> "IRModule":
        """A module whose ``main`` is ``expr`` (wrapped in a function of its free vars if
        it is not a function already).

        Args:
            expr: the expression.
            functions: extra global functions (dict GlobalVar/name -> Function).
            type_defs: extra type definitions (dict GlobalTypeVar/name -> TypeData).
        """
        if not isinstance(expr, Expr):
            raise TypeError(f"IRModule.from_expr expects an Expr, got {type(expr).__name__}")
        mod = IRModule(functions, type_defs)
        if not isinstance(expr, Function):
            expr = Function(tuple(free_vars(expr)), expr)
        mod["main"] = expr
        return mod

    def _add_function(self, key, func):
        if not isinstance(func, Function):
            if isinstance(func, Expr):
                func = Function((), func) if not free_vars(func) else \
                    Function(tuple(free_vars(func)), func)
            else:
                raise TypeError(f"a module function must be a Function, got {type(func).__name__}")
        gvar = self._global_var_for(key)
        self._functions[gvar] = func
        return gvar

    def _global_var_for(self, key) -> GlobalVar:
        if isinstance(key, GlobalVar):
            existing = self._global_vars.get(key.name_hint)
            if existing is not None and existing is not key:
                # NOTE: a second GlobalVar object with a taken name replaces the old binding,
                # as in Relay's IRModule::Add with update=True.
                self._functions.pop(existing, None)
            self._global_vars[key.name_hint] = key
            return key
        if isinstance(key, str):
            gvar = self._global_vars.get(key)
            if gvar is None:
                gvar = GlobalVar(key)
                self._global_vars[key] = gvar
            return gvar
        raise TypeError(f"module key must be a GlobalVar or a str, got {type(key).__name__}")

    def _add_type(self, key, data):
        if not isinstance(data, TypeData):
            raise TypeError(f"a type definition must be a TypeData, got {type(data).__name__}")
        if isinstance(key, str):
            key = data.header if data.header.name_hint == key else GlobalTypeVar(key)
        if not isinstance(key, GlobalTypeVar):
            raise TypeError(f"type key must be a GlobalTypeVar or a str, got {key!r}")
        old = self._type_vars.get(key.name_hint)
        if old is not None and old in self._types:
            for ctor in self._types[old].constructors:
                self._constructors.pop(ctor.tag, None)
        self._type_vars[key.name_hint] = key
        self._types[key] = data
        for ctor in data.constructors:
            self._constructors[ctor.tag] = ctor

    # -- mapping protocol ----------------------------------------------------------------------
    def __getitem__(self, key):
        if isinstance(key, GlobalTypeVar):
            if key not in self._types:
                raise UnknownNameError(f"module has no type definition {key.name_hint!r}")
            return self._types[key]
        if isinstance(key, str):
            gvar = self._global_vars.get(key)
            if gvar is None or gvar not in self._functions:
                if key in self._type_vars:
                    return self._types[self._type_vars[key]]
                raise UnknownNameError(self._missing_message(key))
            return self._functions[gvar]
        if isinstance(key, GlobalVar):
            func = self._functions.get(key)
            if func is None:
                raise UnknownNameError(self._missing_message(key.name_hint))
            return func
        raise TypeError(f"module key must be a GlobalVar, GlobalTypeVar or str, got {key!r}")

    def __setitem__(self, key, value):
        if isinstance(value, TypeData) or isinstance(key, GlobalTypeVar):
            self._add_type(key, value)
        else:
            self._add_function(key, value)

    def __contains__(self, key) -> bool:
        if isinstance(key, str):
            gvar = self._global_vars.get(key)
            return (gvar is not None and gvar in self._functions) or key in self._type_vars
        if isinstance(key, GlobalVar):
            return key in self._functions
        if isinstance(key, GlobalTypeVar):
            return key in self._types
        return False

    def __iter__(self) -> Iterator[GlobalVar]:
        """The global variables, sorted by name."""
        return iter(self.get_global_vars())

    def __len__(self) -> int:
        return len(self._functions)

    def items(self):
        """``(GlobalVar, Function)`` pairs, sorted by name."""
        return [(g, self._functions[g]) for g in self.get_global_vars()]

    def _missing_message(self, name: str) -> str:
        known = ", ".join(sorted(g.name_hint for g in self._functions)) or "none"
        return f"cannot find global function {name!r} in the module (globals: {known})"

    # -- queries ---------------------------------------------------------------------------------
    @property
    def functions(self) -> dict:
        """A copy of the GlobalVar -> Function map (``items()`` etc. give lists, as TVM's
        ``Map`` does, so ``mod.functions.items()[0]`` works)."""
        return _ListViewDict(self._functions)

    @property
    def type_definitions(self) -> dict:
        """A copy of the GlobalTypeVar -> TypeData map (``items()`` gives a list)."""
        return _ListViewDict(self._types)

    def get_global_var(self, name: str) -> GlobalVar:
        """The GlobalVar called ``name``.

        Raises:
            UnknownNameError: if there is none.
        """
        gvar = self._global_vars.get(name)
        if gvar is None or gvar not in self._functions:
            raise UnknownNameError(self._missing_message(name))
        return gvar

    def get_global_vars(self) -> list:
        """All function names as GlobalVars, sorted by name."""
        return sorted(self._functions, key=lambda g: g.name_hint)

    def get_global_type_var(self, name: str) -> GlobalTypeVar:
        """The GlobalTypeVar of the ADT called ``name``.

        Raises:
            UnknownNameError: if there is none.
        """
        gtv = self._type_vars.get(name)
        if gtv is None:
            known = ", ".join(sorted(self._type_vars)) or "none"
            raise UnknownNameError(f"cannot find type {name!r} in the module (types: {known})")
        return gtv

    def get_global_type_vars(self) -> list:
        """All ADT names as GlobalTypeVars, sorted by name."""
        return sorted(self._types, key=lambda g: g.name_hint)

    def get_constructor(self, tag: int) -> Constructor:
        """The constructor with the given tag.

        Raises:
            UnknownNameError: if no constructor of this module has that tag.
        """
        ctor = self._constructors.get(tag)
        if ctor is None:
            raise UnknownNameError(f"no constructor with tag {tag} in the module")
        return ctor

    def get_type(self, name: str) -> tuple:
        """``(GlobalTypeVar, ctor0, ctor1, ...)`` of the ADT called ``name``."""
        gtv = self.get_global_type_var(name)
        return (gtv,) + tuple(self._types[gtv].constructors)

    def lookup_constructor(self, name: str) -> Constructor:
        """The constructor called ``name`` (searching every type definition).

        Raises:
            UnknownNameError: if no type defines it.
        """
        for data in self._types.values():
            for ctor in data.constructors:
                if ctor.name_hint == name:
                    return ctor
        raise UnknownNameError(f"no constructor named {name!r} in the module")

    # -- updates ---------------------------------------------------------------------------------
    def update(self, other: "IRModule") -> None:
        """Add every function and type definition of ``other`` (replacing same names)."""
        for gtv, data in other._types.items():
            self._add_type(gtv, data)
        for gvar, func in other._functions.items():
            self._add_function(gvar, func)
        self.imported_paths |= other.imported_paths

    def update_func(self, var: GlobalVar, func: Function) -> None:
        """Replace (or add) the function bound to ``var``.

        Args:
            var: the global variable.
            func: the function it names from now on.
        """
        self._add_function(var, func)

    def add(self, var, func, update: bool = True) -> GlobalVar:
        """Add ``func`` under ``var`` (a GlobalVar or name); returns the GlobalVar.

        Raises:
            ValueError: if ``update`` is False and the name is already defined.
        """
        name = var.name_hint if isinstance(var, GlobalVar) else var
        if not update and name in self:
            raise ValueError(f"global {name!r} is already defined in the module")
        return self._add_function(var, func)

    def remove(self, var) -> None:
        """Remove the function bound to ``var`` (a GlobalVar or name)."""
        gvar = self.get_global_var(var) if isinstance(var, str) else var
        if gvar not in self._functions:
            raise UnknownNameError(self._missing_message(gvar.name_hint))
        del self._functions[gvar]
        del self._global_vars[gvar.name_hint]

    def copy(self) -> "IRModule":
        """A shallow copy (same function and type objects, new tables)."""
        new = IRModule(attrs=self.attrs)
        new._functions = dict(self._functions)
        new._global_vars = dict(self._global_vars)
        new._types = dict(self._types)
        new._type_vars = dict(self._type_vars)
        new._constructors = dict(self._constructors)
        new.imported_paths = set(self.imported_paths)
        return new

    shallow_copy = copy

    def with_attr(self, key: str, value) -> "IRModule":
        """A copy with module attribute ``key`` set.

        Args:
            key: the attribute name.
            value: its value.
        """
        new = self.copy()
        new.attrs[key] = value
        return new

    def get_attr(self, key: str, default=None):
        """Module attribute ``key``, or ``default``."""
        return self.attrs.get(key, default)

    # -- std library ---------------------------------------------------------------------------
    def import_from_std(self, name: str) -> None:
        """Load the std file ``name`` (``"prelude.rly"``, ``"nat.rly"``, ``"gradient.rly"``,
        ``"core.rly"``) into this module, in place.

        The file is parsed with this module as the initial module (its globals, types and
        constructors are visible), merged in, and the whole module is type-checked.
        Importing the same name again does nothing. The work is done by
        :func:`irlib.prelude.import_std` (the IR does not import the parser; the Prelude
        installs itself as the ``"import_std"`` hook of :mod:`irlib.ir.hooks`).

        Raises:
            UnknownNameError: if there is no such std file.
        """
        hooks.call("import_std", self, name)   # installed by irlib.prelude (the layer rule)

    # -- text ----------------------------------------------------------------------------------
    def astext(self, show_meta_data: bool = True, annotate=None) -> str:
        """The module in the text format, with the version header.

        Arguments (``show_meta_data``, ``annotate``) as for an expression: see
        :func:`irlib.text.printer.astext`.
        """
        return hooks.call("astext", self, show_meta_data=show_meta_data, annotate=annotate)

    def __str__(self) -> str:
        return hooks.call("pretty_print", self)

    def show(self, params=None, name: str = "main"):
        """The dataflow graph of function ``name`` (a ``GraphView``: SVG in a notebook, text
        listing elsewhere); ``params`` names the weights drawn folded (irlib.visualize)."""
        from ..visualize import show
        return show(self, params, name)

    def __repr__(self) -> str:
        names = ", ".join(g.name_hint for g in self.get_global_vars())
        return f"IRModule([{names}])"


class _ListViewDict(dict):
    """A dict whose ``keys``/``values``/``items`` are lists (indexable, like TVM's Map)."""

    def keys(self):
        return list(super().keys())

    def values(self):
        return list(super().values())

    def items(self):
        return list(super().items())

