"""Regression (issue #19): ConvertLayout with a string or a one-layout list, batch_norm's
dtype rule."""

import numpy as np
import pytest

import interp
import irlib
from irlib.errors import IRError, PassError, TypeInferenceError


def conv_module():
    x = irlib.var("x", shape=(1, 3, 6, 6))
    w = irlib.var("w", shape=(4, 3, 3, 3))
    body = irlib.nn.relu(irlib.nn.conv2d(x, w, padding=(1, 1)))
    return irlib.IRModule.from_expr(irlib.Function([x, w], body))


def conv_oracle(x, w):
    """NCHW/OIHW conv with padding 1, stride 1, then relu (numpy, written here)."""
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((1, 4, 6, 6), "float32")
    for i in range(6):
        for j in range(6):
            patch = padded[:, :, i:i + 3, j:j + 3]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return np.maximum(out, 0)


@pytest.mark.parametrize("desired", ["NHWC", {"nn.conv2d": ["NHWC"]},
                                     {"nn.conv2d": "NHWC"}])
def test_convert_layout_short_forms_are_well_typed_and_correct(desired):
    mod = irlib.transform.ConvertLayout(desired)(conv_module())
    typed = irlib.transform.InferType()(mod)
    text = typed.astext()
    assert 'data_layout="NHWC"' in text and 'kernel_layout="HWIO"' in text
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 3, 6, 6)).astype("float32")
    w = rng.standard_normal((4, 3, 3, 3)).astype("float32")
    out = interp.create_executor("debug", mod=typed).evaluate()(x, w)
    np.testing.assert_allclose(out.numpy(), conv_oracle(x, w), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("desired", [5, None, {"nn.conv2d": 3}, {"nn.conv2d": ["A", "B", "C"]}])
def test_convert_layout_bad_argument_is_a_pass_error(desired):
    with pytest.raises(PassError, match="desired_layout"):
        irlib.transform.ConvertLayout(desired)


def bn_call(data_dtype, param_dtype):
    x = irlib.var("x", shape=(2, 3), dtype=data_dtype)
    params = [irlib.var(n, shape=(3,), dtype=param_dtype) for n in ("g", "b", "m", "v")]
    out = irlib.nn.batch_norm(x, *params)[0]
    return irlib.IRModule.from_expr(irlib.Function([x] + params, out))


def test_batch_norm_rejects_params_of_another_dtype():
    with pytest.raises(TypeInferenceError, match="gamma must have the data's dtype float64"):
        irlib.transform.InferType()(bn_call("float64", "float32"))
    irlib.transform.InferType()(bn_call("float64", "float64"))
    irlib.transform.InferType()(bn_call("float32", "float32"))
