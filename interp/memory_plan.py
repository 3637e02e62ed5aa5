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


class _Storage:
    __slots__ = ("sid", "size", "refs")

    def __init__(self, sid: int, size: int):
        self.sid, self.size, self.refs = sid, size, 0


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
    uses = [0] * len(entry_bytes)
    for node in nodes:
        if node.is_op:
            for entry in node.inputs:
                uses[entry] += 1
    pinned = set(heads)
    storages: list = []
    free: list = []
    owner: list = [None] * len(entry_bytes)

    def new_storage(size: int) -> _Storage:
        storage = _Storage(len(storages), size)
        storages.append(storage)
        return storage

    for node in nodes:
        if not node.is_op:
            for entry in node.outputs:
                owner[entry] = new_storage(entry_bytes[entry])
                owner[entry].refs = 1 << 60      # inputs are never released
            continue
        if node.alias_input:
            storage = owner[node.inputs[0]]
            owner[node.outputs[0]] = storage
            storage.size = max(storage.size, entry_bytes[node.outputs[0]])
            storage.refs += uses[node.outputs[0]] + (1 << 60 if node.outputs[0] in pinned else 0)
        else:
            unused = []
            for entry in node.outputs:
                storage = _take(free, entry_bytes[entry]) or new_storage(entry_bytes[entry])
                storage.refs = uses[entry] + (1 << 60 if entry in pinned else 0)
                owner[entry] = storage
                if storage.refs == 0:        # an unused output: free once the node is done
                    unused.append(storage)
            free.extend(unused)
        for entry in node.inputs:
            storage = owner[entry]
            storage.refs -= 1
            if storage.refs == 0:
                free.append(storage)
    return [s.sid for s in owner], [s.size for s in storages]


def _take(free: list, size: int):
    """Remove and return the best free storage for ``size`` bytes, or None."""
    best, best_key = None, None
    for storage in free:
        if size <= storage.size <= size * MATCH_RANGE:
            key = (0, storage.size)                  # smallest that fits
        elif storage.size < size and storage.size * MATCH_RANGE >= size:
            key = (1, -storage.size)                 # else the largest, grown
        else:
            continue
        if best_key is None or key < best_key:
            best, best_key = storage, key
    if best is None:
        return None
    free.remove(best)
    best.size = max(best.size, size)
    return best


def unplanned_bytes(entry_bytes, alias_entries=()) -> int:
    """Bytes needed with one buffer per entry (no reuse; aliased ``__nop`` outputs free).

    Args:
        entry_bytes: byte size of each entry.
        alias_entries: entry ids that are views of another entry.
    """
    skip = set(alias_entries)
    return sum(size for entry, size in enumerate(entry_bytes) if entry not in skip)
