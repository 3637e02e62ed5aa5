"""ONNX signal and cache ops (see :mod:`irlib.op.onnx_misc_ops`), each with a numpy reference.

* ``onnx.stft(signal, frame_step, window, frame_length, onesided)``: short-time Fourier
  transform of ``[batch, length, 1|2]`` (real or complex) signals into
  ``[batch, frames, bins, 2]``; ``window`` and ``frame_length`` are empty tensors when absent;
* ``onnx.mel_weight_matrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz,
  upper_edge_hertz, dtype)``: the ``[dft_length // 2 + 1, num_mel_bins]`` triangular filter bank;
* ``onnx.tensor_scatter(past_cache, update, write_indices, mode, axis)``: write ``update``
  into a KV cache at per-batch offsets (``linear`` or ``circular``);
* ``onnx.affine_grid(theta, size, align_corners)``: the sampling grid of a batch of 2-D
  (``[N, 2, 3]``) or 3-D (``[N, 3, 4]``) affine transforms.

Scalar arguments are 0-d or 1-element tensors known only at run time, so the result dims they
decide are ``?``.
"""

from __future__ import annotations

import numpy as np

from ..errors import OpImplError, TypeInferenceError
from ..ir.dims import Any
from ..ir.types import TensorType, normalize_dtype
from .registry import register_opaque
from .type_relations import expect_tensor

__all__ = ["mel_weight_matrix_values"]



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


# -- AffineGrid ---------------------------------------------------------------------------------

def _affine_grid_rel(arg_types, attrs):
    theta = expect_tensor(arg_types[0], "onnx.affine_grid: theta")
    size = expect_tensor(arg_types[1], "onnx.affine_grid: size")
    if theta.ndim != 3 or theta.shape[1] not in (2, 3) or \
            theta.shape[2] not in (theta.shape[1] + 1, Any):
        raise TypeInferenceError(f"onnx.affine_grid: theta must be [N, 2, 3] or [N, 3, 4], "
                                 f"got {theta}")
    spatial = theta.shape[1]
    if size.ndim != 1 or size.shape[0] not in (spatial + 2, Any):
        raise TypeInferenceError(f"onnx.affine_grid: size {size} must list {spatial + 2} dims "
                                 f"for theta {theta}")
    return TensorType((theta.shape[0],) + (Any,) * spatial + (spatial,), theta.dtype)


def _axis_coordinates(count: int, align_corners: bool) -> np.ndarray:
    if align_corners:
        # the end points sit on the corner pixels' centers; one pixel sits at 0
        return np.linspace(-1.0, 1.0, count) if count > 1 else np.zeros(count)
    return (2.0 * np.arange(count) + 1.0) / count - 1.0


def _affine_grid_ref(theta, size, align_corners=False):
    op = "onnx.affine_grid"
    spatial = theta.shape[1]
    dims = [int(d) for d in np.asarray(size).reshape(-1)]
    if len(dims) != spatial + 2 or dims[0] != theta.shape[0] or min(dims[2:]) < 0:
        raise OpImplError(f"{op}: size {dims} does not match theta {theta.shape}", op=op)
    # homogeneous coordinates, fastest axis first: (x, y[, z], 1)
    axes = [_axis_coordinates(n, align_corners) for n in dims[2:]]
    mesh = np.meshgrid(*axes, indexing="ij")  # slowest (depth/height) first
    points = np.stack(list(reversed(mesh)) + [np.ones(dims[2:])], axis=-1)
    flat = points.reshape(-1, spatial + 1)
    grid = np.einsum("nij,pj->npi", theta.astype("float64"), flat)
    return (grid.reshape([dims[0]] + dims[2:] + [spatial]).astype(theta.dtype),)


register_opaque("onnx.affine_grid", ("theta", "size"),
                ("onnx.attrs.AffineGridAttrs", [("align_corners", False)]),
                _affine_grid_rel, _affine_grid_ref,
                "ONNX AffineGrid: sampling grid [N, (D,) H, W, 2|3] of affine transforms theta "
                "over the normalized [-1, 1] output coordinates")
