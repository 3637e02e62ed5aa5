"""RemoveUnusedFunctions: keep only the globals reachable from the entry functions.

Every reference to a global (a call, a global used as a value or passed as an argument)
is followed from the entries (default ``["main"]``); the other globals are dropped. Type
definitions are never removed.

Before/after::

    def @unused(%x) { %x }   def @helper(%x) { %x }   def @main(%y) { @helper(%y) }
    def @helper(%x) { %x }   def @main(%y) { @helper(%y) }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional

from ..analysis.call_graph import CallGraph
from ..errors import UnknownNameError
from ..ir.module import IRModule
from .pass_infra import ModulePass


def remove_unused_functions(mod: IRModule, entry_functions=None) -> IRModule:
    """A copy of ``mod`` holding only the globals reachable from ``entry_functions``.

    Args:
        mod: the module (not mutated).
        entry_functions: names of the entry globals (default ``["main"]``).

    Returns:
        The new module.

    Raises:
        UnknownNameError: if an entry function is not in the module.
    """
    entries = list(entry_functions) if entry_functions is not None else ["main"]
    names = {g.name_hint for g in mod.get_global_vars()}
    for name in entries:
        if name not in names:
            raise UnknownNameError(f"RemoveUnusedFunctions: entry function {name!r} is not "
                                   f"in the module (globals: "
                                   f"{', '.join(g.name_hint for g in mod.get_global_vars())})")
    keep = CallGraph(mod).reachable_from(entries)
    new_mod = mod.copy()
    for gvar in mod.get_global_vars():
        if gvar not in keep:
            new_mod.remove(gvar)
    return new_mod


@dataclass(frozen=True)
class RemoveUnusedFunctions(ModulePass):
    """Remove global functions unreachable from the entry functions.

    Args:
        entry_functions: the entry names (default ``["main"]``).
    """

    entry_functions: Optional[tuple] = None
    name: ClassVar[str] = "RemoveUnusedFunctions"
    opt_level: ClassVar[int] = 1

    def transform_module(self, mod: IRModule, ctx=None) -> IRModule:
        """The module without unreachable globals."""
        return remove_unused_functions(mod, self.entry_functions)
