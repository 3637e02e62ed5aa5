"""The ``onnx.*`` ops STFT, MelWeightMatrix, TensorScatter and AffineGrid
(irlib/op/frontend/spectral.py, scatter.py, resampling.py): type relations, and numpy
references against explicit DFT sums, hand-derived values and onnxruntime run on one-node
models."""

import numpy as np
import pytest

from irlib.errors import OpImplError, TypeInferenceError
from irlib.ir.dims import Any
from irlib.ir.types import TensorType
from irlib.op import frontend  # noqa: F401  (registers the onnx.* ops)

from ort_oracle import run_node
from op_test_helpers import evaluate_op as run, op_relation as relation

RNG = np.random.default_rng(0)


def _i64(value):
    return np.asarray(value, "int64")


# -- STFT ---------------------------------------------------------------------------------------

def _dft_sum(frame, bins):
    """sum_n frame[n] * exp(-2 pi i k n / N) for k < bins, written out."""
    n = np.arange(frame.size)
    return np.array([np.sum(frame * np.exp(-2j * np.pi * k * n / frame.size))
                     for k in range(bins)])


@pytest.mark.parametrize("onesided,channels", [(True, 1), (False, 1), (False, 2)])
def test_stft_matches_explicit_dft_sums(onesided, channels):
    signal = RNG.standard_normal((2, 20, channels)).astype("float32")
    window = RNG.uniform(0.5, 1.0, 6).astype("float32")
    got = run("onnx.stft", signal, _i64(4), window, _i64([6]), onesided=onesided)
    values = signal[..., 0] + (1j * signal[..., 1] if channels == 2 else 0)
    bins = 4 if onesided else 6
    frames = 1 + (20 - 6) // 4
    assert got.shape == (2, frames, bins, 2)
    for b in range(2):
        for f in range(frames):
            want = _dft_sum(values[b, 4 * f:4 * f + 6] * window, bins)
            np.testing.assert_allclose(got[b, f, :, 0], want.real, rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(got[b, f, :, 1], want.imag, rtol=1e-4, atol=1e-4)


def test_stft_frame_length_defaults_to_window_then_signal():
    signal = np.arange(8, dtype="float32").reshape(1, 8, 1)
    no_window = np.zeros(0, "float32")
    whole = run("onnx.stft", signal, _i64(1), no_window, _i64([]), onesided=False)
    assert whole.shape == (1, 1, 8, 2)
    assert whole[0, 0, 0, 0] == pytest.approx(28.0)  # bin 0 sums the signal
    boxed = run("onnx.stft", signal, _i64(2), np.ones(4, "float32"), _i64([]))
    assert boxed.shape == (1, 3, 3, 2)
    np.testing.assert_allclose(boxed[0, :, 0, 0], [6.0, 14.0, 22.0])


@pytest.mark.parametrize("with_window", [False, True])
def test_stft_matches_onnxruntime(with_window):
    signal = RNG.standard_normal((2, 40, 1)).astype("float32")
    window = np.hanning(10).astype("float32") if with_window else None
    got = run("onnx.stft", signal, _i64(3), window if with_window else np.zeros(0, "float32"),
              _i64(10))
    want = run_node("STFT", [signal, _i64(3), window, _i64(10)], opset=17)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_stft_relation_and_errors():
    out = relation("onnx.stft", [TensorType((3, 50, 1), "float32"), TensorType((), "int64"),
                                 TensorType((0,), "float32"), TensorType((0,), "int64")])
    assert out == TensorType((3, Any, Any, 2), "float32")
    with pytest.raises(TypeInferenceError, match="onnx.stft"):
        relation("onnx.stft", [TensorType((50, 1), "float32")] + [TensorType((), "int64")] * 3)
    with pytest.raises(OpImplError, match="frame_length 9"):
        run("onnx.stft", np.zeros((1, 8, 1), "float32"), _i64(1), np.zeros(0, "float32"),
            _i64(9))
    with pytest.raises(OpImplError, match="window"):
        run("onnx.stft", np.zeros((1, 8, 1), "float32"), _i64(1), np.ones(3, "float32"),
            _i64(4))


# -- MelWeightMatrix ----------------------------------------------------------------------------

def test_mel_weight_matrix_hand_derived():
    # 2 filters over 3 rows (dft 4) at 8 Hz: four points spaced by a quarter of the mel range
    # 0..4 Hz sit near 0, 1, 2, 3 Hz (mels are almost linear there), i.e. at bins
    # floor(5 * hertz / 8) = 0, 0, 1, 1: filter 0 is [0, 0, 1] and filter 1 is [0, 1, 1]
    got = run("onnx.mel_weight_matrix", _i64(2), _i64(4), _i64(8), np.float32(0),
              np.float32(4), dtype="float32")
    want = np.array([[1, 0], [0, 1], [0, 0]], "float32")  # both left edges meet the center
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("params", [(8, 64, 8000, 20.0, 3000.0), (5, 32, 16000, 0.0, 8000.0),
                                    (3, 16, 1000, 100.0, 400.0)])
def test_mel_weight_matrix_matches_onnxruntime(params):
    bins, length, rate, low, high = params
    args = [_i64(bins), _i64(length), _i64(rate), np.float32(low), np.float32(high)]
    got = run("onnx.mel_weight_matrix", *args, dtype="float32")
    want = run_node("MelWeightMatrix", args, opset=17, output_types=["float32"])[0]
    assert got.shape == (length // 2 + 1, bins)
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_mel_weight_matrix_relation_and_errors():
    scalars = [TensorType((), "int64")] * 3 + [TensorType((), "float32")] * 2
    assert relation("onnx.mel_weight_matrix", scalars, dtype="float64") == \
        TensorType((Any, Any), "float64")
    with pytest.raises(OpImplError, match="outside"):
        run("onnx.mel_weight_matrix", _i64(4), _i64(8), _i64(100), np.float32(0),
            np.float32(400))  # 400 Hz is above the 50 Hz Nyquist frequency
    with pytest.raises(OpImplError, match="positive"):
        run("onnx.mel_weight_matrix", _i64(0), _i64(8), _i64(100), np.float32(0),
            np.float32(40))


# -- TensorScatter ------------------------------------------------------------------------------

def test_tensor_scatter_hand_derived_linear_and_circular():
    cache = np.zeros((2, 4), "float32")
    update = np.array([[1, 2], [3, 4]], "float32")
    linear = run("onnx.tensor_scatter", cache, update, _i64([0, 2]), mode="linear", axis=1)
    np.testing.assert_array_equal(linear, [[1, 2, 0, 0], [0, 0, 3, 4]])
    circular = run("onnx.tensor_scatter", cache, update, _i64([3, 1]), mode="circular", axis=1)
    np.testing.assert_array_equal(circular, [[2, 0, 0, 1], [0, 3, 4, 0]])
    default = run("onnx.tensor_scatter", cache, update, _i64([]), mode="linear", axis=1)
    np.testing.assert_array_equal(default, [[1, 2, 0, 0], [3, 4, 0, 0]])
    assert not cache.any()  # the input is not written


@pytest.mark.parametrize("mode,axis,shape", [("linear", -2, (2, 3, 5, 4)),
                                             ("circular", -2, (2, 3, 5, 4)),
                                             ("linear", 1, (3, 6, 2)),
                                             ("circular", -1, (2, 2, 5))])
def test_tensor_scatter_matches_onnxruntime(mode, axis, shape):
    cache = RNG.standard_normal(shape).astype("float32")
    ndim = len(shape)
    update_shape = list(shape)
    update_shape[axis % ndim] = 2
    update = RNG.standard_normal(update_shape).astype("float32")
    capacity = shape[axis % ndim]
    top = capacity if mode == "circular" else capacity - 1
    indices = RNG.integers(0, top, shape[0]).astype("int64")
    got = run("onnx.tensor_scatter", cache, update, indices, mode=mode, axis=axis % ndim)
    want = run_node("TensorScatter", [cache, update, indices], {"mode": mode, "axis": axis},
                    opset=24)[0]
    np.testing.assert_array_equal(got, want)


def test_tensor_scatter_relation_and_errors():
    cache = TensorType((2, 8, 4), "float32")
    indices = TensorType((2,), "int64")
    assert relation("onnx.tensor_scatter", [cache, TensorType((2, 1, 4), "float32"), indices],
                    mode="linear", axis=1) == cache
    with pytest.raises(TypeInferenceError, match="axis 0"):
        relation("onnx.tensor_scatter", [cache, cache, indices], mode="linear", axis=0)
    with pytest.raises(TypeInferenceError, match="must match"):
        relation("onnx.tensor_scatter", [cache, TensorType((2, 1, 4), "int32"), indices],
                 mode="linear", axis=1)
    with pytest.raises(OpImplError, match="run past"):
        run("onnx.tensor_scatter", np.zeros((1, 3), "float32"), np.ones((1, 2), "float32"),
            _i64([2]), mode="linear", axis=1)


# -- AffineGrid ---------------------------------------------------------------------------------

def test_affine_grid_identity_is_the_normalized_pixel_grid():
    identity = np.array([[[1, 0, 0], [0, 1, 0]]], "float32")
    corners = run("onnx.affine_grid", identity, _i64([1, 1, 2, 3]), align_corners=True)
    assert corners.shape == (1, 2, 3, 2)
    np.testing.assert_allclose(corners[0, :, :, 0], [[-1, 0, 1], [-1, 0, 1]])  # x along W
    np.testing.assert_allclose(corners[0, :, :, 1], [[-1, -1, -1], [1, 1, 1]])  # y along H
    centers = run("onnx.affine_grid", identity, _i64([1, 1, 2, 3]), align_corners=False)
    np.testing.assert_allclose(centers[0, 0, :, 0], [-2 / 3, 0, 2 / 3], atol=1e-6)
    np.testing.assert_allclose(centers[0, :, 0, 1], [-0.5, 0.5])


def test_affine_grid_translation_3d():
    theta = np.zeros((1, 3, 4), "float32")
    theta[0, :, :3] = np.eye(3)
    theta[0, :, 3] = [0.5, -1.0, 2.0]
    grid = run("onnx.affine_grid", theta, _i64([1, 1, 2, 1, 2]), align_corners=True)
    assert grid.shape == (1, 2, 1, 2, 3)
    np.testing.assert_allclose(grid[0, 1, 0, 0], [-1 + 0.5, 0 - 1.0, 1 + 2.0])  # (x, y, z)


@pytest.mark.parametrize("size", [(2, 3, 4, 5), (1, 2, 3, 4, 2)])
@pytest.mark.parametrize("align_corners", [0, 1])
def test_affine_grid_matches_onnxruntime(size, align_corners):
    spatial = len(size) - 2
    theta = RNG.standard_normal((size[0], spatial, spatial + 1)).astype("float32")
    got = run("onnx.affine_grid", theta, _i64(size), align_corners=bool(align_corners))
    want = run_node("AffineGrid", [theta, _i64(size)], {"align_corners": align_corners},
                    opset=20)[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_affine_grid_relation_and_errors():
    out = relation("onnx.affine_grid", [TensorType((4, 3, 4), "float32"),
                                        TensorType((5,), "int64")])
    assert out == TensorType((4, Any, Any, Any, 3), "float32")
    with pytest.raises(TypeInferenceError, match="theta"):
        relation("onnx.affine_grid", [TensorType((4, 2, 2), "float32"),
                                      TensorType((4,), "int64")])
    with pytest.raises(TypeInferenceError, match="size"):
        relation("onnx.affine_grid", [TensorType((4, 2, 3), "float32"),
                                      TensorType((5,), "int64")])
    with pytest.raises(OpImplError, match="does not match"):
        run("onnx.affine_grid", np.zeros((2, 2, 3), "float32"), _i64([3, 1, 2, 2]))
