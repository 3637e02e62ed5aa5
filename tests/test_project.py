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
    assert ci_lines == [test_command[0]]


def test_readme_main_command_runs_irlib_run():
    main = [c for c in readme_commands() if "irlib run" in c]
    assert main == ["python -m pip install . && irlib run"]


def test_irlib_does_not_import_runtime_packages():
    code = ("import sys, irlib; bad = [m for m in ('interp', 'jitkernels', 'zoo', 'numba') "
            "if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_cli_help_and_run():
    from irlib.cli import main
    assert main([]) == 0
    assert main(["run", "--repeat", "1"]) == 0


def test_cli_rejects_unknown_model(capsys):
    from irlib.cli import main
    assert main(["run", "no_such_model"]) == 2
    assert "unknown model" in capsys.readouterr().err


def doc_code_blocks():
    for path in [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md")):
        for index, block in enumerate(re.findall(r"```python\n(.*?)```", path.read_text(), re.S)):
            yield pytest.param(block, id=f"{path.name}-{index}")


@pytest.mark.parametrize("block", list(doc_code_blocks()))
def test_doc_code_blocks_run(block):
    exec(compile(block, "<doc>", "exec"), {})
