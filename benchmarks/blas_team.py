"""irlib's GEMMs cut for numba's workers against OpenBLAS's own threads, each in its own process.

Run: ``python benchmarks/blas_team.py [--repeat 200] [--threads 2]``

:mod:`jitkernels.cpu.blas_team` runs a product of irlib's OpenBLAS copy as one
single-threaded cblas call per numba worker (the workers spinning between jobs); the
earlier design ran it as one call on OpenBLAS's own threads (``IRLIB_BLAS_TEAM=0``). This
script times ``jitkernels.cpu.blas.gemm`` on conv-net and transformer shapes in three
processes, one per setting (a process's thread pools slow another's): the parts on
``--threads`` workers, the same on one thread, and OpenBLAS's own ``--threads`` threads.
It prints the median ms of each and the load average (the figures mean something on an
idle machine only).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])

SHAPES = [(3136, 576, 64), (784, 1152, 128), (196, 2304, 256), (49, 4608, 512),
          (3025, 64, 16), (128, 384, 1536), (16, 384, 1536)]
"""``(M, K, N)``: ResNet 3x3 im2col products (56, 28, 14, 7 pixels square), a SqueezeNet
squeeze layer, a BERT feed-forward product and a GPT-2 decode step's."""

SETTINGS = {"parts": ("1", None), "one thread": ("1", "1"), "openblas threads": ("0", None)}
"""Name -> (``IRLIB_BLAS_TEAM``, thread count override or None for ``--threads``)."""


def worker(repeat: int) -> None:
    """Time every shape in this process; print one JSON list of medians (ms)."""
    import numpy as np
    from jitkernels.cpu import blas
    rng = np.random.default_rng(0)
    medians = []
    for m, k, n in SHAPES:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        out = np.empty((m, n), np.float32)
        for _ in range(5):
            blas.gemm(a, b, out)
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            blas.gemm(a, b, out)
            times.append((time.perf_counter() - start) * 1e3)
        medians.append(float(np.median(times)))
    print(json.dumps(medians))


def run(setting: str, threads: int, repeat: int) -> list:
    """One setting's medians, measured in a process of its own."""
    team, override = SETTINGS[setting]
    count = override or str(threads)
    env = dict(os.environ, IRLIB_BLAS_TEAM=team, NUMBA_NUM_THREADS=count,
               OMP_NUM_THREADS=count, OPENBLAS_NUM_THREADS=count, IRLIB_NUM_THREADS=count,
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, __file__, "--worker", "--repeat", str(repeat)],
                          env=env, capture_output=True, text=True)
    if done.returncode != 0:
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        raise RuntimeError(f"the {setting!r} worker failed: "
                           f"{lines[-1] if lines else 'no output'}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _positive(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"needs an integer of at least 1, got {text}")
    return value


def main(argv=None) -> int:
    """Parse the arguments, run the three settings, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=_positive, default=200, help="timed calls per shape")
    parser.add_argument("--threads", type=_positive, default=2,
                        help="threads of the shared runs")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.repeat)
        return 0
    results = {name: run(name, args.threads, args.repeat) for name in SETTINGS}
    print(f"blas.gemm, median ms of {args.repeat} calls, load average "
          f"{', '.join(f'{v:.1f}' for v in os.getloadavg())}")
    print("| (M, K, N) | " + " | ".join(SETTINGS) + " |")
    print("|---|" + "---:|" * len(SETTINGS))
    for k, shape in enumerate(SHAPES):
        print(f"| {shape} | " + " | ".join(f"{results[name][k]:.3f}" for name in SETTINGS)
              + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
