"""Command-line fuzzing (issue #19 item 5): random ``irlib`` argument lists.

The campaign (``cli_campaign.py``) runs its invocations in one worker subprocess (a few as
their own ``python -m interp`` processes) and requires exit status 0/1/2, one stderr line for
an error, no traceback and no error that is not an irlib one. Long mode:
``python benchmarks/fuzz.py --target cli --minutes N``. The regression tests below are the
inputs the campaign found, run in-process through ``interp.cli.main``.
"""

import os

import numpy as np
import pytest

from interp.cli import main

from cli_campaign import MAX_TENSOR_BYTES, cli_campaign, judge, make_fixtures


def test_cli_argument_lists():
    # 30 invocations in one worker process, 2 of them also as their own processes
    report = cli_campaign(30, seed=19, batch=30, real_every=15)
    assert report.cases == 32
    assert report.failures == [], report.failures[:5]
    assert report.ok > 0 and report.irlib_errors > 0


def test_judge_is_the_oracle():
    trace = "Traceback (most recent call last):\n  File ...\nKeyError: 'x'\n"
    assert judge(["run"], 1, trace).startswith("traceback")
    assert judge(["run"], 1, "irlib run: a\nirlib run: b\n").startswith("2 stderr lines")
    assert judge(["run"], 1, "irlib run: KeyError: 'x' (rerun with --debug for the "
                             "traceback)\n").startswith("not an irlib error")
    assert judge(["run"], 3, "").startswith("exit status 3")
    assert judge(["run"], 1, "") is not None
    assert judge(["run"], 1, "irlib run: no such file: m.rly\n") is None
    assert judge(["check", "a.rly"], 1, "a.rly:1:2: x\na.rly:3:4: y\n") is None
    assert judge(["check", "a.rly"], 1, "a.rly:1:2: x\nstray\n") is not None


@pytest.fixture()
def files(tmp_path, monkeypatch):
    monkeypatch.setenv("IRLIB_MAX_TENSOR_BYTES", str(MAX_TENSOR_BYTES))
    monkeypatch.chdir(tmp_path)
    make_fixtures(str(tmp_path))
    return tmp_path


def _one_line_error(capsys, argv, *fragments):
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert code == 1, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err and "rerun with --debug" not in err, err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


@pytest.mark.parametrize("argv,fragment", [
    (["run", "good.rly", "--seed", "-1"], "--seed must be at least 0, got -1"),
    (["run", "dynamic.onnx", "--batch", "-7"], "--batch must be positive, got -7"),
    (["run", "dynamic.onnx", "--batch", "0"], "--batch must be positive"),
    (["show", "dynamic.onnx", "--batch", "0"], "--batch must be positive"),
    (["convert", "dynamic.onnx", "out.rly", "--batch", "-1"], "--batch must be positive"),
    (["run", "good.rly", "--np", "0"], "--np must be positive"),
    (["run", "good.rly", "--opt-level", "-2"], "--opt-level must be at least 0"),
    (["bench", "good.rly", "--plot", "out.dot", "--repeat", "1"], "--plot out.dot"),
    (["bench", "good.rly", "--plot", "nodir/b.png", "--repeat", "1"], "no such folder"),
])
def test_option_values_out_of_range(files, capsys, argv, fragment):
    _one_line_error(capsys, argv, fragment)


def test_huge_batch_is_refused_before_allocating(files, capsys):
    # the random input would be 10**10 x 3 floats: a TensorTooLargeError, not a MemoryError
    _one_line_error(capsys, ["run", "dynamic.onnx", "--batch", "10000000000", "--target",
                             "python"], "input 'x'", "over the limit")


def test_input_rank_must_match_the_declared_rank(files, capsys):
    _one_line_error(capsys, ["run", "dynamic.onnx", "--input", "x=x0d.npy"],
                    "x0d.npy has shape ()", "the model declares (?, 3)")
    _one_line_error(capsys, ["run", "good.onnx", "--input", "x=x33.npy"],
                    "has shape (3, 3)", "declares (2, 3)")


def test_empty_batch_output_is_summarised(files, capsys):
    assert main(["run", "dynamic.onnx", "--input", "x=xempty.npy", "--target", "python",
                 "--repeat", "1"]) == 0
    assert "output: shape=(0, 3)" in capsys.readouterr().out


def test_fixtures_are_what_they_claim(tmp_path):
    pools = make_fixtures(str(tmp_path))
    assert os.path.getsize(tmp_path / "empty.onnx") == 0
    assert np.load(tmp_path / "x23.npy").shape == (2, 3)
    assert not os.path.exists(tmp_path / "missing.onnx")
    assert os.path.isdir(tmp_path / "sub.rly")
    assert all(os.path.exists(p) for p in pools["params"] if "missing" not in p)
