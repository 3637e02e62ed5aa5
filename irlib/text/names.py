"""Unique, lexable names for the text printer.

The printer must write every local variable and type variable under a name the lexer reads
back as one identifier, and two distinct variables must never share a printed name (the
parser would bind them to the same variable). :class:`NameTable` does both:

* :func:`sanitize_var_name` turns a name hint into an identifier: characters other than
  ASCII letters, digits, ``_`` and ``/`` become ``_`` (``.`` included: the lexer would read
  ``%a.b`` as a projection). ``/`` is kept, as Relay does (``%base/x``): the lexer reads it
  as part of an identifier, and the printer never writes an infix ``/``. A name that does not
  start with a letter or ``_`` gets a ``v`` prefix (``""`` -> ``v``, ``1`` -> ``v1``, and
  ``_`` -> ``v_``).
* :meth:`NameTable.name_of` gives each object one name, appending digits on a clash
  (``x``, ``x1``, ``x2``, ... skipping names already taken).
"""

from __future__ import annotations

import re

_NOT_IDENT_CHAR = re.compile(r"[^A-Za-z0-9_]")
_NOT_VAR_CHAR = re.compile(r"[^A-Za-z0-9_/]")

# Words a type variable must not be printed as: in type position these are keywords, the
# tensor type constructor, or (by prefix) read as a dtype by the lexer.
_TYPE_RESERVED = frozenset({"Tensor", "fn", "ref", "let", "def", "if", "else", "type", "match",
                            "extern", "free_var", "ref_read", "ref_write", "True", "False",
                            "None", "meta", "nullptr"})
_DTYPE_PREFIXES = ("int", "uint", "float", "bool")


def sanitize_var_name(hint: str) -> str:
    """A local-variable identifier for ``hint`` (see module docstring)."""
    name = _NOT_VAR_CHAR.sub("_", hint or "")
    # NOTE: a lone "_" is the wildcard token; "%_" is avoided so no lexer has to decide.
    if not name or not (name[0].isalpha() or name[0] == "_") or name == "_":
        name = "v" + name
    return name


def sanitize_type_var_name(hint: str) -> str:
    """A type-variable identifier for ``hint``.

    Like :func:`sanitize_var_name`, but also prefixes ``T`` to names the type grammar would
    read as something else: ``_`` (the incomplete type), keywords, ``Tensor``, and names
    starting with ``int``/``uint``/``float``/``bool`` (read as dtypes).
    """
    name = _NOT_IDENT_CHAR.sub("_", hint or "")
    if (not name or not name[0].isalpha() or name in _TYPE_RESERVED
            or name.startswith(_DTYPE_PREFIXES)):
        name = "T" + name
    return name


class NameTable:
    """Assigns each object a unique printed name.

    Args:
        sanitize: turns a name hint into a valid identifier.
        reserved: names never handed out (e.g. names taken by an outer table).
    """

    __slots__ = ("_sanitize", "_taken", "_names", "_next_suffix")

    def __init__(self, sanitize=sanitize_var_name, reserved=()):
        self._sanitize = sanitize
        self._taken: set = set(reserved)
        self._names: dict = {}
        self._next_suffix: dict = {}

    def __contains__(self, obj) -> bool:
        return obj in self._names

    def get(self, obj):
        """The name already given to ``obj``, or None."""
        return self._names.get(obj)

    def name_of(self, obj, hint: str) -> str:
        """The name of ``obj``, allocating a fresh one from ``hint`` on first use.

        Args:
            obj: the variable (any hashable object; identity is what counts for IR nodes).
            hint: the preferred name.

        Returns:
            The unique printed name (without sigil).
        """
        name = self._names.get(obj)
        if name is None:
            name = self.fresh(hint)
            self._names[obj] = name
        return name

    def fresh(self, hint: str) -> str:
        """A name derived from ``hint`` that no other object has; marks it taken."""
        base = self._sanitize(hint)
        name = base
        if name in self._taken:
            # NOTE: a per-base counter keeps 100,000 variables all called "x" linear.
            suffix = self._next_suffix.get(base, 1)
            while base + str(suffix) in self._taken:
                suffix += 1
            name = base + str(suffix)
            self._next_suffix[base] = suffix + 1
        self._taken.add(name)
        return name
