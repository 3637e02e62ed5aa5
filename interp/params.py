"""The parameter blob: ``save_param_dict`` / ``load_param_dict``, byte-compatible with TVM.

Layout (all integers little-endian; relay_spec.md section 5.3)::

    u64 0xF7E58D4F05049CB7   list magic            u64 0   reserved
    u64 num_names            then per name: u64 byte length, UTF-8 bytes
    u64 num_arrays           (== num_names), then per array, in the names' order:
        u64 0xDD5E40F096B4A13F   array magic       u64 0   reserved
        i32 device_type (1 = CPU)   i32 device_id (0)   i32 ndim
        u8 type code (0 int, 1 uint, 2 float, 4 bfloat)   u8 bits   u16 lanes
        i64 x ndim shape    i64 data byte size    the raw row-major data

``bool`` is code 1 (uint) with 1 bit, one byte per element. Names are written in the dict's
order (TVM writes its Map's order, so readers key by name, never by position).
"""

from __future__ import annotations

import struct

import numpy as np

from irlib.errors import ParamsFormatError
from irlib.ndarray import NDArray

__all__ = ["save_param_dict", "load_param_dict", "LIST_MAGIC", "ARRAY_MAGIC"]

LIST_MAGIC = 0xF7E58D4F05049CB7
ARRAY_MAGIC = 0xDD5E40F096B4A13F
_CPU = 1
_KINDS = {"i": 0, "u": 1, "f": 2}
_CODE_NAMES = {0: "int", 1: "uint", 2: "float", 3: "opaque handle", 4: "bfloat"}


def _type_triple(dtype: np.dtype, name: str) -> tuple:
    """DLPack ``(code, bits, lanes)`` of a numpy dtype."""
    if dtype == np.bool_:
        return 1, 1, 1
    if dtype.kind not in _KINDS:
        raise ParamsFormatError(f"param {name!r}: dtype {dtype} cannot be saved; use a bool, "
                                f"int, uint or float dtype")
    return _KINDS[dtype.kind], dtype.itemsize * 8, 1


def _numpy_dtype(code: int, bits: int, lanes: int, where: str) -> np.dtype:
    if lanes != 1:
        raise ParamsFormatError(f"{where}: vector dtype with {lanes} lanes is not supported")
    if code == 1 and bits == 1:
        return np.dtype(np.bool_)
    kind = {0: "i", 1: "u", 2: "f"}.get(code)
    if kind is None or bits not in (8, 16, 32, 64) or (kind == "f" and bits == 8):
        label = _CODE_NAMES.get(code, f"code {code}")
        raise ParamsFormatError(f"{where}: unsupported dtype ({label}, {bits} bits)")
    return np.dtype(f"<{kind}{bits // 8}")


def save_param_dict(params: dict) -> bytes:
    """Serialize a dict of arrays to TVM's parameter blob format.

    Args:
        params: name (str) -> array (an :class:`~irlib.ndarray.NDArray`, a numpy array or
            anything ``np.asarray`` accepts).

    Returns:
        The blob as bytes.

    Raises:
        ParamsFormatError: if a name is not a string or an array's dtype has no DLPack
            equivalent (complex, object, strings...).
    """
    names, arrays = [], []
    for name, value in params.items():
        if not isinstance(name, str):
            raise ParamsFormatError(f"param names must be strings, got {name!r}")
        names.append(name)
        arrays.append(np.asarray(value.numpy() if isinstance(value, NDArray) else value))
    parts = [struct.pack("<QQQ", LIST_MAGIC, 0, len(names))]
    for name in names:
        encoded = name.encode("utf-8")
        parts.append(struct.pack("<Q", len(encoded)) + encoded)
    parts.append(struct.pack("<Q", len(arrays)))
    for name, array in zip(names, arrays):
        code, bits, lanes = _type_triple(array.dtype, name)
        data = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
        parts.append(struct.pack("<QQiiiBBH", ARRAY_MAGIC, 0, _CPU, 0, array.ndim, code, bits,
                                 lanes))
        parts.append(struct.pack(f"<{array.ndim}q", *array.shape))
        parts.append(struct.pack("<q", len(data)) + data)
    return b"".join(parts)


class _Reader:
    """Sequential little-endian reads that name what is missing and where."""

    def __init__(self, blob):
        self.blob = memoryview(blob).cast("B")
        self.offset = 0

    def take(self, count: int, what: str) -> memoryview:
        if count < 0 or self.offset + count > len(self.blob):
            left = len(self.blob) - self.offset
            raise ParamsFormatError(f"truncated params blob: {what} needs {count} bytes at "
                                    f"offset {self.offset}, only {left} left")
        chunk = self.blob[self.offset:self.offset + count]
        self.offset += count
        return chunk

    def unpack(self, fmt: str, what: str):
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt), what))

    def count(self, what: str) -> int:
        offset = self.offset
        value, = self.unpack("Q", what)
        if value > len(self.blob):      # each entry takes at least a byte: corrupt
            raise ParamsFormatError(f"corrupt params blob: {what} {value} at offset {offset} "
                                    f"exceeds the blob's {len(self.blob)} bytes")
        return value


def load_param_dict(blob) -> dict:
    """Deserialize a TVM parameter blob.

    Args:
        blob: bytes, bytearray or memoryview, as written by :func:`save_param_dict` or by
            TVM's ``save_param_dict``.

    Returns:
        dict name -> :class:`~irlib.ndarray.NDArray` (CPU), each owning its own memory.

    Raises:
        ParamsFormatError: if the blob is truncated or corrupt (bad magic, count mismatch,
            device other than CPU, unsupported dtype, size mismatch, duplicate name, trailing
            bytes); the message names the field and its byte offset.
    """
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise ParamsFormatError(f"params blob must be bytes, got {type(blob).__name__}")
    reader = _Reader(blob)
    magic, _reserved = reader.unpack("QQ", "header")
    if magic != LIST_MAGIC:
        raise ParamsFormatError(f"not a params blob: magic {magic:#x} at offset 0, expected "
                                f"{LIST_MAGIC:#x}")
    names = []
    for index in range(reader.count("name count")):
        length = reader.count(f"length of name {index}")
        start = reader.offset
        try:
            names.append(str(reader.take(length, f"name {index}"), "utf-8"))
        except UnicodeDecodeError:
            raise ParamsFormatError(f"corrupt params blob: name {index} at offset {start} is "
                                    f"not UTF-8") from None
    offset = reader.offset
    num_arrays = reader.count("array count")
    if num_arrays != len(names):
        raise ParamsFormatError(f"corrupt params blob: {num_arrays} arrays (offset {offset}) "
                                f"for {len(names)} names")
    result = {}
    for name in names:
        if name in result:
            raise ParamsFormatError(f"corrupt params blob: name {name!r} appears twice")
        result[name] = NDArray(_read_array(reader, name))
    if reader.offset != len(reader.blob):
        raise ParamsFormatError(f"corrupt params blob: {len(reader.blob) - reader.offset} "
                                f"trailing bytes at offset {reader.offset}")
    return result


def _read_array(reader: _Reader, name: str) -> np.ndarray:
    start = reader.offset
    where = f"array {name!r} at offset {start}"
    magic, _reserved, device_type, _device_id, ndim, code, bits, lanes = reader.unpack(
        "QQiiiBBH", f"header of array {name!r}")
    if magic != ARRAY_MAGIC:
        raise ParamsFormatError(f"corrupt params blob: {where} has magic {magic:#x}, expected "
                                f"{ARRAY_MAGIC:#x}")
    if device_type != _CPU:
        raise ParamsFormatError(f"{where}: device type {device_type}, expected 1 (CPU)")
    if ndim < 0 or ndim > 64:
        raise ParamsFormatError(f"corrupt params blob: {where} has ndim {ndim}")
    dtype = _numpy_dtype(code, bits, lanes, where)
    shape = reader.unpack(f"{ndim}q", f"shape of array {name!r}")
    if any(d < 0 for d in shape):
        raise ParamsFormatError(f"corrupt params blob: {where} has shape {shape}")
    if int(np.prod([max(d, 1) for d in shape], dtype=object)) * max(bits // 8, 1) >= 2 ** 62:
        # numpy cannot even describe such an array (an empty one included: a 0 dim beside a
        # 2**62 dim makes reshape raise ValueError 'array is too big')
        raise ParamsFormatError(f"corrupt params blob: {where} has shape {shape}, too large "
                                f"for any array")
    size_offset = reader.offset
    size, = reader.unpack("q", f"data size of array {name!r}")
    expected = int(np.prod(shape, dtype=object)) * ((bits + 7) // 8)
    if size != expected:
        raise ParamsFormatError(f"corrupt params blob: data size {size} at offset "
                                f"{size_offset} does not match shape {shape} of {dtype} "
                                f"({expected} bytes) for array {name!r}")
    data = reader.take(size, f"data of array {name!r}")
    array = np.frombuffer(data, dtype=dtype).reshape(shape).copy()
    return array.astype(array.dtype.newbyteorder("="), copy=False)
