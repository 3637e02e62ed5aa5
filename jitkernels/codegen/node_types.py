"""Static facts about the nodes of a fused group, as the code generator needs them.

Shared by :mod:`jitkernels.codegen.generator` and :mod:`jitkernels.codegen.concat_split`:
the dims of a node's tensor type (ints, or symbolic dims kept as :class:`DimExpr`), a dim as
generated source, and :class:`Unsupported`, which every generator step raises for what it
does not handle (the caller then runs the group op by op).
"""

from __future__ import annotations

from irlib.ir.dims import AnyDim, DimExpr
from irlib.ir.types import TensorType

from .dim_source import dim_source


class Unsupported(Exception):
    """The group has something the generator does not handle (the caller falls back)."""


def shape_of(node) -> tuple:
    """The dims of ``node``'s tensor type: ints, or :class:`DimExpr` for symbolic ones.

    Args:
        node: a typed IR node of a group.

    Raises:
        Unsupported: for a non-tensor type or an ``Any`` dim.
    """
    ty = node.checked_type
    if not isinstance(ty, TensorType):
        raise Unsupported(f"non-tensor value of type {ty}")
    dims = []
    for d in ty.shape:
        if isinstance(d, DimExpr):
            dims.append(d)
        elif isinstance(d, AnyDim):
            raise Unsupported(f"Any dim in {ty}")
        else:
            dims.append(int(d))
    return tuple(dims)


def src(dim) -> str:
    """A dim as generated source: an int literal, or an expression over the size args.

    Args:
        dim: an int or a :class:`DimExpr`.
    """
    return str(dim) if isinstance(dim, int) else dim_source(dim)
