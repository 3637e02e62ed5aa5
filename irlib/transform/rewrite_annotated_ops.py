"""RewriteAnnotatedOps: turn ``on_device`` annotations into device copies (Relay ≤0.8's
``RewriteAnnotatedOps(fallback_device)``, following the legacy v0.7 rules).

Every expression is placed on a device: the device of an ``on_device`` annotation wrapping
it (a projection ``t.i`` of an annotated tuple inherits the tuple's device), else
``fallback_device`` (a device type code, 1 = cpu, 2 = cuda, a name or a Device). Each
*consumer* -- a call (its arguments), a tuple (its fields), a projection (its tuple), a let
(its value and body) or an if (its condition and branches) -- receives every input that was
placed elsewhere through its own ``device_copy(value, src, dst)``; one copy per consumer,
never shared. Unannotated variables and constants live anywhere and are never copied. The
annotations themselves are removed (including those on the leaves of a tuple result), and
the function's own result stays where it was computed.

Before/after (fallback cpu)::

    subtract(on_device(add(%x, %y), virtual_device="cuda"), %z)
    subtract(device_copy(add(%x, %y), src_virtual_device="cuda", dst_virtual_device="cpu"), %z)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import IRError
from ..ir import expr as E
from ..ir.functor import children, post_order, rebuild
from ..op.device_copy import device_copy, device_name
from ._rewrite import map_functions
from ._typed import op_name
from .pass_infra import ModulePass

_LEAVES = (E.Var, E.GlobalVar, E.Constant, E.Op, E.Constructor)


def _consumed_positions(node) -> range:
    """Positions (in :func:`children` order) of the inputs ``node`` consumes on its device."""
    kind = type(node)
    if kind is E.Call:
        return range(1, len(node.args) + 1)   # not the callee
    if kind is E.Let:
        return range(1, 3)                     # value and body, not the variable
    if kind in (E.Tuple, E.TupleGetItem, E.If):
        return range(len(children(node)))
    return range(0)


def _placements(order) -> dict:
    """Node -> device name for every annotated node (the ``on_device`` call and its body)."""
    placed: dict = {}
    for node in order:
        if op_name(node) != "on_device":
            continue
        device = device_name(node.attrs["virtual_device"])
        for target in (node, node.args[0]):
            if placed.setdefault(target, device) != device:
                raise IRError(f"RewriteAnnotatedOps: an expression is annotated with two "
                              f"devices, {placed[target]} and {device}")
    for node in order:
        if type(node) is E.TupleGetItem and node.tuple_value in placed:
            placed.setdefault(node, placed[node.tuple_value])
    return placed


def rewrite_annotated_ops(func: E.Function, fallback_device) -> E.Function:
    """``func`` without ``on_device`` annotations, with device copies on cross-device edges.

    Args:
        func: the function.
        fallback_device: the device of unannotated expressions (see :func:`device_name`).

    Returns:
        The rewritten function (``func`` itself when it has no annotation).

    Raises:
        IRError: if one expression is annotated with two different devices.
    """
    order = post_order(func.body)
    placed = _placements(order)
    if not placed:
        return func
    fallback = device_name(fallback_device)
    memo: dict = {}
    for node in order:
        name = op_name(node)
        if name == "on_device":
            memo[node] = memo[node.args[0]]
            continue
        kids = children(node)
        new_kids = [memo.get(kid, kid) for kid in kids]
        if name != "device_copy":
            here = placed.get(node, fallback)
            for position in _consumed_positions(node):
                source = kids[position]
                if isinstance(source, _LEAVES) and source not in placed:
                    continue
                there = placed.get(source, fallback)
                if there != here:
                    new_kids[position] = device_copy(new_kids[position], there, here)
        memo[node] = rebuild(node, tuple(new_kids))
    return func.replace(body=memo[func.body])


@dataclass(frozen=True)
class RewriteAnnotatedOps(ModulePass):
    """Replace ``on_device`` annotations by device copies (see the module docstring).

    Args:
        fallback_device: the device type code (1 = cpu, 2 = cuda), name or Device of
            unannotated expressions.
    """

    fallback_device: object
    name: ClassVar[str] = "RewriteAnnotatedOps"
    opt_level: ClassVar[int] = 1
    required: ClassVar[tuple] = ("InferType",)

    def transform_module(self, mod, ctx=None):
        """The rewritten, type-checked copy of ``mod``."""
        from ..typeinf import infer_module
        return infer_module(map_functions(
            mod, lambda f: rewrite_annotated_ops(f, self.fallback_device)))
