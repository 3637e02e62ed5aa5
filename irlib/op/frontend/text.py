"""Text ops with ONNX semantics (``onnx.*``), each with a numpy reference:

* ``onnx.string_concat``, ``onnx.regex_full_match``, ``onnx.string_split`` and
  ``onnx.string_normalizer``: elementwise string operations;
* ``onnx.tfidf_vectorizer(data, mode, min_gram_length, max_gram_length, max_skip_count,
  ngram_counts, ngram_indexes, pool, weights)``: n-gram counts of the rows of a ``[C]`` or
  ``[B, C]`` tensor of integers or strings, weighted by ``mode`` (``TF``, ``IDF``,
  ``TFIDF``), as float32 ``[out]`` or ``[B, out]`` with ``out = max(ngram_indexes) + 1``.
"""

from __future__ import annotations

import numpy as np

from ...errors import OpImplError, TypeInferenceError
from ...ir.dims import Any
from ...ir.types import TensorType, TupleType
from ..registry import register_opaque
from ..type_relations import expect_tensor

__all__ = ['TFIDF_MODES']


#: The weighting modes of TfIdfVectorizer.
TFIDF_MODES = ("TF", "IDF", "TFIDF")


# -- strings ------------------------------------------------------------------------------------

def _strings(data):
    return np.asarray(data).astype(str)


def _string_rel(arg_types, attrs):
    return TensorType(expect_tensor(arg_types[0], "string op: data").shape, "string")


def _string_concat_rel(arg_types, attrs):
    from ..type_relations import broadcast_shapes
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
