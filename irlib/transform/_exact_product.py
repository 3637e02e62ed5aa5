"""Bounds that make an integer matrix product exact in float32, for
:mod:`irlib.transform.lower_integer_matmul`: the depth split into exact chunks, and the
one-signed bound of an activation written as ``p - c`` (``c`` constant along the depth)."""

from __future__ import annotations

import numpy as np

from ._value_range import dtype_range, exact_integer_limit

__all__ = ["chunk_bounds", "one_signed_bound", "PRODUCT_DTYPE", "MAX_CHUNKS"]

PRODUCT_DTYPE = "float32"
"""The float type the products run in (exact for integers up to ``2**24``)."""

MAX_CHUNKS = 16
"""The most pieces a product's depth is split into; beyond, the integer product stays."""


def chunk_bounds(depth: int, magnitude: float, weight_abs=None, weight_max: float = 0.0):
    """Split ``range(depth)`` into the fewest equal chunks whose products are exact.

    Args:
        depth: K, the summed axis.
        magnitude: ``max|a|`` of the left operand.
        weight_abs: ``|W|`` as a ``(K, N)`` integer array when the right operand is a
            constant (each chunk's bound is ``magnitude * max_j sum_k |W[k, j]|``), else None.
        weight_max: ``max|W|`` when it is not a constant (bound ``K * magnitude * max|W|``).

    Returns:
        ``[(k0, k1), ...]`` covering ``0..depth``, or None when even :data:`MAX_CHUNKS`
        chunks are not exact, or the whole sum could leave int32 (the integer result would
        wrap).
    """
    limit = exact_integer_limit(PRODUCT_DTYPE)
    if weight_abs is None:
        total = depth * magnitude * weight_max
        return [(0, depth)] if total <= limit else None
    cumulative = np.concatenate([np.zeros((1, weight_abs.shape[1]), np.int64),
                                 np.cumsum(weight_abs, axis=0, dtype=np.int64)])
    if magnitude * float(cumulative[-1].max(initial=0)) > dtype_range("int32").hi:
        return None
    for count in range(1, min(MAX_CHUNKS, max(depth, 1)) + 1):
        edges = [round(i * depth / count) for i in range(count + 1)]
        sums = [(cumulative[b] - cumulative[a]).max(initial=0) for a, b in zip(edges, edges[1:])]
        if magnitude * float(max(sums)) <= limit:
            return list(zip(edges, edges[1:]))
    return None


def one_signed_bound(weight: np.ndarray, magnitude: float) -> float:
    """The largest partial sum of ``p @ weight`` over any subset of the depth, for ``p`` of
    one sign with ``|p| <= magnitude``: ``magnitude * max_j max(sum of W[:, j] > 0,
    -(sum of W[:, j] < 0))`` (the positive and negative terms cannot cancel into more).

    Args:
        weight: the ``(K, N)`` integer weight.
        magnitude: ``max|p|``.
    """
    values = weight.astype(np.int64)
    positive = np.where(values > 0, values, 0).sum(axis=0)
    negative = np.where(values < 0, -values, 0).sum(axis=0)
    return magnitude * float(np.maximum(positive, negative).max(initial=0))
