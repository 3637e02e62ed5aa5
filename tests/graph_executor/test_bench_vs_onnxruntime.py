"""benchmarks/vs_onnxruntime.py runs end to end on a small model (no timed assertions).

Oracles: onnxruntime's output on the exported model (the two engines must agree), and a
numpy allocation of known size for the peak-RSS figure.
"""

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import vs_onnxruntime  # noqa: E402


def test_mlp_row_from_two_processes(tmp_path, capsys):
    out = tmp_path / "rows.json"
    assert vs_onnxruntime.main(["--models", "mlp", "--repeat", "3", "--threads", "1",
                                "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "| mlp |" in text and "| model | irlib ms | onnxruntime ms | ratio |" in text
    assert "| CPU ratio |" in text
    (row,) = json.loads(out.read_text())
    assert row["model"] == "mlp"
    assert row["irlib_ms"] > 0 and row["onnxruntime_ms"] > 0
    assert row["ratio"] == row["irlib_ms"] / row["onnxruntime_ms"]
    assert row["max_abs_diff"] < 1e-4          # the same model, the same inputs
    # Each engine reports its own process: at least the interpreter, below this process's
    # ceiling; onnxruntime alone imports neither numba nor irlib's kernels.
    assert 10 < row["onnxruntime_rss_mib"] < row["irlib_rss_mib"] < 4096


def test_peak_rss_sees_an_allocation_and_not_the_parent():
    code = ("import numpy as np, vs_onnxruntime as v; before = v.peak_rss_mib(); "
            "a = np.ones(64 * 2**20, np.uint8); print(before, v.peak_rss_mib())")
    ballast = np.ones(256 * 2**20, np.uint8)       # the parent's peak is >= 256 MiB
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT / "benchmarks", check=True)
    before, after = (float(x) for x in done.stdout.split())
    assert after - before >= 60                    # the 64 MiB array shows
    assert before < 200                            # the child does not inherit the ballast
    del ballast


def test_unknown_model_is_refused(capsys):
    with pytest.raises(SystemExit) as stop:
        vs_onnxruntime.main(["--models", "no_such_model"])
    assert stop.value.code == 2
    assert "no_such_model" in capsys.readouterr().err


def test_transformer_row_imports_the_same_onnx_file(tmp_path, capsys):
    """A torch-exported transformer (tiny sizes): irlib imports the very file onnxruntime
    runs, and the two outputs agree."""
    pytest.importorskip("torch")
    out = tmp_path / "rows.json"
    assert vs_onnxruntime.main(["--models", "gpt2", "--tiny", "--repeat", "3", "--threads",
                                "1", "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())
    assert row["model"] == "gpt2" and row["irlib_ms"] > 0 and row["onnxruntime_ms"] > 0
    assert row["max_rel_diff"] < 1e-4
    assert row["irlib_cpu_ms"] > 0 and row["onnxruntime_cpu_ms"] > 0
