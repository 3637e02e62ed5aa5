"""GFLOP/s of the CPU conv2d and dense kernels on ResNet-50 layer shapes (batch 1, float32),
next to a plain GEMM's GFLOP/s on the same GEMM shapes, measured in the same run.

Run: ``python benchmarks/kernels.py [--repeat 20] [--layout NCHW|NHWC|both] [--stat min]``

For a convolution the matmul column times ``jitkernels.cpu.blas.gemm`` (the BLAS the kernels
themselves call: irlib's OpenBLAS where it loads, else numpy's) on the convolution's own
GEMM (``[O, C*KH*KW] @ [C*KH*KW, OH*OW]``), so the ratio is what im2col and the kernel's
overheads cost; the last line gives that GEMM's and np.matmul's (numpy's own BLAS) figures
on 2048x2048 (the machine's peak).
FLOPs count 2 per multiply-add. Each figure is the median (``--stat min``: the fastest) of
``repeat`` timed calls after warm-up calls (which also compile or load the kernels).

Threads: by default BLAS (and numba) use every core. On a machine shared with other work,
multi-threaded BLAS calls stall on the scheduler (10-100 ms per call whatever the shape), so
pin them for stable ratios: ``OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python
benchmarks/kernels.py``, or compare the fastest calls (``--stat min``), which contention
delays least.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jitkernels  # noqa: E402
from jitkernels.cpu import blas  # noqa: E402

# (name, C, H=W, O, kernel, stride): the distinct conv layers of ResNet-50 (v1.5, stride in
# the 3x3 conv of each stage's first block) at batch 1.
RESNET50_CONVS = [
    ("conv1 7x7/2", 3, 224, 64, 7, 2),
    ("res2 1x1 64>64", 64, 56, 64, 1, 1),
    ("res2 3x3 64", 64, 56, 64, 3, 1),
    ("res2 1x1 64>256", 64, 56, 256, 1, 1),
    ("res2 1x1 256>64", 256, 56, 64, 1, 1),
    ("res3 3x3/2 128", 128, 56, 128, 3, 2),
    ("res3 3x3 128", 128, 28, 128, 3, 1),
    ("res3 1x1 128>512", 128, 28, 512, 1, 1),
    ("res3 1x1 512>128", 512, 28, 128, 1, 1),
    ("res4 3x3/2 256", 256, 28, 256, 3, 2),
    ("res4 3x3 256", 256, 14, 256, 3, 1),
    ("res4 1x1 256>1024", 256, 14, 1024, 1, 1),
    ("res4 1x1 1024>256", 1024, 14, 256, 1, 1),
    ("res5 3x3/2 512", 512, 14, 512, 3, 2),
    ("res5 3x3 512", 512, 7, 512, 3, 1),
    ("res5 1x1 512>2048", 512, 7, 2048, 1, 1),
    ("res5 1x1 2048>512", 2048, 7, 512, 1, 1),
]
RESNET50_DENSE = [("fc 2048>1000", 1, 2048, 1000)]


STAT = statistics.median
"""How :func:`median_seconds` summarises the samples (``min`` with ``--stat min``)."""


def median_seconds(*functions, repeat: int, warmup: int = 3) -> list:
    """Median wall time of each of ``functions`` over ``repeat`` calls after ``warmup`` calls.

    The functions are timed in turn within each repeat, so a busy machine slows them alike.
    (:data:`STAT` replaces the median by another summary, e.g. ``min``.)
    """
    for _ in range(warmup):
        for function in functions:
            function()
    times = [[] for _ in functions]
    for _ in range(repeat):
        for function, samples in zip(functions, times):
            start = time.perf_counter()
            function()
            samples.append(time.perf_counter() - start)
    return [STAT(samples) for samples in times]


def conv_rows(repeat: int, layout: str):
    """One row per ResNet-50 conv layer: (name, conv GFLOP/s, matmul GFLOP/s, ratio)."""
    conv2d = jitkernels.get_kernel("nn.conv2d")
    rng = np.random.default_rng(0)
    for name, channels, size, out_channels, k, stride in RESNET50_CONVS:
        pad = k // 2
        out = (size + 2 * pad - k) // stride + 1
        x = rng.standard_normal((1, channels, size, size), dtype=np.float32)
        w = rng.standard_normal((out_channels, channels, k, k), dtype=np.float32)
        attrs = dict(strides=(stride, stride), padding=(pad,) * 4, dilation=(1, 1), groups=1)
        if layout == "NHWC":
            x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
            w = np.ascontiguousarray(w.transpose(2, 3, 1, 0))
            attrs.update(data_layout="NHWC", kernel_layout="HWIO")
        flops = 2.0 * out_channels * channels * k * k * out * out
        a = rng.standard_normal((out_channels, channels * k * k), dtype=np.float32)
        b = rng.standard_normal((channels * k * k, out * out), dtype=np.float32)
        c = np.empty((out_channels, out * out), np.float32)
        seconds, gemm = median_seconds(lambda: conv2d(x, w, **attrs), lambda: blas.gemm(a, b, c),
                                       repeat=repeat)
        yield name, flops / seconds / 1e9, flops / gemm / 1e9, seconds * 1e3


def dense_rows(repeat: int):
    """Rows for ResNet-50's dense layer."""
    dense = jitkernels.get_kernel("nn.dense")
    rng = np.random.default_rng(0)
    for name, batch, features, units in RESNET50_DENSE:
        x = rng.standard_normal((batch, features), dtype=np.float32)
        w = rng.standard_normal((units, features), dtype=np.float32)
        flops = 2.0 * batch * features * units
        c = np.empty((batch, units), np.float32)
        seconds, gemm = median_seconds(lambda: dense(x, w), lambda: blas.gemm(x, w.T, c),
                                       repeat=repeat)
        yield name, flops / seconds / 1e9, flops / gemm / 1e9, seconds * 1e3


def main(argv=None) -> int:
    """Print the table; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--layout", choices=("NCHW", "NHWC", "both"), default="NCHW")
    parser.add_argument("--stat", choices=("median", "min"), default="median",
                        help="summary of the timed calls (min: least disturbed by other load)")
    args = parser.parse_args(argv)
    global STAT
    STAT = min if args.stat == "min" else statistics.median
    layouts = ("NCHW", "NHWC") if args.layout == "both" else (args.layout,)
    print(f"{'layer':<22} {'layout':<6} {'kernel GF/s':>11} {'matmul GF/s':>11} "
          f"{'ratio':>6} {'ms':>8}")
    conv_ratios = []
    for layout in layouts:
        for name, got, gemm, ms in conv_rows(args.repeat, layout):
            conv_ratios.append(got / gemm)
            print(f"{name:<22} {layout:<6} {got:11.1f} {gemm:11.1f} {got / gemm:6.0%} {ms:8.3f}")
    for name, got, gemm, ms in dense_rows(args.repeat):
        print(f"{name:<22} {'-':<6} {got:11.1f} {gemm:11.1f} {got / gemm:6.0%} {ms:8.3f}")
    a = np.random.default_rng(1).standard_normal((2048, 2048), dtype=np.float32)
    c = np.empty_like(a)
    ours, numpys = median_seconds(lambda: blas.gemm(a, a, c), lambda: np.matmul(a, a),
                                  repeat=max(3, args.repeat // 4))
    print(f"2048x2048: blas.gemm ({blas.backend()['library']}) {2.0 * 2048 ** 3 / ours / 1e9:.1f}"
          f" GFLOP/s, np.matmul {2.0 * 2048 ** 3 / numpys / 1e9:.1f} GFLOP/s; conv/matmul "
          f"ratio: median {statistics.median(conv_ratios):.0%}, min {min(conv_ratios):.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
