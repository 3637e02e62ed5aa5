"""jitkernels.cpu.weight_cache: derived forms of read-only weights, keyed by their memory."""

from __future__ import annotations

import gc

import numpy as np

from jitkernels.cpu.weight_cache import WeightCache, owner_of


def _read_only(shape):
    array = np.arange(np.prod(shape), dtype=np.float32).reshape(shape).copy()   # owns its memory
    array.flags.writeable = False
    return array


def test_fresh_views_of_one_weight_share_an_entry():
    cache, calls = WeightCache(), []

    def make(w):
        calls.append(w.shape)
        return w.sum()

    weight = _read_only((4, 6))
    first = cache.get(weight.reshape(24), "v", make)
    assert cache.get(weight.reshape(24), "v", make) is first    # a new view, same memory
    assert calls == [(24,)]
    cache.get(weight.reshape(6, 4), "v", make)                  # another shape: its own entry
    cache.get(weight.reshape(24), "other", make)                # another variant
    cache.get(weight[1:].reshape(18), "v", make)                # another offset
    assert len(calls) == 4 and len(cache) == 4


def test_writable_weights_are_not_cached():
    cache = WeightCache()
    assert cache.get(np.ones(3, np.float32), "v", lambda w: w * 2) is None
    assert len(cache) == 0


def test_entries_go_with_the_owner():
    cache = WeightCache()
    weight = _read_only((8, 8))
    view = weight.T
    assert owner_of(view) is weight
    cache.get(view, "t", lambda w: np.ascontiguousarray(w))
    assert len(cache) == 1
    del weight, view
    gc.collect()
    assert len(cache) == 0
