"""docs/ops.md is the registry's generated reference, and `irlib ops` lists every op."""

from __future__ import annotations

import pathlib

import irlib
from interp import cli
from irlib.op import docgen

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "ops.md"


def test_docs_ops_md_is_regenerated():
    assert DOCS.read_text() == docgen.ops_markdown(), \
        "docs/ops.md is stale: regenerate it with `irlib ops --markdown > docs/ops.md`"


def test_markdown_rows_describe_each_op():
    text = docgen.ops_markdown()
    for name in irlib.op.list_ops():
        op_def = irlib.op.get_def(name)
        row = next(line for line in text.splitlines() if line.startswith(f"| `{name}` |"))
        assert f"| {op_def.pattern.name} |" in row
        assert ("| yes |" in row) == (op_def.grad is not None)
    conv = next(line for line in text.splitlines() if line.startswith("| `nn.conv2d` |"))
    assert "`padding=(0, 0, 0, 0)`" in conv and "`data_layout='NCHW'`" in conv


def test_cli_ops_lists_every_op_with_its_pattern(capsys):
    assert cli.main(["ops"]) == 0
    lines = capsys.readouterr().out.splitlines()
    listed = {}
    for line in lines[:-1]:
        name, pattern = line.split()
        listed[name] = pattern
    assert set(listed) == set(irlib.op.list_ops())
    for name, pattern in listed.items():
        assert irlib.op.get_def(name).pattern.name == pattern
    assert lines[-1] == f"{len(listed)} operators"


def test_cli_ops_markdown_prints_the_docs(capsys):
    assert cli.main(["ops", "--markdown"]) == 0
    assert capsys.readouterr().out == docgen.ops_markdown()
