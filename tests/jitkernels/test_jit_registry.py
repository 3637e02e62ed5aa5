"""The kernel registry: registration, lookup by op name and target, fallbacks."""

import numpy as np
import pytest

import jitkernels
from irlib.op import get_def

CPU_OPS = ["nn.conv1d", "nn.conv2d", "nn.conv3d", "nn.conv2d_transpose", "nn.dense",
           "nn.matmul", "nn.batch_matmul", "nn.max_pool1d", "nn.max_pool2d", "nn.max_pool3d",
           "nn.avg_pool1d", "nn.avg_pool2d", "nn.avg_pool3d", "nn.global_avg_pool2d",
           "nn.global_max_pool2d", "nn.adaptive_avg_pool2d", "nn.adaptive_max_pool2d",
           "nn.softmax", "nn.log_softmax", "nn.batch_norm", "nn.layer_norm", "nn.group_norm",
           "sum", "mean", "max", "min", "image.resize2d"]


def test_cpu_kernels_are_registered_for_real_ops():
    names = jitkernels.list_kernels("cpu")
    assert set(CPU_OPS) <= set(names)
    for name in names:
        get_def(name)          # every kernel belongs to a registered op


def test_targets_aliases_and_unknown_names():
    assert jitkernels.get_kernel("nn.conv2d", "llvm") is jitkernels.get_kernel("nn.conv2d")
    assert jitkernels.get_kernel("no.such_op") is None
    assert jitkernels.get_kernel("nn.conv2d_backward_weight", "cpu") is None
    with pytest.raises(ValueError, match="unknown kernel target"):
        jitkernels.get_kernel("nn.conv2d", "tpu")
    assert "cpu" in jitkernels.available_targets()


def test_register_kernel_adds_and_replaces():
    calls = []

    @jitkernels.register_kernel("test.identity_op", target="cpu")
    def first(data):
        calls.append(1)
        return (data,)
    assert jitkernels.get_kernel("test.identity_op") is first

    @jitkernels.register_kernel("test.identity_op")
    def second(data):
        return (data,)
    assert jitkernels.get_kernel("test.identity_op") is second
    jitkernels._KERNELS["cpu"].pop("test.identity_op")


def test_kernel_has_the_reference_calling_convention():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3)).astype("float32")
    out = jitkernels.get_kernel("nn.softmax")(x, axis=-1)
    assert isinstance(out, tuple) and len(out) == 1
    expected = np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(out[0], expected, rtol=1e-6)
