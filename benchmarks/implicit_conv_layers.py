"""The implicit-GEMM conv kernel vs the paths it replaces, layer by layer, back to back.

Run: ``python benchmarks/implicit_conv_layers.py [--threads 1] [--repeat 30] [--layers rn1,mb1]``

Each row is one NHWC/HWIO float32 layer of the zoo's conv nets at batch 1 with a fused
bias + ReLU epilogue (as the graph executor runs it, weight read-only as a built graph's
is): the first layers (ResNet/DenseNet 7x7/2 3->64, MobileNet 3x3/2 3->32, SqueezeNet 1.1
3x3/2 3->64, Inception-v3 3x3/2 3->32 at 299x299), SqueezeNet's fire 3x3s, Inception's
5x5 48->64 and 3x3/2 reductions, DenseNet's 3x3 128->32 and ResNet's 3x3/2 and 1x1/2
layers, the small layers the direct kernel was made for (keyword spotting's 1->8 and
8->8, 16->16, 8->32/2), and the stride-1 1x1 layers (SqueezeNet 1.1's squeezes and
expansions, DenseNet-121's bottlenecks, MobileNet v1's and ResNet-50's pointwise layers).
``nn.conv2d``'s kernel runs with ``IRLIB_IMPLICIT_CONV=0`` (the path chosen then: ``old``
names it: direct kernel, Winograd, per-tap GEMMs, im2col + GEMM, or for a 1x1 layer the
packed GEMM or OpenBLAS) and with the implicit-GEMM kernel forced, alternating call by
call (and, for the stride-1 3x3 layers the graph's build-time Winograd rewrite takes,
Winograd on a weight transformed once: ``built Winograd``, what the graph runs there);
``rule`` says whether :func:`jitkernels.cpu.implicit_conv.pays` chooses it.

Times are microseconds, wall (``time.perf_counter``) and CPU (``time.process_time``, all
threads of the process), min and median of ``--repeat`` calls after warm-up calls.
``--threads`` sets numba's and irlib's GEMM threads (set before the kernels load).
Compare the ratio column within one run; note the load average.
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

# (name, data shape NHWC, weight shape HWIO, strides, padding (top, left, bottom, right))
LAYERS = [
    ("rn1", (1, 224, 224, 3), (7, 7, 3, 64), (2, 2), (3, 3, 3, 3)),
    ("mb1", (1, 224, 224, 3), (3, 3, 3, 32), (2, 2), (1, 1, 1, 1)),
    ("sq1", (1, 224, 224, 3), (3, 3, 3, 64), (2, 2), (0, 0, 0, 0)),
    ("inc1", (1, 299, 299, 3), (3, 3, 3, 32), (2, 2), (0, 0, 0, 0)),
    ("inc2", (1, 149, 149, 32), (3, 3, 32, 32), (1, 1), (0, 0, 0, 0)),
    ("inc3", (1, 147, 147, 32), (3, 3, 32, 64), (1, 1), (1, 1, 1, 1)),
    ("inc_3x3_80_192", (1, 73, 73, 80), (3, 3, 80, 192), (1, 1), (0, 0, 0, 0)),
    ("sq_fire2", (1, 55, 55, 16), (3, 3, 16, 64), (1, 1), (1, 1, 1, 1)),
    ("sq_fire4", (1, 27, 27, 32), (3, 3, 32, 128), (1, 1), (1, 1, 1, 1)),
    ("sq_fire6", (1, 13, 13, 48), (3, 3, 48, 192), (1, 1), (1, 1, 1, 1)),
    ("inc_5x5", (1, 35, 35, 48), (5, 5, 48, 64), (1, 1), (2, 2, 2, 2)),
    ("inc_3x3_64_96", (1, 35, 35, 64), (3, 3, 64, 96), (1, 1), (1, 1, 1, 1)),
    ("inc_3x3s2_288", (1, 35, 35, 288), (3, 3, 288, 384), (2, 2), (0, 0, 0, 0)),
    ("inc_1x7", (1, 17, 17, 128), (1, 7, 128, 128), (1, 1), (0, 3, 0, 3)),
    ("inc_7x1", (1, 17, 17, 128), (7, 1, 128, 128), (1, 1), (3, 0, 3, 0)),
    ("dn_56", (1, 56, 56, 128), (3, 3, 128, 32), (1, 1), (1, 1, 1, 1)),
    ("dn_28", (1, 28, 28, 128), (3, 3, 128, 32), (1, 1), (1, 1, 1, 1)),
    ("dn_14", (1, 14, 14, 128), (3, 3, 128, 32), (1, 1), (1, 1, 1, 1)),
    ("dn_7", (1, 7, 7, 128), (3, 3, 128, 32), (1, 1), (1, 1, 1, 1)),
    ("rn_3x3_64", (1, 56, 56, 64), (3, 3, 64, 64), (1, 1), (1, 1, 1, 1)),
    ("rn_3x3s2_128", (1, 56, 56, 64), (3, 3, 64, 128), (2, 2), (1, 1, 1, 1)),
    ("rn_3x3s2_256", (1, 28, 28, 128), (3, 3, 128, 256), (2, 2), (1, 1, 1, 1)),
    ("rn_3x3s2_512", (1, 14, 14, 256), (3, 3, 256, 512), (2, 2), (1, 1, 1, 1)),
    ("rn_1x1s2_128", (1, 56, 56, 64), (1, 1, 64, 128), (2, 2), (0, 0, 0, 0)),
    ("rn_1x1s2_512", (1, 14, 14, 256), (1, 1, 256, 512), (2, 2), (0, 0, 0, 0)),
    ("dcgan1", (1, 64, 64, 3), (4, 4, 3, 64), (2, 2), (1, 1, 1, 1)),
    ("kws1", (1, 40, 100, 1), (3, 3, 1, 8), (1, 1), (1, 1, 1, 1)),
    ("kws2", (1, 40, 100, 8), (3, 3, 8, 8), (2, 2), (1, 1, 1, 1)),
    ("c16_28", (1, 28, 28, 16), (3, 3, 16, 16), (1, 1), (1, 1, 1, 1)),
    ("c16_56", (1, 56, 56, 16), (3, 3, 16, 16), (1, 1), (1, 1, 1, 1)),
    ("c8to32s2", (1, 56, 56, 8), (3, 3, 8, 32), (2, 2), (1, 1, 1, 1)),
    ("c16to24", (1, 28, 28, 16), (3, 3, 16, 24), (1, 1), (1, 1, 1, 1)),
    ("c16_40x100", (1, 40, 100, 16), (3, 3, 16, 16), (1, 1), (1, 1, 1, 1)),
    ("c8to16", (1, 20, 20, 8), (3, 3, 8, 16), (1, 1), (1, 1, 1, 1)),
    ("c32to16", (1, 28, 28, 32), (3, 3, 32, 16), (1, 1), (1, 1, 1, 1)),
    ("sq_fire8", (1, 13, 13, 64), (3, 3, 64, 256), (1, 1), (1, 1, 1, 1)),
] + [(name, (1, size, size, channels), (1, 1, channels, out), (1, 1), (0, 0, 0, 0))
     for name, size, channels, out in (
         # SqueezeNet 1.1's squeezes and 1x1 expansions
         ("sq_s55_64_16", 55, 64, 16), ("sq_s55_128_16", 55, 128, 16),
         ("sq_s27_128_32", 27, 128, 32), ("sq_s27_256_32", 27, 256, 32),
         ("sq_s13_256_48", 13, 256, 48), ("sq_s13_384_48", 13, 384, 48),
         ("sq_s13_384_64", 13, 384, 64), ("sq_s13_512_64", 13, 512, 64),
         ("sq_e55_16_64", 55, 16, 64), ("sq_e27_32_128", 27, 32, 128),
         ("sq_e13_48_192", 13, 48, 192), ("sq_e13_64_256", 13, 64, 256),
         # DenseNet-121's bottlenecks (C -> 128), MobileNet v1's and ResNet-50's pointwise
         ("dn1_56_64", 56, 64, 128), ("dn1_56_256", 56, 256, 128),
         ("dn1_28_128", 28, 128, 128), ("dn1_28_512", 28, 512, 128),
         ("dn1_14_256", 14, 256, 128), ("dn1_14_1024", 14, 1024, 128),
         ("dn1_7_512", 7, 512, 128), ("dn1_7_1024", 7, 1024, 128),
         ("mb_pw_112", 112, 32, 64), ("mb_pw_56", 56, 128, 128), ("mb_pw_28", 28, 256, 256),
         ("mb_pw_14", 14, 512, 512), ("mb_pw_7", 7, 1024, 1024),
         ("rn50_56_64_256", 56, 64, 256), ("rn50_56_256_64", 56, 256, 64),
         ("rn50_7_2048_512", 7, 2048, 512))]


def old_path(shape, wshape, strides) -> str:
    """Which path ``_conv2d_nhwc`` takes with the implicit kernel off (a label)."""
    from jitkernels.cpu import conv_core, direct_conv, packed_gemm, winograd
    _, height, width, channels = shape
    kh, kw, _, out_channels = wshape
    oh, ow = height // strides[0], width // strides[1]
    if (kh, kw) == (1, 1) and strides == (1, 1):
        return ("packed" if packed_gemm.conv_pays(oh * ow, channels, out_channels, True)
                else "blas")
    if direct_conv.direct_pays(channels, out_channels, (kh, kw), oh * ow):
        return "direct"
    if winograd.eligible((kh, kw), strides, (1, 1), 1) and winograd.choose_tile(
            channels, out_channels, oh, ow, 1, weight_transform=True):
        return "winograd"
    if strides == (1, 1) and conv_core.taps_pay(out_channels, channels, oh, ow, width + kw - 1,
                                                1, conv_core.COPY_FLOPS_NHWC, False):
        return "taps"
    return "im2col"


def measure(layer, repeat: int) -> dict:
    """Times of one layer on both paths (microseconds) and the rule's choice."""
    import jitkernels
    from irlib.op import get_def
    from jitkernels.cpu import implicit_conv
    from jitkernels.cpu.epilogue import ADD, RELU, Epilogue
    name, shape, wshape, strides, padding = layer
    rng = np.random.default_rng(0)
    data = rng.standard_normal(shape).astype(np.float32)
    weight = rng.standard_normal(wshape).astype(np.float32)
    weight.flags.writeable = False
    attrs = dict(get_def("nn.conv2d").make_attrs(
        {"strides": strides, "padding": padding, "data_layout": "NHWC",
         "kernel_layout": "HWIO"}))
    kernel = jitkernels.get_kernel("nn.conv2d", "cpu")
    size = [(shape[1 + i] + padding[i] + padding[2 + i] - wshape[i]) // strides[i] + 1
            for i in range(2)]
    out_shape = (1, *size, wshape[3])
    epilogue = Epilogue(np.array([ADD, RELU], np.int64),
                        rng.standard_normal((2, wshape[3])).astype(np.float32),
                        np.zeros((1, 1, 1, 1), np.float32))
    flops = 2.0 * size[0] * size[1] * wshape[3] * np.prod(wshape[:3])
    paths = ["old", "implicit"]
    from jitkernels.cpu import winograd
    tile = (winograd.choose_tile(shape[3], wshape[3], size[0], size[1], 1)
            if winograd.eligible(wshape[:2], strides, (1, 1), 1) else 0)
    if tile:        # the graph's build-time Winograd rewrite takes this layer
        u = winograd.transform_weight(weight.transpose(3, 2, 0, 1), tile, channels_last=True)
        paths.append("wino_built")
    outs = {path: np.empty(out_shape, np.float32) for path in paths}
    times = {path: ([], []) for path in outs}
    saved = implicit_conv.MAX_INNER, implicit_conv.MIN_OUT_CHANNELS
    try:
        for step in range(repeat + 3):
            for path in paths:
                if path == "old":
                    os.environ[implicit_conv.ENV_SWITCH] = "0"
                elif path == "implicit":
                    os.environ.pop(implicit_conv.ENV_SWITCH, None)
                    implicit_conv.MAX_INNER, implicit_conv.MIN_OUT_CHANNELS = 1 << 30, 1
                start, cpu = time.perf_counter(), time.process_time()
                if path == "wino_built":
                    winograd.conv2d_nhwc(data, u, outs[path], tile, padding[0], padding[1],
                                         epilogue)
                else:
                    assert kernel.into_fused(outs[path], data, weight, epilogue=epilogue,
                                             **attrs)
                wall, cpu = time.perf_counter() - start, time.process_time() - cpu
                implicit_conv.MAX_INNER, implicit_conv.MIN_OUT_CHANNELS = saved
                if step >= 3:
                    times[path][0].append(wall * 1e6)
                    times[path][1].append(cpu * 1e6)
    finally:
        os.environ.pop(implicit_conv.ENV_SWITCH, None)
        implicit_conv.MAX_INNER, implicit_conv.MIN_OUT_CHANNELS = saved
    scale = float(np.abs(outs["old"]).max()) or 1.0
    rule = implicit_conv.pays(shape[3], wshape[3], wshape[:2], strides, (1, 1),
                              size[0] * size[1])
    result = {"name": name, "mflop": flops / 1e6, "rule": "implicit" if rule else "old",
              "old_path": old_path(shape, wshape, strides),
              "diff": float(np.abs(outs["old"] - outs["implicit"]).max()) / scale}
    for path, (walls, cpus) in times.items():
        result[path] = (min(walls), statistics.median(walls), statistics.median(cpus))
    return result


def main(argv=None) -> None:
    """Parse the arguments and print the table (markdown)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--layers", default="", help="comma-separated names (default all)")
    args = parser.parse_args(argv)
    os.environ["IRLIB_NUM_THREADS"] = str(args.threads)
    import numba
    numba.set_num_threads(args.threads)
    chosen = [layer for layer in LAYERS
              if not args.layers or layer[0] in args.layers.split(",")]
    print(f"threads {args.threads}, load average {os.getloadavg()[0]:.1f}, "
          f"median of {args.repeat}; us: wall min / wall median / CPU median")
    print("| layer | MFLOP | old path | old | implicit | implicit/old (min) | "
          "implicit/old (CPU) | implicit GFLOP/s (CPU) | rule | diff | built Winograd | "
          "implicit/built (min) |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---|---:|---:|---:|")
    for layer in chosen:
        r = measure(layer, args.repeat)
        old, new = r["old"], r["implicit"]
        wino = r.get("wino_built")
        built = (f"{wino[0]:.0f} / {wino[1]:.0f} / {wino[2]:.0f} | {new[0] / wino[0]:.2f}"
                 if wino else "- | -")
        print(f"| {r['name']} | {r['mflop']:.1f} | {r['old_path']} | {old[0]:.0f} / "
              f"{old[1]:.0f} / {old[2]:.0f} | {new[0]:.0f} / {new[1]:.0f} / {new[2]:.0f} | "
              f"{new[0] / old[0]:.2f} | {new[2] / old[2]:.2f} | "
              f"{r['mflop'] / new[2] * 1e3:.0f} | {r['rule']} | "
              f"{r['diff']:.0e} | {built} |", flush=True)


if __name__ == "__main__":
    main()
