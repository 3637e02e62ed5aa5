"""``detach_params``: take the weights a frontend left on its functions out of the module.

The frontends' keep-params convention (the ``nn`` builder's export, ``from_onnx(...,
keep_params_in_input=True)``, the torch importer's ``keep_params_as_input=True``): a global
function ``f`` of the module whose weights are kept as inputs

* takes its real inputs first and then one parameter per weight;
* carries the function attribute ``"num_input"``: the number ``k`` of real inputs (optional:
  without it the weights are the last ``len(params)`` parameters);
* carries the function attribute ``"params"``: the weight values (:class:`irlib.ndarray.NDArray`
  s), in the order of the trailing parameters ``f.params[k:]``.

:func:`detach_params` checks that the attribute fits the function, drops it (``num_input``
stays: it still says where the weights start) and returns the values by function name, so
the caller runs ``f(*inputs, *params_dict["f"])`` or binds them
(``create_executor(..., params=...)``, ``interp.build(..., params=...)``).

Store the values as ``NDArray`` s: a function's attributes turn a numpy array into nested
tuples of Python numbers (see :func:`irlib.ir.attrs.normalize_attr_value`). Such tuples are
still accepted here and rebuilt as arrays of the parameter's dtype, but they cost memory.
"""

from __future__ import annotations

import operator

import numpy as np

from ..errors import IRError
from ..ir import expr as E
from ..ir.attrs import Attrs
from ..ir.dims import AnyDim, DimExpr, format_dim
from ..ir.module import IRModule
from ..ir.types import IncompleteType, TensorType
from ..ndarray import NDArray

__all__ = ["detach_params", "ParamsAttrError"]


class ParamsAttrError(IRError, ValueError):
    """A function's ``params`` attribute does not fit the function (or the input is not an
    ``IRModule``): too many or too few values for its trailing parameters, a ``num_input``
    that is not a count of its leading parameters, or a value whose shape or dtype differs
    from its parameter's type. The message names the function and the parameter."""


def detach_params(mod):
    """Detach the ``params`` attribute of the module's functions (``relax.frontend.detach_params``).

    Every global function of ``mod`` whose ``"params"`` attribute holds the weight values
    becomes the same function without that attribute (its ``num_input`` attribute, its
    parameters and its body are kept, so the weights stay trailing parameters); the values
    come back in a dict keyed by the function's name. Functions without the attribute are
    kept as they are and have no entry. ``mod`` itself is not changed: the result is a new
    module (the unchanged functions, type definitions and module attributes are shared).

    The convention every producer follows (see the module docstring and docs/frontend.md): a
    function with ``"num_input": k`` takes its ``k`` real inputs first and then one parameter
    per weight; ``"params"`` lists the weights in the order of those trailing parameters.

    Args:
        mod: the :class:`~irlib.ir.module.IRModule` whose functions carry ``params``.

    Returns:
        ``(detached_mod, params_dict)``: the module without the attributes, and
        ``{function name: [NDArray, ...]}`` in parameter order (the ``NDArray`` objects the
        attribute held; values stored as nested tuples are rebuilt in the parameter's dtype).

    Raises:
        ParamsAttrError: ``mod`` is not an ``IRModule``; ``params`` is not a list, or its
            length does not match the trailing parameters (``len(f.params) - num_input``);
            ``num_input`` is not an int between 0 and the number of parameters; a value is
            not an array, or its dtype or shape differs from its parameter's annotated
            ``TensorType`` (symbolic dims match any size, the same size variable the same
            size across the function's weights).
    """
    if not isinstance(mod, IRModule):
        raise ParamsAttrError(f"detach_params expects an IRModule, got {type(mod).__name__}")
    detached = mod.copy()
    params_dict = {}
    for gvar, func in list(mod.functions.items()):
        if func.attrs is None or "params" not in func.attrs:
            continue
        name = gvar.name_hint
        params_dict[name] = _weights_of(name, func)
        fields = {key: value for key, value in func.attrs.items() if key != "params"}
        new = func.replace(attrs=Attrs(fields, func.attrs.type_key) if fields else None)
        if new is not func and func._checked_type is not None:
            new.with_type(func._checked_type)  # the attribute does not change the type
        detached.update_func(gvar, new)
    return detached, params_dict


def _weights_of(name: str, func) -> list:
    """The checked weight values of ``func`` (global ``@name``), as NDArrays."""
    values = func.attrs["params"]
    if not isinstance(values, (tuple, list)):
        raise ParamsAttrError(f"@{name}: the 'params' attribute must be a list of arrays, "
                              f"got {type(values).__name__}")
    num_params = len(func.params)
    num_input = func.attrs.get("num_input")
    if num_input is None:
        if len(values) > num_params:
            raise ParamsAttrError(
                f"@{name}: the 'params' attribute holds {len(values)} values but the function "
                f"has only {num_params} parameters")
        num_input = num_params - len(values)
    else:
        try:
            if isinstance(num_input, bool):
                raise TypeError
            num_input = operator.index(num_input)
        except TypeError:
            raise ParamsAttrError(f"@{name}: 'num_input' must be an int, got "
                                  f"{num_input!r}") from None
        if not 0 <= num_input <= num_params:
            raise ParamsAttrError(f"@{name}: 'num_input' is {num_input}, but the function "
                                  f"has {num_params} parameters")
        trailing = func.params[num_input:]
        if len(trailing) != len(values):
            if len(trailing) > len(values):
                what = (f"parameter %{trailing[len(values)].name_hint} has no value")
            else:
                what = f"value {len(trailing)} has no parameter"
            raise ParamsAttrError(
                f"@{name}: the 'params' attribute holds {len(values)} values but the function "
                f"has {len(trailing)} trailing parameters after its {num_input} inputs "
                f"({num_params} parameters in all): {what}")
    params = func.params[num_input:]
    wheres = [f"@{name}, parameter %{param.name_hint} (weight {index})"
              for index, param in enumerate(params)]
    arrays = [_as_ndarray(value, param.type_annotation, where)
              for param, value, where in zip(params, values, wheres)]
    sizes: dict = {}   # size variable -> the size the first weight naming it gives
    for bind_pass in (True, False):
        for param, array, where in zip(params, arrays, wheres):
            _check_shape(array, param.type_annotation, where, sizes, bind_pass)
    return arrays


def _as_ndarray(value, annotation, where: str) -> NDArray:
    """``value`` as an NDArray; its dtype must be the parameter's (nested tuples, what Attrs
    make of a numpy array, are rebuilt in that dtype)."""
    dtype = annotation.dtype if isinstance(annotation, TensorType) else None
    if annotation is not None and not isinstance(annotation, (TensorType, IncompleteType)):
        raise ParamsAttrError(f"{where}: a weight must be a tensor parameter, but the "
                              f"parameter's type is {annotation}")
    if isinstance(value, E.Constant):
        value = value.data
    if isinstance(value, NDArray):
        array = value
    elif isinstance(value, (tuple, list, int, float, bool)):
        # a numpy array that the function's Attrs turned into nested tuples
        if dtype is None:
            raise ParamsAttrError(f"{where}: the value is a nested list of numbers and the "
                                  f"parameter has no annotated dtype; store an NDArray")
        try:
            array = NDArray(np.asarray(value, dtype=np.dtype(dtype)))
        except (TypeError, ValueError) as error:
            raise ParamsAttrError(f"{where}: the value is not an array of {dtype}: "
                                  f"{error}") from None
        return array
    elif isinstance(value, np.ndarray) or hasattr(value, "__array__"):
        array = NDArray(np.asarray(value))
    else:
        raise ParamsAttrError(f"{where}: the value is a {type(value).__name__}, not an array")
    if dtype is not None and array.dtype != dtype:
        raise ParamsAttrError(f"{where}: the value has dtype {array.dtype}, the parameter "
                              f"{dtype}")
    return array


def _check_shape(array: NDArray, annotation, where: str, sizes: dict, bind_pass: bool) -> None:
    """Check ``array``'s shape against the parameter type.

    Run twice over a function's weights: with ``bind_pass`` the plain size variables get the
    sizes of the first weight that names them (``sizes``) and later uses must agree; then
    the static dims and the size expressions (once their variables are known) are compared.
    """
    if not isinstance(annotation, TensorType):
        return
    shape = tuple(array.shape)
    expected = "(" + ", ".join(format_dim(d) for d in annotation.shape) + ")"
    if len(shape) != len(annotation.shape):
        raise ParamsAttrError(f"{where}: the value has shape {shape}, the parameter "
                              f"{expected}")
    for axis, (dim, size) in enumerate(zip(annotation.shape, shape)):
        if isinstance(dim, AnyDim):
            continue
        if bind_pass:
            if isinstance(dim, DimExpr) and dim.name is not None:
                known = sizes.setdefault(dim.name, size)
                if known != size:
                    raise ParamsAttrError(
                        f"{where}: the value has shape {shape}, the parameter {expected} "
                        f"(axis {axis}: {size}, but an earlier weight gives "
                        f"{dim.name} = {known})")
            continue
        if isinstance(dim, DimExpr):
            if not dim.free_vars() <= set(sizes):
                continue  # an expression in sizes that no weight fixes: any size fits
            dim = dim.substitute(sizes)
            if not isinstance(dim, int):
                continue
        if dim != size:
            raise ParamsAttrError(f"{where}: the value has shape {shape}, the parameter "
                                  f"{expected} (axis {axis}: {size} vs {format_dim(dim)})")
