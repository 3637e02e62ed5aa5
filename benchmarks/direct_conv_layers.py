"""The direct convolution kernel vs the GEMM-based paths, layer by layer, back to back.

Run: ``python benchmarks/direct_conv_layers.py [--threads 1] [--repeat 50] [--layers kws1,sq1]``

Each row is one layer at batch 1, float32, as the graph executor runs it (channels-last
NHWC/HWIO for conv2d, channels-first NCW for conv1d), with a bias + ReLU epilogue on the
channels-last ones (fused into either kernel, as the graph does): the keyword-spotting
model's layers (``benchmarks/small_models.py``: 1->8 3x3, 8->8 3x3/2, 160->16 conv1d) and
the first layers of the zoo's conv nets (SqueezeNet 1.1 3->64 3x3/2, MobileNet 3->32
3x3/2, ResNet 3->64 7x7/2, DCGAN-sized 3->64 4x4/2), plus a few small-channel layers near
the cost rule's edges (DenseNet-121's 128->32 3x3 layers of its last two blocks). For each, the ``nn.conv2d``/``nn.conv1d`` kernel runs with
``IRLIB_DIRECT_CONV=0`` (im2col or per-tap GEMMs, Winograd where chosen) and with the
direct kernel forced, alternating call by call; ``rule`` says which one
:func:`jitkernels.cpu.direct_conv.direct_pays` picks.

Times are microseconds, wall (``time.perf_counter``) and CPU (``time.process_time``, all
threads of the process), min and median of ``--repeat`` calls after warm-up calls.
``--threads`` sets numba's and irlib's GEMM threads (``IRLIB_NUM_THREADS``; set before
the kernels load). Compare the ratio column within one run; note the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# (name, op, data shape, weight shape, strides, padding): NHWC/HWIO for conv2d, NCW/OIW
# for conv1d.
LAYERS = [
    ("kws1", "nn.conv2d", (1, 40, 100, 1), (3, 3, 1, 8), (1, 1), (1, 1, 1, 1)),
    ("kws2", "nn.conv2d", (1, 40, 100, 8), (3, 3, 8, 8), (2, 2), (1, 1, 1, 1)),
    ("kws_conv1d", "nn.conv1d", (1, 160, 50), (16, 160, 3), (1,), (1, 1)),
    ("sq1", "nn.conv2d", (1, 224, 224, 3), (3, 3, 3, 64), (2, 2), (0, 0, 0, 0)),
    ("mb1", "nn.conv2d", (1, 224, 224, 3), (3, 3, 3, 32), (2, 2), (1, 1, 1, 1)),
    ("rn1", "nn.conv2d", (1, 224, 224, 3), (7, 7, 3, 64), (2, 2), (3, 3, 3, 3)),
    ("dcgan1", "nn.conv2d", (1, 64, 64, 3), (4, 4, 3, 64), (2, 2), (1, 1, 1, 1)),
    ("c16_28", "nn.conv2d", (1, 28, 28, 16), (3, 3, 16, 16), (1, 1), (1, 1, 1, 1)),
    ("c16_56", "nn.conv2d", (1, 56, 56, 16), (3, 3, 16, 16), (1, 1), (1, 1, 1, 1)),
    ("c8to32s2", "nn.conv2d", (1, 56, 56, 8), (3, 3, 8, 32), (2, 2), (1, 1, 1, 1)),
    ("dn121_7x7", "nn.conv2d", (1, 7, 7, 128), (3, 3, 128, 32), (1, 1), (1, 1, 1, 1)),
    ("dn121_14x14", "nn.conv2d", (1, 14, 14, 128), (3, 3, 128, 32), (1, 1), (1, 1, 1, 1)),
]


def _call(op, kernel, out, data, weight, attrs, epilogue):
    """One call of the op's destination-passing form (fused epilogue when given)."""
    if epilogue is not None:
        assert kernel.into_fused(out, data, weight, epilogue=epilogue, **attrs)
    else:
        assert kernel.into(out, data, weight, **attrs)


def measure(layer, repeat: int) -> dict:
    """Times of one layer on both paths (microseconds) and the rule's choice."""
    import jitkernels
    from irlib.op import get_def
    from jitkernels.cpu import direct_conv
    from jitkernels.cpu.epilogue import ADD, RELU, Epilogue
    name, op, shape, wshape, strides, padding = layer
    rng = np.random.default_rng(0)
    data = rng.standard_normal(shape).astype(np.float32)
    weight = rng.standard_normal(wshape).astype(np.float32)
    two_d = op == "nn.conv2d"
    attrs = {"strides": strides, "padding": padding}
    if two_d:
        attrs.update(data_layout="NHWC", kernel_layout="HWIO")
    attrs = dict(get_def(op).make_attrs(attrs))
    kernel = jitkernels.get_kernel(op, "cpu")
    if two_d:
        size = [(shape[1 + i] + padding[i] + padding[2 + i] - wshape[i]) // strides[i] + 1
                for i in range(2)]
        out_shape, channels, kernel_size = (1, *size, wshape[3]), shape[3], wshape[:2]
        epilogue = Epilogue(np.array([ADD, RELU], np.int64),
                            rng.standard_normal((2, wshape[3])).astype(np.float32),
                            np.zeros((1, 1, 1, 1), np.float32))
    else:
        size = [(shape[2] + padding[0] + padding[1] - wshape[2]) // strides[0] + 1]
        out_shape, channels, kernel_size = (1, wshape[0], size[0]), shape[1], wshape[2:]
        epilogue = None
    positions = int(np.prod(size))
    flops = 2.0 * positions * out_shape[-1 if two_d else 1] * channels * np.prod(kernel_size)
    outs = {path: np.empty(out_shape, np.float32) for path in ("gemm", "direct")}
    saved = direct_conv.SMALL_OUT_CHANNELS
    times = {path: ([], []) for path in outs}
    try:
        for step in range(repeat + 3):
            for path in ("gemm", "direct"):
                if path == "gemm":
                    os.environ[direct_conv.ENV_SWITCH] = "0"
                else:
                    os.environ.pop(direct_conv.ENV_SWITCH, None)
                    direct_conv.SMALL_OUT_CHANNELS = 1 << 30
                start, cpu = time.perf_counter(), time.process_time()
                _call(op, kernel, outs[path], data, weight, attrs, epilogue)
                wall, cpu = time.perf_counter() - start, time.process_time() - cpu
                direct_conv.SMALL_OUT_CHANNELS = saved
                if step >= 3:
                    times[path][0].append(wall * 1e6)
                    times[path][1].append(cpu * 1e6)
    finally:
        os.environ.pop(direct_conv.ENV_SWITCH, None)
        direct_conv.SMALL_OUT_CHANNELS = saved
    scale = float(np.abs(outs["gemm"]).max()) or 1.0
    rule = direct_conv.direct_pays(channels, out_shape[-1 if two_d else 1],
                                   tuple(kernel_size), positions)
    result = {"name": name, "mflop": flops / 1e6, "rule": "direct" if rule else "gemm",
              "diff": float(np.abs(outs["gemm"] - outs["direct"]).max()) / scale}
    for path, (walls, cpus) in times.items():
        result[path] = (min(walls), statistics.median(walls), statistics.median(cpus))
    return result


def main(argv=None) -> None:
    """Parse the arguments and print the table (markdown)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--layers", default="", help="comma-separated names (default all)")
    args = parser.parse_args(argv)
    os.environ["IRLIB_NUM_THREADS"] = str(args.threads)
    import numba
    numba.set_num_threads(args.threads)
    chosen = [layer for layer in LAYERS
              if not args.layers or layer[0] in args.layers.split(",")]
    print(f"threads {args.threads}, load average {os.getloadavg()[0]:.1f}, "
          f"median of {args.repeat}; us: wall min / wall median / CPU median")
    print("| layer | MFLOP | GEMM paths | direct | direct/GEMM (min) | rule | diff |")
    print("|---|---:|---:|---:|---:|---|---:|")
    for layer in chosen:
        r = measure(layer, args.repeat)
        gemm, direct = r["gemm"], r["direct"]
        print(f"| {r['name']} | {r['mflop']:.2f} | {gemm[0]:.0f} / {gemm[1]:.0f} / "
              f"{gemm[2]:.0f} | {direct[0]:.0f} / {direct[1]:.0f} / {direct[2]:.0f} | "
              f"{direct[0] / gemm[0]:.2f} | {r['rule']} | {r['diff']:.0e} |")


if __name__ == "__main__":
    main()
