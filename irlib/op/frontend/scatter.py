"""Scatter ops with ONNX semantics (``onnx.*``), each with a numpy reference:

* ``onnx.scatter_nd(data, indices, updates, reduction)``: ScatterND with every ONNX reduction
  (``none``, ``add``, ``mul``, ``min``, ``max``);
* ``onnx.tensor_scatter(past_cache, update, write_indices, mode, axis)``: write ``update``
  into a KV cache at per-batch offsets (``linear`` or ``circular``).
"""

from __future__ import annotations

import numpy as np

from ...errors import OpImplError, TypeInferenceError
from ..registry import register_opaque
from ..type_relations import expect_tensor

__all__ = []


# -- ScatterND with reductions ------------------------------------------------------------------

def _scatter_nd_rel(arg_types, attrs):
    return expect_tensor(arg_types[0], "onnx.scatter_nd: data")


def _scatter_nd_ref(data, indices, updates, reduction="none"):
    out = np.array(data, copy=True)
    combine = {"none": None, "add": np.add, "mul": np.multiply, "min": np.minimum,
               "max": np.maximum}[reduction]
    flat_indices = indices.reshape(-1, indices.shape[-1])
    flat_updates = updates.reshape((flat_indices.shape[0],) + updates.shape[indices.ndim - 1:])
    for index, update in zip(flat_indices, flat_updates):
        key = tuple(int(i) for i in index)
        out[key] = update if combine is None else combine(out[key], update)
    return (out,)


register_opaque("onnx.scatter_nd", ("data", "indices", "updates"),
                ("onnx.attrs.ScatterNDAttrs", [("reduction", "none")]), _scatter_nd_rel,
                _scatter_nd_ref, "ONNX ScatterND (reduction none/add/mul/min/max)")


# -- TensorScatter ------------------------------------------------------------------------------

def _tensor_scatter_rel(arg_types, attrs):
    cache = expect_tensor(arg_types[0], "onnx.tensor_scatter: past_cache")
    update = expect_tensor(arg_types[1], "onnx.tensor_scatter: update")
    indices = expect_tensor(arg_types[2], "onnx.tensor_scatter: write_indices")
    axis = attrs["axis"]
    if cache.ndim < 2 or update.ndim != cache.ndim or not 0 < axis < cache.ndim:
        raise TypeInferenceError(f"onnx.tensor_scatter: cache {cache} and update {update} "
                                 f"must have one rank >= 2 and axis {axis} in [1, rank)")
    if update.dtype != cache.dtype or indices.ndim != 1 or \
            not indices.dtype.startswith(("int", "uint")):
        raise TypeInferenceError(f"onnx.tensor_scatter: update {update} must match cache "
                                 f"{cache} and write_indices {indices} must be 1-D integers")
    return cache


def _tensor_scatter_ref(past_cache, update, write_indices, mode="linear", axis=1):
    op = "onnx.tensor_scatter"
    capacity, count = past_cache.shape[axis], update.shape[axis]
    others = [d for d in range(past_cache.ndim) if d != axis]
    if [past_cache.shape[d] for d in others] != [update.shape[d] for d in others] or \
            count > capacity:
        raise OpImplError(f"{op}: update {update.shape} does not fit cache {past_cache.shape} "
                          f"along axis {axis}", op=op)
    batch = past_cache.shape[0]
    starts = np.zeros(batch, "int64") if write_indices.size == 0 else \
        write_indices.astype("int64")
    if starts.shape != (batch,):
        raise OpImplError(f"{op}: write_indices of shape {write_indices.shape} for batch "
                          f"{batch}", op=op)
    positions = starts[:, None] + np.arange(count)[None, :]  # [batch, count]
    if mode == "circular":
        positions = positions % capacity
    elif positions.size and (positions.min() < 0 or positions.max() >= capacity):
        raise OpImplError(f"{op}: linear writes at {starts.tolist()} of {count} run past "
                          f"the cache size {capacity}", op=op)
    present = np.array(past_cache, copy=True)
    moved_cache = np.moveaxis(present, axis, 1)  # a view: writes land in ``present``
    moved_update = np.moveaxis(update, axis, 1)
    for b in range(batch):
        moved_cache[b, positions[b]] = moved_update[b]
    return (present,)


register_opaque("onnx.tensor_scatter", ("past_cache", "update", "write_indices"),
                ("onnx.attrs.TensorScatterAttrs", [("mode", "linear"), ("axis", 1)]),
                _tensor_scatter_rel, _tensor_scatter_ref,
                "ONNX TensorScatter: write update into the cache at per-batch offsets along axis "
                "(write_indices is empty for offset 0)")
