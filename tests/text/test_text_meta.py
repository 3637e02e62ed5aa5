"""The metadata section: encode/decode round trip, the section in astext, errors."""

import base64
import json
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import irlib
from irlib import const, var
from irlib.errors import ParseError
from irlib.text.meta import decode_constant, dump_metadata, encode_constant, load_metadata

from text_test_helpers import check


def test_encode_matches_little_endian_bytes():
    array = np.arange(1, 7, dtype="float32").reshape(2, 3)
    entry = encode_constant(array)
    expected = base64.b64encode(struct.pack("<6f", 1, 2, 3, 4, 5, 6)).decode("ascii")
    assert entry == {"dtype": "float32", "shape": [2, 3], "data": expected}
    # the example in docs/text-format.md
    assert expected == "AACAPwAAAEAAAEBAAACAQAAAoEAAAMBA"


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int16", "int32",
                                   "int64", "uint8", "uint16", "uint32", "uint64", "bool"])
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3), (1, 2, 1, 2)])
def test_encode_decode_round_trip(dtype, shape):
    rng = np.random.default_rng(0)
    array = (rng.standard_normal(shape) * 100).astype(dtype)
    back = decode_constant(json.loads(json.dumps(encode_constant(array))))
    assert back.dtype == array.dtype and back.shape == array.shape
    assert back.tobytes() == array.tobytes()


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(allow_nan=True, width=32), max_size=20))
def test_float32_bits_survive_including_nan(values):
    array = np.array(values, dtype="float32")
    assert decode_constant(encode_constant(array)).tobytes() == array.tobytes()


def test_big_endian_input_is_written_little_endian():
    array = np.array([1, 2], dtype=">i4")
    entry = encode_constant(array)
    assert entry["dtype"] == "int32"
    assert base64.b64decode(entry["data"]) == struct.pack("<2i", 1, 2)
    assert decode_constant(entry).tolist() == [1, 2]


@pytest.mark.parametrize("entry, message", [
    ({"dtype": "float32", "shape": [2]}, "must be an object"),
    ({"dtype": "nonsense", "shape": [1], "data": ""}, "unknown dtype"),
    ({"dtype": "float32", "shape": [-1], "data": ""}, "non-negative"),
    ({"dtype": "float32", "shape": [1], "data": "***"}, "base64"),
    ({"dtype": "float32", "shape": [2], "data": "AACAPw=="}, "needs 8 bytes, got 4"),
])
def test_malformed_entries_raise_parse_error(entry, message):
    with pytest.raises(ParseError, match=message):
        decode_constant(entry)


def test_load_metadata_checks_structure():
    with pytest.raises(ParseError, match="not valid JSON"):
        load_metadata("{")
    with pytest.raises(ParseError, match="mapping type keys to lists"):
        load_metadata('{"relay.Constant": 3}')
    table = load_metadata(dump_metadata([np.ones((2,), "int8")]))
    assert [a.tolist() for a in table["relay.Constant"]] == [[1, 1]]


def test_astext_writes_section_and_refs_decode_to_the_constants():
    x = var("x", shape=(2, 3))
    first = const(np.arange(6, dtype="float32").reshape(2, 3))
    second = const(np.array([1, 2, 3], dtype="int8"))
    shared = irlib.add(x, first)
    expr = irlib.Tuple([shared, irlib.multiply(shared, first), second])
    text = irlib.astext(expr)
    body, section = text.split("#[metadata]\n")
    check(body, '#[version = "0.0.5"]\n'
                "free_var %x: Tensor[(2, 3), float32];\n"
                "%0 = add(%x, meta[relay.Constant][0]);\n"
                "%1 = multiply(%0, meta[relay.Constant][0]);\n"
                "(%0, %1, meta[relay.Constant][1])\n")
    table = json.loads(section)
    assert list(table) == ["relay.Constant"]
    decoded = [decode_constant(entry) for entry in table["relay.Constant"]]
    assert decoded[0].tolist() == [[0, 1, 2], [3, 4, 5]] and decoded[0].dtype == np.float32
    assert decoded[1].tolist() == [1, 2, 3] and decoded[1].dtype == np.int8
    assert text.endswith("}\n")


def test_show_meta_data_false_and_pretty_print_leave_the_section_out():
    expr = irlib.exp(const([1.0, 2.0]))
    hidden = irlib.astext(expr, show_meta_data=False)
    assert hidden == ('#[version = "0.0.5"]\n'
                      "exp(meta[relay.Constant][0])\n"
                      "// meta data omitted. you can use show_meta_data=True to include meta data\n")
    assert str(expr) == "exp(meta[relay.Constant][0])"
    assert "#[metadata]" not in irlib.astext(irlib.exp(const(1.0)))
