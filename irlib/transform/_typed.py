"""Helpers for passes that need types: run a rewrite over the type-checked functions of a
module and re-check the result, and small builders used by several rewrites."""

from __future__ import annotations

import numpy as np

from ..ir import expr as E
from ..ir.types import TensorType
from ..op.registry import make_call
from ._rewrite import map_functions
from .pass_infra import module_is_typed


def typed(mod):
    """``mod`` type-checked (itself if it already is)."""
    from ..typeinf import infer_module
    return mod if module_is_typed(mod) else infer_module(mod)


def rewrite_typed_module(mod, rewrite, skip_primitive=True):
    """Apply ``rewrite(func) -> func`` to every function of the typed ``mod``; re-infer types.

    Args:
        mod: the module (not mutated).
        rewrite: a function from a type-checked Function to a Function.
        skip_primitive: leave fused ``Primitive`` functions alone too.

    Returns:
        The new, type-checked module (``mod`` typed, if nothing changed).
    """
    from ..typeinf import infer_module
    mod = typed(mod)

    def guarded(func):
        if skip_primitive and func.get_attr("Primitive"):
            return func
        return rewrite(func)

    new_mod = map_functions(mod, guarded)
    changed = any(new_mod[g] is not f for g, f in mod.items())
    return infer_module(new_mod) if changed else new_mod


def op(name, *args, **attrs):
    """A call of op ``name`` (attrs by keyword)."""
    return make_call(name, tuple(args), attrs or None)


def scalar(value, dtype):
    """A rank-0 constant of ``dtype``.

    Args:
        value: the Python number.
        dtype: its dtype.
    """
    return E.Constant(np.array(value, dtype=dtype))


def tensor_type(node):
    """The node's inferred TensorType, or None."""
    ty = node._checked_type
    return ty if isinstance(ty, TensorType) else None


def op_name(node):
    """The op name if ``node`` is an op call, else None."""
    if type(node) is E.Call and isinstance(node.op, E.Op):
        return node.op.name
    return None


def expand_to_axis(bias, ndim: int, axis: int):
    """``bias`` (rank 1) with trailing unit axes so it broadcasts along ``axis`` of a rank-``ndim``
    tensor (Relay's ``ExpandBiasToMatchAxis``)."""
    pad = ndim - axis - 1
    return op("expand_dims", bias, axis=1, num_newaxis=pad) if pad > 0 else bias
