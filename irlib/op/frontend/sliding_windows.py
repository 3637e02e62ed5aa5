"""``onnx.*`` ops for ONNX's image-window operators, each with a numpy reference:

* ``onnx.col2im(data, image_shape, block_shape, dilations, pads, strides)``: sum the
  sliding blocks of ``(N, C * prod(block), L)`` back into ``(N, C, *image_shape)`` (the
  adjoint of im2col); ``onnx.col2im_dyn(data, image_shape, block_shape)`` takes the two shapes
  as run-time int64 tensors;
* ``onnx.max_pool_with_indices(data, ...)`` -> ``(values, indices)``: ONNX MaxPool with its
  Indices output (flat int64 positions in the whole input tensor, row-major, or with the
  spatial axes column-major for ``storage_order=1``);
* ``onnx.max_unpool(data, indices, kernel_shape, pads, strides, output_shape)``: scatter the
  pooled values back to their flat positions; ``onnx.max_unpool_dyn`` takes ``output_shape``
  as a run-time tensor.

The bilinear-sampling ops (DeformConv, RoiAlign) are in :mod:`irlib.op.onnx_sampling_ops`.
Before/after in the text format::

    onnx.col2im(%x, image_shape=[5, 5], block_shape=[1, 5])   /* x: (1, 5, 5) */
    -> Tensor[(1, 1, 5, 5), float32]
"""

from __future__ import annotations

import itertools

import numpy as np

from ...errors import OpImplError, TypeInferenceError
from ...ir.dims import Any, AnyDim
from ...ir.types import TensorType, TupleType
from ..registry import register_opaque
from ..type_relations import dims_differ, expect_tensor

__all__ = ["col2im_blocks", "pool_out_size"]



def _defaults(values, count: int, fill: int) -> tuple:
    return tuple(int(v) for v in values) if values else (fill,) * count


def _known(*dims) -> bool:
    return not any(isinstance(d, AnyDim) for d in dims)


# -- Col2Im -------------------------------------------------------------------------------------

def col2im_blocks(image, block, dilations, pads, strides) -> tuple:
    """Number of sliding blocks along each image axis (ONNX Col2Im / im2col).

    Args:
        image: the image's spatial sizes.
        block: the block (kernel) sizes.
        dilations, strides: one int per axis.
        pads: ``2 * n`` ints: the "before" amounts, then the "after" amounts.

    Returns:
        One count per axis (dims: ints, symbolic expressions, or Any).
    """
    n = len(image)
    counts = []
    for i in range(n):
        if not _known(image[i], block[i]):
            counts.append(Any)
            continue
        counts.append((image[i] + pads[i] + pads[n + i] - dilations[i] * (block[i] - 1) - 1)
                      // strides[i] + 1)
    return tuple(counts)


def _col2im_attrs(n, dilations, pads, strides):
    return _defaults(dilations, n, 1), _defaults(pads, 2 * n, 0), _defaults(strides, n, 1)


def _col2im_out(data, image, block, attrs, name):
    data = expect_tensor(data, f"{name}: data")
    if data.ndim != 3:
        raise TypeInferenceError(f"{name}: data must be (N, C * prod(block), L), got {data}")
    dilations, pads, strides = _col2im_attrs(len(image), attrs["dilations"], attrs["pads"],
                                             attrs["strides"])
    channels = Any
    if all(isinstance(b, int) for b in block) and isinstance(data.shape[1], int):
        size = int(np.prod(block))
        if data.shape[1] % size:
            raise TypeInferenceError(f"{name}: data's dim 1 ({data.shape[1]}) is not a "
                                     f"multiple of the block size {size} (block {block})")
        channels = data.shape[1] // size
        counts = col2im_blocks(image, block, dilations, pads, strides)
        if all(isinstance(c, int) for c in counts) and isinstance(data.shape[2], int) \
                and int(np.prod(counts)) != data.shape[2]:
            raise TypeInferenceError(f"{name}: data has {data.shape[2]} blocks but image "
                                     f"{image} with block {block} gives {counts}")
    return TensorType((data.shape[0], channels) + tuple(image), data.dtype)


def _col2im_rel(arg_types, attrs):
    return _col2im_out(arg_types[0], tuple(attrs["image_shape"]), tuple(attrs["block_shape"]),
                       attrs, "onnx.col2im")


def _col2im_dyn_rel(arg_types, attrs):
    shapes = [expect_tensor(t, f"onnx.col2im_dyn: {what}")
              for t, what in zip(arg_types[1:], ("image_shape", "block_shape"))]
    if any(s.ndim != 1 or not isinstance(s.shape[0], int) for s in shapes):
        raise TypeInferenceError(f"onnx.col2im_dyn: image_shape and block_shape must be 1-D "
                                 f"tensors of static length, got {shapes[0]} and {shapes[1]}")
    return _col2im_out(arg_types[0], (Any,) * shapes[0].shape[0],
                       (Any,) * shapes[1].shape[0], attrs, "onnx.col2im_dyn")


def _col2im_ref(data, image_shape=(), block_shape=(), dilations=(), pads=(), strides=(),
                name="onnx.col2im"):
    image = tuple(int(s) for s in np.asarray(image_shape).reshape(-1))
    block = tuple(int(s) for s in np.asarray(block_shape).reshape(-1))
    n = len(image)
    dilations, pads, strides = _col2im_attrs(n, dilations, pads, strides)
    counts = col2im_blocks(image, block, dilations, pads, strides)
    size = int(np.prod(block))
    if len(block) != n or data.shape[1] % size or int(np.prod(counts)) != data.shape[2]:
        raise OpImplError(f"{name}: data {data.shape} does not hold the blocks {block} of an "
                          f"image {image} (dilations {dilations}, pads {pads}, strides "
                          f"{strides})", op=name)
    batch, channels = data.shape[0], data.shape[1] // size
    blocks = data.reshape((batch, channels) + block + counts)
    padded = np.zeros((batch, channels) + tuple(image[i] + pads[i] + pads[n + i]
                                                for i in range(n)), data.dtype)
    for offset in itertools.product(*(range(b) for b in block)):
        # block element `offset` of every block lands on one strided grid of the image
        target = tuple(slice(o * d, o * d + (c - 1) * s + 1, s)
                       for o, d, c, s in zip(offset, dilations, counts, strides))
        padded[(slice(None), slice(None)) + target] += blocks[(slice(None), slice(None))
                                                              + offset]
    crop = tuple(slice(pads[i], pads[i] + image[i]) for i in range(n))
    return (np.ascontiguousarray(padded[(slice(None), slice(None)) + crop]),)


_COL2IM_FIELDS = [("dilations", ()), ("pads", ()), ("strides", ())]
register_opaque("onnx.col2im", ("data",),
                ("onnx.attrs.Col2ImAttrs", [("image_shape", ()), ("block_shape", ())]
           + _COL2IM_FIELDS),
                _col2im_rel, _col2im_ref, "ONNX Col2Im: sum sliding blocks back into an image")
register_opaque("onnx.col2im_dyn", ("data", "image_shape", "block_shape"),
                ("onnx.attrs.Col2ImDynAttrs", _COL2IM_FIELDS), _col2im_dyn_rel,
                lambda data, image_shape, block_shape, **attrs: _col2im_ref(
              data, image_shape, block_shape, name="onnx.col2im_dyn", **attrs),
                "ONNX Col2Im with run-time image and block shapes")


# -- MaxPool with indices -------------------------------------------------------------------------

def pool_out_size(size, kernel, stride, dilation, before, after, ceil_mode):
    """ONNX pooling output length along one axis (in ceil mode a last window that would start
    in the end padding is dropped).

    Args:
        size: the input length (int, symbolic, or Any).
        kernel, stride, dilation, before, after: ints.
        ceil_mode: whether partial windows at the end count.

    Returns:
        The output length (Any when it cannot be computed statically).
    """
    if not _known(size):
        return Any
    span = size + before + after - dilation * (kernel - 1) - 1
    if not ceil_mode:
        return span // stride + 1
    if not isinstance(size, int):
        return Any
    count = -(-span // stride) + 1
    if (count - 1) * stride >= size + before:
        count -= 1
    return count


def _pool_attrs(n, attrs):
    kernel = tuple(int(k) for k in attrs["kernel_shape"])
    result = (kernel, _defaults(attrs["strides"], n, 1), _defaults(attrs["pads"], 2 * n, 0),
              _defaults(attrs["dilations"], n, 1))
    if len(kernel) != n or any(len(v) != size for v, size in zip(result[1:], (n, 2 * n, n))):
        raise TypeInferenceError(f"kernel_shape {kernel}, strides {result[1]}, pads "
                                 f"{result[2]} and dilations {result[3]} do not all describe "
                                 f"{n} spatial axes")
    return result


def _max_pool_indices_rel(arg_types, attrs):
    name = "onnx.max_pool_with_indices"
    data = expect_tensor(arg_types[0], f"{name}: data")
    n = len(attrs["kernel_shape"])
    if data.ndim != n + 2:
        raise TypeInferenceError(f"{name}: data must have {n} spatial axes for kernel "
                                 f"{tuple(attrs['kernel_shape'])}, got {data}")
    kernel, strides, pads, dilations = _pool_attrs(n, attrs)
    out = tuple(pool_out_size(data.shape[2 + i], kernel[i], strides[i], dilations[i],
                              pads[i], pads[n + i], attrs["ceil_mode"]) for i in range(n))
    if any(isinstance(o, int) and o <= 0 for o in out):
        raise TypeInferenceError(f"{name}: kernel {kernel} does not fit in {data}")
    shape = tuple(data.shape[:2]) + out
    return TupleType([TensorType(shape, data.dtype), TensorType(shape, "int64")])


def _lowest(dtype):
    return -np.inf if np.dtype(dtype).kind == "f" else np.iinfo(dtype).min


def _max_pool_indices_ref(data, kernel_shape=(), strides=(), pads=(), dilations=(),
                          ceil_mode=False, storage_order=0):
    n = data.ndim - 2
    kernel, strides, pads, dilations = _pool_attrs(n, {
        "kernel_shape": kernel_shape, "strides": strides, "pads": pads,
        "dilations": dilations})
    sizes = data.shape[2:]
    out = tuple(pool_out_size(sizes[i], kernel[i], strides[i], dilations[i], pads[i],
                              pads[n + i], ceil_mode) for i in range(n))
    extent = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    # pad enough at the end for every window (ceil mode may reach past the explicit pads)
    ends = [max((o - 1) * s + e - sz - b, 0)
            for o, s, e, sz, b in zip(out, strides, extent, sizes, pads[:n])]
    widths = [(0, 0), (0, 0)] + list(zip(pads[:n], ends))
    values = np.pad(data, widths, constant_values=_lowest(data.dtype))
    valid = np.pad(np.ones(sizes, bool), widths[2:], constant_values=False)
    axes = tuple(range(2, 2 + n))
    value_windows = np.lib.stride_tricks.sliding_window_view(values, extent, axis=axes)
    valid_windows = np.lib.stride_tricks.sliding_window_view(valid, extent, axis=tuple(
        range(n)))
    pick = tuple(slice(None, o * s, s) for o, s in zip(out, strides)) + tuple(
        slice(None, None, d) for d in dilations)
    value_windows = value_windows[(slice(None), slice(None)) + pick]
    valid_windows = valid_windows[pick]
    count = int(np.prod(kernel))
    value_windows = value_windows.reshape(data.shape[:2] + out + (count,))
    valid_windows = valid_windows.reshape(out + (count,))
    best = value_windows.max(axis=-1)
    # the first (row-major) valid position holding the maximum, as ONNX's strict '>' scan
    winner = np.argmax(valid_windows & (value_windows == best[..., None]), axis=-1)
    offsets = np.unravel_index(winner, kernel)
    grid = np.meshgrid(*(np.arange(o) for o in out), indexing="ij")
    coords = [grid[i] * strides[i] - pads[i] + offsets[i] * dilations[i] for i in range(n)]
    order = range(n) if storage_order == 0 else reversed(range(n))
    flat = np.zeros(best.shape, "int64")
    for i in order:  # row-major (storage_order 0) or spatially column-major (1)
        flat = flat * sizes[i] + coords[i]
    plane = int(np.prod(sizes))
    planes = np.arange(data.shape[0] * data.shape[1], dtype="int64").reshape(
        data.shape[:2] + (1,) * n)
    return (best.astype(data.dtype), (planes * plane + flat).astype("int64"))


_POOL_FIELDS = [("kernel_shape", ()), ("strides", ()), ("pads", ()), ("dilations", ())]
register_opaque("onnx.max_pool_with_indices", ("data",),
                ("onnx.attrs.MaxPoolIndicesAttrs", _POOL_FIELDS + [("ceil_mode", False),
                                                             ("storage_order", 0)]),
                _max_pool_indices_rel, _max_pool_indices_ref,
                "ONNX MaxPool with the flat indices of the maxima", tuple_output=True)


# -- MaxUnpool ------------------------------------------------------------------------------------

def _unpool_shape(data_shape, kernel, strides, pads):
    n = len(kernel)
    spatial = tuple(Any if not _known(s) else (s - 1) * strides[i] - pads[i] - pads[n + i]
                    + kernel[i] for i, s in enumerate(data_shape[2:]))
    return tuple(data_shape[:2]) + spatial


def _max_unpool_check(arg_types, attrs, name):
    data = expect_tensor(arg_types[0], f"{name}: data")
    indices = expect_tensor(arg_types[1], f"{name}: indices")
    n = len(attrs["kernel_shape"])
    if data.ndim != n + 2:
        raise TypeInferenceError(f"{name}: data must have {n} spatial axes for kernel "
                                 f"{tuple(attrs['kernel_shape'])}, got {data}")
    if indices.ndim != data.ndim or any(dims_differ(a, b)
                                        for a, b in zip(indices.shape, data.shape)):
        raise TypeInferenceError(f"{name}: indices {indices} must have the shape of {data}")
    return data, n


def _max_unpool_rel(arg_types, attrs):
    data, n = _max_unpool_check(arg_types, attrs, "onnx.max_unpool")
    if attrs["output_shape"]:
        return TensorType(tuple(int(s) for s in attrs["output_shape"]), data.dtype)
    kernel, strides, pads, _ = _pool_attrs(n, dict(attrs, dilations=()))
    return TensorType(_unpool_shape(data.shape, kernel, strides, pads), data.dtype)


def _max_unpool_dyn_rel(arg_types, attrs):
    data, _ = _max_unpool_check(arg_types, attrs, "onnx.max_unpool_dyn")
    shape = expect_tensor(arg_types[2], "onnx.max_unpool_dyn: output_shape")
    if shape.ndim != 1 or dims_differ(shape.shape[0], data.ndim):
        raise TypeInferenceError(f"onnx.max_unpool_dyn: output_shape must be a vector of "
                                 f"{data.ndim} sizes, got {shape}")
    return TensorType((Any,) * data.ndim, data.dtype)


def _max_unpool_ref(data, indices, kernel_shape=(), pads=(), strides=(), output_shape=()):
    name = "onnx.max_unpool"
    n = data.ndim - 2
    kernel, strides, pads, _ = _pool_attrs(n, {"kernel_shape": kernel_shape,
                                               "strides": strides, "pads": pads,
                                               "dilations": ()})
    inferred = _unpool_shape(data.shape, kernel, strides, pads)
    total = int(np.prod(inferred))
    flat_indices = np.asarray(indices).reshape(-1).astype("int64")
    if flat_indices.size and (flat_indices.min() < 0 or flat_indices.max() >= total):
        raise OpImplError(f"{name}: indices must lie in [0, {total}) for the unpooled shape "
                          f"{inferred}", op=name)
    flat = np.zeros(total, data.dtype)
    flat[flat_indices] = data.reshape(-1)
    unpooled = flat.reshape(inferred)
    if not len(output_shape):
        return (unpooled,)
    # indices address the inferred shape; a larger requested shape is zero-filled at the end
    wanted = tuple(int(s) for s in np.asarray(output_shape).reshape(-1))
    if len(wanted) != data.ndim or any(w < i for w, i in zip(wanted, inferred)):
        raise OpImplError(f"{name}: output_shape {wanted} must be at least the unpooled shape "
                          f"{inferred}", op=name)
    out = np.zeros(wanted, data.dtype)
    out[tuple(slice(0, i) for i in inferred)] = unpooled
    return (out,)


_UNPOOL_FIELDS = [("kernel_shape", ()), ("pads", ()), ("strides", ())]
register_opaque("onnx.max_unpool", ("data", "indices"),
                ("onnx.attrs.MaxUnpoolAttrs", _UNPOOL_FIELDS + [("output_shape", ())]),
                _max_unpool_rel, _max_unpool_ref, "ONNX MaxUnpool: values scattered to their flat "
                "indices in a zero tensor")
register_opaque("onnx.max_unpool_dyn", ("data", "indices", "output_shape"),
                ("onnx.attrs.MaxUnpoolDynAttrs", _UNPOOL_FIELDS), _max_unpool_dyn_rel,
                lambda data, indices, output_shape, **attrs: _max_unpool_ref(
              data, indices, output_shape=output_shape, **attrs),
                "ONNX MaxUnpool with a run-time output shape")
