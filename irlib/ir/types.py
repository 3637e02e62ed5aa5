"""Types of the IR.

Tensor, tuple, function, reference and ADT types are shallow *value* objects: ``==`` and
``hash`` compare structure (type variables inside compare by identity). Type variables
(:class:`TypeVar`, :class:`GlobalTypeVar`, :class:`IncompleteType`) have identity equality:
two ``TypeVar("a")`` are different variables. Structural comparison up to renaming of bound
type parameters is :func:`irlib.structural_equal`.

Text spelling (what :func:`str` gives and the parser reads)::

    Tensor[(1, 3), float32]    float32 (a scalar)    (Tensor[(2), int32], bool)
    fn (float32, float32) -> float32                 List[A]          ref(float32)
"""

from __future__ import annotations

import enum
from typing import Optional, Tuple

import numpy as np

from .dims import Dim, normalize_dim
from .span import Span


class TypeKind(enum.IntEnum):
    """What a type variable stands for (Relay's TypeKind)."""

    Type = 0
    ShapeVar = 1
    BaseType = 2
    Constraint = 4
    AdtHandle = 5
    TypeData = 6


class Type:
    """Base class of all types."""

    __slots__ = ()

    def __str__(self) -> str:
        from .type_text import type_to_text
        return type_to_text(self)

    def astext(self) -> str:
        """The type in text-format syntax."""
        return str(self)

    def is_dynamic(self) -> bool:
        """True if the type mentions an ``Any`` dimension (TVM's ``is_dynamic``)."""
        from .type_functor import iter_types
        from .dims import AnyDim
        return any(isinstance(t, TensorType) and any(isinstance(d, AnyDim) for d in t.shape)
                   for t in iter_types(self))


_DTYPE_ALIASES = {"int": "int32", "uint": "uint32", "float": "float32", "double": "float64",
                  "half": "float16", "bool": "bool"}


def normalize_dtype(dtype) -> str:
    """A canonical dtype string (``"float32"``, ``"int64"``, ``"bool"``, ...).

    Args:
        dtype: a string, a numpy dtype, or a numpy scalar type.

    Raises:
        TypeError: if ``dtype`` does not name a dtype irlib knows.
    """
    if isinstance(dtype, str):
        name = _DTYPE_ALIASES.get(dtype, dtype)
        if _is_known_dtype(name):
            return name
        raise TypeError(f"unknown dtype {dtype!r}")
    try:
        name = np.dtype(dtype).name
    except TypeError:
        raise TypeError(f"unknown dtype {dtype!r}") from None
    if not _is_known_dtype(name):
        raise TypeError(f"unknown dtype {dtype!r}")
    return name


#: The narrow float formats of ONNX (numpy arrays of them need the ``ml_dtypes`` package).
_NARROW_FLOATS = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
                  "float8_e8m0fnu", "float4_e2m1fn")


def _is_known_dtype(name: str) -> bool:
    if name in _NARROW_FLOATS:
        return True
    base, _, lanes = name.partition("x")
    if lanes and not lanes.isdigit():
        return False
    if base in ("bool", "bfloat16", "handle", "string"):
        return True
    for prefix in ("uint", "int", "float"):
        if base.startswith(prefix):
            bits = base[len(prefix):]
            return bits.isdigit() and int(bits) in (1, 2, 4, 8, 16, 32, 64)
    return False


class TensorType(Type):
    """A tensor of a given shape and element dtype.

    Args:
        shape: a sequence of dims: ints, :class:`~irlib.ir.dims.DimExpr` size expressions
            or :data:`~irlib.ir.dims.Any`. ``()`` is a scalar.
        dtype: element dtype, default ``"float32"``.
        span: optional source location.
    """

    __slots__ = ("shape", "dtype", "span", "_hash")

    def __init__(self, shape=(), dtype="float32", span: Optional[Span] = None):
        if isinstance(shape, (int, np.integer)):
            shape = (shape,)
        self.shape: Tuple[Dim, ...] = tuple(normalize_dim(d) for d in shape)
        self.dtype: str = normalize_dtype(dtype)
        self.span = span
        self._hash = hash(("TensorType", self.shape, self.dtype))

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def concrete_shape(self) -> Tuple[int, ...]:
        """The shape as ints; raises TypeError if a dim is symbolic or Any."""
        if not all(isinstance(d, int) for d in self.shape):
            raise TypeError(f"shape of {self} is not static")
        return self.shape

    def __eq__(self, other):
        return (isinstance(other, TensorType) and self.dtype == other.dtype
                and self.shape == other.shape)

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"TensorType({list(self.shape)!r}, {self.dtype!r})"


def scalar_type(dtype) -> TensorType:
    """The rank-0 tensor type of ``dtype`` (Relay's ``scalar_type``)."""
    return TensorType((), dtype)


class TupleType(Type):
    """A tuple of types. ``TupleType([])`` is the unit type.

    Args:
        fields: the element types.
        span: the source location, if any.
    """

    __slots__ = ("fields", "span", "_hash")

    def __init__(self, fields=(), span: Optional[Span] = None):
        self.fields = tuple(fields)
        for f in self.fields:
            if not isinstance(f, Type):
                raise TypeError(f"TupleType field must be a Type, got {f!r}")
        self.span = span
        self._hash = hash(("TupleType", self.fields))

    def __len__(self):
        return len(self.fields)

    def __getitem__(self, index):
        return self.fields[index]

    def __eq__(self, other):
        return isinstance(other, TupleType) and self.fields == other.fields

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"TupleType({list(self.fields)!r})"


class TypeVar(Type):
    """A type variable, bound by a function's or type definition's type parameters.

    Identity equality: each ``TypeVar(...)`` call makes a distinct variable.

    Args:
        name_hint: the name used when printing.
        kind: a :class:`TypeKind`, default ``TypeKind.Type``.
        span: the source location, if any.
    """

    __slots__ = ("name_hint", "kind", "span")

    def __init__(self, name_hint: str, kind: TypeKind = TypeKind.Type,
                 span: Optional[Span] = None):
        self.name_hint = name_hint
        self.kind = TypeKind(kind)
        self.span = span

    def __repr__(self):
        return f"TypeVar({self.name_hint!r})"


class GlobalTypeVar(Type):
    """The name of an algebraic data type (``List``, ``Option``) in a module.

    Args:
        name_hint: the type's name.
        kind: default ``TypeKind.AdtHandle``.
        span: the source location, if any.
    """

    __slots__ = ("name_hint", "kind", "span")

    def __init__(self, name_hint: str, kind: TypeKind = TypeKind.AdtHandle,
                 span: Optional[Span] = None):
        self.name_hint = name_hint
        self.kind = TypeKind(kind)
        self.span = span

    def __call__(self, *args) -> "TypeCall":
        """Apply the ADT to type arguments: ``List(a)`` is ``TypeCall(List, [a])`` (as in
        Relay, where ``nat()`` is the type ``nat``)."""
        return TypeCall(self, args)

    def __repr__(self):
        return f"GlobalTypeVar({self.name_hint!r})"


class IncompleteType(Type):
    """A hole to be filled by type inference (``_`` in the text format).

    Args:
        kind: default ``TypeKind.Type``.
        span: the source location, if any.
    """

    __slots__ = ("kind", "span")

    def __init__(self, kind: TypeKind = TypeKind.Type, span: Optional[Span] = None):
        self.kind = TypeKind(kind)
        self.span = span

    def __repr__(self):
        return f"IncompleteType(@{id(self):x})"


class FuncType(Type):
    """The type of a function: ``fn [type_params] (arg_types) -> ret_type``.

    Args:
        arg_types: parameter types.
        ret_type: result type.
        type_params: the :class:`TypeVar` s the type is polymorphic in.
        type_constraints: type relations (kept for API compatibility; normally empty).
        span: the source location, if any.
    """

    __slots__ = ("arg_types", "ret_type", "type_params", "type_constraints", "span", "_hash")

    def __init__(self, arg_types, ret_type, type_params=None, type_constraints=None,
                 span: Optional[Span] = None):
        self.arg_types = tuple(arg_types)
        self.ret_type = ret_type
        self.type_params = tuple(type_params or ())
        self.type_constraints = tuple(type_constraints or ())
        for t in self.arg_types + (ret_type,):
            if not isinstance(t, Type):
                raise TypeError(f"FuncType component must be a Type, got {t!r}")
        self.span = span
        if self.type_params:
            # NOTE: the type parameters are binders, so equality is up to their renaming
            # (Relay's Type.__eq__ is structural equality); the hash must then ignore them.
            self._hash = hash(("FuncType", len(self.arg_types), len(self.type_params)))
        else:
            self._hash = hash(("FuncType", self.arg_types, self.ret_type))

    def __eq__(self, other):
        if not isinstance(other, FuncType) or len(self.type_params) != len(other.type_params):
            return False
        if self is other:
            return True
        if self.type_params and self.type_params != other.type_params:
            if any(a.kind != b.kind for a, b in zip(self.type_params, other.type_params)):
                return False
            from .type_functor import substitute_type
            other = substitute_type(other, dict(zip(other.type_params, self.type_params)))
            if not isinstance(other, FuncType):
                return False
        return self.arg_types == other.arg_types and self.ret_type == other.ret_type

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"FuncType({list(self.arg_types)!r}, {self.ret_type!r})"


class TypeCall(Type):
    """An ADT applied to type arguments: ``List[float32]`` is ``TypeCall(List, [float32])``.

    Args:
        func: the :class:`GlobalTypeVar` of the ADT.
        args: the type arguments.
        span: the source location, if any.
    """

    __slots__ = ("func", "args", "span", "_hash")

    def __init__(self, func, args=(), span: Optional[Span] = None):
        self.func = func
        self.args = tuple(args)
        self.span = span
        self._hash = hash(("TypeCall", id(func), self.args))

    def __eq__(self, other):
        return isinstance(other, TypeCall) and self.func is other.func and self.args == other.args

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"TypeCall({self.func!r}, {list(self.args)!r})"


class RefType(Type):
    """The type of a mutable reference cell holding a ``value``-typed value.

    Args:
        value: the type of the referenced value.
        span: the source location, if any.
    """

    __slots__ = ("value", "span", "_hash")

    def __init__(self, value: Type, span: Optional[Span] = None):
        self.value = value
        self.span = span
        self._hash = hash(("RefType", value))

    def __eq__(self, other):
        return isinstance(other, RefType) and self.value == other.value

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"RefType({self.value!r})"


class TypeData(Type):
    """The definition of an ADT: its header, type parameters and constructors.

    Identity equality (a definition is a declaration, not a value).

    Args:
        header: the :class:`GlobalTypeVar` naming the type.
        type_vars: the type parameters (:class:`TypeVar` s).
        constructors: the :class:`~irlib.ir.adt.Constructor` s, in tag order.
        span: the source location, if any.
    """

    __slots__ = ("header", "type_vars", "constructors", "span")

    def __init__(self, header: GlobalTypeVar, type_vars=(), constructors=(),
                 span: Optional[Span] = None):
        self.header = header
        self.type_vars = tuple(type_vars)
        self.constructors = tuple(constructors)
        self.span = span

    def __repr__(self):
        return f"TypeData({self.header.name_hint!r})"


class TypeRelation(Type):
    """A type constraint ``func(args) -> ...`` (kept for API completeness).

    Args:
        func: the relation's function.
        args: the types it relates.
        num_inputs: how many of ``args`` are inputs (the rest are outputs).
        attrs: the attrs passed to ``func``.
        span: the source location, if any.
    """

    __slots__ = ("func", "args", "num_inputs", "attrs", "span")

    def __init__(self, func, args, num_inputs, attrs=None, span: Optional[Span] = None):
        self.func = func
        self.args = tuple(args)
        self.num_inputs = num_inputs
        self.attrs = attrs
        self.span = span


def unit_type() -> TupleType:
    """The empty tuple type ``()``."""
    return TupleType(())
