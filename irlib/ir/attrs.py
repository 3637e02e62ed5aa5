"""Attributes: immutable keyword data attached to op calls and functions.

:class:`Attrs` is a read-only mapping with attribute access (``call.attrs.strides``), a type key
naming its schema (``"relay.attrs.Conv2DAttrs"``), and the schema's defaults so the printer can
print only non-default fields. Values are normalised on construction: lists become tuples,
numpy scalars become Python scalars, so attrs compare and hash structurally.
"""

from __future__ import annotations

import operator
from typing import Any, Mapping

import numpy as np


def normalize_attr_value(value):
    """Turn an attribute value into an immutable, comparable Python value.

    Lists and tuples (also nested) become tuples, numpy scalars and 0-d arrays become Python
    scalars, numpy arrays become nested tuples; strings, None, bools, ints, floats, dims,
    types and IR nodes pass through.
    """
    if isinstance(value, (list, tuple)):
        return tuple(normalize_attr_value(v) for v in value)
    if isinstance(value, np.ndarray):
        return normalize_attr_value(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    return value


class Attrs(Mapping):
    """An immutable attribute set.

    Args:
        fields: the attribute values by name.
        type_key: the schema name, e.g. ``"relay.attrs.Conv2DAttrs"`` (``"DictAttrs"`` for the
            free-form attributes of a function).
        defaults: the schema's default values; fields equal to their default are not printed.
    """

    __slots__ = ("_fields", "_type_key", "_defaults", "_hash")

    def __init__(self, fields: Mapping[str, Any] | None = None, type_key: str = "DictAttrs",
                 defaults: Mapping[str, Any] | None = None):
        object.__setattr__(self, "_fields",
                           {k: normalize_attr_value(v) for k, v in (fields or {}).items()})
        object.__setattr__(self, "_type_key", type_key)
        object.__setattr__(self, "_defaults", dict(defaults or {}))
        object.__setattr__(self, "_hash", None)

    # -- mapping protocol -------------------------------------------------------------------
    def __getitem__(self, key):
        return self._fields[key]

    def __iter__(self):
        return iter(self._fields)

    def __len__(self):
        return len(self._fields)

    def __getattr__(self, name):
        if name.startswith("__") or name in Attrs.__slots__:
            raise AttributeError(name)
        try:
            return self._fields[name]
        except KeyError:
            raise AttributeError(f"{self._type_key} has no attribute {name!r}; "
                                 f"fields are {sorted(self._fields)}") from None

    def __setattr__(self, name, value):
        raise AttributeError("Attrs are immutable; use attrs.with_changes(...)")

    # -- helpers ------------------------------------------------------------------------------
    @property
    def type_key(self) -> str:
        """The schema name."""
        return self._type_key

    @property
    def defaults(self) -> dict:
        """The schema's default values (a copy)."""
        return dict(self._defaults)

    def keys(self):
        """Names of the fields, in schema order."""
        return self._fields.keys()

    def non_default_items(self):
        """``(name, value)`` for each field that differs from the schema default."""
        for key, value in self._fields.items():
            if key in self._defaults and _same_value(self._defaults[key], value):
                continue
            yield key, value

    def with_changes(self, **changes) -> "Attrs":
        """A copy with some fields replaced."""
        merged = dict(self._fields)
        merged.update(changes)
        return Attrs(merged, self._type_key, self._defaults)

    def get_int(self, name) -> int:
        """Field ``name`` as an int."""
        return operator.index(self._fields[name])

    def __eq__(self, other):
        if not isinstance(other, Attrs):
            return NotImplemented
        return self._type_key == other._type_key and _same_value(self._fields, other._fields)

    def __hash__(self):
        if self._hash is None:
            object.__setattr__(self, "_hash", hash((self._type_key, _hashable(self._fields))))
        return self._hash

    def __reduce__(self):
        return (Attrs, (self._fields, self._type_key, self._defaults))

    def __repr__(self):
        inner = ", ".join(f"{k}={v!r}" for k, v in self._fields.items())
        return f"{self._type_key}({inner})"


def _same_value(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if type(a) is not type(b) and isinstance(a, bool) != isinstance(b, bool):
        return False
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - exotic values compare by identity
        return a is b


def _hashable(value):
    if isinstance(value, dict):
        return tuple((k, _hashable(v)) for k, v in value.items())
    if isinstance(value, tuple):
        return tuple(_hashable(v) for v in value)
    try:
        hash(value)
        return value
    except TypeError:
        return id(value)


def make_attrs(type_key: str = "DictAttrs", **fields) -> Attrs:
    """Convenience constructor: ``make_attrs("relay.attrs.MyAttrs", axis=1)``.

    Args:
        type_key: the attrs' type name (Relay's ``relay.attrs.*`` key).
        fields: the attribute values, by name.
    """
    return Attrs(fields, type_key)
