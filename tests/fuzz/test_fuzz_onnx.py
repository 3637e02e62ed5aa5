"""ONNX importer fuzzing (issue #19): byte and semantic mutants of small models, imported in
worker subprocesses (a hang or a crash is a failure, not a stuck test run)."""

from campaigns import onnx_campaign


def test_onnx_mutants():
    report = onnx_campaign(400, seed=19, batch=200, timeout=60)
    assert report.cases == 400
    assert report.failures == [], [d for _, d in report.failures[:5]]
    assert report.ok > 0 and report.irlib_errors > 0
