"""docs/ops.md is the registry's generated reference, and `irlib ops` lists every op."""

from __future__ import annotations

import pathlib

import irlib
import jitkernels
from interp import cli
from irlib.op import docgen

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "ops.md"


def test_docs_ops_md_is_regenerated():
    assert DOCS.read_text() == docgen.ops_markdown(jitkernels.kernel_index()), \
        "docs/ops.md is stale: regenerate it with `irlib ops --markdown > docs/ops.md`"


def test_markdown_rows_describe_each_op():
    kernels = jitkernels.kernel_index()
    text = docgen.ops_markdown(kernels)
    for name in irlib.op.list_ops():
        op_def = irlib.op.get_def(name)
        row = next(line for line in text.splitlines() if line.startswith(f"| `{name}` |"))
        assert f"| {op_def.pattern.name} |" in row
        assert ("| yes |" in row) == (op_def.grad is not None)
        module = op_def.module.removeprefix("irlib.op.")
        assert f"| `{module}` | {', '.join(kernels.get(name, ())) or '-'} |" in row
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
    assert capsys.readouterr().out == docgen.ops_markdown(jitkernels.kernel_index())


def test_kernels_column_names_the_backends_with_code_for_the_op():
    kernels = jitkernels.kernel_index()
    assert jitkernels.get_kernel("nn.conv2d", "cpu") is not None  # numba is installed here
    assert kernels["nn.conv2d"][0] == "cpu"
    assert "fused" in kernels["add"] and "fused" in kernels["nn.relu"]
    assert "fused" not in kernels.get("nn.conv2d", [])
    assert "onnx.resize" not in kernels                      # reference implementation only
    text = docgen.ops_markdown(kernels)
    row = next(line for line in text.splitlines() if line.startswith("| `onnx.resize` |"))
    assert "| `frontend.resampling` | - |" in row
