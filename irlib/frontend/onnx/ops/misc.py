"""Assorted ONNX ops mapped onto the ``onnx.*`` ops of :mod:`irlib.op.frontend`:
Unique, NonMaxSuppression, BitCast, Det, DFT, the window functions, CumProd."""

from __future__ import annotations

import numpy as np

from ....op.frontend import spectral
from ..importer import onnx_dtype
from ..registry import converter
from .common import constant_ints, normalize_axis


@converter("Unique", since=11)
def _unique(ctx, inputs, attrs):
    data = inputs[0]
    axis = attrs.get("axis")
    if axis is not None:
        axis = normalize_axis(int(axis), ctx.ndim(data))
    tup = ctx.emit("onnx.unique", data, axis=axis, sorted=bool(attrs.get("sorted", 1)))
    return [ctx.tuple_get(tup, i) for i in range(4)][:ctx.num_outputs]


@converter("NonMaxSuppression", since=10)
def _non_max_suppression(ctx, inputs, attrs):
    padded = list(inputs) + [None] * (5 - len(inputs))
    boxes, scores, limit, iou, score = padded[:5]
    limit = ctx.const(np.zeros(0, "int64")) if limit is None else \
        ctx.emit("cast", limit, dtype="int64")
    iou = ctx.const(np.zeros(0, "float32")) if iou is None else \
        ctx.emit("cast", iou, dtype="float32")
    score = ctx.const(np.zeros(0, "float32")) if score is None else \
        ctx.emit("cast", score, dtype="float32")
    return ctx.emit("onnx.non_max_suppression", boxes, scores, limit, iou, score,
                    center_point_box=int(attrs.get("center_point_box", 0)))


@converter("BitCast", since=26)
def _bitcast(ctx, inputs, attrs):
    return ctx.emit("onnx.bitcast", inputs[0], dtype=onnx_dtype(attrs["to"]))


@converter("Det", since=11)
def _det(ctx, inputs, attrs):
    return ctx.emit("onnx.det", inputs[0])


def _dft(ctx, data, length, axis, attrs):
    def vector(value, dtype):
        if value is None:
            return ctx.const(np.zeros(0, dtype))
        return ctx.emit("cast", value, dtype=dtype)
    if isinstance(axis, int):
        axis = ctx.const(np.array([axis], "int64"))
    return ctx.emit("onnx.dft", data, vector(length, "int64"), vector(axis, "int64"),
                    inverse=bool(attrs.get("inverse", 0)),
                    onesided=bool(attrs.get("onesided", 0)))


@converter("DFT", since=17)
def _dft_v17(ctx, inputs, attrs):
    length = inputs[1] if len(inputs) > 1 else None
    return _dft(ctx, inputs[0], length, int(attrs.get("axis", 1)), attrs)


@converter("DFT", since=20)
def _dft_v20(ctx, inputs, attrs):
    length = inputs[1] if len(inputs) > 1 else None
    axis = inputs[2] if len(inputs) > 2 and inputs[2] is not None else -2
    return _dft(ctx, inputs[0], length, axis, attrs)


def _window(kind: str):
    def convert(ctx, inputs, attrs):
        dtype = onnx_dtype(attrs.get("output_datatype", 1))
        periodic = bool(attrs.get("periodic", 1))
        size = constant_ints(ctx, inputs[0])
        if size is not None:
            return ctx.const(spectral.window_values(size[0], kind, periodic, dtype))
        return ctx.emit("onnx.window", ctx.emit("cast", inputs[0], dtype="int64"), kind=kind,
                        periodic=periodic, dtype=dtype)
    return convert


converter("HannWindow", since=17)(_window("hann"))
converter("HammingWindow", since=17)(_window("hamming"))
converter("BlackmanWindow", since=17)(_window("blackman"))


@converter("CumProd", since=26)
def _cumprod(ctx, inputs, attrs):
    return ctx.emit("onnx.cumprod", inputs[0], ctx.emit("cast", inputs[1], dtype="int64"),
                    exclusive=bool(attrs.get("exclusive", 0)),
                    reverse=bool(attrs.get("reverse", 0)))


@converter("StringConcat", since=20)
def _string_concat(ctx, inputs, attrs):
    return ctx.emit("onnx.string_concat", inputs[0], inputs[1])


@converter("RegexFullMatch", since=20)
def _regex_full_match(ctx, inputs, attrs):
    return ctx.emit("onnx.regex_full_match", inputs[0], pattern=attrs.get("pattern", ""))


@converter("StringSplit", since=20)
def _string_split(ctx, inputs, attrs):
    tup = ctx.emit("onnx.string_split", inputs[0], delimiter=attrs.get("delimiter", ""),
                   maxsplit=int(attrs.get("maxsplit", -1)))
    return [ctx.tuple_get(tup, 0), ctx.tuple_get(tup, 1)]


@converter("StringNormalizer", since=10)
def _string_normalizer(ctx, inputs, attrs):
    return ctx.emit("onnx.string_normalizer", inputs[0],
                    case_change_action=attrs.get("case_change_action", "NONE"),
                    is_case_sensitive=bool(attrs.get("is_case_sensitive", 0)),
                    stopwords=tuple(attrs.get("stopwords", ())))


@converter("CenterCropPad", since=18)
def _center_crop_pad(ctx, inputs, attrs):
    axes = tuple(int(a) for a in attrs.get("axes", ()))
    return ctx.emit("onnx.center_crop_pad", inputs[0], ctx.emit("cast", inputs[1],
                                                                dtype="int64"), axes=axes)


# -- random ops: values are random, so only their shapes and dtypes can be checked ---------------

def _random_dtype(attrs):
    return onnx_dtype(attrs["dtype"]) if "dtype" in attrs else ""


@converter("RandomUniformLike", since=1)
def _random_uniform_like(ctx, inputs, attrs):
    return ctx.emit("onnx.random_uniform_like", inputs[0], low=float(attrs.get("low", 0.0)),
                    high=float(attrs.get("high", 1.0)), dtype=_random_dtype(attrs),
                    seed=float(attrs.get("seed", -1.0)))


@converter("RandomNormalLike", since=1)
def _random_normal_like(ctx, inputs, attrs):
    return ctx.emit("onnx.random_normal_like", inputs[0], mean=float(attrs.get("mean", 0.0)),
                    scale=float(attrs.get("scale", 1.0)), dtype=_random_dtype(attrs),
                    seed=float(attrs.get("seed", -1.0)))


def _random_shaped(kind):
    def convert(ctx, inputs, attrs):
        dtype = onnx_dtype(attrs.get("dtype", 1))
        like = ctx.const(np.zeros([int(d) for d in attrs["shape"]], dtype))
        return (_random_uniform_like if kind == "uniform" else _random_normal_like)(
            ctx, [like], dict(attrs, dtype=attrs.get("dtype", 1)))
    return convert


converter("RandomUniform", since=1)(_random_shaped("uniform"))
converter("RandomNormal", since=1)(_random_shaped("normal"))


@converter("Bernoulli", since=15)
def _bernoulli(ctx, inputs, attrs):
    return ctx.emit("onnx.bernoulli", inputs[0], dtype=_random_dtype(attrs),
                    seed=float(attrs.get("seed", -1.0)))
