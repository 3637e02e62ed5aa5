"""Binding size variables to run-time sizes at function entry (Relax's ``match_cast``).

A function whose parameter types carry symbolic dims (``fn (%x: Tensor[(1, n), int32])``)
can only run once every size variable it mentions has a value. Executors get those values
here, from the arguments of each call:

* a size variable that stands alone as a dim of a parameter's type is *bound* to the
  argument's actual size at its first occurrence (parameters left to right, dims left to
  right, tuple fields in order); every later occurrence is *checked* against that value;
* a compound dim (``n + 1``, ``2*n``) is checked once all its variables are bound; one whose
  variables stay unbound is left unchecked (nothing can be deduced from it);
* a static dim is checked too, and so is each tensor's rank;
* a scalar-int parameter named in the function attribute ``"size_params"`` binds the size
  variable *of the same name* to its run-time value (the ``nn`` builder passes
  ``spec.Int()`` arguments such as ``total_seq_len`` this way).

The functions here know nothing about values: callers pass shapes (tuples of ints) and the
integer values of size parameters, so the interpreter, ``to_python`` and the graph executor
share one rule. :func:`substitute_attrs` and :func:`substitute_type` then replace the bound
variables in op attributes and types by ints.

A mismatch raises :class:`~irlib.errors.ArgumentShapeError` naming the function, the
parameter, the dim and both sizes; an attribute or type mentioning a variable that no
argument bound raises :class:`~irlib.errors.UnboundSizeVarError`.
"""

from __future__ import annotations

import operator
from typing import Mapping, Sequence

from irlib.errors import ArgumentShapeError, IRError, UnboundSizeVarError

from .attrs import Attrs
from .dims import AnyDim, DimExpr, format_dim
from .types import TensorType, TupleType

__all__ = ["bind_size_vars", "size_param_names", "size_param_value", "substitute_attrs",
           "substitute_type", "substitute_shape", "has_symbolic_attrs", "is_symbolic_type",
           "symbolic_signature"]

_INT_DTYPES = ("int64", "int32")


# -- which functions need binding ---------------------------------------------------------------

def is_symbolic_type(ty) -> bool:
    """True if ``ty`` (a type, possibly nested in tuples) has a :class:`DimExpr` dim."""
    stack = [ty]
    while stack:
        current = stack.pop()
        if isinstance(current, TensorType):
            if any(isinstance(dim, DimExpr) for dim in current.shape):
                return True
        elif isinstance(current, TupleType):
            stack.extend(current.fields)
    return False


def size_param_names(func) -> tuple:
    """The names in ``func``'s ``"size_params"`` attribute, validated against its params.

    Args:
        func: an :class:`~irlib.ir.expr.Function`.

    Returns:
        A tuple of parameter names (empty when the attribute is absent).

    Raises:
        IRError: if the attribute is not a list/tuple of strings, names a parameter the
            function lacks, or names one whose type is not a scalar int64/int32 tensor.
    """
    attrs = getattr(func, "attrs", None)
    if not attrs or "size_params" not in attrs:
        return ()
    names = attrs["size_params"]
    if isinstance(names, str) or not isinstance(names, (tuple, list)) \
            or not all(isinstance(name, str) for name in names):
        raise IRError(f"function attribute size_params must be a list of parameter names, "
                      f"got {names!r}")
    params = {param.name_hint: param for param in func.params}
    for name in names:
        param = params.get(name)
        if param is None:
            raise IRError(f"size_params names {name!r}, which is not a parameter of the "
                          f"function (its parameters: {sorted(params)})")
        ty = _param_type(param)
        if ty is not None and not (isinstance(ty, TensorType) and ty.shape == ()
                                   and ty.dtype in _INT_DTYPES):
            raise IRError(f"size parameter %{name} must have type Tensor[(), int64] or "
                          f"Tensor[(), int32], not {ty}")
    return tuple(names)


def symbolic_signature(func) -> tuple | None:
    """``(param_types, size_param_names)`` when calling ``func`` must bind sizes, else None.

    A cheap test executors make once per function: None means no parameter type has a
    symbolic dim and there are no size parameters, so no binding is needed.
    """
    names = size_param_names(func)
    types = [_param_type(param) for param in func.params]
    if not names and not any(is_symbolic_type(ty) for ty in types):
        return None
    return types, names


def _param_type(param):
    checked = getattr(param, "_checked_type", None)
    return checked if checked is not None else getattr(param, "type_annotation", None)


def size_param_value(value, name: str = "size parameter") -> int:
    """The Python int held by a size parameter's value (int, numpy scalar or 0-d array).

    Args:
        value: the parameter's run-time value.
        name: what to call the parameter in the error message.

    Raises:
        ArgumentShapeError: if ``value`` is not one integer.
    """
    item = value
    numpy_method = getattr(value, "numpy", None)
    if callable(numpy_method):
        item = numpy_method()
    if getattr(item, "shape", ()) != () and getattr(item, "size", 1) == 1:
        item = item.reshape(())
    if hasattr(item, "item") and getattr(item, "shape", ()) == ():
        item = item.item()
    try:
        return operator.index(item)
    except TypeError:
        raise ArgumentShapeError(f"{name} must be one integer, got {value!r}") from None


# -- binding ----------------------------------------------------------------------------------

def bind_size_vars(param_types: Sequence, arg_shapes: Sequence,
                   size_params: Mapping[str, int] | None = None, *,
                   param_names: Sequence[str] | None = None,
                   function_name: str = "the function",
                   bindings: Mapping[str, int] | None = None) -> dict:
    """Bind the size variables of a function's parameter types to the arguments' sizes.

    Args:
        param_types: one type per parameter (a ``TensorType``, a ``TupleType`` of them, or
            anything else, which is skipped; None for an unannotated parameter).
        arg_shapes: one entry per parameter: the argument's shape (a tuple of ints) for a
            tensor type, a sequence of such entries for a tuple type, or None when unknown
            (then the parameter is skipped).
        size_params: ``{parameter name: run-time int}`` for the parameters the function's
            ``"size_params"`` attribute names; each binds the size variable of that name.
        param_names: the parameters' names (for messages and for ``size_params``);
            ``arg0``, ``arg1``, ... when None.
        function_name: the function's name, for messages.
        bindings: bindings already in force (those of an enclosing function, for a
            closure); they are checked, not rebound, and included in the result.

    Returns:
        A new dict ``{size variable name: int}``: ``bindings`` plus the new ones.

    Raises:
        ArgumentShapeError: an argument's rank, a static dim, a repeated size variable or a
            compound dim disagrees with the sizes seen (the message names the function, the
            parameter, the dim and both sizes), or a size parameter is not one integer.
    """
    if len(arg_shapes) != len(param_types):
        raise ArgumentShapeError(f"{function_name} takes {len(param_types)} argument(s), got "
                                 f"{len(arg_shapes)}")
    names = list(param_names) if param_names is not None \
        else [f"arg{i}" for i in range(len(param_types))]
    result = dict(bindings or {})
    where = {name: "an enclosing function" for name in result}
    size_params = dict(size_params or {})
    compound = []   # (param name, path, dim, actual) checked once everything is bound

    for index, (ty, shape) in enumerate(zip(param_types, arg_shapes)):
        pname = names[index]
        if pname in size_params:
            value = size_param_value(size_params[pname], f"size parameter %{pname} of "
                                                         f"{function_name}")
            if value < 0:
                raise ArgumentShapeError(f"size parameter %{pname} of {function_name} is "
                                         f"{value}; a size cannot be negative")
            _bind(result, where, pname, value, f"size parameter %{pname} of {function_name}",
                  f"size parameter %{pname}")
        stack = [(ty, shape, "")]
        while stack:
            current, actual, path = stack.pop()
            if actual is None:
                continue
            if isinstance(current, TupleType):
                fields = tuple(actual)
                if len(fields) != len(current.fields):
                    raise ArgumentShapeError(
                        f"argument %{pname}{path} of {function_name} expects a "
                        f"{len(current.fields)}-tuple, got {len(fields)} field(s)")
                for i in reversed(range(len(fields))):
                    stack.append((current.fields[i], fields[i], f"{path}.{i}"))
                continue
            if not isinstance(current, TensorType):
                continue
            actual = tuple(actual)
            label = f"%{pname}{path}"
            if len(actual) != len(current.shape):
                raise ArgumentShapeError(
                    f"argument {label} of {function_name} expects {current} (rank "
                    f"{len(current.shape)}), got shape {actual}")
            for axis, (dim, size) in enumerate(zip(current.shape, actual)):
                if isinstance(dim, AnyDim):
                    continue
                if isinstance(dim, DimExpr):
                    var = dim.name
                    if var is not None:
                        _bind(result, where, var, size,
                              f"dim {axis} of argument {label} of {function_name}",
                              f"dim {axis} of {label}")
                    else:
                        compound.append((label, axis, dim, size))
                elif dim != size:
                    raise ArgumentShapeError(
                        f"argument {label} of {function_name} expects {current}: dim {axis} "
                        f"is {dim}, got size {size} (shape {actual})")

    for label, axis, dim, size in compound:
        if not dim.free_vars() <= result.keys():
            continue
        expected = dim.substitute(result)
        if expected != size:
            bound = ", ".join(f"{v}={result[v]}" for v in sorted(dim.free_vars()))
            raise ArgumentShapeError(
                f"argument {label} of {function_name}: dim {axis} is {format_dim(dim)} = "
                f"{expected} (with {bound}), got size {size}")
    return result


def _bind(result, where, var, size, occurrence, source) -> None:
    """Bind ``var`` to ``size`` or check it against its binding (``where`` says by what)."""
    bound = result.get(var)
    if bound is None:
        result[var] = size
        where[var] = source
    elif bound != size:
        raise ArgumentShapeError(
            f"{occurrence} is size variable {var}, bound to {bound} by {where[var]}, but got "
            f"size {size}")


# -- substitution -----------------------------------------------------------------------------

def _has_dimexpr(value) -> bool:
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, DimExpr):
            return True
        if isinstance(current, (tuple, list)):
            stack.extend(current)
        elif isinstance(current, dict):
            stack.extend(current.values())
    return False


def has_symbolic_attrs(attrs) -> bool:
    """True if any value of ``attrs`` (a mapping, nested tuples too) is a DimExpr."""
    if not attrs:
        return False
    return any(_has_dimexpr(value) for value in attrs.values())


def _substitute_value(value, bindings, where):
    if isinstance(value, DimExpr):
        missing = value.free_vars() - bindings.keys()
        if missing:
            raise UnboundSizeVarError(
                f"{where} mentions size variable(s) {', '.join(sorted(missing))} "
                f"({format_dim(value)}), which no argument bound (bound here: "
                f"{_format_bindings(bindings)})")
        return value.substitute(bindings)
    if isinstance(value, (tuple, list)):
        return type(value)(_substitute_value(v, bindings, where) for v in value)
    if isinstance(value, dict):
        return {k: _substitute_value(v, bindings, where) for k, v in value.items()}
    return value


def _format_bindings(bindings) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(bindings.items())) or "none"


def substitute_attrs(attrs, bindings: Mapping[str, int], where: str = "an attribute"):
    """``attrs`` with every DimExpr replaced by its int value under ``bindings``.

    Args:
        attrs: an :class:`~irlib.ir.attrs.Attrs`, a plain mapping, or None.
        bindings: ``{size variable name: int}`` (from :func:`bind_size_vars`).
        where: what the attrs belong to, for messages (e.g. ``"reshape(...) attribute"``).

    Returns:
        The same object when nothing is symbolic; otherwise a new Attrs (same type key and
        defaults) or dict.

    Raises:
        UnboundSizeVarError: a DimExpr mentions a variable not in ``bindings``.
    """
    if not has_symbolic_attrs(attrs):
        return attrs
    changed = {key: _substitute_value(value, bindings, f"{where} {key}")
               for key, value in attrs.items()}
    if isinstance(attrs, Attrs):
        return Attrs(changed, attrs.type_key, attrs.defaults)
    return changed


def substitute_shape(shape: Sequence, bindings: Mapping[str, int], where: str = "a shape"):
    """``shape`` (dims) with bound size variables replaced by ints; raises if one is unbound.

    Args:
        shape: the dims (ints and symbolic dims).
        bindings: size variable name -> int.
        where: what the shape belongs to, for the error message.

    Raises:
        UnboundSizeVarError: a dim mentions a variable not in ``bindings``.
    """
    return tuple(_substitute_value(dim, bindings, where) for dim in shape)


def substitute_type(ty, bindings: Mapping[str, int]):
    """``ty`` with bound size variables replaced in tensor shapes (tuples included).

    Variables not in ``bindings`` stay symbolic; other types are returned unchanged.
    """
    if isinstance(ty, TensorType):
        if not any(isinstance(dim, DimExpr) for dim in ty.shape):
            return ty
        return TensorType(tuple(dim.substitute(bindings) if isinstance(dim, DimExpr) else dim
                                for dim in ty.shape), ty.dtype)
    if isinstance(ty, TupleType):
        return TupleType(tuple(substitute_type(field, bindings) for field in ty.fields))
    return ty

