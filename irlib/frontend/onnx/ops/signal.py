"""STFT, MelWeightMatrix, TensorScatter and AffineGrid, mapped onto the ``onnx.*`` ops of
:mod:`irlib.op.frontend.spectral` (constant inputs fold at import time)."""

from __future__ import annotations

import numpy as np

from ..importer import onnx_dtype
from ..registry import converter
from .common import normalize_axis, unsupported


def _optional(inputs, index):
    return inputs[index] if len(inputs) > index else None


def _int64(ctx, expr):
    return expr if ctx.dtype(expr) == "int64" else ctx.emit("cast", expr, dtype="int64")


@converter("STFT", since=17)
def _stft(ctx, inputs, attrs):
    signal = inputs[0]
    window = _optional(inputs, 2)
    frame_length = _optional(inputs, 3)
    if window is None:
        window = ctx.const(np.zeros(0, ctx.dtype(signal)))
    elif ctx.dtype(window) != ctx.dtype(signal):
        window = ctx.emit("cast", window, dtype=ctx.dtype(signal))
    frame_length = ctx.const(np.zeros(0, "int64")) if frame_length is None else \
        _int64(ctx, frame_length)
    return ctx.emit("onnx.stft", signal, _int64(ctx, inputs[1]), window, frame_length,
                    onesided=bool(attrs.get("onesided", 1)))


@converter("MelWeightMatrix", since=17)
def _mel_weight_matrix(ctx, inputs, attrs):
    return ctx.emit("onnx.mel_weight_matrix", *inputs[:5],
                    dtype=onnx_dtype(attrs.get("output_datatype", 1)))


@converter("TensorScatter", since=24)
def _tensor_scatter(ctx, inputs, attrs):
    cache, update = inputs[0], inputs[1]
    indices = _optional(inputs, 2)
    indices = ctx.const(np.zeros(0, "int64")) if indices is None else _int64(ctx, indices)
    mode = attrs.get("mode", "linear")
    if mode not in ("linear", "circular"):
        unsupported(f"TensorScatter mode {mode!r} is not supported")
    axis = normalize_axis(int(attrs.get("axis", -2)), ctx.ndim(cache))
    return ctx.emit("onnx.tensor_scatter", cache, update, indices, mode=mode, axis=axis)


@converter("AffineGrid", since=20)
def _affine_grid(ctx, inputs, attrs):
    return ctx.emit("onnx.affine_grid", inputs[0], _int64(ctx, inputs[1]),
                    align_corners=bool(attrs.get("align_corners", 0)))
