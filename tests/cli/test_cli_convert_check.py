"""``irlib convert`` (round trips checked on onnxruntime) and ``irlib check`` (line:col
errors, exit codes)."""

from __future__ import annotations

import numpy as np

from .cli_helpers import (GOOD_RLY, PARSE_ERROR_RLY, TYPE_ERROR_RLY, assert_one_line_error,
                          irlib_cli, onnxruntime_output, small_onnx_classifier)


def test_convert_onnx_to_rly_and_params_and_back(tmp_path):
    source = tmp_path / "small.onnx"
    small_onnx_classifier(str(source))
    out = irlib_cli("convert", source, tmp_path / "m.rly", tmp_path / "m.params")
    assert out.returncode == 0, out.stderr
    assert "wrote" in out.stdout and "3 arrays" in out.stdout
    text = (tmp_path / "m.rly").read_text()
    assert text.startswith('#[version = "0.0.5"]') and "nn.conv2d" in text
    assert "meta[" not in text          # the weights are parameters, not constants
    out = irlib_cli("convert", tmp_path / "m.rly", "--params", tmp_path / "m.params",
                    tmp_path / "back.onnx")
    assert out.returncode == 0, out.stderr
    image = np.random.default_rng(5).standard_normal((1, 3, 8, 8)).astype("float32")
    expected = onnxruntime_output(source, {"x": image})
    np.testing.assert_allclose(onnxruntime_output(tmp_path / "back.onnx", {"x": image}),
                               expected, rtol=1e-5, atol=1e-6)
    np.save(tmp_path / "x.npy", image)
    out = irlib_cli("run", tmp_path / "m.rly", "--params", tmp_path / "m.params", "--repeat",
                    "1", "--input", f"x={tmp_path / 'x.npy'}")
    top = np.argsort(-expected[0])[:5]
    assert out.returncode == 0, out.stderr
    assert "top-5 of sample 0: " + ", ".join(f"{i}:{expected[0, i]:.4f}" for i in top) \
        in out.stdout
    # the weights folded into the text (no .params output) run the same on irlib
    out = irlib_cli("convert", source, tmp_path / "folded.rly")
    assert out.returncode == 0 and "meta[" in (tmp_path / "folded.rly").read_text()
    out = irlib_cli("run", tmp_path / "folded.rly", "--repeat", "1", "--target", "python",
                    "--input", f"x={tmp_path / 'x.npy'}")
    assert out.returncode == 0, out.stderr
    assert "top-5 of sample 0: " + ", ".join(f"{i}:{expected[0, i]:.4f}" for i in top) \
        in out.stdout


def test_convert_zoo_model_to_onnx_runs_on_onnxruntime(tmp_path):
    from zoo import catalog
    _, params = catalog.workload("mlp", 1)
    out = irlib_cli("convert", "mlp", tmp_path / "mlp.onnx")
    assert out.returncode == 0, out.stderr
    image = np.random.default_rng(2).standard_normal((1, 1, 28, 28)).astype("float32")
    w = {k: np.asarray(v.numpy() if hasattr(v, "numpy") else v) for k, v in params.items()}
    h = image.reshape(1, -1)
    for layer in (1, 2):
        h = np.maximum(h @ w[f"fc{layer}_weight"].T + w[f"fc{layer}_bias"], 0)
    logits = h @ w["fc3_weight"].T + w["fc3_bias"]
    expected = np.exp(logits) / np.exp(logits).sum()
    np.testing.assert_allclose(onnxruntime_output(tmp_path / "mlp.onnx", {"data": image}),
                               expected, rtol=1e-4, atol=1e-6)


def test_convert_errors_are_one_line(tmp_path):
    assert_one_line_error(irlib_cli("convert", "mlp", tmp_path / "m.txt"), 1, "m.txt",
                          ".rly, .onnx, .params")
    (tmp_path / "garbage.onnx").write_bytes(b"\xff\x00garbage" * 50)
    assert_one_line_error(irlib_cli("convert", tmp_path / "garbage.onnx", tmp_path / "g.rly"),
                          1, "not an ONNX model")
    (tmp_path / "m.rly").write_text(GOOD_RLY)
    (tmp_path / "bad.params").write_bytes(b"not a params blob")
    assert_one_line_error(irlib_cli("convert", tmp_path / "m.rly", "--params",
                                    tmp_path / "bad.params", tmp_path / "m.onnx"), 1)
    assert_one_line_error(irlib_cli("convert", "mlp"), 2, "irlib convert: error:")


def test_check_reports_line_and_column(tmp_path):
    (tmp_path / "good.rly").write_text(GOOD_RLY)
    (tmp_path / "types.rly").write_text(TYPE_ERROR_RLY)
    (tmp_path / "syntax.rly").write_text(PARSE_ERROR_RLY)
    out = irlib_cli("check", tmp_path / "good.rly")
    assert out.returncode == 0 and out.stdout.strip() == f"{tmp_path / 'good.rly'}: ok"
    assert_one_line_error(irlib_cli("check", tmp_path / "types.rly"), 1,
                          f"{tmp_path / 'types.rly'}:3:3: ", "(1, 4) and (3, 5)")
    line = assert_one_line_error(irlib_cli("check", tmp_path / "syntax.rly"), 1,
                                 f"{tmp_path / 'syntax.rly'}:2:")
    assert "\n" not in line
    out = irlib_cli("check", tmp_path / "good.rly", tmp_path / "types.rly")
    assert out.returncode == 1 and "good.rly: ok" in out.stdout
    (tmp_path / "binary.rly").write_bytes(b"\xff\xfe\x00\x01")
    assert_one_line_error(irlib_cli("check", tmp_path / "binary.rly"), 1, "not a UTF-8")
    assert_one_line_error(irlib_cli("check", tmp_path / "nothere.rly"), 1, "no such file")
