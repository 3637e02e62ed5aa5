"""Regression (issue #19): graph-executor API misuse gives None or a documented error."""

import numpy as np
import pytest

import interp
import irlib
from interp import graph_executor
from irlib.errors import IRError, ParamsFormatError


@pytest.fixture(scope="module")
def gm():
    x = irlib.var("x", shape=(2,))
    w = irlib.var("w", shape=(2,))
    mod = irlib.IRModule.from_expr(irlib.Function([x, w], irlib.add(x, w)))
    lib = interp.build(mod, target="cpu")
    return graph_executor.GraphModule(lib["default"](interp.cpu(0)))


@pytest.mark.parametrize("index", [99, -1, 2, "nope"])
def test_get_input_unknown_is_none(gm, index):
    assert gm.get_input(index) is None


def test_get_input_known(gm):
    gm.set_input("x", np.array([1, 2], "float32"))
    np.testing.assert_array_equal(gm.get_input(0).numpy(), [1, 2])


@pytest.mark.parametrize("blob", ["abc", None, 5, 10 ** 12, 3.5])
def test_load_params_validates_before_allocating(gm, blob):
    with pytest.raises(ParamsFormatError, match="must be bytes"):
        gm.load_params(blob)


def test_load_params_bytes_and_bytearray(gm):
    blob = interp.save_param_dict({"w": np.array([10, 20], "float32")})
    gm.load_params(bytearray(blob))
    gm.set_input("x", np.array([1, 2], "float32"))
    gm.run()
    np.testing.assert_array_equal(gm.get_output(0).numpy(), [11, 22])
    with pytest.raises(IRError):
        gm.load_params(blob[:-3])
