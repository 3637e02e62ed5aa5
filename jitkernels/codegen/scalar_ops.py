"""Scalar and index rules of the ops the fused-group code generator inlines.

Each elementwise/broadcast op maps to a template of a Python/numba scalar expression over its
operands' values (``{0}``, ``{1}``, ...). Index-remapping (injective) ops are handled in
:mod:`jitkernels.codegen.generator`, which asks :func:`index_rule` how an output index maps
to the index of the operand.

Only float operands are generated (integer division and rounding rules differ between
numpy and Python scalars); a group with anything else falls back.
"""

from __future__ import annotations

UNARY = {
    "negative": "(-{0})",
    "exp": "math.exp({0})", "fast_exp": "math.exp({0})",
    "log": "math.log({0})", "log2": "math.log2({0})", "log10": "math.log10({0})",
    "sqrt": "math.sqrt({0})", "rsqrt": "(1.0 / math.sqrt({0}))",
    "tanh": "math.tanh({0})", "fast_tanh": "math.tanh({0})",
    "sigmoid": "(1.0 / (1.0 + math.exp(-{0})))",
    "nn.relu": "max({0}, 0.0)",
    "abs": "abs({0})",
    "sin": "math.sin({0})", "cos": "math.cos({0})", "tan": "math.tan({0})",
    "sinh": "math.sinh({0})", "cosh": "math.cosh({0})",
    "asin": "math.asin({0})", "acos": "math.acos({0})", "atan": "math.atan({0})",
    "erf": "math.erf({0})", "fast_erf": "math.erf({0})",
    "floor": "math.floor({0})", "ceil": "math.ceil({0})", "trunc": "math.trunc({0})",
    "copy": "{0}",
}
"""Unary ops on floats: template of the scalar expression."""

BINARY = {
    "add": "({0} + {1})", "subtract": "({0} - {1})", "multiply": "({0} * {1})",
    "divide": "({0} / {1})", "maximum": "max({0}, {1})", "minimum": "min({0}, {1})",
    "power": "({0} ** {1})",
    "greater": "({0} > {1})", "greater_equal": "({0} >= {1})", "less": "({0} < {1})",
    "less_equal": "({0} <= {1})", "equal": "({0} == {1})", "not_equal": "({0} != {1})",
}
"""Binary broadcasting ops: template of the scalar expression."""

COMPARISONS = frozenset({"greater", "greater_equal", "less", "less_equal", "equal",
                         "not_equal"})
INDEX_OPS = frozenset({"expand_dims", "squeeze", "reshape", "nn.batch_flatten", "transpose",
                       "broadcast_to", "nn.bias_add", "where", "clip", "nn.leaky_relu",
                       "cast", "concatenate", "zeros", "ones", "zeros_like", "ones_like",
                       "layout_transform"})
"""Ops the generator handles with their own rules (besides UNARY and BINARY)."""

FLOAT_DTYPES = frozenset({"float32", "float64"})


def supported(op_name: str) -> bool:
    """Whether the generator can inline ``op_name``."""
    return op_name in UNARY or op_name in BINARY or op_name in INDEX_OPS


def literal(value: float, dtype: str) -> str:
    """A scalar literal of ``dtype`` as numba source."""
    if dtype == "bool":
        return "True" if value else "False"
    number = float(value)
    if number != number:
        return f"np.{dtype}(np.nan)"
    if number in (float("inf"), float("-inf")):
        return f"np.{dtype}({'-' if number < 0 else ''}np.inf)"
    return f"np.{dtype}({number!r})"
