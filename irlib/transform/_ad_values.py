"""The value representation of higher-order AD (:mod:`irlib.transform.gradient_higher_order`):
a tensor ``v: T`` becomes the pair ``(v, ref(zeros_like(v)))`` of its primal value and its
gradient cell, and tuples, functions, references and ADT arguments are transformed field by
field. These helpers build, read and accumulate into such values (types are shallow, so
walking them field by field is safe).
"""

from __future__ import annotations

from ..errors import IRError
from ..ir import expr as E
from ..ir.types import FuncType, RefType, TensorType, TupleType, TypeCall
from ..op import registry

_UNIT = TupleType(())
_BP_TYPE = RefType(FuncType((), _UNIT))


def _op(name, *args):
    return registry.make_call(name, args)


def ad_type(ty):
    """The type of the transformed value of a value of type ``ty``."""
    if isinstance(ty, TensorType):
        return TupleType((ty, RefType(ty)))
    if isinstance(ty, TupleType):
        return TupleType(tuple(ad_type(f) for f in ty.fields))
    if isinstance(ty, FuncType):
        if ty.type_params:
            raise IRError("gradient (higher_order): polymorphic functions are not supported")
        return FuncType(tuple(ad_type(a) for a in ty.arg_types), ad_type(ty.ret_type))
    if isinstance(ty, RefType):
        return RefType(ad_type(ty.value))
    if isinstance(ty, TypeCall):
        return TypeCall(ty.func, tuple(ad_type(a) for a in ty.args))
    # A type variable stays itself (as in Relay): a polymorphic global is instantiated at
    # the transformed type where it is called.
    return ty


def _is_float(ty) -> bool:
    if isinstance(ty, TensorType):
        return ty.dtype.startswith("float")
    if isinstance(ty, TupleType):
        return any(_is_float(f) for f in ty.fields)
    return False


def _primal(expr, ty):
    """The primal value of a transformed value (tensors and tuples of them)."""
    if isinstance(ty, TensorType):
        return E.TupleGetItem(expr, 0)
    if isinstance(ty, TupleType):
        return E.Tuple(tuple(_primal(E.TupleGetItem(expr, i), f)
                             for i, f in enumerate(ty.fields)))
    raise IRError(f"gradient (higher_order): cannot take the primal value of a {ty}")


def _grad_read(expr, ty):
    if isinstance(ty, TensorType):
        return E.RefRead(E.TupleGetItem(expr, 1))
    return E.Tuple(tuple(_grad_read(E.TupleGetItem(expr, i), f)
                         for i, f in enumerate(ty.fields)))


def _accumulate(expr, ty, grad, out: list):
    """Append bindings that add ``grad`` into the gradient cells of ``expr``."""
    if isinstance(ty, TensorType):
        if not ty.dtype.startswith("float"):
            return
        cell = E.TupleGetItem(expr, 1)
        out.append((E.Var("u"), E.RefWrite(cell, _op("add", E.RefRead(cell), grad))))
        return
    g = E.Var("g")
    out.append((g, grad))
    for i, field in enumerate(ty.fields):
        _accumulate(E.TupleGetItem(expr, i), field, E.TupleGetItem(g, i), out)


def _pair(value_var, ty, out: list):
    """A transformed value for the primal ``value_var`` of type ``ty`` (bindings to out)."""
    if isinstance(ty, TensorType):
        return E.Tuple((value_var, E.RefCreate(_op("zeros_like", value_var))))
    return E.Tuple(tuple(_pair(E.TupleGetItem(value_var, i), f, out)
                         for i, f in enumerate(ty.fields)))
