"""The ONNX node-suite runner's progress: a count over the cases with the pass/fail counts
so far (as lines when forced with IRLIB_PROGRESS=1 and stderr is not a terminal), silent
otherwise."""

import io

import pytest

pytest.importorskip("onnx")

from interp import onnx_suite as suite  # noqa: E402

CASES = "^test_(relu|add|sub_bcast)$"


def _run_with_one_failure(monkeypatch):
    """The three cases, run for real, with test_add's result replaced by a failure."""
    real = suite.run_case

    def run_case(case, executor):
        result = real(case, executor)
        if case.name == "test_add":
            return suite.CaseResult(case.name, "mismatch", "made to fail by the test")
        return result

    monkeypatch.setattr(suite, "run_case", run_case)
    out = io.StringIO()
    results = suite.run_suite(CASES, out=out)
    return results, out.getvalue()


def test_forced_progress_counts_passes_and_failures(monkeypatch, capsys):
    monkeypatch.setenv("IRLIB_PROGRESS", "1")
    results, failures = _run_with_one_failure(monkeypatch)
    names = [r.name for r in results]
    assert sorted(names) == ["test_add", "test_relu", "test_sub_bcast"]
    assert [r.passed for r in results] == [name != "test_add" for name in names]
    assert failures.startswith("FAIL test_add [mismatch]")
    lines = capsys.readouterr().err.splitlines()
    expected, passed = [], 0
    for i, name in enumerate(names, 1):
        passed += name != "test_add"
        expected.append(f"onnx node cases {i}/3 {name} ({passed} passed, {i - passed} failed)")
    assert lines == expected


def test_silent_without_a_terminal(monkeypatch, capsys):
    monkeypatch.delenv("IRLIB_PROGRESS", raising=False)
    _run_with_one_failure(monkeypatch)
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""
