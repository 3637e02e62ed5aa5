"""docs/stablehlo.md's op table is the one the converter registry renders."""

import pathlib

import pytest

pytest.importorskip("jax")

from irlib.frontend.stablehlo import op_table, supported_ops  # noqa: E402

DOC = pathlib.Path(__file__).resolve().parents[3] / "docs" / "stablehlo.md"


def test_checked_in_op_table_is_current():
    text = DOC.read_text()
    begin, end = "<!-- op-table:begin -->\n", "<!-- op-table:end -->"
    assert begin in text and end in text
    table = text.split(begin, 1)[1].split(end, 1)[0]
    assert table == op_table(), "regenerate the table with irlib.frontend.stablehlo.op_table()"


def test_table_has_one_row_per_converter():
    rows = [line for line in op_table().splitlines()[2:]]
    assert len(rows) == len(supported_ops())
    assert all(f"`{name}`" in row for name, row in zip(supported_ops(), rows))
