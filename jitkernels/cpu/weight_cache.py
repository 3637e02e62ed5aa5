"""A cache of forms derived from read-only weights (packed panels, permuted matrices).

The CPU kernels repack a constant weight into the layout their micro-kernels read: once per
weight, not once per call. A read-only array is the graph's promise that its values stay as
they are (``interp.build`` flags the bound weights, views of its parameter storage,
read-only, and rebinds a weight set later to a new array), so a derived form never goes
stale. Entries are keyed by the memory the weight views (the array owning it, the byte
offset, shape, strides and dtype) plus the caller's variant, so a fresh reshape or
transpose view of the same constant made on every call finds the same entry; an entry is
dropped when the owning array is freed.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

__all__ = ["WeightCache", "owner_of"]


def owner_of(array: np.ndarray) -> np.ndarray:
    """The array that owns ``array``'s memory: the last ndarray of its ``.base`` chain.

    Args:
        array: any ndarray (possibly a view).
    """
    owner = array
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    return owner


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


class WeightCache:
    """Derived forms of read-only weights, one cache per kind of form (see the module
    docstring). Thread-safe; two threads deriving the same entry at once both compute it
    and one result is kept."""

    def __init__(self):
        self._entries: dict = {}
        self._lock = threading.Lock()

    def get(self, weight: np.ndarray, variant, make):
        """``make(weight)``, cached for read-only ``weight``; None for a writable one.

        Args:
            weight: the weight (any view of a read-only array).
            variant: a hashable telling apart the forms one cache holds for one weight
                (a layout, a panel width, a transpose flag).
            make: computes the form from ``weight``.
        """
        if weight.flags.writeable:
            return None
        owner = owner_of(weight)
        key = (id(owner), _address(weight) - _address(owner), weight.shape, weight.strides,
               weight.dtype.str, variant)
        entry = self._entries.get(key)
        if entry is not None and entry[0]() is owner:
            return entry[1]
        value = make(weight)
        try:
            # dropped when the owner is freed (bound names: still callable at interpreter exit)
            ref = weakref.ref(owner, lambda _, key=key, pop=self._entries.pop: pop(key, None))
        except TypeError:
            return value
        with self._lock:
            self._entries[key] = (ref, value)
        return value

    def __len__(self) -> int:
        return len(self._entries)
