"""Shared by the multi-process tests and their worker script: the per-rank inputs of a case.

A case is a JSON-able dict; :func:`case_input` makes rank ``r``'s input from the case's seed
and ``r`` alone, so the test process can rebuild every rank's input and compute the expected
result with numpy, independently of the code under test.
"""

from __future__ import annotations

import ml_dtypes  # noqa: F401  (registers the bfloat16 dtype name)
import numpy as np


def case_input(case: dict, rank: int) -> np.ndarray:
    """Rank ``rank``'s input of ``case`` (keys ``shape``, ``dtype``, ``seed``).

    Integers are small (-3..3; 1..3 for ``prod``) so sums and products stay exact; floats
    are uniform in [-2, 2).
    """
    rng = np.random.default_rng(case["seed"] * 1000 + rank)
    shape, dtype = tuple(case["shape"]), np.dtype(case["dtype"])
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    if dtype.kind in "iu":
        low = 1 if case.get("op_type") == "prod" else (0 if dtype.kind == "u" else -3)
        return rng.integers(low, 4, size=shape).astype(dtype)
    return rng.uniform(-2.0, 2.0, size=shape).astype(dtype)


def model_weights(model, seed: int) -> dict:
    """Random float32 weights for every parameter of an (unsharded) nn model, by name."""
    rng = np.random.default_rng(seed)
    return {name: (rng.standard_normal([int(d) for d in param.shape]) * 0.3).astype(
        param.dtype) for name, param in model.named_parameters()}
