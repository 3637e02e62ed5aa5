"""The kernel registry answers which layouts a target's kernels prefer
(``jitkernels.layout_preferences``), and ``interp.build`` asks it rather than importing a
kernel module's constant."""

from __future__ import annotations

import ast
import pathlib

import pytest

import irlib
import jitkernels

ROOT = pathlib.Path(__file__).resolve().parents[2]


def typed_conv(data_shape, weight_shape, dtype="float32", **attrs):
    """The typed ``nn.conv2d`` call of ``fn(x, w) { nn.conv2d(x, w, **attrs) }``."""
    x = irlib.var("x", shape=data_shape, dtype=dtype)
    w = irlib.var("w", shape=weight_shape, dtype=dtype)
    return irlib.infer_type(irlib.Function([x, w], irlib.nn.conv2d(x, w, **attrs))).body


def test_cpu_prefers_channels_last_for_plain_and_depthwise_float_convs():
    preference = jitkernels.layout_preferences("cpu")
    assert preference is not None
    desired, accept = preference
    assert desired == {"nn.conv2d": ["NHWC", "HWIO"]}
    assert accept(typed_conv((1, 4, 6, 6), (32, 4, 3, 3)))
    assert not accept(typed_conv((1, 4, 6, 6), (8, 4, 3, 3)))     # tiny: kept channels-first
    assert accept(typed_conv((1, 4, 6, 6), (4, 1, 3, 3), groups=4))          # depthwise
    assert not accept(typed_conv((1, 4, 6, 6), (8, 2, 3, 3), groups=2))      # grouped
    assert not accept(typed_conv((1, 4, 6, 6), (8, 4, 3, 3), dtype="int32"))
    assert not accept(typed_conv((1, 6, 6, 4), (3, 3, 4, 8), data_layout="NHWC",
                                 kernel_layout="HWIO"))
    x = irlib.var("x", shape=(2, 4))
    dense = irlib.infer_type(irlib.Function([x], irlib.nn.relu(x))).body
    assert not accept(dense)
    assert jitkernels.layout_preferences("llvm")[0] == desired


def test_targets_without_kernels_prefer_nothing():
    assert jitkernels.layout_preferences("python") is None


def test_register_layout_preference_rejects_an_unknown_target():
    with pytest.raises(ValueError, match="tpu"):
        jitkernels.register_layout_preference("nn.conv2d", ("NHWC", "HWIO"), target="tpu")


def test_interp_build_imports_no_kernel_module():
    tree = ast.parse((ROOT / "interp" / "build.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    assert not [name for name in imported if name.startswith("jitkernels.")], imported
