"""The CUDA kernel checks, run as a script under numba's CUDA simulator.

``test_jit_cuda_sim.py`` runs this file in a subprocess with ``NUMBA_ENABLE_CUDASIM=1``
(numba reads it when numba.cuda is first imported, so it cannot be set inside the test
process). Each check compares a CUDA kernel with the CPU kernel and the numpy reference on
tiny shapes; the script prints ``CHECKED <n>`` when all pass.
"""

import os
import sys

import numpy as np

assert os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", "run with NUMBA_ENABLE_CUDASIM=1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jitkernels  # noqa: E402
from jit_helpers import check_kernel, randn  # noqa: E402


def both(op_name, inputs, attrs=None):
    """The CUDA kernel matches the reference and the CPU kernel (where there is one)."""
    got = check_kernel(op_name, inputs, attrs, target="cuda")
    if jitkernels.get_kernel(op_name, "cpu") is None:
        return
    cpu = check_kernel(op_name, inputs, attrs, target="cpu")
    for g, c in zip(got, cpu):
        np.testing.assert_allclose(g, c, rtol=1e-4, atol=1e-5)


def main():
    rng = np.random.default_rng(0)
    count = 0
    x = randn(rng, 1, 4, 4, 3)
    for attrs in (dict(padding=(1, 0, 1, 1), strides=(2, 1)), dict(groups=2, dilation=(2, 1)),
                  dict(groups=4, padding=(1, 1, 1, 1))):
        per_group = 4 // attrs.get("groups", 1)
        both("nn.conv2d", (x, randn(rng, 4, per_group, 2, 2)), attrs)
        count += 1
    both("nn.conv2d", (np.ascontiguousarray(x.transpose(0, 2, 3, 1)), randn(rng, 2, 2, 4, 3)),
         dict(data_layout="NHWC", kernel_layout="HWIO", padding=(1, 1, 0, 0)))
    both("nn.conv1d", (x[:, :, 0], randn(rng, 2, 4, 2)), dict(padding=(1, 0)))
    both("nn.conv3d", (x[:, :, None], randn(rng, 2, 2, 1, 2, 2)), dict(groups=2))
    both("nn.dense", (randn(rng, 2, 5), randn(rng, 3, 5)))
    both("nn.matmul", (randn(rng, 5, 2), randn(rng, 3, 5)), dict(transpose_a=True,
                                                                 transpose_b=True))
    both("nn.batch_matmul", (randn(rng, 2, 3, 4), randn(rng, 1, 2, 4)))
    count += 6
    for kind in ("max", "avg"):
        both(f"nn.{kind}_pool2d", (x,), dict(pool_size=(2, 2), strides=(2, 1),
                                             padding=(1, 0, 0, 1), ceil_mode=True))
        both(f"nn.{kind}_pool1d", (x[:, :, 0],), dict(pool_size=(2,), padding=(1, 1)))
        both(f"nn.global_{kind}_pool2d", (x,))
        count += 3
    both("nn.avg_pool2d", (x,), dict(pool_size=(3, 3), padding=(1, 1, 1, 1),
                                     count_include_pad=True))
    for op in ("nn.softmax", "nn.log_softmax"):
        both(op, (x,), dict(axis=1))
        count += 1
    for op in ("sum", "mean", "max", "min", "prod"):
        both(op, (x,), dict(axis=(1, 3), keepdims=True))
        count += 1
    for op in ("exp", "tanh", "sigmoid", "nn.relu", "negative", "abs"):
        both(op, (x,))
        count += 1
    positive = np.abs(x) + 0.5
    for op in ("log", "sqrt"):
        both(op, (positive,))
    for op in ("add", "subtract", "multiply", "divide", "maximum", "minimum"):
        both(op, (x, randn(rng, 4, 1, 3)))
        count += 1
    both("power", (positive, randn(rng, 3)))
    for seed in range(6):                      # random small conv2d geometries
        r = np.random.default_rng(seed)
        groups = int(r.integers(1, 3))
        data = randn(r, 1, 2 * groups, *r.integers(5, 7, 2))
        weight = randn(r, groups * int(r.integers(1, 3)), 2, *r.integers(1, 4, 2))
        both("nn.conv2d", (data, weight), dict(groups=groups, strides=tuple(r.integers(1, 3, 2)),
                                               dilation=tuple(r.integers(1, 3, 2)),
                                               padding=tuple(r.integers(0, 2, 4))))
        count += 1
    print(f"CHECKED {count + 4} kernels: {len(jitkernels.list_kernels('cuda'))} registered")


if __name__ == "__main__":
    main()
