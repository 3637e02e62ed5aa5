"""More ``onnx.*`` ops (see :mod:`irlib.op.onnx_extra_ops`): ops whose results have
data-dependent shapes or ONNX-specific rules, each with a numpy reference.

* ``onnx.unique(data, axis=None, sorted=True)`` -> ``(values, indices, inverse, counts)``
  (int64 indices; values in ascending order or in order of first occurrence);
* ``onnx.non_max_suppression(boxes, scores, max_per_class, iou, score, center_point_box)``
  -> ``selected_indices`` ``(?, 3)`` int64;
* ``onnx.scatter_nd(data, indices, updates, reduction)`` with every ONNX reduction;
* ``onnx.bitcast(data, dtype)``: reinterpret the bits (the last axis grows or shrinks when
  the element sizes differ);
* ``onnx.det(data)``: determinants of the trailing square matrices;
* ``onnx.dft(data, length, axis, inverse, onesided)``: ONNX DFT on a trailing real/complex
  axis of size 1 or 2;
* ``onnx.window(size, kind, periodic, dtype)``: Hann/Hamming/Blackman windows.
"""

from __future__ import annotations

import numpy as np

from ..errors import TypeInferenceError
from ..ir.dims import Any
from ..ir.types import TensorType, TupleType, normalize_dtype
from .registry import register_opaque
from .type_relations import expect_tensor

__all__ = []



# -- Unique -----------------------------------------------------------------------------------

def _unique_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "onnx.unique: data")
    axis = attrs["axis"]
    if axis is None:
        values = TensorType((Any,), data.dtype)
    else:
        shape = list(data.shape)
        shape[axis % data.ndim] = Any
        values = TensorType(shape, data.dtype)
    vector = TensorType((Any,), "int64")
    inverse = TensorType((Any,), "int64")
    return TupleType([values, vector, inverse, vector])


def _unique_ref(data, axis=None, sorted=True):  # noqa: A002 - ONNX's attribute name
    flat = data.reshape(-1) if axis is None else data
    values, first, inverse, counts = np.unique(flat, return_index=True, return_inverse=True,
                                               return_counts=True, axis=axis)
    inverse = inverse.reshape(-1)
    if not sorted:
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        values = np.take(values, order, axis=0 if axis is None else axis)
        first, counts, inverse = first[order], counts[order], rank[inverse]
    return (values, first.astype("int64"), inverse.astype("int64"), counts.astype("int64"))


register_opaque("onnx.unique", ("data",), ("onnx.attrs.UniqueAttrs", [("axis", None),
                                                               ("sorted", True)]),
                _unique_rel, _unique_ref, "ONNX Unique: unique values (or slices along axis) with "
                "first indices, inverse indices and counts", tuple_output=True)


# -- NonMaxSuppression ------------------------------------------------------------------------

def _nms_rel(arg_types, attrs):
    expect_tensor(arg_types[0], "onnx.non_max_suppression: boxes")
    return TensorType((Any, 3), "int64")


def _corners(box, center):
    if center:
        x, y, w, h = box
        return y - h / 2, x - w / 2, y + h / 2, x + w / 2
    y1, x1, y2, x2 = box
    return min(y1, y2), min(x1, x2), max(y1, y2), max(x1, x2)


def _iou_over(a, b, center, threshold):
    ay1, ax1, ay2, ax2 = _corners(a, center)
    by1, bx1, by2, bx2 = _corners(b, center)
    width = min(ax2, bx2) - max(ax1, bx1)
    height = min(ay2, by2) - max(ay1, by1)
    if width <= 0 or height <= 0:
        return False
    inter = width * height
    area_a, area_b = (ax2 - ax1) * (ay2 - ay1), (bx2 - bx1) * (by2 - by1)
    union = area_a + area_b - inter
    if area_a <= 0 or area_b <= 0 or union <= 0:
        return False
    return inter / union > threshold


def _nms_ref(boxes, scores, max_per_class, iou_threshold, score_threshold,
             center_point_box=0):
    if max_per_class.size == 0:
        return (np.zeros((0, 3), "int64"),)
    limit = max(int(max_per_class.reshape(-1)[0]), 0)
    iou = float(iou_threshold.reshape(-1)[0]) if iou_threshold.size else 0.0
    selected = []
    for b in range(scores.shape[0]):
        for c in range(scores.shape[1]):
            row = scores[b, c]
            candidates = range(row.size) if score_threshold.size == 0 else \
                [i for i in range(row.size) if row[i] > score_threshold.reshape(-1)[0]]
            # highest score first; ties keep the lower box index first
            order = sorted(candidates, key=lambda i: (-row[i], i))
            kept = []
            for index in order:
                if len(kept) >= limit:
                    break
                if all(not _iou_over(boxes[b, index], boxes[b, k], center_point_box, iou)
                       for k in kept):
                    kept.append(index)
                    selected.append((b, c, index))
    return (np.asarray(selected, "int64").reshape(-1, 3),)


register_opaque("onnx.non_max_suppression",
                ("boxes", "scores", "max_output_boxes_per_class", "iou_threshold",
           "score_threshold"),
                ("onnx.attrs.NMSAttrs", [("center_point_box", 0)]), _nms_rel, _nms_ref,
                "ONNX NonMaxSuppression: [batch, class, box] of the kept boxes")


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


# -- BitCast ------------------------------------------------------------------------------------

def _bitcast_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "onnx.bitcast: data")
    dtype = normalize_dtype(attrs["dtype"])
    source, target = np.dtype(data.dtype).itemsize, np.dtype(dtype).itemsize
    if source == target:
        return TensorType(data.shape, dtype)
    if source > target:
        return TensorType(tuple(data.shape) + (source // target,), dtype)
    if not data.ndim or data.shape[-1] != target // source:
        raise TypeInferenceError(f"onnx.bitcast: the last dim of {data} must be "
                                 f"{target // source} to cast to {dtype}")
    return TensorType(tuple(data.shape[:-1]), dtype)


def _bitcast_ref(data, dtype):
    target = np.dtype(normalize_dtype(dtype))
    source = data.dtype.itemsize
    contiguous = np.array(data, copy=True, order="C")  # keeps 0-d arrays 0-d
    if source > target.itemsize:
        return (contiguous.view(target).reshape(data.shape + (source // target.itemsize,)),)
    if source < target.itemsize:
        return (contiguous.view(target).reshape(data.shape[:-1]),)
    return (contiguous.view(target),)


register_opaque("onnx.bitcast", ("data",), ("onnx.attrs.BitCastAttrs", [("dtype", "")]),
                _bitcast_rel, _bitcast_ref, "reinterpret the bits of each element as another dtype")


# -- Det ----------------------------------------------------------------------------------------

def _det_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "onnx.det: data")
    if data.ndim < 2:
        raise TypeInferenceError(f"onnx.det: expected [..., M, M], got {data}")
    return TensorType(tuple(data.shape[:-2]), data.dtype)


register_opaque("onnx.det", ("data",), None, _det_rel,
                lambda data: (np.asarray(np.linalg.det(data)).astype(data.dtype),),
                "determinants of the trailing square matrices")


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


def _cumprod_ref(data, axis, exclusive=False, reverse=False):
    axis = int(axis.reshape(-1)[0]) % data.ndim
    work = np.flip(data, axis) if reverse else data
    out = np.cumprod(work, axis=axis, dtype=data.dtype)
    if exclusive:
        shifted = np.ones_like(out)
        index = [slice(None)] * data.ndim
        index[axis] = slice(1, None)
        source = [slice(None)] * data.ndim
        source[axis] = slice(None, -1)
        shifted[tuple(index)] = out[tuple(source)]
        out = shifted
    return (np.array(np.flip(out, axis) if reverse else out),)


def window_values(size: int, kind: str, periodic: bool, dtype: str) -> np.ndarray:
    """The ONNX window of ``kind`` (``hann``, ``hamming``, ``blackman``) of ``size``."""
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
register_opaque("onnx.cumprod", ("data", "axis"), ("onnx.attrs.CumProdAttrs",
                                             [("exclusive", False), ("reverse", False)]),
                lambda arg_types, attrs: expect_tensor(arg_types[0], "onnx.cumprod: data"),
                _cumprod_ref, "ONNX CumProd along a run-time axis (exclusive, reverse)")


# -- strings ------------------------------------------------------------------------------------

def _strings(data):
    return np.asarray(data).astype(str)


def _string_rel(arg_types, attrs):
    return TensorType(expect_tensor(arg_types[0], "string op: data").shape, "string")


def _string_concat_rel(arg_types, attrs):
    from .type_relations import broadcast_shapes
    lhs = expect_tensor(arg_types[0], "onnx.string_concat: lhs")
    rhs = expect_tensor(arg_types[1], "onnx.string_concat: rhs")
    return TensorType(broadcast_shapes(lhs.shape, rhs.shape), "string")


register_opaque("onnx.string_concat", ("lhs", "rhs"), None, _string_concat_rel,
                lambda lhs, rhs: (np.char.add(_strings(lhs), _strings(rhs)),),
                "elementwise (broadcast) string concatenation")


def _regex_ref(data, pattern=""):
    import re
    compiled = re.compile(pattern)
    flat = [compiled.fullmatch(text) is not None for text in _strings(data).reshape(-1)]
    return (np.asarray(flat, bool).reshape(np.shape(data)),)


register_opaque("onnx.regex_full_match", ("data",), ("onnx.attrs.RegexAttrs", [("pattern", "")]),
                lambda arg_types, attrs: TensorType(expect_tensor(
              arg_types[0], "onnx.regex_full_match: data").shape, "bool"),
                _regex_ref, "whether each string fully matches a regular expression")


def _string_split_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "onnx.string_split: data")
    return TupleType([TensorType(tuple(data.shape) + (Any,), "string"),
                      TensorType(data.shape, "int64")])


def _string_split_ref(data, delimiter="", maxsplit=-1):
    texts = _strings(data)
    pieces = [text.split(delimiter or None, maxsplit) for text in texts.reshape(-1)]
    width = max((len(p) for p in pieces), default=0)
    out = np.full((len(pieces), width), "", dtype=object)
    for row, parts in enumerate(pieces):
        out[row, :len(parts)] = parts
    return (out.astype(str).reshape(texts.shape + (width,)),
            np.asarray([len(p) for p in pieces], "int64").reshape(texts.shape))


register_opaque("onnx.string_split", ("data",),
                ("onnx.attrs.StringSplitAttrs", [("delimiter", ""), ("maxsplit", -1)]),
                _string_split_rel, _string_split_ref,
                "split strings (padded with empty strings) and count the pieces", tuple_output=True)


def _normalizer_ref(data, case_change_action="NONE", is_case_sensitive=False, stopwords=()):
    texts = _strings(data)
    flat = texts.reshape(-1)
    if stopwords:
        if is_case_sensitive:
            drop = set(stopwords)
            flat = [t for t in flat if t not in drop]
        else:
            drop = {w.lower() for w in stopwords}
            flat = [t for t in flat if t.lower() not in drop]
    if case_change_action == "LOWER":
        flat = [t.lower() for t in flat]
    elif case_change_action == "UPPER":
        flat = [t.upper() for t in flat]
    flat = list(flat) or [""]
    shape = (len(flat),) if texts.ndim == 1 else (1, len(flat))
    return (np.asarray(flat, dtype=str).reshape(shape),)


register_opaque("onnx.string_normalizer", ("data",),
                ("onnx.attrs.StringNormalizerAttrs", [("case_change_action", "NONE"),
                                                ("is_case_sensitive", False),
                                                ("stopwords", ())]),
                lambda arg_types, attrs: TensorType(
              [Any] * expect_tensor(arg_types[0], "onnx.string_normalizer: data").ndim,
              "string"),
                _normalizer_ref, "ONNX StringNormalizer: drop stop words, change case")


# -- CenterCropPad ------------------------------------------------------------------------------

def _center_crop_pad_ref(data, shape, axes=()):
    axes = [a % data.ndim for a in axes] if axes else list(range(data.ndim))
    out = data
    for axis, target in zip(axes, (int(s) for s in np.asarray(shape).reshape(-1))):
        size = out.shape[axis]
        if target < size:
            start = (size - target) // 2
            out = np.take(out, np.arange(start, start + target), axis=axis)
        elif target > size:
            widths = [(0, 0)] * out.ndim
            before = (target - size) // 2
            widths[axis] = (before, target - size - before)
            out = np.pad(out, widths)
    return (np.array(out),)


register_opaque("onnx.center_crop_pad", ("data", "shape"),
                ("onnx.attrs.CenterCropPadAttrs", [("axes", ())]),
                lambda arg_types, attrs: TensorType(
              [Any] * expect_tensor(arg_types[0], "onnx.center_crop_pad: data").ndim,
              arg_types[0].dtype),
                _center_crop_pad_ref, "crop or zero-pad the given axes to a run-time shape, "
                "centered")


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
