"""benchmarks/cold_start.py on a small model (no timed assertions): the cold worker really
starts from empty caches (every generated kernel compiled) and the warm one really reuses
them (nothing compiled), so the table compares what it says it compares."""

import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import cold_start  # noqa: E402


def test_mlp_cold_then_warm(tmp_path, capsys):
    out = tmp_path / "runs.json"
    assert cold_start.main(["--models", "mlp", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "| model | cold s | warm s |" in text and "| mlp |" in text
    (run,) = json.loads(out.read_text())["mlp"]
    cold, warm = run["cold"], run["warm"]
    assert cold["generated_kernels"] > 0
    assert cold["generated_compiled"] == cold["generated_kernels"]
    assert cold["numba_compiles"] >= cold["generated_compiled"]
    assert warm["generated_kernels"] == cold["generated_kernels"]
    assert warm["generated_compiled"] == 0 and warm["numba_compiles"] == 0
    for phase in (cold, warm):
        assert phase["process_s"] >= phase["in_process_s"] > 0 and phase["cpu_s"] > 0
