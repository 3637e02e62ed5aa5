"""Legalize: let ops rewrite their own calls through a registered hook (Relay's
``Legalize(legalize_map_attr_name="FTVMLegalize")``).

For every op call whose op has the registry attribute ``legalize_map_attr_name`` (set with
``get_def(name).set_attr("FTVMLegalize", hook)``), the hook is called as
``hook(attrs, new_args, arg_types + [out_type])`` and its result replaces the call; ``None``
keeps the call. The replacement must compute the same value (the pass cannot check it).

Before/after with a hook ``conv2d(d, w) -> conv2d(d, multiply(w, 2f))``::

    nn.relu(nn.conv2d(%x, %w))
    nn.relu(nn.conv2d(%x, multiply(%w, 2f)))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import IRError
from ..ir import expr as E
from ..op.registry import get_def
from ..ir.functor import ExprMutator
from ._typed import op_name, rewrite_typed_module
from .pass_infra import ModulePass


class _Legalize(ExprMutator):
    def __init__(self, attr_name):
        super().__init__()
        self.attr_name = attr_name

    def enter_function(self, node):
        return not node.get_attr("Primitive")

    def visit_call(self, node, original):
        name = op_name(node)
        hook = get_def(name).get_attr(self.attr_name) if name is not None else None
        if hook is None:
            return node
        types = [a._checked_type for a in original.args] + [original._checked_type]
        replacement = hook(node.attrs, list(node.args), types)
        if replacement is None:
            return node
        if not isinstance(replacement, E.Expr):
            raise IRError(f"{self.attr_name} hook of {name} returned "
                          f"{type(replacement).__name__}, not an expression")
        return replacement


def legalize(func: E.Function, attr_name: str = "FTVMLegalize") -> E.Function:
    """``func`` (type-checked) with every hooked op call legalised.

    Args:
        func: the function.
        attr_name: the op attribute holding the legalisation hook.
    """
    return _Legalize(attr_name).visit(func)


@dataclass(frozen=True)
class Legalize(ModulePass):
    """Apply the ops' legalize hooks (see the module docstring).

    Args:
        legalize_map_attr_name: the registry attribute holding the hooks.
    """

    legalize_map_attr_name: str = "FTVMLegalize"
    name: ClassVar[str] = "Legalize"
    opt_level: ClassVar[int] = 1
    required: ClassVar[tuple] = ("InferType",)

    def transform_module(self, mod, ctx=None):
        """The legalised, type-checked copy of ``mod``."""
        return rewrite_typed_module(mod, lambda f: legalize(f, self.legalize_map_attr_name))
