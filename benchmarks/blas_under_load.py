"""GEMM latency on numpy's BLAS and on irlib's, with and without busy processes beside them.

Run: ``python benchmarks/blas_under_load.py [--spinners N] [--repeat 40]``

The experiment behind :mod:`jitkernels.threads`' rule. For a few GEMM shapes of ResNet
layers and of a transformer decode step, it times ``np.matmul`` (numpy's OpenBLAS with its
own threads) and ``jitkernels.cpu.blas.gemm`` (irlib's OpenBLAS copy: one-thread parts on
numba's workers, :mod:`jitkernels.cpu.blas_team`, one part while other processes keep the
cores busy; with ``IRLIB_BLAS_TEAM=0`` OpenBLAS's own threads, back to one thread for a
while after a product stalls) interleaved call by call, first on
the machine as it is, then with ``N`` competing processes that spin (``while True: pass``;
default: one per core but one, i.e. one core taken on a 2-core machine). It prints the
median and 90th percentile in ms of each and the load average. Where OpenBLAS's threads
wait for each other by spinning, the numpy column grows by far more than the share of the
cores the spinners take; irlib's should grow by about that share (plus the stalls that
send it back to one thread). On the idle machine numpy's threads, spinning after each
``np.matmul``, also take the core irlib's second part needs, so irlib's idle figures here
are worse than in a process of its own (``benchmarks/blas_team.py`` times those).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jitkernels.cpu import blas  # noqa: E402

SHAPES = [(64, 576, 3136), (256, 2304, 196), (512, 4608, 49), (1, 768, 2304)]
"""``(M, K, N)``: ResNet res2/res4/res5 3x3 GEMMs and a GPT-2 decode step's GEMV."""


def measure(repeat: int) -> list:
    """Rows ``(shape, numpy median, numpy p90, irlib median, irlib p90)`` in ms."""
    rng = np.random.default_rng(0)
    rows = []
    for m, k, n in SHAPES:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        out = np.empty((m, n), np.float32)
        calls = (lambda: np.matmul(a, b, out=out), lambda: blas.gemm(a, b, out))
        samples = ([], [])
        for call in calls:
            call()
        for _ in range(repeat):
            for call, times in zip(calls, samples):
                start = time.perf_counter()
                call()
                times.append((time.perf_counter() - start) * 1e3)
            time.sleep(0.001)
        rows.append(((m, k, n),) + tuple(stat for times in samples for stat in
                                         (float(np.median(times)),
                                          float(np.percentile(times, 90)))))
    return rows


def report(title: str, rows: list) -> None:
    """Print one table."""
    print(f"{title} (load average {'%.1f %.1f %.1f' % os.getloadavg()})")
    print(f"{'M, K, N':<20} {'numpy med':>10} {'p90':>9} {'irlib med':>10} {'p90':>9}")
    for shape, numpy_med, numpy_p90, ours_med, ours_p90 in rows:
        print(f"{str(shape):<20} {numpy_med:10.2f} {numpy_p90:9.2f} {ours_med:10.2f} "
              f"{ours_p90:9.2f}")


def main(argv=None) -> int:
    """Run the experiment; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spinners", type=int, default=max(1, (os.cpu_count() or 2) - 1),
                        help="busy processes started for the second table")
    parser.add_argument("--repeat", type=int, default=40)
    args = parser.parse_args(argv)
    print(f"irlib BLAS: {blas.backend()}")
    report("as the machine is", measure(args.repeat))
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(args.spinners)]
    try:
        time.sleep(1.0)
        report(f"with {args.spinners} spinning process(es)", measure(args.repeat))
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
