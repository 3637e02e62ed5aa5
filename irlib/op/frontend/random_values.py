"""Random ops with ONNX semantics (``onnx.*``), each with a numpy reference: the
``RandomUniformLike``/``RandomNormalLike``/``Bernoulli`` draws and training-mode ``Dropout``.
"""

from __future__ import annotations

import numpy as np

from ...ir.types import TensorType, TupleType, normalize_dtype
from ..registry import register_opaque
from ..type_relations import expect_tensor

__all__ = ['RANDOM_OPS']


# -- random ops ----------------------------------------------------------------------------------
# Values differ between runs (unless seeded); the importer never folds them.

def _rng(seed):
    return np.random.default_rng(None if seed < 0 else int(seed))


def _random_like_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "random op: data")
    return TensorType(data.shape, normalize_dtype(attrs["dtype"]) if attrs["dtype"]
                      else data.dtype)


def _uniform_like_ref(data, low=0.0, high=1.0, dtype="", seed=-1.0):
    values = _rng(seed).uniform(low, high, size=data.shape)
    return (values.astype(dtype or data.dtype),)


def _normal_like_ref(data, mean=0.0, scale=1.0, dtype="", seed=-1.0):
    values = _rng(seed).normal(mean, scale, size=data.shape)
    return (values.astype(dtype or data.dtype),)


def _bernoulli_ref(data, dtype="", seed=-1.0):
    draws = _rng(seed).uniform(0.0, 1.0, size=data.shape) < data
    return (draws.astype(dtype or data.dtype),)


def _dropout_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "onnx.dropout: data")
    return TupleType([data, TensorType(data.shape, "bool")])


def _dropout_ref(data, ratio, seed=-1.0):
    rate = float(np.asarray(ratio).reshape(-1)[0]) if np.size(ratio) else 0.5
    keep = _rng(seed).uniform(0.0, 1.0, size=data.shape) >= rate
    scale = 1.0 / (1.0 - rate) if rate < 1 else 0.0
    return ((data * keep * scale).astype(data.dtype), keep)


_RANDOM_ATTRS = [("dtype", ""), ("seed", -1.0)]
register_opaque("onnx.random_uniform_like", ("data",),
                ("onnx.attrs.RandomAttrs", [("low", 0.0), ("high", 1.0)] + _RANDOM_ATTRS),
                _random_like_rel, _uniform_like_ref, "uniform random values shaped like data")
register_opaque("onnx.random_normal_like", ("data",),
                ("onnx.attrs.RandomAttrs", [("mean", 0.0), ("scale", 1.0)] + _RANDOM_ATTRS),
                _random_like_rel, _normal_like_ref, "normal random values shaped like data")
register_opaque("onnx.bernoulli", ("data",), ("onnx.attrs.RandomAttrs", _RANDOM_ATTRS),
                _random_like_rel, _bernoulli_ref, "1 with probability data, else 0")
register_opaque("onnx.dropout", ("data", "ratio"), ("onnx.attrs.RandomAttrs", [("seed", -1.0)]),
                _dropout_rel, _dropout_ref, "training-mode dropout: (scaled output, keep mask)",
                tuple_output=True)

#: ops whose results are random (never constant-folded).
RANDOM_OPS = frozenset({"onnx.random_uniform_like", "onnx.random_normal_like",
                        "onnx.bernoulli", "onnx.dropout"})
