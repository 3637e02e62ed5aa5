"""One record per op the fused-group code generator inlines: :data:`RULES`.

A record (:class:`OpRule`) says how the generated loop reads the op's operands at an output
index (``index``: the name of a rule of :class:`jitkernels.codegen.generator._Emitter`, e.g.
``"same"`` for elementwise ops, ``"broadcast"``, ``"transpose"``), and how it computes the
op's scalar value from the operands' values: a ``template`` of a Python/numba expression
over ``{0}``, ``{1}``, ... (with ``{dtype}``, ``{zero}`` and the ``literal_attrs`` as
literals of the result dtype), or ``None`` for index-only ops (the value is the operand's),
or a ``combine`` rule of the emitter for what a template cannot say (``concatenate``).
``float_result`` casts the expression back to the float dtype (not for comparisons, casts
and constant fills); ``float32_template`` replaces the template for float32 results.

Only float operands are generated (integer division and rounding rules differ between
numpy and Python scalars); a group with anything else falls back.
"""

from __future__ import annotations

from typing import NamedTuple, Optional


class OpRule(NamedTuple):
    """How the generator inlines one op (see the module docstring)."""

    index: str
    template: Optional[str] = None
    literal_attrs: tuple = ()
    float_result: bool = True
    float32_template: Optional[str] = None
    combine: Optional[str] = None


def _unary(template: str, **extra) -> OpRule:
    return OpRule("same", template, **extra)


def _binary(template: str, float_result: bool = True) -> OpRule:
    return OpRule("broadcast", template, float_result=float_result)


RULES = {
    # elementwise unary ops on floats
    "negative": _unary("(-{0})"),
    # float32 exp/tanh/sigmoid: vectorisable approximations (fast_scalar.py)
    "exp": _unary("math.exp({0})", float32_template="_exp32({0})"),
    "fast_exp": _unary("math.exp({0})", float32_template="_exp32({0})"),
    "log": _unary("math.log({0})"), "log2": _unary("math.log2({0})"),
    "log10": _unary("math.log10({0})"),
    "sqrt": _unary("math.sqrt({0})"), "rsqrt": _unary("(1.0 / math.sqrt({0}))"),
    "tanh": _unary("math.tanh({0})", float32_template="_tanh32({0})"),
    "fast_tanh": _unary("math.tanh({0})", float32_template="_tanh32({0})"),
    "sigmoid": _unary("(1.0 / (1.0 + math.exp(-{0})))",
                      float32_template="(np.float32(1.0) / (np.float32(1.0) + _exp32(-{0})))"),
    "nn.relu": _unary("max({0}, {zero})"),
    "abs": _unary("abs({0})"),
    "sin": _unary("math.sin({0})"), "cos": _unary("math.cos({0})"),
    "tan": _unary("math.tan({0})"), "sinh": _unary("math.sinh({0})"),
    "cosh": _unary("math.cosh({0})"), "asin": _unary("math.asin({0})"),
    "acos": _unary("math.acos({0})"), "atan": _unary("math.atan({0})"),
    # float32 erf: a vectorisable rational approximation (fast_scalar.py)
    "erf": _unary("math.erf({0})", float32_template="_erf32({0})"),
    "fast_erf": _unary("math.erf({0})", float32_template="_erf32({0})"),
    "floor": _unary("math.floor({0})"), "ceil": _unary("math.ceil({0})"),
    "trunc": _unary("math.trunc({0})"),
    # round half to even, as numpy's round and ONNX's (QuantizeLinear's rounding)
    "round": _unary("np.rint({0})"),
    "copy": _unary("{0}"),
    "clip": _unary("min(max({0}, {a_min}), {a_max})", literal_attrs=("a_min", "a_max")),
    "nn.leaky_relu": _unary("({0} if {0} > 0 else {0} * {alpha})", literal_attrs=("alpha",)),
    "cast": _unary("np.{dtype}({0})", float_result=False),
    # broadcasting binary ops
    "add": _binary("({0} + {1})"), "subtract": _binary("({0} - {1})"),
    "multiply": _binary("({0} * {1})"), "divide": _binary("({0} / {1})"),
    "maximum": _binary("max({0}, {1})"), "minimum": _binary("min({0}, {1})"),
    "power": _binary("({0} ** {1})"),
    "greater": _binary("({0} > {1})", False), "greater_equal": _binary("({0} >= {1})", False),
    "less": _binary("({0} < {1})", False), "less_equal": _binary("({0} <= {1})", False),
    "equal": _binary("({0} == {1})", False), "not_equal": _binary("({0} != {1})", False),
    "where": _binary("({1} if {0} else {2})"),
    "nn.bias_add": OpRule("bias_add", "({0} + {1})"),
    # constant fills: the literal itself, no operand read
    "zeros": OpRule("none", "{zero}", float_result=False),
    "zeros_like": OpRule("none", "{zero}", float_result=False),
    "ones": OpRule("none", "{one}", float_result=False),
    "ones_like": OpRule("none", "{one}", float_result=False),
    # index-remapping ops: the operand's value at a remapped index
    "broadcast_to": OpRule("broadcast_to"),
    "expand_dims": OpRule("expand_dims"),
    "squeeze": OpRule("reshape"), "reshape": OpRule("reshape"),
    "nn.batch_flatten": OpRule("reshape"),
    "transpose": OpRule("transpose"),
    "layout_transform": OpRule("layout_transform"),
    "concatenate": OpRule("concatenate", combine="concatenate"),
    "stack": OpRule("stack", combine="stack"),
    # take of a constant scalar index (other takes stay anchors: see constant_take_index)
    "take": OpRule("take"),
}
"""Op name -> :class:`OpRule`: every op the generator inlines."""

FLOAT_DTYPES = frozenset({"float32", "float64"})


def supported(op_name: str) -> bool:
    """Whether the generator can inline ``op_name`` (``take`` only where
    :func:`constant_take_index` gives an index)."""
    return op_name in RULES


def constant_take_index(node):
    """The source index a ``take`` call reads along its axis, when it is inlinable: a
    constant scalar index (mode applied as the reference does), no batch dims, a static
    axis length; else None (the take then runs on its kernel as an anchor).

    Args:
        node: the ``take`` call.
    """
    import numpy as np
    from irlib.ir import expr as E
    data, indices = node.args
    attrs = node.attrs
    if not isinstance(indices, E.Constant) or attrs.get("batch_dims", 0) \
            or attrs.get("axis") is None:
        return None
    value = indices.data.numpy()
    shape = getattr(data._checked_type, "shape", None)
    if value.ndim != 0 or value.dtype.kind not in "iu" or not shape:
        return None
    size = shape[int(attrs["axis"]) % len(shape)]
    if not isinstance(size, (int, np.integer)) or size <= 0:
        return None
    k, size, mode = int(value), int(size), attrs.get("mode", "clip")
    if mode == "wrap":
        k = k % size
    elif mode == "clip":
        k = min(max(k, 0), size - 1)
    elif k < 0:                         # "fast": numpy's negative indexing, as the reference
        k += size
    return k if 0 <= k < size else None


def literal(value: float, dtype: str) -> str:
    """A scalar literal of ``dtype`` as numba source."""
    if dtype == "bool":
        return "True" if value else "False"
    if dtype.startswith("int") or dtype.startswith("uint"):    # compared integers: exact
        return f"np.{dtype}({int(value)})"
    number = float(value)
    if number != number:
        return f"np.{dtype}(np.nan)"
    if number in (float("inf"), float("-inf")):
        return f"np.{dtype}({'-' if number < 0 else ''}np.inf)"
    return f"np.{dtype}({number!r})"
