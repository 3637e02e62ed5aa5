"""Scalar literal spellings for every dtype, and exact round trip of float digits."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import irlib
from irlib import const
from irlib.text.literals import format_float, scalar_literal


@pytest.mark.parametrize("value, dtype, text", [
    (42, "int32", "42"),
    (-3, "int32", "-3"),
    (-2147483648, "int32", "-2147483648"),
    (42, "int16", "42i16"),
    (-7, "int16", "-7i16"),
    (42, "int64", "42i64"),
    (9223372036854775807, "int64", "9223372036854775807i64"),
    (3.0, "float32", "3f"),
    (0.5, "float32", "0.5f"),
    (0.1, "float32", "0.1f"),
    (-3.0, "float32", "-3f"),
    (-0.0, "float32", "-0f"),
    (1e10, "float32", "1e+10f"),
    (1e-5, "float32", "1e-05f"),
    (1e-4, "float32", "0.0001f"),
    (1e6, "float32", "1e+06f"),
    (1.5e-7, "float32", "1.5e-07f"),
    (123456.0, "float32", "123456f"),
    (1234567.0, "float32", "1234567f"),
    (16777216.0, "float32", "16777216f"),
    (float("inf"), "float32", "inff"),
    (float("-inf"), "float32", "-inff"),
    (3.0, "float16", "3f16"),
    (0.5, "float16", "0.5f16"),
    (65504.0, "float16", "65500f16"),
    (3.0, "float64", "3f64"),
    (0.1, "float64", "0.1f64"),
    (1e100, "float64", "1e+100f64"),
    (True, "bool", "True"),
    (False, "bool", "False"),
])
def test_inline_scalar_spelling(value, dtype, text):
    assert str(const(value, dtype)) == text


def test_float32_max_uses_its_shortest_digits():
    largest = np.finfo(np.float32).max
    assert str(const(largest, "float32")) == "3.4028235e+38f"


@pytest.mark.parametrize("value, dtype", [
    (float("nan"), "float32"),
    (float("inf"), "float64"),
    (float("-inf"), "float16"),
    (1, "int8"),
    (1, "uint8"),
    (1, "uint32"),
])
def test_scalars_without_literal_go_to_metadata(value, dtype):
    assert str(const(value, dtype)) == "meta[relay.Constant][0]"


def test_non_scalars_go_to_metadata():
    assert str(const([1.0, 2.0])) == "meta[relay.Constant][0]"
    assert scalar_literal(np.zeros((1,), "float32")) is None


def _finite_from_bits(dtype, bits):
    value = np.array([bits], dtype=f"uint{np.dtype(dtype).itemsize * 8}").view(dtype)[0]
    return value if np.isfinite(value) else None


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["float16", "float32", "float64"]), st.integers(0, 2**64 - 1))
def test_printed_float_digits_read_back_exactly(dtype, raw):
    bits = raw % (2 ** (np.dtype(dtype).itemsize * 8))
    value = _finite_from_bits(dtype, bits)
    if value is None:
        return
    text = scalar_literal(np.array(value))
    suffix = {"float16": "f16", "float32": "f", "float64": "f64"}[dtype]
    assert text.endswith(suffix)
    back = np.dtype(dtype).type(text[:-len(suffix)])
    # compare bit patterns so that -0.0 and 0.0 are told apart
    assert back.tobytes() == value.tobytes(), (text, value)


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_format_float_of_python_floats_reads_back(value):
    text = format_float(value)
    assert float(text) == value
    assert "e" in text or "." in text or text.lstrip("-").isdigit()


def test_float_layout_rule():
    # positional unless the exponent is < -4 or >= max(6, digits); exponent has 2+ digits
    assert format_float(np.float32(100000.0)) == "100000"
    assert format_float(np.float32(1000000.0)) == "1e+06"
    assert format_float(np.float32(1500000.0)) == "1.5e+06"
    assert format_float(np.float32(0.00012)) == "0.00012"
    assert format_float(np.float32(0.000012)) == "1.2e-05"
    assert format_float(2.5e-300) == "2.5e-300"


def test_constants_in_calls_and_negative_literals():
    x = irlib.var("x", "float32")
    assert str(irlib.add(x, const(-2.5))) == "free_var %x: float32;\nadd(%x, -2.5f)"
