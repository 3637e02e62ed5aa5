"""DCGAN's four deconvolution groups, the earlier conv2d_transpose kernel vs the current one.

Usage: ``python benchmarks/conv_transpose_layers.py [--repeat 30] [--threads 1]``

Per layer (NCHW, IOHW read-only weight, as a built graph holds it), in one process, back to
back and interleaved run by run:

* ``before``: what a fused group ran before issue #17's deconvolution work: the earlier kernel
  (``W^T @ x`` per image, serial scatter-add into a zeroed, freshly allocated output) and the
  group's epilogue (``* scale + shift``, ReLU; tanh for the last layer) as a second pass;
* ``after``: :func:`jitkernels.cpu.conv_transpose.into_fused` (the tanh layer: ``into`` plus
  the same tanh pass, which the fused epilogue does not cover).

Prints wall and CPU (``time.process_time``) milliseconds, min and median, and the load
average. ``--threads`` sets irlib's BLAS and numba's threads (set before they load).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LAYERS = [  # (in channels, out channels, input size, epilogue)
    (1024, 512, 4, "bn_relu"), (512, 256, 8, "bn_relu"), (256, 128, 16, "bn_relu"),
    (128, 3, 32, "tanh")]


def main(argv=None) -> None:
    """Run the comparison (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    for name in ("IRLIB_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[name] = str(args.threads)
    import numpy as np
    from numba import njit

    from irlib.op import get_def
    from jitkernels.cpu import conv_transpose
    from jitkernels.cpu.epilogue import ADD, MUL, RELU, Epilogue

    @njit(cache=True)
    def second_pass(anchor, scale, shift, out, tanh):
        channels = anchor.shape[1]
        flat_in = anchor.reshape(channels, -1)
        flat_out = out.reshape(channels, -1)
        for o in range(channels):
            for p in range(flat_in.shape[1]):
                if tanh:
                    flat_out[o, p] = np.tanh(flat_in[o, p])
                else:
                    flat_out[o, p] = max(flat_in[o, p] * scale[o] + shift[o], 0.0)

    def earlier(x, w, attrs, out_shape):
        anchor = np.empty(out_shape, np.float32)
        conv_transpose._earlier(x, w, (2, 2), (1, 1), (1, 1), 1, anchor)
        return anchor

    rng = np.random.default_rng(0)
    print(f"load average {open('/proc/loadavg').read().split()[:3]}, threads {args.threads}")
    print(f"{'layer':>22} {'before wall min/med':>20} {'cpu med':>8} "
          f"{'after wall min/med':>20} {'cpu med':>8} {'ratio':>6}")
    for cin, cout, size, tail in LAYERS:
        x = rng.standard_normal((1, cin, size, size)).astype(np.float32)
        w = (rng.standard_normal((cin, cout, 4, 4)) * 0.05).astype(np.float32)
        w.flags.writeable = False
        scale = rng.standard_normal(cout).astype(np.float32)
        shift = rng.standard_normal(cout).astype(np.float32)
        attrs = dict(get_def("nn.conv2d_transpose").make_attrs(
            {"strides": (2, 2), "padding": (1, 1), "channels": cout, "kernel_size": (4, 4)}))
        out_shape = (1, cout, 2 * size, 2 * size)
        result = np.empty(out_shape, np.float32)
        if tail == "tanh":
            epilogue = None
        else:
            epilogue = Epilogue(np.array([MUL, ADD, RELU], np.int64),
                                np.stack([scale, shift, np.zeros_like(scale)]),
                                np.zeros((1, 1, 1, 1), np.float32))

        def before():
            second_pass(earlier(x, w, attrs, out_shape), scale, shift,
                        np.empty(out_shape, np.float32), tail == "tanh")

        def after():
            if epilogue is None:
                conv_transpose.into(result, x, w, **attrs)
                second_pass(result, scale, shift, result, True)
            else:
                conv_transpose.into_fused(result, x, w, epilogue, **attrs)

        check = np.empty(out_shape, np.float32)
        anchor = earlier(x, w, attrs, out_shape)
        second_pass(anchor, scale, shift, check, tail == "tanh")
        after()
        np.testing.assert_allclose(result, check, rtol=1e-3, atol=1e-3)
        times = {"before": ([], []), "after": ([], [])}
        for _ in range(3):
            before()
            after()
        for _ in range(args.repeat):
            for label, fn in (("before", before), ("after", after)):
                wall, cpu = time.perf_counter(), time.process_time()
                fn()
                times[label][0].append(time.perf_counter() - wall)
                times[label][1].append(time.process_time() - cpu)
        row = []
        for label in ("before", "after"):
            wall, cpu = (np.array(t) * 1e3 for t in times[label])
            row.append(f"{wall.min():8.3f}/{np.median(wall):8.3f} {np.median(cpu):8.3f}")
        ratio = np.median(times["after"][0]) / np.median(times["before"][0])
        print(f"{f'{cin}->{cout} {size}x{size}->{2 * size}':>22} {row[0]:>29} "
              f"{row[1]:>29} {ratio:6.2f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
