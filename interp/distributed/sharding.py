"""Getting weights from rank 0 to every rank: broadcast whole, or scatter in shards.

In a tensor-parallel run only rank 0 needs to read the checkpoint. Each sharded layer says
how its weights are cut (its *shard plan*: parameter name -> the axis cut into
``world_size`` parts, or None for a weight every rank holds whole), and
:func:`load_from_worker0` fills every rank's parameters: a cut weight is scattered
(``MPI_Scatter``: rank ``r`` receives only its part), a whole one broadcast (``MPI_Bcast``).
Ranks other than 0 pass no data; their parameters' declared shapes say what they receive.
On one process the weights are simply copied (a cut weight keeps its only part, the whole).
"""

from __future__ import annotations

from typing import Mapping, Optional

import numpy as np

from .comm import DistributedError, collectives, rank

__all__ = ["broadcast_array", "scatter_array", "shard", "load_from_worker0"]


def _placeholder(shape, dtype) -> np.ndarray:
    """An array of ``shape`` and ``dtype`` that takes no memory (zero strides): what a rank
    without data hands to a collective that only reads rank 0's data."""
    return np.broadcast_to(np.zeros((), dtype=dtype), tuple(shape))


def broadcast_array(array: Optional[np.ndarray], shape, dtype) -> np.ndarray:
    """Rank 0's ``array`` on every rank.

    Args:
        array: the data on rank 0 (ignored elsewhere; None is fine there).
        shape: its shape (every rank must give the same).
        dtype: its dtype.

    Raises:
        DistributedError: rank 0 gives no array, or one of another shape or dtype.
    """
    backend = collectives()
    local = _checked(array, tuple(shape), np.dtype(dtype), "broadcast_array")
    if backend is None:
        return np.array(local, copy=True)
    return backend.broadcast_from_worker0(local)


def scatter_array(array: Optional[np.ndarray], axis: int, shape, dtype) -> np.ndarray:
    """Part ``rank`` of rank 0's ``array`` cut into ``world_size`` equal parts along
    ``axis``.

    Args:
        array: the whole tensor on rank 0 (ignored elsewhere; None is fine there).
        axis: the axis to cut.
        shape: the whole tensor's shape (every rank must give the same).
        dtype: its dtype.

    Raises:
        DistributedError: rank 0's array does not match ``shape``/``dtype``, or the axis does
            not divide into ``world_size`` parts.
    """
    backend = collectives()
    shape = tuple(shape)
    size = 1 if backend is None else backend.world_size
    if not -len(shape) <= axis < len(shape):
        raise DistributedError(f"scatter_array: axis {axis} is out of range for shape {shape}")
    axis %= len(shape)
    if shape[axis] % size:
        raise DistributedError(f"scatter_array: axis {axis} of shape {shape} does not divide "
                               f"into {size} parts")
    local = _checked(array, shape, np.dtype(dtype), "scatter_array")
    if backend is None:
        return np.array(local, copy=True)
    return backend.scatter_from_worker0(local, axis)


def _checked(array, shape: tuple, dtype: np.dtype, what: str) -> np.ndarray:
    """Rank 0's array checked against ``shape``/``dtype``; a placeholder elsewhere."""
    if rank() != 0:
        return _placeholder(shape, dtype)
    if array is None:
        raise DistributedError(f"{what}: rank 0 must give the data")
    array = np.asarray(array)
    if tuple(array.shape) != shape or array.dtype != dtype:
        raise DistributedError(f"{what}: rank 0's array is {array.dtype}{list(array.shape)}, "
                               f"expected {dtype}{list(shape)}")
    return array


def shard(array: np.ndarray, axis: Optional[int], part: int, parts: int) -> np.ndarray:
    """Part ``part`` of ``array`` cut into ``parts`` equal parts along ``axis`` (the whole
    array when ``axis`` is None): the slice :func:`scatter_array` delivers to rank ``part``,
    computed locally (for tests and for loading shards from per-rank files).

    Args:
        array: the whole tensor.
        axis: the axis to cut, or None.
        part: which part, in ``[0, parts)``.
        parts: the number of parts (must divide the axis).

    Raises:
        DistributedError: the axis does not divide, or ``part`` is out of range.
    """
    array = np.asarray(array)
    if axis is None:
        return array
    if not 0 <= part < parts or array.shape[axis] % parts:
        raise DistributedError(f"shard: cannot take part {part} of {parts} along axis {axis} "
                               f"of shape {list(array.shape)}")
    step = array.shape[axis] // parts
    index = [slice(None)] * array.ndim
    index[axis] = slice(part * step, (part + 1) * step)
    return array[tuple(index)]


def load_from_worker0(model, weights: Optional[Mapping[str, np.ndarray]],
                      plan: Optional[Mapping[str, Optional[int]]] = None) -> None:
    """Bind every parameter of ``model`` to its part of rank 0's ``weights``.

    Args:
        model: an nn Module whose parameters have the *per-rank* (sharded) shapes.
        weights: on rank 0, the whole (unsharded) weights by parameter name, as numpy
            arrays or anything ``np.asarray`` takes (a torch ``state_dict`` works through
            ``.numpy()``); ignored on the other ranks (pass None).
        plan: parameter name -> cut axis (None: broadcast whole); ``model.shard_plan()``
            when omitted. Names missing from the plan are broadcast whole.

    Raises:
        DistributedError: rank 0 lacks a weight, or a weight's shape does not fit the plan.
    """
    if plan is None:
        plan = model.shard_plan() if hasattr(model, "shard_plan") else {}
    backend = collectives()
    size = 1 if backend is None else backend.world_size
    for name, param in model.named_parameters():
        local_shape = tuple(int(d) for d in param.shape)
        axis = plan.get(name)
        data = None
        if rank() == 0:
            if weights is None or name not in weights:
                raise DistributedError(f"load_from_worker0: rank 0 has no weight {name!r}")
            data = np.asarray(weights[name])
        if axis is None:
            value = broadcast_array(data, local_shape, param.dtype)
        else:
            whole = list(local_shape)
            whole[axis] *= size
            value = scatter_array(data, axis, whole, param.dtype)
        param.data = value
