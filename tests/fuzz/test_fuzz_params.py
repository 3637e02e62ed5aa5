"""Params-format fuzzing (issue #19): byte mutants of saved parameter dicts."""

import numpy as np
import pytest

from interp.params import load_param_dict, save_param_dict
from irlib.errors import ParamsFormatError

from campaigns import params_campaign, params_seeds


def test_params_byte_mutants():
    report = params_campaign(6000, seed=19)
    assert report.failures == [], report.failures[:5]
    assert report.irlib_errors > 0


def test_seeds_round_trip():
    for blob in params_seeds():
        again = save_param_dict({k: v.numpy() for k, v in load_param_dict(blob).items()})
        assert again == blob


def test_empty_array_with_a_huge_dim_is_a_format_error():
    # Found by the campaign: shape (0, 2**61) has 0 bytes of data but numpy cannot make it.
    blob = bytearray(save_param_dict({"x": np.zeros((0, 1), "float32")}))
    one = (1).to_bytes(8, "little", signed=True)
    at = bytes(blob).rindex(one)                      # the last dim of the shape
    blob[at:at + 8] = (2 ** 61).to_bytes(8, "little", signed=True)
    with pytest.raises(ParamsFormatError, match="too large"):
        load_param_dict(bytes(blob))
