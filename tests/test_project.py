"""Project-level promises: README commands, CI script, CLI, dependency direction, docs."""

import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def readme_commands():
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```bash\n(.*?)\n```", text, re.S)


def test_ci_runs_exactly_the_readme_test_command():
    test_command = [c for c in readme_commands() if "pytest" in c]
    assert len(test_command) == 1
    ci_lines = [line for line in (ROOT / ".ci/run").read_text().splitlines()
                if line and not line.startswith("#") and not line.startswith(("set ", "cd "))]
    system_packages = [line for line in ci_lines if "apt-get install" in line]
    assert [line for line in ci_lines if line not in system_packages] == [test_command[0]]


def test_readme_main_command_runs_irlib_run():
    main = [c for c in readme_commands() if "irlib run" in c]
    assert main == ["python -m pip install . && irlib run"]


def test_irlib_does_not_import_runtime_packages():
    code = ("import sys, irlib; bad = [m for m in ('interp', 'jitkernels', 'zoo', 'numba') "
            "if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_cli_help_lists_commands(capsys):
    from interp.cli import main
    assert main([]) == 0
    assert "run" in capsys.readouterr().out


def test_irlib_run_end_to_end_in_a_subprocess(tmp_path):
    import numpy as np
    image = np.full((1, 1, 28, 28), 0.5, "float32")
    np.save(tmp_path / "data.npy", image)
    out = subprocess.run([sys.executable, "-m", "interp", "run", "mlp", "--repeat", "2",
                          "--input", f"data={tmp_path / 'data.npy'}"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    for stage in ("import", "optimize", "compile", "run"):
        assert f"[{stage:<8}]" in out.stdout
    assert "output: shape=(1, 10) dtype=float32" in out.stdout
    assert re.search(r"top-5 of sample 0: (\d+:[0-9.]+, ){4}\d+:[0-9.]+", out.stdout)
    assert re.search(r"latency: median [0-9.]+ ms over 2 run\(s\)", out.stdout)


def test_irlib_run_default_model_is_resnet18(capsys):
    from interp.cli import main
    assert main(["run", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "irlib run resnet18" in out and "output: shape=(1, 1000)" in out


def test_cli_rejects_unknown_model(capsys):
    from interp.cli import main
    assert main(["run", "no_such_model"]) != 0
    assert "unknown model" in capsys.readouterr().err


SHARED_NAMESPACE_MARK = "<!-- doc-blocks: one namespace -->"


def doc_code_blocks():
    """Every python block of README.md and docs/*.md; a page carrying SHARED_NAMESPACE_MARK
    (a tutorial whose blocks build on each other) is one test running its blocks in order."""
    for path in [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md")):
        text = path.read_text()
        blocks = re.findall(r"```python\n(.*?)```", text, re.S)
        if SHARED_NAMESPACE_MARK in text:
            yield pytest.param("\n".join(blocks), id=f"{path.name}-all")
            continue
        for index, block in enumerate(blocks):
            yield pytest.param(block, id=f"{path.name}-{index}")


@pytest.mark.parametrize("block", list(doc_code_blocks()))
def test_doc_code_blocks_run(block):
    exec(compile(block, "<doc>", "exec"), {})


def test_irlib_run_on_a_text_format_file(tmp_path, capsys):
    from interp.cli import main
    program = tmp_path / "model.rly"
    program.write_text('#[version = "0.0.5"]\n'
                       'def @main(%x: Tensor[(1, 4), float32]) {\n'
                       '  nn.softmax(add(%x, %x))\n'
                       '}\n')
    assert main(["run", str(program), "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "output: shape=(1, 4) dtype=float32" in out and "top-5 of sample 0" in out


def test_irlib_run_reports_a_parse_error_with_its_location(tmp_path, capsys):
    from interp.cli import main
    program = tmp_path / "bad.rly"
    program.write_text('#[version = "0.0.5"]\ndef @main(%x) { add(%x, ) }\n')
    assert main(["run", str(program)]) == 1
    assert "bad.rly:2:" in capsys.readouterr().err


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_irlib_run_on_an_onnx_file_matches_onnxruntime(tmp_path, capsys, target):
    import numpy as np
    import onnxruntime
    from interp.cli import main
    model = tmp_path / "small.onnx"
    from cli.cli_helpers import small_onnx_classifier   # tests/cli: one copy of the model
    small_onnx_classifier(str(model))
    image = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype("float32")
    np.save(tmp_path / "x.npy", image)
    assert main(["run", str(model), "--target", target, "--repeat", "1",
                 "--input", f"x={tmp_path / 'x.npy'}"]) == 0
    out = capsys.readouterr().out
    expected = onnxruntime.InferenceSession(str(model)).run(None, {"x": image})[0]
    top = ", ".join(f"{i}:{expected[0, i]:.4f}" for i in np.argsort(-expected[0])[:5])
    assert "output: shape=(1, 5) dtype=float32" in out
    assert f"top-5 of sample 0: {top}" in out
