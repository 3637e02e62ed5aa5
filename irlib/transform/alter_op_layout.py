"""AlterOpLayout: let ops choose a better layout for their calls through a registered hook
(Relay's ``AlterOpLayout``).

For each call whose op has the registry attribute ``FTVMAlterOpLayout`` (set with
``get_def(name).set_attr("FTVMAlterOpLayout", hook)``), the hook is called as
``hook(attrs, inputs, tinfos, out_type)``, with the inputs in their original layouts, and
returns a replacement or ``None``. A replacement that computes the result in another layout
ends in ``layout_transform(new_call, new_layout, original_layout)``; that final transform
is then sunk through the layout-agnostic ops that follow (elementwise, broadcast, bias_add,
pooling, batch_norm, concatenate, exactly as in ConvertLayout), so it lands where a
layout-sensitive op or the function result needs the original layout back.

Before/after with a hook making ``nn.conv2d`` use ``NCHW16c``::

    nn.relu(nn.conv2d(%x, %w))
    layout_transform(nn.relu(nn.conv2d(layout_transform(%x, "NCHW", "NCHW16c"), ...,
                                       data_layout="NCHW16c", ...)), "NCHW16c", "NCHW")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import IRError
from ..ir import expr as E
from ..op.registry import get_def
from ._typed import op_name, rewrite_typed_module
from .convert_layout import _Converter, _restore, _State, convert_layout
from .pass_infra import ModulePass

HOOK = "FTVMAlterOpLayout"


class _Alter(_Converter):
    def __init__(self):
        super().__init__({})

    def visit(self, node) -> _State:
        name = op_name(node)
        hook = get_def(name).get_attr(HOOK) if name is not None else None
        if hook is None:
            return super().visit(node)
        inputs = [_restore(self.states[a]) for a in node.args]
        tinfos = [a._checked_type for a in node.args]
        replacement = hook(node.attrs, inputs, tinfos, node._checked_type)
        if replacement is None:
            return _State(node.replace(args=tuple(inputs)))
        if not isinstance(replacement, E.Expr):
            raise IRError(f"{HOOK} hook of {name} returned {type(replacement).__name__}, "
                          f"not an expression")
        if op_name(replacement) == "layout_transform":
            attrs = replacement.attrs
            return _State(replacement.args[0], attrs["src_layout"], attrs["dst_layout"])
        return _State(replacement)


def alter_op_layout(func: E.Function) -> E.Function:
    """``func`` (type-checked) with the alter-layout hooks applied (module docstring)."""
    return _Alter().run(func)


@dataclass(frozen=True)
class AlterOpLayout(ModulePass):
    """Apply the ops' alter-layout hooks and sink the layout changes."""

    name: ClassVar[str] = "AlterOpLayout"
    opt_level: ClassVar[int] = 3
    required: ClassVar[tuple] = ("InferType",)

    def transform_module(self, mod, ctx=None):
        """The altered, type-checked copy of ``mod``."""
        return rewrite_typed_module(mod, alter_op_layout)


@dataclass(frozen=True)
class TargetAlterOpLayout(AlterOpLayout):
    """:class:`AlterOpLayout` plus a target's layout preference (what Relay's x86 strategy
    does when it alters ``conv2d`` to ``NCHWc``).

    After the hooks, the calls of the ops in ``desired_layouts`` that ``accept`` admits are
    converted as :class:`~irlib.transform.ConvertLayout` would (the new layout flows through
    the layout-agnostic ops that follow; a transform is left only where a value needs its
    original layout back). Same name and level as AlterOpLayout, so ``opt_level < 3`` or
    ``disabled_pass=["AlterOpLayout"]`` turn it off. :func:`interp.build` uses it for the
    CPU, whose convolution kernels run fastest channels-last.

    Args:
        desired_layouts: op name -> layouts, as for ConvertLayout.
        accept: ``call -> bool`` (the typed call); None accepts every call.
    """

    desired_layouts: dict = None
    accept: object = None

    def transform_module(self, mod, ctx=None):
        """The altered, converted, type-checked copy of ``mod``."""
        altered = super().transform_module(mod, ctx)
        if not self.desired_layouts:
            return altered
        return rewrite_typed_module(
            altered, lambda f: convert_layout(f, self.desired_layouts, self.accept))
