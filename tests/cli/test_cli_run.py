"""``irlib run`` and the listings, in subprocesses: outputs against a numpy oracle, the
warm-up run reported apart, input errors as one line with exit code 1."""

from __future__ import annotations

import re

import numpy as np

from .cli_helpers import TYPE_ERROR_RLY, assert_one_line_error, irlib_cli


def _mlp_numpy(params, image):
    """The zoo mlp written out in numpy (dense -> relu twice, dense, softmax)."""
    def w(name):
        value = params[name]
        return value.numpy() if hasattr(value, "numpy") else np.asarray(value)
    h = image.reshape(image.shape[0], -1).astype("float64")
    for layer in (1, 2):
        h = np.maximum(h @ w(f"fc{layer}_weight").T + w(f"fc{layer}_bias"), 0)
    logits = h @ w("fc3_weight").T + w("fc3_bias")
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_run_mlp_matches_numpy_and_reports_warm_up_apart(tmp_path):
    from zoo import catalog
    _, params = catalog.workload("mlp", 1)
    image = np.random.default_rng(1).standard_normal((1, 1, 28, 28)).astype("float32")
    np.save(tmp_path / "x.npy", image)
    out = irlib_cli("run", "mlp", "--repeat", "2", "--input", f"data={tmp_path / 'x.npy'}")
    assert out.returncode == 0, out.stderr
    expected = _mlp_numpy(params, image)[0]
    top = np.argsort(-expected)[:5]
    shown = re.search(r"top-5 of sample 0: (.*)", out.stdout).group(1).split(", ")
    assert [int(item.split(":")[0]) for item in shown] == list(top)
    for item in shown:
        index, value = item.split(":")
        assert abs(float(value) - expected[int(index)]) < 1e-4
    assert "[warm-up ]" in out.stdout
    assert re.search(r"latency: median [0-9.]+ ms over 2 run\(s\) \(min [0-9.]+ ms\); "
                     r"warm-up run [0-9.]+ ms, not counted", out.stdout)


def test_run_wrong_shaped_input_is_one_line(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((2, 3), "float32"))
    out = irlib_cli("run", "mlp", "--input", f"data={tmp_path / 'x.npy'}")
    assert_one_line_error(out, 1, "irlib run:", "--input data", "(2, 3)", "(1, 1, 28, 28)")


def test_run_input_errors_are_one_line(tmp_path):
    assert_one_line_error(irlib_cli("run", tmp_path / "missing.onnx"), 1, "no such file",
                          "missing.onnx")
    (tmp_path / "garbage.onnx").write_bytes(bytes(range(256)) * 4)
    assert_one_line_error(irlib_cli("run", tmp_path / "garbage.onnx"), 1, "garbage.onnx",
                          "not an ONNX model")
    (tmp_path / "bad.rly").write_text(TYPE_ERROR_RLY)
    assert_one_line_error(irlib_cli("run", tmp_path / "bad.rly"), 1, "type error",
                          "bad.rly:3:3:", "do not broadcast")
    assert_one_line_error(irlib_cli("run", "no_such_model"), 1, "unknown model 'no_such_model'")
    np.save(tmp_path / "x.npy", np.zeros((1, 1, 28, 28), "float32"))
    assert_one_line_error(irlib_cli("run", "mlp", "--input", f"nope={tmp_path / 'x.npy'}"), 1,
                          "'nope'", "not inputs of the model")


def test_usage_errors_exit_2_in_one_line():
    assert_one_line_error(irlib_cli("run", "mlp", "--repeat", "many"), 2, "irlib run: error:",
                          "--repeat")
    assert_one_line_error(irlib_cli("frobnicate"), 2, "irlib: error:", "frobnicate")


def test_debug_shows_the_traceback(tmp_path):
    out = irlib_cli("run", tmp_path / "missing.rly", "--debug")
    assert out.returncode == 1
    assert "Traceback" in out.stderr and "CLIInputError" in out.stderr


def test_help_and_listings():
    out = irlib_cli("--help")
    assert out.returncode == 0
    for command in ("run", "show", "bench", "convert", "check", "models", "ops"):
        assert re.search(rf"^\s+{command}\s", out.stdout, re.M), command
    out = irlib_cli("models")
    assert out.returncode == 0 and {"mlp", "resnet18", "dcgan"} <= set(out.stdout.split())
    import irlib
    out = irlib_cli("ops")
    assert out.stdout.splitlines()[-1] == f"{len(irlib.op.list_ops())} operators"


def test_run_profile_lists_every_fused_group_of_the_graph():
    """``--profile`` prints the debug executor's table: one row per op node of the built
    graph (the zoo mlp has three dense groups, a flatten and a softmax)."""
    out = irlib_cli("run", "mlp", "--repeat", "2", "--profile")
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if "tvmgen_default_fused_" in line]
    assert len(rows) == 5, out.stdout
    assert sum("dense" in row for row in rows) == 3
    assert re.search(r"total: 5 node\(s\)", out.stdout)
