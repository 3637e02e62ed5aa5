"""FastMath: replace transcendental ops by their fast approximations (Relay's ``FastMath``).

``exp`` becomes ``fast_exp``, ``erf`` becomes ``fast_erf`` and ``tanh`` becomes
``fast_tanh``. ``nn.softmax(x, axis)`` (irlib has no ``nn.fast_softmax`` op) becomes its
expansion over ``fast_exp``: ``e / sum(e, axis, keepdims)`` with
``e = fast_exp(x - max(x, axis, keepdims))``.

Error bounds: the fast ops may be computed by approximations (the numpy references are
exact; compiled kernels may not be). Every implementation must stay within these bounds of
the exact function on float32 inputs, which ``tests/transform/test_fast_math.py`` checks:

======================  ==================================================
``fast_exp(x)``         relative error <= 1e-5 for ``x`` in [-88, 88]
``fast_tanh(x)``        absolute error <= 1e-5
``fast_erf(x)``         absolute error <= 1e-5
softmax expansion       relative error <= 1e-5 (it is softmax over fast_exp)
======================  ==================================================

Before/after::

    exp(%x)
    fast_exp(%x)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import expr as E
from ..ir.functor import ExprMutator
from ._typed import op, op_name, rewrite_typed_module
from .pass_infra import ModulePass

FAST_OPS = {"exp": "fast_exp", "erf": "fast_erf", "tanh": "fast_tanh"}
"""Op name -> its fast counterpart."""

ERROR_BOUNDS = {"fast_exp": ("relative", 1e-5), "fast_tanh": ("absolute", 1e-5),
                "fast_erf": ("absolute", 1e-5), "nn.softmax": ("relative", 1e-5)}
"""The documented error bound of each replacement (kind, bound)."""


def _fast_softmax(data, axis):
    reduce = {"axis": [axis], "keepdims": True, "exclude": False}
    e = op("fast_exp", op("subtract", data, op("max", data, **reduce)))
    return op("divide", e, op("sum", e, **reduce))


class _FastMath(ExprMutator):
    def enter_function(self, node):
        return not node.get_attr("Primitive")

    def visit_call(self, node, original):
        name = op_name(node)
        if name in FAST_OPS:
            return op(FAST_OPS[name], *node.args)
        if name == "nn.softmax":
            return _fast_softmax(node.args[0], node.attrs["axis"])
        return node


def fast_math(func: E.Function) -> E.Function:
    """``func`` with exp/erf/tanh/softmax replaced by fast versions (module docstring)."""
    return _FastMath().visit(func)


@dataclass(frozen=True)
class FastMath(ModulePass):
    """Use the fast approximations of exp, erf, tanh and softmax."""

    name: ClassVar[str] = "FastMath"
    opt_level: ClassVar[int] = 4
    required: ClassVar[tuple] = ("InferType",)

    def transform_module(self, mod, ctx=None):
        """The rewritten, type-checked copy of ``mod``."""
        return rewrite_typed_module(mod, fast_math)
