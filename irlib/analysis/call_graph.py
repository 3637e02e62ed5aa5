"""The call graph of a module: which global functions refer to which (Relay's ``CallGraph``).

An edge ``@f -> @g`` means the body of ``@f`` mentions ``@g``: as a callee, as a value, or
as an argument. Recursion (direct or mutual) is a cycle. Example::

    graph = call_graph(mod)
    graph.callees(mod.get_global_var("main"))   # [@helper]
    graph.is_recursive(mod.get_global_var("loop"))
    graph.bottom_up_order()                     # callees before callers
"""

from __future__ import annotations

from ..errors import UnknownNameError
from ..ir import expr as E
from ..ir.functor import children, post_order
from ..ir.module import IRModule
from .scc import strongly_connected_components


class CallGraph:
    """The call graph of ``mod`` (built once; the module is not kept in sync).

    Args:
        mod: the module.
    """

    def __init__(self, mod: IRModule):
        self.module = mod
        self._by_name = {g.name_hint: g for g in mod.get_global_vars()}
        self._refs: dict = {}      # gvar -> {callee gvar: occurrences}
        for gvar, func in mod.items():
            counts: dict = {}
            # Count occurrences (edges), not nodes: one GlobalVar object is usually shared.
            for node in post_order(func):
                for child in children(node):
                    if type(child) is E.GlobalVar and child.name_hint in self._by_name:
                        target = self._by_name[child.name_hint]
                        counts[target] = counts.get(target, 0) + 1
            self._refs[gvar] = counts
        self._callers: dict = {g: [] for g in self._refs}
        for caller, counts in self._refs.items():
            for callee in counts:
                self._callers[callee].append(caller)
        nodes = list(self._refs)
        self._components = strongly_connected_components(
            nodes, {g: list(self._refs[g]) for g in nodes})
        self._component_of = {g: i for i, comp in enumerate(self._components) for g in comp}

    def _key(self, gvar) -> E.GlobalVar:
        name = gvar if isinstance(gvar, str) else gvar.name_hint
        found = self._by_name.get(name)
        if found is None:
            raise UnknownNameError(f"call graph: no global function {name!r} in the module")
        return found

    def callees(self, gvar) -> list:
        """Globals ``gvar`` refers to, sorted by name."""
        return sorted(self._refs[self._key(gvar)], key=lambda g: g.name_hint)

    def callers(self, gvar) -> list:
        """Globals that refer to ``gvar``, sorted by name."""
        return sorted(self._callers[self._key(gvar)], key=lambda g: g.name_hint)

    def global_call_count(self, gvar) -> int:
        """How many references to globals the body of ``gvar`` holds."""
        return sum(self._refs[self._key(gvar)].values())

    def ref_count(self, gvar) -> int:
        """How many times other globals (or itself) refer to ``gvar``."""
        target = self._key(gvar)
        return sum(counts.get(target, 0) for counts in self._refs.values())

    def is_recursive(self, gvar) -> bool:
        """Whether ``gvar`` can reach itself (direct or mutual recursion)."""
        key = self._key(gvar)
        component = self._components[self._component_of[key]]
        return len(component) > 1 or key in self._refs[key]

    def reachable_from(self, entries) -> set:
        """Globals reachable from ``entries`` (GlobalVars or names), entries included."""
        seen: set = set()
        stack = [self._key(e) for e in entries]
        while stack:
            gvar = stack.pop()
            if gvar in seen:
                continue
            seen.add(gvar)
            stack.extend(self._refs[gvar])
        return seen

    def bottom_up_order(self) -> list:
        """Every global, callees before callers (members of a cycle in name order)."""
        return [g for comp in self._components for g in sorted(comp, key=lambda v: v.name_hint)]

    def print_var(self, gvar) -> str:
        """A line describing ``gvar``'s node: its callees and reference count."""
        names = ", ".join("@" + g.name_hint for g in self.callees(gvar)) or "none"
        return (f"@{self._key(gvar).name_hint}: calls {names}; "
                f"referenced {self.ref_count(gvar)} time(s)")

    def __str__(self) -> str:
        return "\n".join(self.print_var(g) for g in sorted(self._refs, key=lambda v: v.name_hint))


def call_graph(mod: IRModule) -> CallGraph:
    """The :class:`CallGraph` of ``mod``.

    Args:
        mod: an IRModule.

    Returns:
        Its call graph.
    """
    if not isinstance(mod, IRModule):
        raise TypeError(f"call_graph expects an IRModule, got {type(mod).__name__}")
    return CallGraph(mod)
