"""More elementwise ops: rounding, trigonometry, activations, predicates, ``clip``, and
the remaining binary arithmetic, logical and bitwise ops.

Before/after in the text format::

    tanh(%x)                 /* Tensor[(2, 3), float32] */  -> Tensor[(2, 3), float32]
    isnan(%x)                                               -> Tensor[(2, 3), bool]
    maximum(%x, %y)          /* (2, 3) and (3) */           -> Tensor[(2, 3), float32]

Gradients follow Relay's: piecewise-constant ops (rounding, sign, predicates, integer
division, logical and bitwise ops) have zero adjoints.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir.types import TensorType
from .registry import OpPattern, make_call, register_op
from .tensor import (add, collapse_to, divide, exp, greater, greater_equal, less, less_equal,
                     log, multiply, negative, op_builder, register_binary, register_unary,
                     scalar_like, sqrt, subtract, where, zeros_like)
from .type_relations import expect_tensor, named_rel

__all__ = ["abs", "sign", "ceil", "floor", "round", "trunc", "rsqrt", "log2", "log10", "sin",
           "cos", "tan", "sinh", "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh",
           "tanh", "sigmoid", "erf", "fast_exp", "fast_tanh", "fast_erf", "copy",
           "logical_not", "bitwise_not", "isnan", "isinf", "isfinite", "clip", "power",
           "maximum", "minimum", "mod", "floor_mod", "trunc_mod", "floor_divide",
           "trunc_divide", "logical_and", "logical_or", "logical_xor", "bitwise_and",
           "bitwise_or", "bitwise_xor", "left_shift", "right_shift"]


def _erf(data):
    try:
        from scipy.special import erf as scipy_erf
    except ImportError:  # scipy is optional: fall back to the (slower) math.erf
        return np.vectorize(math.erf, otypes=[np.float64])(data)
    return scipy_erf(data)


def _sigmoid(data):
    return 1.0 / (1.0 + np.exp(-data))


def _one(like):
    return scalar_like(1.0, like)


def _square(expr):
    return multiply(expr, expr)


def _zero_grad(call, out_grad):
    return [zeros_like(arg) for arg in call.args]


# name -> (numpy function, description, gradient(x, y, g) or None for a zero gradient)
_UNARY = {
    "abs": (np.abs, "absolute value", lambda x, y, g: multiply(g, sign(x))),
    "sign": (np.sign, "sign (-1, 0 or 1)", None),
    "ceil": (np.ceil, "round up", None),
    "floor": (np.floor, "round down", None),
    "round": (np.round, "round half to even", None),
    "trunc": (np.trunc, "round toward zero", None),
    "rsqrt": (lambda x: 1.0 / np.sqrt(x), "reciprocal square root",
              lambda x, y, g: multiply(g, multiply(scalar_like(-0.5, y),
                                                   multiply(y, _square(y))))),
    "log2": (np.log2, "base-2 logarithm",
             lambda x, y, g: divide(g, multiply(x, scalar_like(math.log(2.0), x)))),
    "log10": (np.log10, "base-10 logarithm",
              lambda x, y, g: divide(g, multiply(x, scalar_like(math.log(10.0), x)))),
    "sin": (np.sin, "sine", lambda x, y, g: multiply(g, cos(x))),
    "cos": (np.cos, "cosine", lambda x, y, g: negative(multiply(g, sin(x)))),
    "tan": (np.tan, "tangent", lambda x, y, g: divide(g, _square(cos(x)))),
    "sinh": (np.sinh, "hyperbolic sine", lambda x, y, g: multiply(g, cosh(x))),
    "cosh": (np.cosh, "hyperbolic cosine", lambda x, y, g: multiply(g, sinh(x))),
    "asin": (np.arcsin, "arc sine",
             lambda x, y, g: divide(g, sqrt(subtract(_one(x), _square(x))))),
    "acos": (np.arccos, "arc cosine",
             lambda x, y, g: negative(divide(g, sqrt(subtract(_one(x), _square(x)))))),
    "atan": (np.arctan, "arc tangent", lambda x, y, g: divide(g, add(_one(x), _square(x)))),
    "asinh": (np.arcsinh, "inverse hyperbolic sine",
              lambda x, y, g: divide(g, sqrt(add(_square(x), _one(x))))),
    "acosh": (np.arccosh, "inverse hyperbolic cosine",
              lambda x, y, g: divide(g, sqrt(subtract(_square(x), _one(x))))),
    "atanh": (np.arctanh, "inverse hyperbolic tangent",
              lambda x, y, g: divide(g, subtract(_one(x), _square(x)))),
    "tanh": (np.tanh, "hyperbolic tangent",
             lambda x, y, g: multiply(g, subtract(_one(y), _square(y)))),
    "sigmoid": (_sigmoid, "logistic sigmoid ``1 / (1 + exp(-data))``",
                lambda x, y, g: multiply(g, multiply(y, subtract(_one(y), y)))),
    "erf": (_erf, "Gauss error function",
            lambda x, y, g: multiply(g, multiply(scalar_like(2.0 / math.sqrt(math.pi), x),
                                                 exp(negative(_square(x)))))),
    "copy": (np.copy, "copy", lambda x, y, g: g),
    "logical_not": (np.logical_not, "logical not", None),
    "bitwise_not": (np.invert, "bitwise not", None),
}
# The fast_* variants (what FastMath rewrites to) compute the same values here.
_UNARY["fast_exp"] = (np.exp, "fast approximate exponential",
                      lambda x, y, g: multiply(g, y))
_UNARY["fast_tanh"] = (np.tanh, "fast approximate tanh", _UNARY["tanh"][2])
_UNARY["fast_erf"] = (_erf, "fast approximate erf", _UNARY["erf"][2])

_BUILDERS = {}
for _name, (_fn, _doc, _grad) in _UNARY.items():
    _op_def, _BUILDERS[_name] = register_unary(_name, _fn, _doc)
    if _grad is None:
        _op_def.def_grad(_zero_grad)
    else:
        _op_def.def_grad(lambda call, out_grad, _rule=_grad:
                         [_rule(call.args[0], call, out_grad)])

abs = _BUILDERS["abs"]  # noqa: A001 - Relay's name
sign, ceil, floor = _BUILDERS["sign"], _BUILDERS["ceil"], _BUILDERS["floor"]
round = _BUILDERS["round"]  # noqa: A001 - Relay's name
trunc, rsqrt, log2, log10 = (_BUILDERS[n] for n in ("trunc", "rsqrt", "log2", "log10"))
sin, cos, tan, sinh, cosh = (_BUILDERS[n] for n in ("sin", "cos", "tan", "sinh", "cosh"))
asin, acos, atan = _BUILDERS["asin"], _BUILDERS["acos"], _BUILDERS["atan"]
asinh, acosh, atanh = _BUILDERS["asinh"], _BUILDERS["acosh"], _BUILDERS["atanh"]
tanh, sigmoid, erf = _BUILDERS["tanh"], _BUILDERS["sigmoid"], _BUILDERS["erf"]
fast_exp, fast_tanh, fast_erf = (_BUILDERS[n] for n in ("fast_exp", "fast_tanh", "fast_erf"))
copy, logical_not, bitwise_not = (_BUILDERS[n] for n in ("copy", "logical_not",
                                                         "bitwise_not"))


# -- predicates: bool results -----------------------------------------------------------------

def _bool_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "data")
    return TensorType(data.shape, "bool")


def _predicate(name: str, numpy_fn, doc: str):
    op_def = register_op(name, ("data",), type_rel=named_rel(name, _bool_rel),
                         pattern=OpPattern.ELEMWISE,
                         description=doc)
    op_def.def_impl(lambda data: (np.asarray(numpy_fn(data)),))
    op_def.def_grad(_zero_grad)
    return op_builder(name, ("data",), f"Elementwise {doc} (bool result).")


isnan = _predicate("isnan", np.isnan, "test for NaN")
isinf = _predicate("isinf", np.isinf, "test for infinity")
isfinite = _predicate("isfinite", np.isfinite, "test for a finite value")


# -- clip --------------------------------------------------------------------------------------

_CLIP = register_op("clip", ("a",), attrs=("relay.attrs.ClipAttrs", [("a_min", 0.0),
                                                                   ("a_max", 0.0)]),
                    type_rel=lambda arg_types, attrs: expect_tensor(arg_types[0], "clip: a"),
                    pattern=OpPattern.ELEMWISE, description="limit values to [a_min, a_max]")
_CLIP.def_impl(lambda a, a_min, a_max: (np.clip(a, a_min, a_max).astype(a.dtype, copy=False),))


@_CLIP.def_grad
def _clip_grad(call, out_grad):
    data = call.args[0]
    inside = multiply(
        make_call("cast_like", (greater_equal(data, scalar_like(call.attrs["a_min"], data)),
                                data)),
        make_call("cast_like", (less_equal(data, scalar_like(call.attrs["a_max"], data)),
                                data)))
    return [multiply(out_grad, inside)]


def clip(a, a_min, a_max):
    """Limit the values of ``a`` to ``[a_min, a_max]``.

    Returns:
        A Call of ``clip``.
    """
    return make_call("clip", (a,), {"a_min": float(a_min), "a_max": float(a_max)})


# -- binary ops ------------------------------------------------------------------------------

def _integer_safe(numpy_fn):
    def apply(lhs, rhs):
        with np.errstate(divide="ignore", invalid="ignore"):
            return numpy_fn(lhs, rhs)
    return apply


def _trunc_divide_ref(lhs, rhs):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.trunc(np.true_divide(lhs, rhs))


_BINARY = {
    "power": (np.power, "lhs ** rhs"),
    "maximum": (np.maximum, "max(lhs, rhs)"),
    "minimum": (np.minimum, "min(lhs, rhs)"),
    "mod": (_integer_safe(np.fmod), "lhs mod rhs, truncated (sign of lhs)"),
    "trunc_mod": (_integer_safe(np.fmod), "lhs mod rhs, truncated (sign of lhs)"),
    "floor_mod": (_integer_safe(np.mod), "lhs mod rhs, floored (sign of rhs)"),
    "floor_divide": (_integer_safe(np.floor_divide), "floor(lhs / rhs)"),
    "trunc_divide": (_trunc_divide_ref, "trunc(lhs / rhs)"),
    "logical_and": (np.logical_and, "lhs and rhs"),
    "logical_or": (np.logical_or, "lhs or rhs"),
    "logical_xor": (np.logical_xor, "lhs xor rhs"),
    "bitwise_and": (np.bitwise_and, "lhs & rhs"),
    "bitwise_or": (np.bitwise_or, "lhs | rhs"),
    "bitwise_xor": (np.bitwise_xor, "lhs ^ rhs"),
    "left_shift": (np.left_shift, "lhs << rhs"),
    "right_shift": (np.right_shift, "lhs >> rhs"),
}
_BINARY_DEFS = {}
for _name, (_fn, _doc) in _BINARY.items():
    _BINARY_DEFS[_name], _BUILDERS[_name] = register_binary(_name, _fn, _doc)
    _BINARY_DEFS[_name].def_grad(_zero_grad)

power, maximum, minimum = _BUILDERS["power"], _BUILDERS["maximum"], _BUILDERS["minimum"]
mod, trunc_mod, floor_mod = _BUILDERS["mod"], _BUILDERS["trunc_mod"], _BUILDERS["floor_mod"]
floor_divide, trunc_divide = _BUILDERS["floor_divide"], _BUILDERS["trunc_divide"]
logical_and, logical_or, logical_xor = (_BUILDERS[n] for n in ("logical_and", "logical_or",
                                                               "logical_xor"))
bitwise_and, bitwise_or, bitwise_xor = (_BUILDERS[n] for n in ("bitwise_and", "bitwise_or",
                                                               "bitwise_xor"))
left_shift, right_shift = _BUILDERS["left_shift"], _BUILDERS["right_shift"]


@_BINARY_DEFS["power"].def_grad
def _power_grad(call, out_grad):
    lhs, rhs = call.args
    # d x^y/dx = y * x^(y-1);  d x^y/dy = log(x) * x^y
    lhs_grad = multiply(out_grad, multiply(rhs, power(lhs, subtract(rhs, _one(rhs)))))
    rhs_grad = multiply(out_grad, multiply(log(lhs), call))
    return [collapse_to(lhs_grad, lhs), collapse_to(rhs_grad, rhs)]


def _select_grad(lhs_wins, rhs_wins):
    def rule(call, out_grad):
        lhs, rhs = call.args
        zeros = zeros_like(out_grad)
        return [collapse_to(where(lhs_wins(lhs, rhs), out_grad, zeros), lhs),
                collapse_to(where(rhs_wins(lhs, rhs), out_grad, zeros), rhs)]
    return rule


# Ties send the whole adjoint to lhs, as Relay does.
_BINARY_DEFS["maximum"].def_grad(_select_grad(greater_equal, less))
_BINARY_DEFS["minimum"].def_grad(_select_grad(less_equal, greater))


def _mod_grad(rounding):
    def rule(call, out_grad):
        # lhs mod rhs = lhs - rounding(lhs / rhs) * rhs
        lhs, rhs = call.args
        quotient = rounding(divide(lhs, rhs))
        return [collapse_to(out_grad, lhs),
                collapse_to(negative(multiply(out_grad, quotient)), rhs)]
    return rule


_BINARY_DEFS["mod"].def_grad(_mod_grad(trunc))
_BINARY_DEFS["trunc_mod"].def_grad(_mod_grad(trunc))
_BINARY_DEFS["floor_mod"].def_grad(_mod_grad(floor))
