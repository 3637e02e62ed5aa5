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


#: How each optional distribution is used: the import of it the sources must contain.
EXTRA_IMPORTS = {"torch": r"import torch\b", "jax": r"import jax\b", "jaxlib": r"from jaxlib\b",
                 "mpi4py": r"from mpi4py\b", "matplotlib": r"import matplotlib\b",
                 "numba-cuda": r"from numba import cuda\b",   # numba-cuda provides numba.cuda
                 "mpich": None}            # the MPI library mpi4py loads, and its mpiexec


def setup_extras():
    """``{extra: [distribution names]}`` and the install_requires names, from setup.cfg."""
    import configparser
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")

    def names(block):
        return [re.split(r"[\[<>=!;~ ]", line.strip(), maxsplit=1)[0]
                for line in block.splitlines() if line.strip()]
    extras = {key: names(value) for key, value in config["options.extras_require"].items()}
    return extras, names(config["options"]["install_requires"])


def test_setup_extras_are_honest():
    """No extra is empty or only repeats install_requires, and each optional distribution is
    used: its module is imported by the four packages or by a documented example (jax: users
    lower their JAX programs with it before the StableHLO importer reads them)."""
    extras, required = setup_extras()
    sources = "\n".join(path.read_text() for package in ("irlib", "interp", "jitkernels", "zoo")
                        for path in (ROOT / package).rglob("*.py"))
    sources += "\n".join(code for page in doc_pages()
                         for lang, code, _, _ in fenced_blocks(page.read_text())
                         if lang == "python")
    for extra, names in extras.items():
        added = [name for name in names if name not in required]
        assert added, f"extra [{extra}] adds nothing to install_requires"
        if extra == "test":
            continue
        for name in added:
            assert name in EXTRA_IMPORTS, f"extra [{extra}]: say how {name} is used"
            pattern = EXTRA_IMPORTS[name]
            if pattern is not None:
                assert re.search(rf"^\s*{pattern}", sources, re.M), (
                    f"extra [{extra}] installs {name}, but no source has {pattern!r}")


_CLOCKS = {"perf_counter", "time", "monotonic", "process_time", "perf_counter_ns",
           "monotonic_ns", "time_ns"}


def timed_assertions(tree):
    """Line numbers of the asserts in ``tree`` that read a clock, directly or through a name
    assigned from a clock reading in the same function."""
    import ast

    def reads_clock(node, timed_names):
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) \
                    and sub.func.attr in _CLOCKS and getattr(sub.func.value, "id", "") == "time":
                return True
            if isinstance(sub, ast.Name) and sub.id in timed_names:
                return True
        return False

    found = []
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        timed_names: set = set()
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and reads_clock(node.value, timed_names):
                timed_names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
            elif isinstance(node, ast.Assert) and reads_clock(node.test, timed_names):
                found.append(node.lineno)
    return found


def test_no_test_asserts_on_wall_clock_time():
    """Timings belong in benchmarks/ (scripts printing tables), never in assertions."""
    import ast
    bad = [f"{path.relative_to(ROOT)}:{line}" for path in sorted((ROOT / "tests").rglob("*.py"))
           for line in timed_assertions(ast.parse(path.read_text()))]
    assert not bad, f"timed assertions (move the timing to benchmarks/): {bad}"


def test_the_timed_assertion_finder_sees_both_forms():
    import ast
    code = ("import time\n"
            "def f():\n    start = time.perf_counter()\n    g()\n"
            "    elapsed = time.perf_counter() - start\n    assert elapsed < 1\n"
            "def h():\n    assert time.time() > 0\n    assert len([]) == 0\n")
    assert timed_assertions(ast.parse(code)) == [6, 8]


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

#: Written on the line right before a ```python fence, this keeps that one block from running;
#: the reason (e.g. "needs mpiexec", "needs a CUDA GPU") is required.
NOT_RUN_MARK = re.compile(r"<!-- doc-block: not run \((?P<reason>[^)]+)\) -->")

FENCE = re.compile(r"^```(?P<lang>\S*)[ \t]*$")


def doc_pages():
    """README.md and every docs/*.md page."""
    return [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


def fenced_blocks(text):
    """``(language, code, not_run_reason or None, line)`` of each fenced block of a page.

    Raises:
        AssertionError: for an unclosed fence, or a not-run marker that is not right before a
            python block.
    """
    lines = text.split("\n")
    blocks, index = [], 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            marker = NOT_RUN_MARK.fullmatch(lines[index].strip())
            if marker is not None:
                following = FENCE.match(lines[index + 1]) if index + 1 < len(lines) else None
                assert following is not None and following.group("lang") == "python", (
                    f"line {index + 1}: a not-run marker must sit right before a ```python "
                    f"fence")
            index += 1
            continue
        end = index + 1
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        assert end < len(lines), f"line {index + 1}: the fence is never closed"
        marker = NOT_RUN_MARK.fullmatch(lines[index - 1].strip()) if index else None
        reason = marker.group("reason").strip() if marker else None
        blocks.append((opening.group("lang"), "\n".join(lines[index + 1:end]) + "\n", reason,
                       index + 1))
        index = end + 1
    return blocks


def doc_code_blocks():
    """Every python block of README.md and docs/*.md that is not marked not-run; a page
    carrying SHARED_NAMESPACE_MARK (a tutorial whose blocks build on each other) is one test
    running its blocks in order."""
    for path in doc_pages():
        text = path.read_text()
        blocks = [(code, line) for lang, code, reason, line in fenced_blocks(text)
                  if lang == "python" and reason is None]
        if SHARED_NAMESPACE_MARK in text:
            yield pytest.param("\n".join(code for code, _ in blocks), id=f"{path.name}-all")
            continue
        for code, line in blocks:
            yield pytest.param(code, id=f"{path.name}:{line}")


@pytest.mark.parametrize("block", list(doc_code_blocks()))
def test_doc_code_blocks_run(block):
    exec(compile(block, "<doc>", "exec"), {})


def test_doc_blocks_not_run_say_why_and_still_compile():
    """A block kept from running names its reason and is still valid Python."""
    skipped = []
    for path in doc_pages():
        for lang, code, reason, line in fenced_blocks(path.read_text()):
            if lang == "python" and reason is not None:
                assert len(reason) > 5, f"{path.name}:{line}: say why the block cannot run"
                compile(code, f"{path.name}:{line}", "exec")
                skipped.append(f"{path.name}:{line}")
    assert len(skipped) < 10, f"most doc blocks must run; not run: {skipped}"


def test_the_block_finder_sees_markers_and_fences():
    page = ("text\n```python\nx = 1\n```\n<!-- doc-block: not run (needs mpiexec) -->\n"
            "```python\ny = 2\n```\n```bash\nls\n```\n")
    assert fenced_blocks(page) == [("python", "x = 1\n", None, 2),
                                   ("python", "y = 2\n", "needs mpiexec", 6),
                                   ("bash", "ls\n", None, 9)]
    with pytest.raises(AssertionError, match="right before a ```python"):
        fenced_blocks("<!-- doc-block: not run (needs a GPU) -->\nplain text\n")
    with pytest.raises(AssertionError, match="never closed"):
        fenced_blocks("```python\nx = 1\n")


#: A markdown link ``[text](target)``; searched in prose only (see :func:`prose`).
LINK = re.compile(r"\[[^\]]+\]\((?P<target>[^)\s]+)\)")


def prose(text):
    """``text`` without its fenced blocks and inline code spans (code is not a link)."""
    text = re.sub(r"^```.*?^```[ \t]*$", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def test_docs_link_only_to_files_of_the_repository():
    outside = re.compile(r"\.\./shared|shared/(reference|notes)|DESIGN\.md|STYLE\.md|"
                         r"(?<![\w.~])/(work|home|tmp|Users)/")
    bad = []
    for path in doc_pages():
        text = path.read_text()
        for number, line in enumerate(text.splitlines(), 1):
            if outside.search(line):
                bad.append(f"{path.name}:{number}: points outside the repository: {line.strip()}")
        for match in LINK.finditer(prose(text)):
            target = match.group("target").split("#")[0]
            if not target or re.match(r"[a-z]+:", target):
                continue                        # an anchor on the page, or a web address
            resolved = (path.parent / target).resolve()
            if ROOT not in resolved.parents or not resolved.exists():
                bad.append(f"{path.name}: link to {target!r}, which is not a file of the "
                           f"repository")
    assert not bad, "\n".join(bad)


def test_docs_index_links_every_page():
    index = (ROOT / "docs" / "index.md").read_text()
    linked = {match.group("target").split("#")[0] for match in LINK.finditer(prose(index))}
    pages = {path.name for path in (ROOT / "docs").glob("*.md")} - {"index.md"}
    assert not pages - linked, f"docs/index.md does not link {sorted(pages - linked)}"


def test_docs_do_not_promise_future_work():
    for path in doc_pages():
        text = path.read_text().lower()
        for phrase in ("as the project grows", "built so far", "will be added", "coming soon"):
            assert phrase not in text, f"{path.name} says {phrase!r}: describe what exists"


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
