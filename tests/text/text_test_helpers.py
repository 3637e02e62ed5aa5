"""Shared helpers of the text-format tests."""

import difflib


def check(actual: str, expected: str):
    """Assert that two texts are equal, showing a line diff on failure."""
    if actual != expected:
        diff = "\n".join(difflib.unified_diff(expected.splitlines(), actual.splitlines(),
                                              "expected", "actual", lineterm=""))
        raise AssertionError("printed text differs:\n" + diff)
