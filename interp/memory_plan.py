"""Static memory planning for the graph executor (Relay's graph memory planner).

Every *entry* (one tensor output of a graph node) gets a ``storage_id``; entries with the
same id share one buffer, so their live ranges must not overlap. The rules:

* inputs and weights (``null`` nodes) get a storage of their own, never reused;
* op outputs are allocated in execution order from a free list of released storages (best
  fit by byte size within a factor of :data:`MATCH_RANGE`, growing a smaller one when that is
  the only match), and an entry's storage is released after its last consumer ran;
* an op's outputs are allocated *before* its inputs are released, so a kernel never writes
  into a buffer it is still reading;
* graph outputs (heads) are never released;
* a reshape-only ``__nop`` node's output aliases its input's storage (the executor makes it a
  reshaped view), so the storage lives until the last use of either.

:func:`plan_memory` takes a small description of the graph (:class:`PlanNode`) and returns
the ids and the byte size of each storage; :func:`unplanned_bytes` is the footprint with
one buffer per entry, for comparison.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from dataclasses import dataclass

MATCH_RANGE = 16
"""A free storage is reused for a request when their sizes are within this factor."""


@dataclass
class PlanNode:
    """One graph node as the planner sees it.

    Attributes:
        is_op: False for an input/weight (``null``) node.
        inputs: the entry ids the node reads.
        outputs: the entry ids the node writes.
        alias_input: True for a ``__nop`` node whose single output views its first input.
    """

    is_op: bool
    inputs: tuple
    outputs: tuple
    alias_input: bool = False


_PINNED = 1 << 60
"""Reference count that keeps a storage from ever being released (inputs, graph outputs)."""


class PlanTemplate:
    """The size-independent part of a memory plan, prepared once per graph.

    The graph executor of a graph with symbolic dims plans storage again for every new
    binding of its size variables; use counts, pinned outputs and the node structure do not
    depend on the sizes, so they are computed here once and :meth:`plan` only runs the
    allocation loop (about 1 µs per node).

    Args:
        nodes: :class:`PlanNode` s in execution order.
        num_entries: the number of entries.
        heads: the entry ids of the graph outputs.
    """

    def __init__(self, nodes, num_entries: int, heads):
        uses = [0] * num_entries
        for node in nodes:
            if node.is_op:
                for entry in node.inputs:
                    uses[entry] += 1
        pinned = set(heads)
        self.initial_refs = [uses[e] + (_PINNED if e in pinned else 0)
                             for e in range(num_entries)]
        # kind: 0 input/weight, 1 op, 2 reshape-only alias of its first input
        self.steps = [(0 if not node.is_op else 2 if node.alias_input else 1,
                       tuple(node.inputs), tuple(node.outputs)) for node in nodes]
        self.num_entries = num_entries

    def plan(self, entry_bytes) -> tuple:
        """``(storage_ids, storage_bytes)`` for these entry sizes (see :func:`plan_memory`)."""
        initial = self.initial_refs
        size: list = []
        refs: list = []
        owner = [0] * self.num_entries
        free = _FreeList(size)
        for kind, inputs, outputs in self.steps:
            if kind == 0:
                for entry in outputs:
                    owner[entry] = len(size)
                    size.append(entry_bytes[entry])
                    refs.append(_PINNED)          # inputs are never released
                continue
            if kind == 2:
                entry = outputs[0]
                sid = owner[entry] = owner[inputs[0]]
                if entry_bytes[entry] > size[sid]:
                    size[sid] = entry_bytes[entry]
                refs[sid] += initial[entry]
            else:
                unused = []
                for entry in outputs:
                    nbytes = entry_bytes[entry]
                    sid = free.take(nbytes)
                    if sid < 0:
                        sid = len(size)
                        size.append(nbytes)
                        refs.append(0)
                    refs[sid] = initial[entry]
                    owner[entry] = sid
                    if refs[sid] == 0:        # an unused output: free once the node is done
                        unused.append(sid)
                for sid in unused:
                    free.add(sid)
            for entry in inputs:
                sid = owner[entry]
                refs[sid] -= 1
                if refs[sid] == 0:
                    free.add(sid)
        return owner, size


def plan_memory(nodes, entry_bytes, heads) -> tuple:
    """Assign storage ids to the entries of a graph.

    Args:
        nodes: :class:`PlanNode` s in execution order.
        entry_bytes: byte size of each entry (indexed by entry id).
        heads: the entry ids of the graph outputs.

    Returns:
        ``(storage_ids, storage_bytes)``: a storage id per entry, and the byte size of each
        storage (indexed by id; the largest entry using it).
    """
    return PlanTemplate(nodes, len(entry_bytes), heads).plan(entry_bytes)


class _FreeList:
    """Released storages, ordered by ``(byte size, release order)`` for bisection.

    :meth:`take` picks the smallest free storage of at least ``nbytes`` and at most
    ``MATCH_RANGE`` times that; else the largest smaller one within the factor (which then
    grows); among storages of equal size, the one released first.
    """

    __slots__ = ("items", "size", "count")

    def __init__(self, size: list):
        self.items: list = []           # sorted (bytes, release counter, storage id)
        self.size = size
        self.count = 0

    def add(self, sid: int) -> None:
        """Release storage ``sid``."""
        self.count += 1
        insort(self.items, (self.size[sid], self.count, sid))

    def take(self, nbytes: int) -> int:
        """Remove and return the best storage id for ``nbytes`` (grown to it), or -1."""
        items = self.items
        if not items:
            return -1
        position = bisect_left(items, (nbytes, -1, -1))
        if position < len(items) and items[position][0] <= nbytes * MATCH_RANGE:
            return items.pop(position)[2]               # smallest that fits
        if position == 0:
            return -1
        have = items[position - 1][0]                    # the largest smaller size
        if have * MATCH_RANGE < nbytes:
            return -1
        sid = items.pop(bisect_left(items, (have, -1, -1)))[2]
        self.size[sid] = nbytes                          # grown
        return sid


def unplanned_bytes(entry_bytes, alias_entries=()) -> int:
    """Bytes needed with one buffer per entry (no reuse; aliased ``__nop`` outputs free).

    Args:
        entry_bytes: byte size of each entry.
        alias_entries: entry ids that are views of another entry.
    """
    skip = set(alias_entries)
    return sum(size for entry, size in enumerate(entry_bytes) if entry not in skip)
