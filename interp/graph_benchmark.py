"""Timing for ``GraphModule.benchmark``: TVM's time evaluator and ``BenchmarkResult``."""

from __future__ import annotations

import time

import numpy as np


class BenchmarkResult:
    """Runtimes of a function, in seconds.

    Attributes:
        results: one float per measurement (each the mean over ``number`` calls).
        mean, median, std, min, max: statistics of ``results`` (``std`` is the population
            standard deviation, ddof=0).
    """

    def __init__(self, results):
        self.results = [float(r) for r in results]
        values = np.asarray(self.results, dtype=np.float64)
        self.mean = float(values.mean())
        self.median = float(np.median(values))
        self.std = float(values.std())
        self.min = float(values.min())
        self.max = float(values.max())

    def __str__(self) -> str:
        ms = [self.mean * 1e3, self.median * 1e3, self.max * 1e3, self.min * 1e3,
              self.std * 1e3]
        return ("Execution time summary:\n"
                " mean (ms)   median (ms)    max (ms)     min (ms)     std (ms)  \n"
                + "  ".join(f"{v:10.4f}" for v in ms) + "\n")

    def __repr__(self) -> str:
        return (f"BenchmarkResult(min={self.min}, mean={self.mean}, median={self.median}, "
                f"max={self.max}, std={self.std}, results={self.results})")


def time_function(fn, args, repeat=5, number=5, min_repeat_ms=None,
                  limit_zero_time_iterations=100, cooldown_interval_ms=0,
                  repeats_to_cooldown=1) -> BenchmarkResult:
    """Time ``fn(*args)``: one warm-up call, then ``repeat`` measurements of ``number`` calls.

    Args:
        fn: the function.
        args: its arguments.
        repeat: number of measurements.
        number: calls per measurement (raised, doubling, until a measurement lasts
            ``min_repeat_ms`` when that is set).
        min_repeat_ms: minimum duration of one measurement in ms, or None.
        limit_zero_time_iterations: retries of a measurement that took no measurable time.
        cooldown_interval_ms: sleep after every ``repeats_to_cooldown`` measurements.
        repeats_to_cooldown: see ``cooldown_interval_ms``.

    Returns:
        A :class:`BenchmarkResult`.
    """
    fn(*args)
    number = max(int(number), 1)
    results = []
    for index in range(max(int(repeat), 1)):
        zero_retries = 0
        while True:
            start = time.perf_counter()
            for _ in range(number):
                fn(*args)
            elapsed = time.perf_counter() - start
            if elapsed == 0 and zero_retries < limit_zero_time_iterations:
                zero_retries += 1
                continue
            if min_repeat_ms and elapsed * 1e3 < min_repeat_ms and number < 1 << 30:
                number *= 2
                continue
            break
        results.append(elapsed / number)
        if cooldown_interval_ms and (index + 1) % max(int(repeats_to_cooldown), 1) == 0:
            time.sleep(cooldown_interval_ms / 1e3)
    return BenchmarkResult(results)
