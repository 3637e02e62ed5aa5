"""Type inference as a pass: :class:`InferType` and :func:`infer_type`.

``InferType()`` returns a new module in which every function is rebuilt with
``checked_type`` on every expression (``Op`` and ``Constructor`` nodes, which are shared,
excepted), the missing annotations of parameters, let variables and return types filled in,
and ``type_args`` on calls of polymorphic functions and constructors. The machinery lives in
:mod:`irlib.typeinf`; see :mod:`irlib.typeinf.driver` for how leftover holes of top-level
functions are generalised into type parameters.

Before/after in the text format::

    fn (%x: Tensor[(3), float32]) { add(%x, 1f) }
    fn (%x: Tensor[(3), float32]) -> Tensor[(3), float32] {
      add(%x, 1f) /* ty=Tensor[(3), float32] */
    }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir.module import IRModule
from ..typeinf import infer_expr, infer_module
from .pass_infra import ModulePass


@dataclass(frozen=True)
class InferType(ModulePass):
    """Infer and check the types of every function of a module (Relay's ``InferType``).

    Raises (when called):
        TypeInferenceError: listing each error found in the first ill-typed group of
            mutually recursive globals.
    """

    name: ClassVar[str] = "InferType"
    opt_level: ClassVar[int] = 0

    def transform_module(self, mod: IRModule, ctx=None) -> IRModule:
        """The typed copy of ``mod`` (see the module docstring)."""
        return infer_module(mod)


def infer_type(expr, mod=None):
    """The typed copy of an expression (TVM's ``run_infer_type``).

    Args:
        expr: the expression; its free variables become parameters of a wrapper function.
        mod: the module whose globals and types ``expr`` refers to (it is checked too);
            None for an empty one.

    Returns:
        The typed function if ``expr`` is a Function, else the typed expression.

    Raises:
        TypeInferenceError: if ``expr`` or ``mod`` is ill-typed.
    """
    return infer_expr(expr, mod)
