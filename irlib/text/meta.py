"""The ``#[metadata]`` section of the text format: constants that have no literal spelling.

Tensors that are not inline scalars (any non-scalar, and scalars of dtypes without a literal
form, NaN, ...) print as ``meta[relay.Constant][k]``; the table they index is written after
``#[metadata]`` at the very end of the text, as one JSON object::

    #[metadata]
    {
      "relay.Constant": [
        {"dtype": "float32", "shape": [2, 3], "data": "<base64 of the little-endian bytes>"}
      ]
    }

Any other key names an attrs type (``"relay.attrs.Conv2DAttrs"``); its entries are JSON
objects of attribute fields, and ``meta[relay.attrs.Conv2DAttrs][k]`` written as a call's
last argument gives that call its attrs (see :func:`decode_attrs`).

TVM writes this section in its object-graph serialization (SaveJSON), which irlib cannot
reproduce; this format is irlib's own (see docs/text-format.md). The parser reuses
:func:`load_metadata` / :func:`decode_constant`.
"""

from __future__ import annotations

import base64
import binascii
import json

import numpy as np

from ..errors import ParseError
from ..ir.attrs import Attrs

CONSTANT_KEY = "relay.Constant"


def encode_constant(array) -> dict:
    """The JSON-ready entry of one constant tensor.

    Args:
        array: a numpy array (or anything ``np.asarray`` accepts, e.g. an NDArray).

    Returns:
        ``{"dtype": str, "shape": [int, ...], "data": base64 str}``; the data are the array's
        elements in C order, little-endian.
    """
    # NOTE: not np.ascontiguousarray, which turns a 0-d array into shape (1,).
    array = np.asarray(array)
    little = array.astype(array.dtype.newbyteorder("<"), copy=False)
    return {"dtype": array.dtype.name, "shape": [int(d) for d in array.shape],
            "data": base64.b64encode(little.tobytes(order="C")).decode("ascii")}


def decode_constant(entry) -> np.ndarray:
    """The array an :func:`encode_constant` entry describes.

    Args:
        entry: a dict with ``dtype``, ``shape`` and ``data`` keys.

    Returns:
        A new numpy array in native byte order.

    Raises:
        ParseError: if the entry is malformed (missing key, unknown dtype, bad shape, bad
            base64, or a byte count that does not match dtype and shape).
    """
    if not isinstance(entry, dict) or not {"dtype", "shape", "data"} <= entry.keys():
        raise ParseError(f"metadata constant must be an object with dtype, shape and data, "
                         f"got {str(entry)[:80]}")
    try:
        dtype = np.dtype(entry["dtype"])
    except TypeError:
        raise ParseError(f"metadata constant has unknown dtype {entry['dtype']!r}") from None
    shape = entry["shape"]
    if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise ParseError(f"metadata constant shape must be a list of non-negative ints, "
                         f"got {shape!r}")
    try:
        raw = base64.b64decode(entry["data"], validate=True)
    except (binascii.Error, TypeError, ValueError):
        raise ParseError("metadata constant data is not valid base64") from None
    count = int(np.prod(shape, dtype=np.int64))
    if len(raw) != count * dtype.itemsize:
        raise ParseError(f"metadata constant of dtype {dtype.name} and shape {shape} needs "
                         f"{count * dtype.itemsize} bytes, got {len(raw)}")
    flat = np.frombuffer(raw, dtype=dtype.newbyteorder("<"), count=count)
    return flat.astype(dtype).reshape(shape)


def decode_attrs(entry, type_key: str) -> Attrs:
    """The attrs object a metadata entry under ``type_key`` describes.

    Args:
        entry: a JSON object mapping field names to JSON values (lists become tuples), or an
            :class:`~irlib.ir.attrs.Attrs` (from ``init_meta_table``), returned as it is.
        type_key: the metadata key the entry is listed under; the attrs' type key.

    Returns:
        The Attrs (with no schema defaults; the parser fills an op's defaults).

    Raises:
        ParseError: if the entry is neither an object with string keys nor an Attrs.
    """
    if isinstance(entry, Attrs):
        return entry
    if not isinstance(entry, dict) or not all(isinstance(key, str) for key in entry):
        raise ParseError(f"metadata entry of {type_key} must be an object of attribute "
                         f"fields, got {str(entry)[:80]}")
    for name, value in entry.items():
        if not _is_attr_json(value):
            raise ParseError(f"metadata attribute {name} of {type_key} must be a number, "
                             f"string, bool, null or a list of those, got {str(value)[:80]}")
    return Attrs(entry, type_key)


def _is_attr_json(value) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif not (item is None or isinstance(item, (bool, int, float, str))):
            return False
    return True


def dump_metadata(constants) -> str:
    """The JSON text of a metadata section holding ``constants`` (arrays, in index order)."""
    entries = [encode_constant(array) for array in constants]
    lines = ["{", f'  "{CONSTANT_KEY}": [']
    for position, entry in enumerate(entries):
        comma = "," if position + 1 < len(entries) else ""
        lines.append("    " + json.dumps(entry) + comma)
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines)


def load_metadata(text: str) -> dict:
    """Parse the JSON after ``#[metadata]``.

    Args:
        text: the JSON text.

    Returns:
        A dict from type key to a list of entries; ``relay.Constant`` entries are decoded to
        numpy arrays, entries under other keys are returned as parsed JSON.

    Raises:
        ParseError: if the text is not a JSON object of lists, or a constant is malformed.
    """
    try:
        table = json.loads(text)
    except json.JSONDecodeError as error:
        raise ParseError(f"metadata section is not valid JSON: {error}") from None
    if not isinstance(table, dict) or not all(isinstance(v, list) for v in table.values()):
        raise ParseError("metadata section must be a JSON object mapping type keys to lists")
    result = dict(table)
    if CONSTANT_KEY in result:
        result[CONSTANT_KEY] = [decode_constant(entry) for entry in result[CONSTANT_KEY]]
    return result


class MetaTable:
    """The constants a print refers to by ``meta[relay.Constant][k]``, numbered in order."""

    __slots__ = ("_index", "_arrays")

    def __init__(self):
        self._index: dict = {}
        self._arrays: list = []

    def reference(self, constant) -> str:
        """``meta[relay.Constant][k]`` for ``constant`` (a Constant node; same node, same k)."""
        k = self._index.get(constant)
        if k is None:
            k = len(self._arrays)
            self._index[constant] = k
            self._arrays.append(constant.data.numpy())
        return f"meta[{CONSTANT_KEY}][{k}]"

    def __len__(self) -> int:
        return len(self._arrays)

    def to_json(self) -> str:
        """The section text (without the ``#[metadata]`` line)."""
        return dump_metadata(self._arrays)
