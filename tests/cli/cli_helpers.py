"""Helpers of the command-line tests: run ``python -m interp`` (the irlib command line) in a subprocess, small models."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]

TYPE_ERROR_RLY = ('#[version = "0.0.5"]\n'
                  'def @main(%x: Tensor[(1, 4), float32], %y: Tensor[(3, 5), float32]) {\n'
                  '  add(%x, %y)\n'
                  '}\n')
PARSE_ERROR_RLY = '#[version = "0.0.5"]\ndef @main(%x) { add(%x, ) }\n'
GOOD_RLY = ('#[version = "0.0.5"]\n'
            'def @main(%x: Tensor[(2, 3), float32], %w: Tensor[(4, 3), float32]) {\n'
            '  %0 = nn.dense(%x, %w);\n'
            '  nn.softmax(nn.relu(%0))\n'
            '}\n')


def irlib_cli(*args, cwd=None, env=None, timeout=300):
    """Run ``python -m interp ARGS`` (the irlib command line) and return the CompletedProcess (text output)."""
    full_env = dict(os.environ if env is None else env)
    full_env["PYTHONPATH"] = str(ROOT) + os.pathsep + full_env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "interp", *map(str, args)], cwd=cwd or ROOT,
                          capture_output=True, text=True, timeout=timeout, env=full_env)


def assert_one_line_error(result, code: int, *fragments):
    """``result`` failed with exit ``code`` and printed one stderr line holding every
    fragment, and no traceback."""
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def small_onnx_classifier(path):
    """A Conv -> Relu -> GlobalAveragePool -> Flatten -> Gemm -> Softmax ONNX model, with
    a dynamic batch, saved at ``path``."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(3)
    weights = {
        "w": rng.standard_normal((4, 3, 3, 3)).astype("float32"),
        "fc_w": rng.standard_normal((5, 4)).astype("float32"),
        "fc_b": rng.standard_normal(5).astype("float32"),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["y"], axis=1),
    ]
    graph = helper.make_graph(
        nodes, "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])],
        [numpy_helper.from_array(value, name) for name, value in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, path)


def onnxruntime_output(path, feed: dict):
    """The first output of the ONNX model at ``path`` on onnxruntime."""
    import onnxruntime
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, feed)[0]
