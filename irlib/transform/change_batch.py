"""ChangeBatch: change the batch size of chosen parameters (Relay's ``ChangeBatch``).

``ChangeBatch(data, batch_size=16)``: ``data`` maps parameter Vars to the axis holding their
batch. Each function is rebuilt without its declared return type, and each listed variable
is replaced by a new one of the same name whose tensor type has ``batch_size`` on that
axis; type inference then propagates the new shapes (ops with a baked-in batch, such as a
``reshape`` to a fixed shape, then fail to type-check, as in Relay).

Before/after with ``{%x: 0}`` and ``batch_size=8``::

    fn (%x: Tensor[(1, 3), float32]) -> Tensor[(1, 3), float32] { exp(%x) }
    fn (%x: Tensor[(8, 3), float32]) { exp(%x) }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import IRError
from ..ir import expr as E
from ..ir.types import TensorType
from ..ir.rewrite import substitute
from .pass_infra import FunctionPass


@dataclass(frozen=True)
class ChangeBatch(FunctionPass):
    """Set the batch dimension of the listed parameters (see the module docstring).

    Args:
        data: Var -> batch axis.
        batch_size: the new batch size.
    """

    data: dict
    batch_size: int = 16
    name: ClassVar[str] = "ChangeBatch"
    opt_level: ClassVar[int] = 1

    def transform_function(self, func, mod, ctx):
        """``func`` with the listed variables re-typed and no return type."""
        mapping = {}
        for var, axis in self.data.items():
            ty = var.type_annotation
            if not isinstance(ty, TensorType):
                raise IRError(f"ChangeBatch: %{var.name_hint} has no tensor type annotation")
            shape = list(ty.shape)
            shape[axis] = self.batch_size
            mapping[var] = E.Var(var.name_hint, TensorType(shape, ty.dtype))
        params = tuple(mapping.get(p, p) for p in func.params)
        body = substitute(func.body, mapping)
        return E.Function(params, body, None, func.type_params, func.attrs, span=func.span)

    def transform_module(self, mod, ctx=None):
        """The rebuilt module, type-checked."""
        from ..typeinf import infer_module
        return infer_module(super().transform_module(mod, ctx))
