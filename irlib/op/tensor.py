"""Elementwise ops: unary math, binary broadcasting arithmetic and comparison, ``where``,
``cast`` and the ``*_like`` helpers the gradients use.

Before/after of a typical use in the text format::

    add(%x, %y)            /* Tensor[(2, 3), float32] + Tensor[(3), float32] */
    -> Tensor[(2, 3), float32]

Binary ops broadcast like numpy and require equal dtypes; comparisons return ``bool``.
Gradients of broadcasting ops reduce the adjoint back to each input's shape with
``collapse_sum_like``.
"""

from __future__ import annotations

import inspect

import numpy as np

from ..errors import TypeInferenceError
from ..ir.expr import const
from ..ir.types import TensorType, normalize_dtype
from .registry import OpPattern, make_call, register_op
from .type_relations import (broadcast_bool_rel, broadcast_rel, broadcast_shapes,
                             expect_tensor, identity_rel, named_rel)

__all__ = ["add", "subtract", "multiply", "divide", "equal", "not_equal", "less",
           "less_equal", "greater", "greater_equal", "negative", "exp", "log", "sqrt",
           "where", "cast", "cast_like", "ones_like", "zeros_like"]


def op_builder(name: str, arg_names: tuple, doc: str):
    """A builder function ``name(*arg_names)`` that makes a call of op ``name``.

    Args:
        name: the op name.
        arg_names: the builder's parameter names.
        doc: the builder's docstring.
    """
    signature = inspect.Signature(
        [inspect.Parameter(a, inspect.Parameter.POSITIONAL_OR_KEYWORD) for a in arg_names])

    def builder(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as error:
            raise TypeError(f"{name}(): {error}; its arguments are "
                            f"({', '.join(arg_names)})") from None
        return make_call(name, bound.args)
    builder.__signature__ = signature
    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = doc
    return builder


def scalar_like(value: float, like):
    """A rank-0 constant ``value`` cast to the dtype of expression ``like`` (for gradients)."""
    return cast_like(const(value), like)


def register_unary(name: str, numpy_fn, doc: str):
    """Register an elementwise unary op keeping the input dtype; returns (OpDef, builder).

    Args:
        name: the op name.
        numpy_fn: the numpy reference implementation.
        doc: the builder's docstring.
    """
    op_def = register_op(name, ("data",), type_rel=named_rel(name, identity_rel),
                         pattern=OpPattern.ELEMWISE, description=doc)
    op_def.def_impl(lambda data: (np.asarray(numpy_fn(data)).astype(data.dtype, copy=False),))
    return op_def, op_builder(name, ("data",), f"Elementwise {doc}.")


def register_binary(name: str, numpy_fn, doc: str, relation=broadcast_rel):
    """Register a broadcasting binary op; returns (OpDef, builder).

    Args:
        name: the op name.
        numpy_fn: the numpy reference implementation.
        doc: the builder's docstring.
        relation: the type relation (default: broadcasting, keeping the dtype).
    """
    op_def = register_op(name, ("lhs", "rhs"), type_rel=named_rel(name, relation),
                         pattern=OpPattern.BROADCAST, description=doc)
    if relation is broadcast_bool_rel:
        op_def.def_impl(lambda lhs, rhs: (np.asarray(numpy_fn(lhs, rhs)),))
    else:
        op_def.def_impl(
            lambda lhs, rhs: (np.asarray(numpy_fn(lhs, rhs)).astype(lhs.dtype, copy=False),))
    return op_def, op_builder(name, ("lhs", "rhs"),
                            f"Elementwise ``{doc}`` with numpy broadcasting.")


def _divide_ref(lhs, rhs):
    if np.issubdtype(lhs.dtype, np.integer):
        # NOTE: Relay's integer divide truncates toward zero (C semantics).
        with np.errstate(divide="ignore"):
            return np.trunc(np.true_divide(lhs, rhs)).astype(lhs.dtype)
    return np.true_divide(lhs, rhs)


_ADD, add = register_binary("add", np.add, "lhs + rhs")
_SUBTRACT, subtract = register_binary("subtract", np.subtract, "lhs - rhs")
_MULTIPLY, multiply = register_binary("multiply", np.multiply, "lhs * rhs")
_DIVIDE, divide = register_binary("divide", _divide_ref,
                                  "lhs / rhs (integer division truncates)")
_COMPARISONS = {}
for _name, _fn, _text in [("equal", np.equal, "lhs == rhs"),
                          ("not_equal", np.not_equal, "lhs != rhs"),
                          ("less", np.less, "lhs < rhs"),
                          ("less_equal", np.less_equal, "lhs <= rhs"),
                          ("greater", np.greater, "lhs > rhs"),
                          ("greater_equal", np.greater_equal, "lhs >= rhs")]:
    _COMPARISONS[_name] = register_binary(_name, _fn, _text + " (bool result)",
                                          broadcast_bool_rel)
equal = _COMPARISONS["equal"][1]
not_equal = _COMPARISONS["not_equal"][1]
less = _COMPARISONS["less"][1]
less_equal = _COMPARISONS["less_equal"][1]
greater = _COMPARISONS["greater"][1]
greater_equal = _COMPARISONS["greater_equal"][1]

_NEGATIVE, negative = register_unary("negative", np.negative, "negation ``-data``")
_EXP, exp = register_unary("exp", np.exp, "exponential ``e ** data``")
_LOG, log = register_unary("log", np.log, "natural logarithm")
_SQRT, sqrt = register_unary("sqrt", np.sqrt, "square root")


# -- gradients of the arithmetic ops ---------------------------------------------------------

def collapse_to(grad, like):
    """``collapse_sum_like(grad, like)``: the adjoint of broadcasting ``like``."""
    return make_call("collapse_sum_like", (grad, like))


@_ADD.def_grad
def _add_grad(call, out_grad):
    lhs, rhs = call.args
    return [collapse_to(out_grad, lhs), collapse_to(out_grad, rhs)]


@_SUBTRACT.def_grad
def _subtract_grad(call, out_grad):
    lhs, rhs = call.args
    return [collapse_to(out_grad, lhs), collapse_to(negative(out_grad), rhs)]


@_MULTIPLY.def_grad
def _multiply_grad(call, out_grad):
    lhs, rhs = call.args
    return [collapse_to(multiply(out_grad, rhs), lhs),
            collapse_to(multiply(out_grad, lhs), rhs)]


@_DIVIDE.def_grad
def _divide_grad(call, out_grad):
    lhs, rhs = call.args
    # d(x/y)/dy = -(x/y)/y, reusing the forward result.
    return [collapse_to(divide(out_grad, rhs), lhs),
            collapse_to(negative(divide(multiply(out_grad, call), rhs)), rhs)]


def _zero_grads(call, out_grad):
    return [zeros_like(arg) for arg in call.args]


for _op_def, _ in _COMPARISONS.values():
    _op_def.def_grad(_zero_grads)


@_NEGATIVE.def_grad
def _negative_grad(call, out_grad):
    return [negative(out_grad)]


@_EXP.def_grad
def _exp_grad(call, out_grad):
    return [multiply(out_grad, call)]


@_LOG.def_grad
def _log_grad(call, out_grad):
    return [divide(out_grad, call.args[0])]


@_SQRT.def_grad
def _sqrt_grad(call, out_grad):
    # d sqrt(x) = 0.5 / sqrt(x)
    return [divide(multiply(out_grad, scalar_like(0.5, out_grad)), call)]


# -- where -----------------------------------------------------------------------------------

def _where_rel(arg_types, attrs):
    condition = expect_tensor(arg_types[0], "where: condition")
    x = expect_tensor(arg_types[1], "where: x")
    y = expect_tensor(arg_types[2], "where: y")
    if x.dtype != y.dtype:
        raise TypeInferenceError(f"where: x and y dtypes differ: {x.dtype} vs {y.dtype}")
    shape = broadcast_shapes(broadcast_shapes(condition.shape, x.shape), y.shape)
    return TensorType(shape, x.dtype)


_WHERE = register_op("where", ("condition", "x", "y"), type_rel=_where_rel,
                     pattern=OpPattern.BROADCAST,
                     description="x where condition is true, else y (broadcasting)")


@_WHERE.def_impl
def _where_ref(condition, x, y):
    return (np.where(condition.astype(bool), x, y).astype(x.dtype, copy=False),)


@_WHERE.def_grad
def _where_grad(call, out_grad):
    condition, x, y = call.args
    zeros = zeros_like(out_grad)
    return [zeros_like(condition), collapse_to(where(condition, out_grad, zeros), x),
            collapse_to(where(condition, zeros, out_grad), y)]


def where(condition, x, y):
    """Select elementwise: ``x`` where ``condition`` is nonzero, else ``y``.

    Args:
        condition: a tensor (any dtype; nonzero means true), broadcast with x and y.
        x: values taken where the condition holds.
        y: values taken elsewhere (same dtype as x).

    Returns:
        A Call of ``where``.
    """
    return make_call("where", (condition, x, y))


# -- cast, cast_like, ones_like, zeros_like ----------------------------------------------------

def _cast_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "cast: data")
    try:
        dtype = normalize_dtype(attrs["dtype"])
    except TypeError as error:
        raise TypeInferenceError(f"cast: {error}") from None
    return TensorType(data.shape, dtype)


_CAST = register_op("cast", ("data",), attrs=("relay.attrs.CastAttrs", [("dtype", "")]),
                    type_rel=_cast_rel, pattern=OpPattern.ELEMWISE,
                    description="convert data to another dtype")


@_CAST.def_impl
def _cast_ref(data, dtype):
    return (np.asarray(data).astype(normalize_dtype(dtype)),)


@_CAST.def_grad
def _cast_grad(call, out_grad):
    return [cast_like(out_grad, call.args[0])]


def cast(data, dtype):
    """Convert ``data`` to ``dtype`` (``Expr.astype`` builds this).

    Args:
        data: the input tensor.
        dtype: the target dtype (string or numpy dtype).

    Returns:
        A Call of ``cast``.
    """
    return make_call("cast", (data,), {"dtype": normalize_dtype(dtype)})


def _cast_like_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "cast_like: data")
    like = expect_tensor(arg_types[1], "cast_like: dtype_like")
    return TensorType(data.shape, like.dtype)


_CAST_LIKE = register_op("cast_like", ("data", "dtype_like"), type_rel=_cast_like_rel,
                         pattern=OpPattern.ELEMWISE,
                         description="convert data to the dtype of dtype_like")
_CAST_LIKE.def_impl(lambda data, dtype_like: (np.asarray(data).astype(dtype_like.dtype),))


@_CAST_LIKE.def_grad
def _cast_like_grad(call, out_grad):
    data, like = call.args
    return [cast_like(out_grad, data), zeros_like(like)]


cast_like = op_builder("cast_like", ("data", "dtype_like"),
                     "Convert ``data`` to the dtype of ``dtype_like``.")


def _fill_like(name: str, value: int):
    op_def = register_op(name, ("data",), type_rel=named_rel(name, identity_rel),
                         pattern=OpPattern.ELEMWISE,
                         description=f"a tensor of {value}s shaped like data")
    op_def.def_impl(lambda data: (np.full(np.shape(data), value, dtype=data.dtype),))
    op_def.def_grad(lambda call, out_grad: [zeros_like(call.args[0])])
    return op_builder(name, ("data",), f"A tensor of {value}s with the shape and dtype of "
                                     f"``data``.")


ones_like = _fill_like("ones_like", 1)
zeros_like = _fill_like("zeros_like", 0)
