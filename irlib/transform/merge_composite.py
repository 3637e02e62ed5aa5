"""MergeComposite: extract each match of a pattern table into a ``Composite`` function
(Relay's ``MergeComposite(pattern_table)``).

``pattern_table`` lists ``(name, pattern)`` or ``(name, pattern, check)`` entries, tried in
order (earlier entries win). Each non-overlapping match becomes a call of a function with
the attributes ``Composite="<name>"`` and ``PartitionedFromPattern`` (the op names of the
match in post order, each followed by ``_``); see :func:`irlib.dataflow_pattern.partition`.
``check(matched_expr)`` returning False rejects a match.

Before/after with ``[("add_relu", is_op("nn.relu")(is_op("add")(wildcard(), wildcard())))]``::

    nn.relu(add(%a, %b))
    (fn (%FunctionVar_0_0, %FunctionVar_0_1, Composite="add_relu",
         PartitionedFromPattern="add_nn.relu_") { nn.relu(add(...)) })(%a, %b)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import IRError
from ..ir import expr as E
from ._rewrite import map_functions
from .pass_infra import ModulePass


def _entries(pattern_table):
    entries = []
    for entry in pattern_table:
        if not isinstance(entry, (list, tuple)) or len(entry) not in (2, 3):
            raise IRError(f"MergeComposite: a pattern table entry must be (name, pattern) or "
                          f"(name, pattern, check), got {entry!r}")
        name, pattern = entry[0], entry[1]
        check = entry[2] if len(entry) == 3 else None
        entries.append((name, pattern, check))
    return entries


def merge_composite(func: E.Function, pattern_table) -> E.Function:
    """``func`` with the pattern table's matches extracted (see the module docstring)."""
    from ..dataflow_pattern import partition
    body = func.body
    for name, pattern, check in _entries(pattern_table):
        body = partition(pattern, body, {"Composite": name}, check)
    return func.replace(body=body)


@dataclass(frozen=True)
class MergeComposite(ModulePass):
    """Extract pattern-table matches into Composite functions.

    Args:
        pattern_table: ``[(name, pattern[, check]), ...]``.
    """

    pattern_table: list
    name: ClassVar[str] = "MergeComposite"
    opt_level: ClassVar[int] = 0

    def transform_module(self, mod, ctx=None):
        """The rewritten, type-checked copy of ``mod``."""
        from ..typeinf import infer_module
        table = _entries(self.pattern_table)
        new_mod = map_functions(mod, lambda f: merge_composite(f, table))
        return infer_module(new_mod)
