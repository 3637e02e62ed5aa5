"""docs/torch.md's supported-op table is the one the converter registry renders."""

import pathlib
import re

import torch

from irlib.frontend.torch import registry, supported_ops_table

DOC = pathlib.Path(__file__).resolve().parents[3] / "docs" / "torch.md"


def test_checked_in_table_is_current():
    text = DOC.read_text()
    match = re.search(r"<!-- optable -->\n(.*?)<!-- /optable -->", text, re.S)
    assert match, "docs/torch.md lacks the <!-- optable --> markers"
    assert match.group(1) == supported_ops_table(), \
        "regenerate the table: irlib.frontend.torch.supported_ops_table()"


def test_table_lists_registered_targets_by_kind():
    table = supported_ops_table()
    for name in ("`torch.nn.Conv2d`", "`torch.nn.MultiheadAttention`", "`Tensor.view`",
                 "`aten.scaled_dot_product_attention.default`", "`operator.getitem`",
                 "`torch.nn.functional.scaled_dot_product_attention`"):
        assert name in table, name
    sections = re.findall(r"### (.*) \((\d+)\)", table)
    assert [title.split()[0] for title, _ in sections] == ["`torch.nn`", "Functions",
                                                          "Tensor", "ATen"]
    assert sum(int(count) for _, count in sections) == \
        len({(kind, name) for kind, name, _ in registry.registered_targets()})


def test_registry_lookup_and_names():
    assert registry.lookup(torch.nn.Conv2d) is not None
    assert registry.lookup(torch.ops.aten.add.Tensor) is registry.lookup("Tensor.add")
    assert registry.lookup(torch.nn.PixelShuffle) is None
    assert registry.lookup([]) is None  # unhashable: no converter, no error
    assert registry.target_name(torch.nn.functional.relu) == "torch.nn.functional.relu"
    assert registry.target_name(torch.ops.aten.relu_.default) == "aten.relu_.default"
    assert registry.target_kind("Tensor.view") == "method"
