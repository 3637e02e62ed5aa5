"""ONNX text and image input ops (see :mod:`irlib.op.onnx_misc_ops`), each with a numpy
reference.

* ``onnx.tfidf_vectorizer(data, mode, min_gram_length, max_gram_length, max_skip_count,
  ngram_counts, ngram_indexes, pool, weights)``: n-gram counts of the rows of a ``[C]`` or
  ``[B, C]`` tensor of integers or strings, weighted by ``mode`` (``TF``, ``IDF``,
  ``TFIDF``), as float32 ``[out]`` or ``[B, out]`` with ``out = max(ngram_indexes) + 1``;
* ``onnx.image_decoder(encoded, pixel_format)``: decode one encoded image (a 1-D uint8
  tensor holding a JPEG, PNG, BMP, TIFF, PNM, WebP or JPEG 2000 file) into ``[H, W, 3]``
  (``RGB`` or ``BGR``) or ``[H, W, 1]`` (``Grayscale``) uint8 pixels. Decoding needs Pillow;
  without it the op raises :class:`~irlib.errors.OpImplError` (and the ONNX converter
  refuses the node at import time).

The ONNX training optimizers (Adagrad, Adam, Momentum) and BatchNormalization's training mode
need no op of their own: their converters compose elementwise ops and reductions.
"""

from __future__ import annotations

import io

import numpy as np

from ..errors import OpImplError, TypeInferenceError
from ..ir.dims import Any
from ..ir.types import TensorType
from .registry import register_opaque
from .type_relations import expect_tensor

__all__ = ["TFIDF_MODES", "PIXEL_FORMATS", "pillow_available"]

#: The weighting modes of TfIdfVectorizer.
TFIDF_MODES = ("TF", "IDF", "TFIDF")
#: The pixel formats of ImageDecoder and their channel counts.
PIXEL_FORMATS = {"RGB": 3, "BGR": 3, "Grayscale": 1}



# -- TfIdfVectorizer ----------------------------------------------------------------------------

def _tfidf_rel(arg_types, attrs):
    op = "onnx.tfidf_vectorizer"
    data = expect_tensor(arg_types[0], f"{op}: data")
    if data.ndim not in (1, 2):
        raise TypeInferenceError(f"{op}: data must be [C] or [B, C], got {data}")
    pool = attrs["pool"]
    strings = bool(pool) and isinstance(pool[0], str)
    if strings != (data.dtype == "string") or \
            not strings and data.dtype not in ("int32", "int64"):
        raise TypeInferenceError(f"{op}: data {data} does not match a pool of "
                                 f"{'strings' if strings else 'integers'}")
    if attrs["mode"] not in TFIDF_MODES:
        raise TypeInferenceError(f"{op}: mode {attrs['mode']!r} is not one of {TFIDF_MODES}")
    indexes = attrs["ngram_indexes"]
    if not indexes or min(indexes) < 0:
        raise TypeInferenceError(f"{op}: ngram_indexes {list(indexes)} must be non-empty and "
                                 "non-negative")
    out = max(indexes) + 1
    weights = attrs["weights"]
    if weights and len(weights) != len(indexes):
        raise TypeInferenceError(f"{op}: {len(weights)} weights for {len(indexes)} n-grams")
    shape = (out,) if data.ndim == 1 else (data.shape[0], out)
    return TensorType(shape, "float32")


def _gram_table(pool, ngram_counts, min_gram, max_gram, ngram_indexes):
    """``{n-gram tuple: output column}`` for the pool's n-grams of a size in [min, max].

    Segment ``i`` of the pool (from ``ngram_counts[i]`` to the next start) holds n-grams of
    size ``i + 1``; n-grams are numbered across all segments, and n-gram ``k`` lands in column
    ``ngram_indexes[k]`` (sizes outside the range still take their numbers).
    """
    op = "onnx.tfidf_vectorizer"
    table: dict = {}
    number = 0
    starts = list(ngram_counts) + [len(pool)]
    for i in range(len(ngram_counts)):
        size = i + 1
        begin, end = starts[i], starts[i + 1]
        if begin > end or (end - begin) % size:
            raise OpImplError(f"{op}: pool segment [{begin}, {end}) does not hold whole "
                              f"{size}-grams", op=op)
        for start in range(begin, end, size):
            if min_gram <= size <= max_gram:
                if number >= len(ngram_indexes):
                    raise OpImplError(f"{op}: the pool holds more n-grams than the "
                                      f"{len(ngram_indexes)} ngram_indexes", op=op)
                table[tuple(pool[start:start + size])] = ngram_indexes[number]
            number += 1
    return table


def _count_row(row, table, min_gram, max_gram, max_skip, counts):
    """Add the n-gram counts of one row into ``counts``: an n-gram of size ``n >= 2`` is
    ``row[s], row[s + d], ..., row[s + (n - 1) d]`` for each skip distance ``d`` in
    ``1 .. max_skip + 1``; unigrams do not depend on ``d`` and count once."""
    length = len(row)
    for size in range(max(min_gram, 1), max_gram + 1):
        distances = [1] if size == 1 else range(1, max_skip + 2)
        for step in distances:
            for start in range(length - (size - 1) * step):
                column = table.get(tuple(row[start:start + (size - 1) * step + 1:step]))
                if column is not None:
                    counts[column] += 1


def _tfidf_ref(data, mode="TF", min_gram_length=1, max_gram_length=1, max_skip_count=0,
               ngram_counts=(), ngram_indexes=(), pool=(), weights=()):
    op = "onnx.tfidf_vectorizer"
    if min_gram_length < 1 or max_gram_length < min_gram_length or max_skip_count < 0:
        raise OpImplError(f"{op}: gram lengths [{min_gram_length}, {max_gram_length}] and "
                          f"max_skip_count {max_skip_count} are invalid", op=op)
    table = _gram_table(list(pool), ngram_counts, min_gram_length, max_gram_length,
                        list(ngram_indexes))
    rows = data.reshape(1, -1) if data.ndim == 1 else data
    # python values so that tuples of numpy ints or strings compare with the pool's
    rows = [[v.item() if isinstance(v, np.generic) else v for v in row] for row in rows]
    out = max(ngram_indexes) + 1
    counts = np.zeros((len(rows), out), "int64")
    for r, row in enumerate(rows):
        _count_row(row, table, min_gram_length, max_gram_length, max_skip_count, counts[r])
    # weight i belongs to n-gram i, so to column ngram_indexes[i] (the spec and onnxruntime;
    # onnx.reference reads weights by column, which agrees only for indexes 0, 1, 2, ...)
    scale = np.ones(out, "float32")
    if len(weights):
        scale = np.zeros(out, "float32")
        scale[np.asarray(ngram_indexes)] = np.asarray(weights, "float32")
    if mode == "TF":
        result = counts.astype("float32")
    elif mode == "IDF":
        result = (counts > 0).astype("float32") * scale
    elif mode == "TFIDF":
        result = counts.astype("float32") * scale
    else:
        raise OpImplError(f"{op}: mode {mode!r} is not one of {TFIDF_MODES}", op=op)
    return (result.reshape(out) if data.ndim == 1 else result,)


register_opaque("onnx.tfidf_vectorizer", ("data",),
                ("onnx.attrs.TfIdfVectorizerAttrs",
           [("mode", "TF"), ("min_gram_length", 1), ("max_gram_length", 1),
            ("max_skip_count", 0), ("ngram_counts", ()), ("ngram_indexes", ()), ("pool", ()),
            ("weights", ())]),
                _tfidf_rel, _tfidf_ref,
                "ONNX TfIdfVectorizer: weighted counts of pooled (skip-)n-grams per row")


# -- ImageDecoder -------------------------------------------------------------------------------

def pillow_available() -> bool:
    """Whether Pillow (``PIL``), which ``onnx.image_decoder`` decodes with, can be imported."""
    try:
        import PIL.Image  # noqa: F401
    except ImportError:
        return False
    return True


def _image_decoder_rel(arg_types, attrs):
    op = "onnx.image_decoder"
    encoded = expect_tensor(arg_types[0], f"{op}: encoded_stream")
    if encoded.ndim != 1 or encoded.dtype != "uint8":
        raise TypeInferenceError(f"{op}: encoded_stream must be 1-D uint8, got {encoded}")
    channels = PIXEL_FORMATS.get(attrs["pixel_format"])
    if channels is None:
        raise TypeInferenceError(f"{op}: pixel_format {attrs['pixel_format']!r} is not one "
                                 f"of {sorted(PIXEL_FORMATS)}")
    return TensorType((Any, Any, channels), "uint8")


def _image_decoder_ref(encoded, pixel_format="RGB"):
    op = "onnx.image_decoder"
    try:
        import PIL.Image
    except ImportError:
        raise OpImplError(f"{op}: decoding images needs Pillow (pip install pillow)",
                          op=op) from None
    try:
        image = PIL.Image.open(io.BytesIO(np.ascontiguousarray(encoded).tobytes()))
        image.load()
    except Exception as error:  # Pillow raises many kinds for unknown or corrupt data
        raise OpImplError(f"{op}: cannot decode the {encoded.size}-byte stream: {error}",
                          op=op) from None
    if pixel_format == "Grayscale":
        return (np.asarray(image.convert("L"), "uint8")[:, :, None],)
    pixels = np.asarray(image.convert("RGB"), "uint8")
    if pixel_format == "BGR":
        pixels = pixels[:, :, ::-1]
    return (np.ascontiguousarray(pixels),)


register_opaque("onnx.image_decoder", ("encoded",),
                ("onnx.attrs.ImageDecoderAttrs", [("pixel_format", "RGB")]),
                _image_decoder_rel, _image_decoder_ref,
                "ONNX ImageDecoder: decode an encoded image file into [H, W, C] uint8 pixels "
                "(needs Pillow)")
