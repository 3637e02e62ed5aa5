"""``Mutator``: rewrite a module tree (swap layers, quantise weights, drop effects).

``Mutator().visit(name, node)`` walks the tree from ``node``: every attribute of a module is
dispatched by kind to :meth:`Mutator.visit_module`, :meth:`Mutator.visit_modulelist`,
:meth:`Mutator.visit_param` or :meth:`Mutator.visit_effect`; whatever a method returns
replaces the attribute. The default methods keep leaves as they are and descend into
modules and module lists, so a subclass overrides only the kinds it rewrites.
"""

from __future__ import annotations

from typing import Any

from .core import Effect, Module, ModuleList, Parameter


class Mutator:
    """Base class of module-tree rewrites (see the module docstring)."""

    def visit(self, name: str, node: Any) -> Any:
        """Rewrite the attributes of ``node`` (a module, a module list or a leaf).

        Args:
            name: ``node``'s name in its parent (a dotted path prefix).
            node: the node.

        Returns:
            ``node``, with its attributes replaced by what the visit methods returned.
        """
        if isinstance(node, ModuleList):
            for index, item in enumerate(node.modules):
                node.modules[index] = self._dispatch(f"{name}.{index}" if name else str(index),
                                                     item)
            return node
        if isinstance(node, Module):
            for key, value in list(node.__dict__.items()):
                new_value = self._dispatch(f"{name}.{key}" if name else key, value)
                if new_value is not value:
                    setattr(node, key, new_value)
        return node

    def _dispatch(self, name: str, node: Any) -> Any:
        if isinstance(node, ModuleList):
            return self.visit_modulelist(name, node)
        if isinstance(node, Module):
            return self.visit_module(name, node)
        if isinstance(node, Parameter):
            return self.visit_param(name, node)
        if isinstance(node, Effect):
            return self.visit_effect(name, node)
        return node

    def visit_module(self, name: str, node: Module) -> Any:
        """Rewrite a submodule; the default descends into it.

        Args:
            name: its dotted path.
            node: the module.
        """
        return self.visit(name, node)

    def visit_modulelist(self, name: str, node: ModuleList) -> Any:
        """Rewrite a module list; the default descends into its items.

        Args:
            name: its dotted path.
            node: the list.
        """
        return self.visit(name, node)

    def visit_param(self, name: str, node: Parameter) -> Any:
        """Rewrite a parameter; the default keeps it.

        Args:
            name: its dotted path.
            node: the parameter.
        """
        return node

    def visit_effect(self, name: str, node: Effect) -> Any:
        """Rewrite an effect; the default keeps it.

        Args:
            name: its dotted path.
            node: the effect.
        """
        return node
