"""Spectral ops with ONNX semantics (``onnx.*``), each with a numpy reference:

* ``onnx.stft(signal, frame_step, window, frame_length, onesided)``: short-time Fourier
  transform of ``[batch, length, 1|2]`` (real or complex) signals into
  ``[batch, frames, bins, 2]``; ``window`` and ``frame_length`` are empty tensors when absent;
* ``onnx.mel_weight_matrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz,
  upper_edge_hertz, dtype)``: the ``[dft_length // 2 + 1, num_mel_bins]`` triangular filter bank;
* ``onnx.dft(data, length, axis, inverse, onesided)``: ONNX DFT on a trailing real/complex
  axis of size 1 or 2;
* ``onnx.window(size, kind, periodic, dtype)``: Hann/Hamming/Blackman windows.

Scalar arguments are 0-d or 1-element tensors known only at run time, so the result dims they
decide are ``?``.
"""

from __future__ import annotations

import numpy as np

from ...errors import OpImplError, TypeInferenceError
from ...ir.dims import Any
from ...ir.types import TensorType, normalize_dtype
from ..registry import register_opaque
from ..type_relations import expect_tensor

__all__ = ['mel_weight_matrix_values', 'window_values']


def _scalar(value, op: str, what: str):
    flat = np.asarray(value).reshape(-1)
    if flat.size != 1:
        raise OpImplError(f"{op}: {what} must hold one value, got shape {np.shape(value)}", op=op)
    return flat[0]


# -- STFT ---------------------------------------------------------------------------------------

def _stft_rel(arg_types, attrs):
    signal = expect_tensor(arg_types[0], "onnx.stft: signal")
    if signal.ndim != 3 or signal.shape[2] not in (1, 2, Any):
        raise TypeInferenceError(f"onnx.stft: signal must be [batch, length, 1|2], got {signal}")
    return TensorType((signal.shape[0], Any, Any, 2), signal.dtype)


def _stft_ref(signal, frame_step, window, frame_length, onesided=True):
    op = "onnx.stft"
    step = int(_scalar(frame_step, op, "frame_step"))
    length = signal.shape[1]
    if frame_length.size:
        size = int(_scalar(frame_length, op, "frame_length"))
    else:
        size = window.shape[0] if window.size else length
    if step <= 0 or size <= 0 or size > length:
        raise OpImplError(f"{op}: frame_step {step} and frame_length {size} do not fit a "
                          f"signal of length {length}", op=op)
    if window.size and window.shape != (size,):
        raise OpImplError(f"{op}: window of shape {window.shape} for frames of {size}", op=op)
    values = signal[..., 0] + 1j * signal[..., 1] if signal.shape[2] == 2 else signal[..., 0]
    frames = 1 + (length - size) // step
    index = np.arange(frames)[:, None] * step + np.arange(size)[None, :]
    framed = values[:, index]  # [batch, frames, size]
    if window.size:
        framed = framed * window.astype("float64")
    spectrum = np.fft.fft(framed, axis=-1)
    if onesided:
        spectrum = spectrum[..., :size // 2 + 1]
    return (np.stack([spectrum.real, spectrum.imag], axis=-1).astype(signal.dtype),)


register_opaque("onnx.stft", ("signal", "frame_step", "window", "frame_length"),
                ("onnx.attrs.STFTAttrs", [("onesided", True)]), _stft_rel, _stft_ref,
                "ONNX STFT: windowed DFT of frames taken every frame_step samples")


# -- MelWeightMatrix ----------------------------------------------------------------------------

def mel_weight_matrix_values(num_mel_bins: int, dft_length: int, sample_rate: int,
                             lower_edge_hertz: float, upper_edge_hertz: float,
                             dtype: str = "float32") -> np.ndarray:
    """The ONNX MelWeightMatrix: triangular filters on the mel scale over DFT bins.

    Band edges are ``num_mel_bins + 2`` points evenly spaced in mels between the two edge
    frequencies, mapped to bins ``floor((dft_length + 1) * hertz / sample_rate)``.

    Args:
        num_mel_bins: the number of filters (output columns).
        dft_length: the DFT size (``dft_length // 2 + 1`` output rows).
        sample_rate: samples per second.
        lower_edge_hertz: the lowest band edge.
        upper_edge_hertz: the highest band edge.
        dtype: the output dtype.

    Returns:
        The ``[dft_length // 2 + 1, num_mel_bins]`` matrix.

    Raises:
        OpImplError: on a band edge outside the spectrum or non-positive sizes.
    """
    op = "onnx.mel_weight_matrix"
    if num_mel_bins <= 0 or dft_length <= 0 or sample_rate <= 0:
        raise OpImplError(f"{op}: num_mel_bins {num_mel_bins}, dft_length {dft_length} and "
                          f"sample_rate {sample_rate} must be positive", op=op)
    rows = dft_length // 2 + 1

    def to_mel(hertz):
        return 2595.0 * np.log10(1.0 + np.float64(hertz) / 700.0)

    low, high = to_mel(lower_edge_hertz), to_mel(upper_edge_hertz)
    points = np.arange(num_mel_bins + 2) * ((high - low) / (num_mel_bins + 2)) + low
    hertz = 700.0 * (np.power(10.0, points / 2595.0) - 1.0)
    edges = np.floor((dft_length + 1) * hertz / sample_rate).astype("int64")
    if edges.min() < 0 or edges.max() >= rows:
        raise OpImplError(f"{op}: band edges {edges.tolist()} fall outside the {rows} DFT "
                          "bins", op=op)
    out = np.zeros((rows, num_mel_bins), "float64")
    bins = np.arange(rows)
    for i in range(num_mel_bins):
        left, center, right = edges[i], edges[i + 1], edges[i + 2]
        if center == left:
            out[center, i] = 1.0
        else:
            rising = (bins >= left) & (bins <= center)
            out[rising, i] = (bins[rising] - left) / (center - left)
        if right > center:
            falling = (bins >= center) & (bins < right)
            out[falling, i] = (right - bins[falling]) / (right - center)
    return out.astype(dtype)


def _mel_rel(arg_types, attrs):
    for i, what in enumerate(("num_mel_bins", "dft_length", "sample_rate",
                              "lower_edge_hertz", "upper_edge_hertz")):
        expect_tensor(arg_types[i], f"onnx.mel_weight_matrix: {what}")
    return TensorType((Any, Any), normalize_dtype(attrs["dtype"]))


def _mel_ref(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz,
             dtype="float32"):
    op = "onnx.mel_weight_matrix"
    return (mel_weight_matrix_values(
        int(_scalar(num_mel_bins, op, "num_mel_bins")),
        int(_scalar(dft_length, op, "dft_length")),
        int(_scalar(sample_rate, op, "sample_rate")),
        float(_scalar(lower_edge_hertz, op, "lower_edge_hertz")),
        float(_scalar(upper_edge_hertz, op, "upper_edge_hertz")), dtype),)


register_opaque("onnx.mel_weight_matrix",
                ("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz",
                 "upper_edge_hertz"),
                ("onnx.attrs.MelWeightMatrixAttrs", [("dtype", "float32")]), _mel_rel, _mel_ref,
                "ONNX MelWeightMatrix: mel-scale triangular filter bank over DFT bins")


# -- DFT and windows ------------------------------------------------------------------------------

def _dft_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "onnx.dft: data")
    real = attrs["inverse"] and attrs["onesided"]
    return TensorType([Any] * (data.ndim - 1) + [1 if real else 2], data.dtype)


def _dft_ref(data, length, axis, inverse=False, onesided=False):
    axis = int(axis.reshape(-1)[0]) % (data.ndim - 1) if axis.size else data.ndim - 2
    signal = data[..., 0] + 1j * data[..., 1] if data.shape[-1] == 2 else data[..., 0]
    n = int(length.reshape(-1)[0]) if length.size else signal.shape[axis]
    if inverse and onesided:  # a half spectrum back to a real signal
        result = np.fft.irfft(signal, n=n if length.size else None, axis=axis)
        return (result[..., None].astype(data.dtype),)
    if inverse:
        result = np.fft.ifft(signal, n=n, axis=axis)
    else:
        result = np.fft.fft(signal, n=n, axis=axis)
    if onesided:
        result = np.take(result, np.arange(n // 2 + 1), axis=axis)
    return (np.stack([result.real, result.imag], axis=-1).astype(data.dtype),)


register_opaque("onnx.dft", ("data", "length", "axis"),
                ("onnx.attrs.DFTAttrs", [("inverse", False), ("onesided", False)]),
                _dft_rel, _dft_ref, "ONNX DFT: (inverse) discrete Fourier transform along an axis "
                "(length and axis are 0- or 1-element tensors; empty for the defaults)")


def _window_rel(arg_types, attrs):
    return TensorType((Any,), normalize_dtype(attrs["dtype"]))


def _window_ref(size, kind="hann", periodic=True, dtype="float32"):
    return (window_values(int(size.reshape(-1)[0]), kind, periodic, dtype),)


def window_values(size: int, kind: str, periodic: bool, dtype: str) -> np.ndarray:
    """The ONNX window of ``kind`` (``hann``, ``hamming``, ``blackman``) of ``size``.

    Args:
        size: the window length.
        kind: the window kind.
        periodic: a periodic window (for spectral analysis) instead of a symmetric one.
        dtype: the result dtype.
    """
    n = np.arange(size, dtype="float64")
    denominator = size if periodic else size - 1
    phase = 2 * np.pi * n / max(denominator, 1)
    if kind == "hann":
        values = 0.5 - 0.5 * np.cos(phase)
    elif kind == "hamming":
        values = 25 / 46 - (1 - 25 / 46) * np.cos(phase)
    else:
        values = 0.42 - 0.5 * np.cos(phase) + 0.08 * np.cos(2 * phase)
    return values.astype(dtype)


register_opaque("onnx.window", ("size",), ("onnx.attrs.WindowAttrs", [("kind", "hann"),
                                                               ("periodic", True),
                                                               ("dtype", "float32")]),
                _window_rel, _window_ref, "Hann/Hamming/Blackman window of a run-time size")
