"""Size variables at run time, for the interpreter and ``to_python``.

The rule itself (bind at function entry, check repeats, substitute) lives in
:mod:`irlib.ir.dim_binding`; this module adapts it to run-time values:

* :class:`FunctionSizes` binds a function's size variables from its argument *values*
  (NDArrays, tuples of them, and the scalars its ``"size_params"`` attribute names);
* :class:`SymbolicCall` runs an op call whose attributes or result type mention size
  variables: the attributes get the bound values, and the result's shape is checked against
  the call's inferred type with the same values.

Functions without symbolic parameter types or size parameters get no :class:`FunctionSizes`
(:func:`function_sizes` returns None), and calls without symbolic attributes or types no
:class:`SymbolicCall`, so static programs pay nothing.
"""

from __future__ import annotations

from irlib.errors import OpImplError
from irlib.ir.dim_binding import (bind_size_vars, has_symbolic_attrs, is_symbolic_type,
                                  substitute_attrs, substitute_type, symbolic_signature)
from irlib.ir.dims import DimExpr
from irlib.ir.types import TensorType, TupleType
from irlib.ndarray import NDArray

__all__ = ["FunctionSizes", "SymbolicCall", "function_sizes", "symbolic_call", "value_shape"]


def value_shape(value, ty):
    """What :func:`~irlib.ir.dim_binding.bind_size_vars` takes for ``value`` of type ``ty``.

    A tensor's shape, a tuple of such entries for a tuple type, None where the value is not
    of the kind the type expects (nothing is bound from it then).
    """
    if isinstance(ty, TupleType):
        if not isinstance(value, tuple):
            return None
        return tuple(value_shape(item, field) for item, field in zip(value, ty.fields)) \
            if len(value) == len(ty.fields) else (None,) * len(value)
    if isinstance(ty, TensorType):
        return tuple(value.shape) if type(value) is NDArray else None
    return None


class FunctionSizes:
    """Binds the size variables of one function when it is entered.

    Args:
        func: the :class:`~irlib.ir.expr.Function` (its parameters' checked types, or their
            annotations, are read).
        name: the function's name for messages (``@main``, ``the function at f.rly:3:5``).
    """

    __slots__ = ("types", "names", "size_params", "name")

    def __init__(self, func, name: str):
        signature = symbolic_signature(func)
        self.types, self.size_params = signature if signature else ([], ())
        self.names = [param.name_hint for param in func.params]
        self.name = name

    def bind(self, args, outer=None) -> dict:
        """``{size variable: int}`` for a call with argument values ``args``.

        Args:
            args: the argument values, one per parameter.
            outer: the bindings of the enclosing function (for a closure), or None.

        Raises:
            ArgumentShapeError: an argument's shape disagrees (see
                :func:`~irlib.ir.dim_binding.bind_size_vars`).
        """
        if len(args) != len(self.types):   # bind_size_vars reports the count mismatch
            return bind_size_vars(self.types, list(args), function_name=self.name)
        shapes = [value_shape(arg, ty) for arg, ty in zip(args, self.types)]
        sizes = {name: args[self.names.index(name)] for name in self.size_params}
        return bind_size_vars(self.types, shapes, sizes, param_names=self.names,
                              function_name=self.name, bindings=outer)


def function_sizes(func, name: str):
    """A :class:`FunctionSizes` for ``func``, or None when calling it binds nothing."""
    if symbolic_signature(func) is None:
        return None
    return FunctionSizes(func, name)


class SymbolicCall:
    """An op call whose attributes or inferred type mention size variables.

    Args:
        call: the :class:`~irlib.ir.expr.Call` of an op (type-checked).
    """

    __slots__ = ("name", "attrs", "result_type", "symbolic_attrs", "_cache")

    #: Distinct size bindings whose substituted attrs/types are kept (then the cache restarts).
    CACHE_SIZE = 64

    def __init__(self, call):
        self.name = call.op.name
        self.attrs = call.attrs
        self.result_type = call._checked_type
        self.symbolic_attrs = has_symbolic_attrs(call.attrs)
        self._cache: dict = {}

    def _prepared(self, sizes) -> tuple:
        """``(attrs, expected type)`` under ``sizes``, computed once per distinct binding.

        NOTE: substituting costs tens of microseconds, more than many small ops; a decode
        loop calls the same op with the same sizes again and again.
        """
        key = tuple(sorted(sizes.items())) if sizes else ()
        prepared = self._cache.get(key)
        if prepared is None:
            attrs = self.attrs
            if self.symbolic_attrs:
                attrs = substitute_attrs(self.attrs, sizes or {}, f"{self.name} attribute")
            prepared = (attrs, substitute_type(self.result_type, sizes or {}))
            if len(self._cache) >= self.CACHE_SIZE:
                self._cache.clear()
            self._cache[key] = prepared
        return prepared

    def attrs_for(self, sizes):
        """The call's attributes with the bound sizes substituted.

        Raises:
            UnboundSizeVarError: an attribute mentions a variable ``sizes`` lacks.
        """
        return self._prepared(sizes)[0]

    def check_result(self, value, sizes) -> None:
        """Check ``value``'s shape(s) against the inferred type under ``sizes``.

        Dims whose variables are not bound are not checked.

        Raises:
            OpImplError: a dim of the result disagrees with the inferred type.
        """
        expected = self._prepared(sizes)[1]
        stack = [(expected, value, "")]
        while stack:
            ty, current, path = stack.pop()
            if isinstance(ty, TupleType) and isinstance(current, tuple):
                stack.extend((field, item, f"{path}.{i}")
                             for i, (field, item) in enumerate(zip(ty.fields, current)))
                continue
            if not isinstance(ty, TensorType) or type(current) is not NDArray:
                continue
            shape = tuple(current.shape)
            ok = len(shape) == len(ty.shape) and all(
                isinstance(dim, DimExpr) or not isinstance(dim, int) or dim == size
                for dim, size in zip(ty.shape, shape))
            if not ok:
                bound = ", ".join(f"{k}={v}" for k, v in sorted((sizes or {}).items()))
                raise OpImplError(f"{self.name}: result{path} has shape {shape}, but its "
                                  f"inferred type is {self.result_type}, i.e. {ty} with "
                                  f"{bound or 'no sizes bound'}", op=self.name)


def symbolic_call(call):
    """A :class:`SymbolicCall` for an op call with symbolic attrs or type, else None."""
    if has_symbolic_attrs(call.attrs) or is_symbolic_type(call._checked_type):
        return SymbolicCall(call)
    return None
