"""Seconds for work that must stay fast on large or deep programs (timings kept out of tests).

Run ``python benchmarks/deep_programs.py [--repeat R]``. Each row is a job the test suite
checks for correctness only (tests/relay_compat/test_passes_compat_infra.py and
tests/interp/test_to_python_prelude.py), timed here instead of asserted: a timed assertion
in a test fails on a loaded machine and proves nothing on a fast one. The table prints the
best and median of ``R`` runs and the load average, so a reader can judge the noise.

* DeadCodeElimination over inception_v3 (Relay's DCE "complexity" test: linear time, a few
  ms; a quadratic walk would take minutes);
* ``run_as_python`` of a 100,000-deep let chain (conversion and run; no recursion limit).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, __file__.rsplit("/benchmarks/", 1)[0])

import irlib  # noqa: E402
import interp  # noqa: E402
from irlib import transform  # noqa: E402

DEPTH = 100_000


def dce_on_inception():
    """A job: DeadCodeElimination of inception_v3's function (built once, outside)."""
    from zoo import inception_v3
    mod = irlib.IRModule.from_expr(inception_v3.get_net(1, 1000, (3, 299, 299), "float32"))
    return lambda: transform.DeadCodeElimination()(mod)


def deep_let_chain_to_python():
    """A job: ``run_as_python`` of ``let v0 = 0 + 1; ...; v99999`` (checks the value)."""
    variables = [irlib.var(f"v{i}") for i in range(DEPTH)]
    body = variables[-1]
    for index in range(DEPTH - 1, -1, -1):
        previous = variables[index - 1] if index else irlib.const(0)
        body = irlib.Let(variables[index], irlib.add(previous, irlib.const(1)), body)

    def job():
        assert interp.run_as_python(body).numpy().item() == DEPTH
    return job


JOBS = {
    "DeadCodeElimination, inception_v3": dce_on_inception,
    f"run_as_python, {DEPTH:,}-deep let chain": deep_let_chain_to_python,
}


def main(argv=None) -> int:
    """Time every job and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per job")
    args = parser.parse_args(argv)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| job | best s | median s | runs |\n|---|---:|---:|---:|")
    for name, make in JOBS.items():
        job = make()
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            job()
            times.append(time.perf_counter() - start)
        print(f"| {name} | {min(times):.3f} | {statistics.median(times):.3f} | {len(times)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
