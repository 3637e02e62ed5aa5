"""Elementwise converters: unary math and activations, binary arithmetic and comparisons,
``where``/``masked_fill``/``clamp``, and the ``operator`` module on tensors and sizes."""

from __future__ import annotations

import math
import operator

import torch
import torch.nn.functional as F

from ._args import arg
from .registry import converter
from .errors import unsupported

aten = torch.ops.aten


def _float_input(ctx, x):
    """``x``, cast to float32 when it is a bool or integer tensor (torch's float ops do)."""
    return x if ctx.dtype(x).startswith(("float", "bfloat")) else ctx.cast(x, "float32")


def _unary(op_name: str, floats: bool = True):
    def convert(ctx, args, kwargs):
        x = args[0]
        return ctx.emit(op_name, _float_input(ctx, x) if floats else x)
    return convert


_UNARY = {
    "exp": ("exp", True), "log": ("log", True), "sqrt": ("sqrt", True),
    "rsqrt": ("rsqrt", True), "sin": ("sin", True), "cos": ("cos", True),
    "tan": ("tan", True), "tanh": ("tanh", True), "sigmoid": ("sigmoid", True),
    "erf": ("erf", True), "abs": ("abs", False), "neg": ("negative", False),
    "floor": ("floor", False), "ceil": ("ceil", False), "round": ("round", False),
    "trunc": ("trunc", False), "sign": ("sign", False), "log2": ("log2", True),
    "log10": ("log10", True), "asin": ("asin", True), "acos": ("acos", True),
    "atan": ("atan", True), "sinh": ("sinh", True), "cosh": ("cosh", True),
    "logical_not": ("logical_not", False), "bitwise_not": ("bitwise_not", False),
    "isnan": ("isnan", False), "isinf": ("isinf", False), "isfinite": ("isfinite", False),
}

for _name, (_op, _floats) in _UNARY.items():
    _targets = [getattr(torch, _name, None), f"Tensor.{_name}", f"Tensor.{_name}_",
                getattr(getattr(aten, _name, None), "default", None),
                getattr(getattr(aten, _name + "_", None), "default", None)]
    if _name in ("tanh", "sigmoid"):
        _targets.append(getattr(F, _name))
    converter(*_targets)(_unary(_op, _floats))
converter(operator.neg)(_unary("negative", False))
converter(operator.not_, operator.invert)(_unary("logical_not", False))


@converter(torch.nn.Sigmoid)
def _sigmoid_module(ctx, module, args, kwargs):
    return ctx.emit("sigmoid", _float_input(ctx, args[0]))


@converter(torch.nn.Tanh)
def _tanh_module(ctx, module, args, kwargs):
    return ctx.emit("tanh", _float_input(ctx, args[0]))


# -- activations ---------------------------------------------------------------------------

def relu(ctx, x):
    """``max(x, 0)`` (nn.relu)."""
    return ctx.emit("nn.relu", x)


@converter(torch.relu, F.relu, "Tensor.relu", "Tensor.relu_", torch.relu_, aten.relu.default,
           aten.relu_.default)
def _relu(ctx, args, kwargs):
    return relu(ctx, args[0])


def hardtanh(ctx, x, low, high):
    """``clamp(x, low, high)``; ``relu`` when ``[0, inf)``."""
    return ctx.emit("clip", x, a_min=float(low), a_max=float(high))


@converter(F.hardtanh, F.hardtanh_, aten.hardtanh.default, aten.hardtanh_.default)
def _hardtanh(ctx, args, kwargs):
    return hardtanh(ctx, args[0], arg(args, kwargs, 1, "min_val", -1.0),
                    arg(args, kwargs, 2, "max_val", 1.0))


@converter(F.relu6)
def _relu6(ctx, args, kwargs):
    return hardtanh(ctx, args[0], 0.0, 6.0)


def gelu(ctx, x, approximate="none"):
    """GELU: ``x * Phi(x)`` (``erf``), or its ``tanh`` approximation.

    Args:
        x: the input.
        approximate: ``"none"`` or ``"tanh"``.
    """
    dtype = ctx.dtype(x)
    half = ctx.scalar(0.5, dtype)
    if approximate == "tanh":
        inner = ctx.emit("multiply", ctx.scalar(math.sqrt(2.0 / math.pi), dtype),
                         ctx.emit("add", x, ctx.emit("multiply", ctx.scalar(0.044715, dtype),
                                                     ctx.emit("power", x,
                                                              ctx.scalar(3.0, dtype)))))
        phi = ctx.emit("add", ctx.scalar(1.0, dtype), ctx.emit("tanh", inner))
    elif approximate == "none":
        phi = ctx.emit("add", ctx.scalar(1.0, dtype),
                       ctx.emit("erf", ctx.emit("multiply", x,
                                                ctx.scalar(1 / math.sqrt(2.0), dtype))))
    else:
        unsupported(f"gelu approximate={approximate!r}")
    return ctx.emit("multiply", ctx.emit("multiply", half, x), phi)


@converter(F.gelu, aten.gelu.default)
def _gelu(ctx, args, kwargs):
    return gelu(ctx, args[0], arg(args, kwargs, 1, "approximate", "none"))


def silu(ctx, x):
    """``x * sigmoid(x)``."""
    return ctx.emit("multiply", x, ctx.emit("sigmoid", x))


@converter(F.silu, aten.silu.default, aten.silu_.default)
def _silu(ctx, args, kwargs):
    return silu(ctx, args[0])


def leaky_relu(ctx, x, slope):
    """``x`` where positive, ``slope * x`` elsewhere."""
    return ctx.emit("nn.leaky_relu", x, alpha=float(slope))


@converter(F.leaky_relu, aten.leaky_relu.default, aten.leaky_relu_.default)
def _leaky_relu(ctx, args, kwargs):
    return leaky_relu(ctx, args[0], arg(args, kwargs, 1, "negative_slope", 0.01))


def hardsigmoid(ctx, x):
    """``clamp(x / 6 + 1/2, 0, 1)``."""
    dtype = ctx.dtype(x)
    scaled = ctx.emit("add", ctx.emit("divide", x, ctx.scalar(6.0, dtype)),
                      ctx.scalar(0.5, dtype))
    return ctx.emit("clip", scaled, a_min=0.0, a_max=1.0)


@converter(F.hardsigmoid, aten.hardsigmoid.default)
def _hardsigmoid(ctx, args, kwargs):
    return hardsigmoid(ctx, args[0])


@converter(F.hardswish, aten.hardswish.default, aten.hardswish_.default)
def _hardswish(ctx, args, kwargs):
    return ctx.emit("multiply", args[0], hardsigmoid(ctx, args[0]))


def elu(ctx, x, alpha):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""
    dtype = ctx.dtype(x)
    negative = ctx.emit("multiply", ctx.scalar(alpha, dtype),
                        ctx.emit("subtract", ctx.emit("exp", x), ctx.scalar(1.0, dtype)))
    return ctx.emit("where", ctx.emit("greater", x, ctx.scalar(0.0, dtype)), x, negative)


@converter(F.elu, aten.elu.default)
def _elu(ctx, args, kwargs):
    return elu(ctx, args[0], arg(args, kwargs, 1, "alpha", 1.0))


def softplus(ctx, x, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta x)) / beta``, linear above ``threshold``."""
    dtype = ctx.dtype(x)
    scaled = ctx.emit("multiply", x, ctx.scalar(beta, dtype))
    soft = ctx.emit("divide", ctx.emit("log", ctx.emit("add", ctx.scalar(1.0, dtype),
                                                       ctx.emit("exp", scaled))),
                    ctx.scalar(beta, dtype))
    return ctx.emit("where", ctx.emit("greater", scaled, ctx.scalar(threshold, dtype)), x, soft)


@converter(F.softplus, aten.softplus.default)
def _softplus(ctx, args, kwargs):
    return softplus(ctx, args[0], arg(args, kwargs, 1, "beta", 1.0),
                    arg(args, kwargs, 2, "threshold", 20.0))


# -- binary ---------------------------------------------------------------------------------

_PY_BINARY = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
              "divide": operator.truediv, "floor_divide": operator.floordiv,
              "power": operator.pow, "mod": operator.mod, "maximum": max, "minimum": min,
              "equal": operator.eq, "not_equal": operator.ne, "less": operator.lt,
              "less_equal": operator.le, "greater": operator.gt,
              "greater_equal": operator.ge, "logical_and": lambda a, b: a and b,
              "logical_or": lambda a, b: a or b, "bitwise_and": operator.and_,
              "bitwise_or": operator.or_, "bitwise_xor": operator.xor}


def binary(ctx, op_name: str, lhs, rhs):
    """Op ``op_name`` on two torch operands (tensors or Python numbers), promoted like torch.

    Python numbers on both sides (sizes, in FX graphs) are combined in Python.

    Args:
        op_name: the irlib op.
        lhs: the left operand.
        rhs: the right operand.
    """
    if not ctx.is_tensor(lhs) and not ctx.is_tensor(rhs):
        return _PY_BINARY[op_name](lhs, rhs)
    lhs, rhs = ctx.binary_operands(lhs, rhs)
    if op_name == "divide" and not ctx.dtype(lhs).startswith(("float", "bfloat")):
        lhs, rhs = ctx.cast(lhs, "float32"), ctx.cast(rhs, "float32")
    if op_name == "mod":  # torch.remainder takes the divisor's sign: floor_mod
        op_name = "floor_mod"
    return ctx.emit(op_name, lhs, rhs)


def _scaled(ctx, value, alpha):
    if alpha == 1:
        return value
    return binary(ctx, "multiply", value, alpha)


def _binary_converter(op_name: str, reverse: bool = False):
    def convert(ctx, args, kwargs):
        lhs = arg(args, kwargs, 0, "input")
        rhs = arg(args, kwargs, 1, "other")
        if reverse:
            lhs, rhs = rhs, lhs
        return binary(ctx, op_name, lhs, rhs)
    return convert


def _add_converter(op_name: str, reverse: bool = False):
    def convert(ctx, args, kwargs):
        lhs = arg(args, kwargs, 0, "input")
        rhs = _scaled(ctx, arg(args, kwargs, 1, "other"), kwargs.get("alpha", 1))
        if reverse:
            lhs, rhs = rhs, lhs
        return binary(ctx, op_name, lhs, rhs)
    return convert


def _targets(torch_name, aten_names, method_names=None, ops=()):
    """Targets of a binary op: ``torch.<name>``, its methods (also in-place) and overloads."""
    found = [getattr(torch, torch_name, None), *ops]
    for method in method_names or [torch_name]:
        found += [f"Tensor.{method}", f"Tensor.{method}_"]
    for name in aten_names:
        base, _, overload = name.partition(".")
        packet = getattr(aten, base, None)
        found.append(getattr(packet, overload, None) if packet is not None else None)
    return found


converter(*_targets("add", ["add.Tensor", "add.Scalar", "add_.Tensor", "add_.Scalar"],
                    ops=[operator.add, operator.iadd]))(_add_converter("add"))
converter(*_targets("sub", ["sub.Tensor", "sub.Scalar", "sub_.Tensor", "sub_.Scalar"],
                    ["sub", "subtract"], ops=[operator.sub, operator.isub,
                                              torch.subtract]))(_add_converter("subtract"))
converter(*_targets("rsub", ["rsub.Tensor", "rsub.Scalar"]))(
    _add_converter("subtract", reverse=True))
converter(*_targets("mul", ["mul.Tensor", "mul.Scalar", "mul_.Tensor", "mul_.Scalar"],
                    ["mul", "multiply"], ops=[operator.mul, operator.imul,
                                              torch.multiply]))(_binary_converter("multiply"))
converter(*_targets("pow", ["pow.Tensor_Tensor", "pow.Tensor_Scalar", "pow.Scalar"],
                    ops=[operator.pow]))(_binary_converter("power"))
converter(*_targets("maximum", ["maximum.default"]))(_binary_converter("maximum"))
converter(*_targets("minimum", ["minimum.default"]))(_binary_converter("minimum"))
converter(*_targets("remainder", ["remainder.Tensor", "remainder.Scalar"], ["remainder"],
                    ops=[operator.mod]))(_binary_converter("mod"))
converter(*_targets("floor_divide", ["floor_divide.default"], ops=[operator.floordiv,
                                                                   operator.ifloordiv]))(
    _binary_converter("floor_divide"))
for _name, _op in [("eq", "equal"), ("ne", "not_equal"), ("lt", "less"), ("le", "less_equal"),
                   ("gt", "greater"), ("ge", "greater_equal")]:
    converter(*_targets(_name, [f"{_name}.Tensor", f"{_name}.Scalar"],
                        ops=[getattr(operator, _name)]))(_binary_converter(_op))
for _name, _op, _pyop in [("logical_and", "logical_and", None),
                          ("logical_or", "logical_or", None),
                          ("bitwise_and", "bitwise_and", operator.and_),
                          ("bitwise_or", "bitwise_or", operator.or_),
                          ("bitwise_xor", "bitwise_xor", operator.xor)]:
    _aten = [f"{_name}.default"] if _name.startswith("logical") else \
        [f"{_name}.Tensor", f"{_name}.Scalar"]
    converter(*_targets(_name, _aten, ops=[_pyop] if _pyop else []))(
        _binary_converter(_op))


def divide(ctx, lhs, rhs, rounding_mode=None):
    """torch division: true division, or ``"floor"``/``"trunc"`` rounding.

    Args:
        lhs: the dividend.
        rhs: the divisor.
        rounding_mode: None, ``"floor"`` or ``"trunc"``.
    """
    if rounding_mode is None:
        return binary(ctx, "divide", lhs, rhs)
    if not ctx.is_tensor(lhs) and not ctx.is_tensor(rhs):
        quotient = lhs / rhs
        return math.floor(quotient) if rounding_mode == "floor" else math.trunc(quotient)
    a, b = ctx.binary_operands(lhs, rhs)
    if ctx.dtype(a).startswith(("float", "bfloat")):
        return ctx.emit("floor" if rounding_mode == "floor" else "trunc",
                        ctx.emit("divide", a, b))
    return ctx.emit("floor_divide" if rounding_mode == "floor" else "trunc_divide", a, b)


@converter(torch.div, torch.divide, torch.true_divide, operator.truediv, operator.itruediv,
           "Tensor.div", "Tensor.div_", "Tensor.divide", "Tensor.true_divide",
           aten.div.Tensor, aten.div.Scalar, aten.div_.Tensor, aten.div_.Scalar,
           aten.div.Tensor_mode, aten.div.Scalar_mode)
def _div(ctx, args, kwargs):
    return divide(ctx, arg(args, kwargs, 0, "input"), arg(args, kwargs, 1, "other"),
                  kwargs.get("rounding_mode"))


# -- where, masked_fill, clamp --------------------------------------------------------------

def where(ctx, condition, x, y):
    """``x`` where ``condition`` else ``y`` (scalars take the other side's dtype)."""
    condition = ctx.tensor(condition)
    if ctx.dtype(condition) != "bool":
        condition = ctx.cast(condition, "bool")
    if not ctx.is_tensor(x) and not ctx.is_tensor(y):
        x = ctx.tensor(x)
    x, y = ctx.binary_operands(x, y)
    return ctx.emit("where", condition, x, y)


@converter(torch.where, "Tensor.where", aten.where.self, aten.where.ScalarOther,
           aten.where.ScalarSelf, aten.where.Scalar)
def _where(ctx, args, kwargs):
    if len(args) + len(kwargs) == 1:
        unsupported("torch.where(condition) (nonzero) has a data-dependent shape")
    return where(ctx, arg(args, kwargs, 0, "condition"), arg(args, kwargs, 1, "input"),
                 arg(args, kwargs, 2, "other"))


@converter(torch.masked_fill, "Tensor.masked_fill", "Tensor.masked_fill_",
           aten.masked_fill.Scalar, aten.masked_fill.Tensor, aten.masked_fill_.Scalar,
           aten.masked_fill_.Tensor)
def _masked_fill(ctx, args, kwargs):
    x, mask = args[0], arg(args, kwargs, 1, "mask")
    value = arg(args, kwargs, 2, "value")
    if ctx.is_tensor(value):
        value = ctx.cast(value, ctx.dtype(x))
    else:
        value = ctx.scalar(value, ctx.dtype(x))
    return ctx.emit("where", ctx.cast(mask, "bool"), value, x)


def clamp(ctx, x, low=None, high=None):
    """``x`` limited to ``[low, high]`` (either bound may be None or a tensor)."""
    if low is not None and high is not None and not ctx.is_tensor(low) and \
            not ctx.is_tensor(high) and ctx.dtype(x).startswith(("float", "bfloat")):
        return ctx.emit("clip", x, a_min=float(low), a_max=float(high))
    result = x
    if low is not None:
        result = binary(ctx, "maximum", result, low)
    if high is not None:
        result = binary(ctx, "minimum", result, high)
    return result


@converter(torch.clamp, torch.clip, "Tensor.clamp", "Tensor.clamp_", "Tensor.clip",
           aten.clamp.default, aten.clamp.Tensor, aten.clamp_.default, aten.clip.default)
def _clamp(ctx, args, kwargs):
    return clamp(ctx, args[0], arg(args, kwargs, 1, "min", None),
                 arg(args, kwargs, 2, "max", None))


@converter(torch.clamp_min, "Tensor.clamp_min", aten.clamp_min.default)
def _clamp_min(ctx, args, kwargs):
    return clamp(ctx, args[0], low=arg(args, kwargs, 1, "min"))


@converter(torch.clamp_max, "Tensor.clamp_max", aten.clamp_max.default)
def _clamp_max(ctx, args, kwargs):
    return clamp(ctx, args[0], high=arg(args, kwargs, 1, "max"))
