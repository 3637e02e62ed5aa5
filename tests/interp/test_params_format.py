"""The parameter blob (relay_spec.md section 5.3): round trips, a blob written byte by byte
from the spec's layout, and corrupt or truncated blobs."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import interp
from irlib.errors import ParamsFormatError
from irlib.ndarray import NDArray
from irlib.testing.budget import examples

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64"]


def _u64(v):
    return v.to_bytes(8, "little")


def _i32(v):
    return v.to_bytes(4, "little", signed=True)


def _i64(v):
    return v.to_bytes(8, "little", signed=True)


def _spec_blob():
    """``{"w": float32 [[1, 2], [3, 4]], "flag": bool scalar True}`` per the spec's layout."""
    blob = bytes.fromhex("B79C04054F8DE5F7")          # 0xF7E58D4F05049CB7 little-endian
    blob += _u64(0) + _u64(2)
    blob += _u64(1) + b"w" + _u64(4) + b"flag"
    blob += _u64(2)
    array_magic = bytes.fromhex("3FA1B496F0405EDD")   # 0xDD5E40F096B4A13F little-endian
    blob += array_magic + _u64(0) + _i32(1) + _i32(0) + _i32(2)
    blob += bytes([2, 32]) + (1).to_bytes(2, "little")          # float, 32 bits, 1 lane
    blob += _i64(2) + _i64(2) + _i64(16)
    blob += b"".join(struct.pack("<f", v) for v in (1.0, 2.0, 3.0, 4.0))
    blob += array_magic + _u64(0) + _i32(1) + _i32(0) + _i32(0)
    blob += bytes([1, 1]) + (1).to_bytes(2, "little")           # bool: uint, 1 bit
    blob += _i64(1) + b"\x01"
    return blob


def test_writer_matches_the_spec_layout_byte_for_byte():
    params = {"w": np.array([[1, 2], [3, 4]], "float32"), "flag": np.array(True)}
    assert interp.save_param_dict(params) == _spec_blob()


def test_reader_reads_a_hand_built_blob():
    loaded = interp.load_param_dict(_spec_blob())
    assert list(loaded) == ["w", "flag"]
    assert isinstance(loaded["w"], NDArray)
    np.testing.assert_array_equal(loaded["w"].numpy(), [[1, 2], [3, 4]])
    assert loaded["w"].dtype == "float32"
    assert loaded["flag"].shape == () and loaded["flag"].dtype == "bool"
    assert loaded["flag"].numpy()


@st.composite
def param_dicts(draw):
    names = draw(st.lists(st.text(min_size=0, max_size=8), max_size=5, unique=True))
    params = {}
    for name in names:
        dtype = draw(st.sampled_from(DTYPES))
        shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
        params[name] = draw(hnp.arrays(dtype, shape))
    return params


@settings(max_examples=examples(60), deadline=None)
@given(param_dicts())
def test_round_trip(params):
    loaded = interp.load_param_dict(interp.save_param_dict(params))
    assert set(loaded) == set(params)
    for name, array in params.items():
        got = loaded[name].numpy()
        assert got.dtype == array.dtype and got.shape == array.shape
        np.testing.assert_array_equal(got, array)


def test_round_trip_of_ndarrays_big_endian_and_shared_arrays():
    shared = np.arange(6, dtype=">i4").reshape(2, 3)
    params = {"a": NDArray(np.float16([1.5, -2])), "b": shared, "c": shared,
              "empty": np.zeros((0, 3), "float32"), "scalar": np.float64(2.5)}
    loaded = interp.load_param_dict(bytearray(interp.save_param_dict(params)))
    np.testing.assert_array_equal(loaded["b"].numpy(), shared)
    assert loaded["b"].numpy().dtype == np.dtype("int32")
    assert not np.shares_memory(loaded["b"].numpy(), loaded["c"].numpy())
    assert loaded["empty"].shape == (0, 3) and loaded["scalar"].numpy() == 2.5
    assert loaded["a"].dtype == "float16"


def test_blob_size_for_one_array():
    blob = interp.save_param_dict({"x": np.zeros((2, 3), "float32")})
    # header 24 + name 9 + count 8 + array header 32 + shape 16 + size 8 + data 24
    assert len(blob) == 24 + 9 + 8 + 32 + 16 + 8 + 24


@pytest.mark.parametrize("cut", [0, 7, 20, 30, 41, 60, 80, 100, 110])
def test_truncated_blob_names_the_field_and_offset(cut):
    blob = _spec_blob()
    with pytest.raises(ParamsFormatError, match=r"truncated params blob: .* at offset \d+"):
        interp.load_param_dict(blob[:cut])


def _patched(offset, new):
    blob = bytearray(_spec_blob())
    blob[offset:offset + len(new)] = new
    return bytes(blob)


# Offsets in the spec blob: names end at 24+9+12=45, count at 45, first array at 53.
@pytest.mark.parametrize("blob,message", [
    (_patched(0, b"\x00"), "not a params blob: magic"),
    (_patched(45, _u64(3)), "3 arrays"),
    (_patched(53, b"\x00"), "magic .* expected 0xdd5e40f096b4a13f"),
    (_patched(53 + 16, _i32(2)), r"device type 2, expected 1 \(CPU\)"),
    (_patched(53 + 28, bytes([3])), r"unsupported dtype \(opaque handle"),
    (_patched(53 + 30, (4).to_bytes(2, "little")), "4 lanes"),
    (_patched(53 + 48, _i64(12)), "data size 12 at offset 101"),
    (_patched(16, _u64(1 << 40)), "name count .* exceeds"),
    (_patched(32, b"\xff"), "not UTF-8"),
    (_spec_blob() + b"\x00", "1 trailing bytes at offset"),
], ids=["list-magic", "count-mismatch", "array-magic", "device", "dtype-code", "lanes",
        "data-size", "huge-count", "utf8", "trailing"])
def test_corrupt_blob_raises_params_format_error(blob, message):
    with pytest.raises(ParamsFormatError, match=message):
        interp.load_param_dict(blob)


def test_duplicate_names_are_rejected():
    blob = bytearray(interp.save_param_dict({"a": np.zeros(1), "b": np.zeros(1)}))
    assert blob[41:42] == b"b"                 # header 24, "a" entry 9, length of "b" 8
    blob[41:42] = b"a"
    with pytest.raises(ParamsFormatError, match="'a' appears twice"):
        interp.load_param_dict(bytes(blob))


def test_save_rejects_unsupported_values():
    with pytest.raises(ParamsFormatError, match="complex64"):
        interp.save_param_dict({"z": np.zeros(2, "complex64")})
    with pytest.raises(ParamsFormatError, match="strings"):
        interp.save_param_dict({1: np.zeros(2)})
    with pytest.raises(ParamsFormatError, match="must be bytes"):
        interp.load_param_dict("not bytes")
