"""How many threads irlib's OpenBLAS copy runs a product on: all of them, until they stall.

On an idle machine OpenBLAS's own threads are the fastest way to run one product on several
cores: measured on the 2-core dev machine (AMD EPYC, quiet), two OpenBLAS threads ran the
conv nets' GEMM shapes at 125-200 GFLOP/s against 75-107 on one thread, and against
100-150 for the same kernels split into panels by Python threads (the split it replaced:
waking a Python helper and joining it costs tens of microseconds, a large share of a
0.2 ms product).

Their weakness is a busy machine: OpenBLAS splits a product into one fixed share per thread
and its threads wait for each other by spinning, so when another process holds one of the
cores, every block of every product waits until the descheduled thread runs again (at load
average ~9, a ``(64, 576) @ (576, 3136)`` product took 95-190 ms on two threads and 17 ms on
one). :class:`AdaptiveThreads` therefore times every product of at least
:data:`JUDGED_MIN_WORK` multiply-adds run on several threads and calls it *stalled* when it
took longer than what one thread needs for that work (one thread's rate is measured:
:meth:`AdaptiveThreads.calibrate`, then kept up to date by the products that run on one
thread) *and* longer than :data:`SPIKE_FACTOR` times the fastest run of the same product
shape on several threads (a product seen for the first time: :data:`FIRST_FACTOR` times one
thread's time). Comparing a shape with itself matters: skinny products (8-16 columns, a
depth of 16) run well below the calibrated rate on any thread count, and a rule against the
rate alone called them stalls on an idle machine, 2-4 per inference. After a stall the next
products run on one thread (1, 2, 4, ... up to :data:`MAX_SERIAL_CALLS` of them, doubling
while the stalls go on); then several threads are tried again, and each product on several
threads that does not stall halves the back-off. On an idle machine nothing stalls and
every product gets every thread.
"""

from __future__ import annotations

import time

import numpy as np

__all__ = ["AdaptiveThreads", "FIRST_FACTOR", "JUDGED_MIN_WORK", "MAX_SERIAL_CALLS",
           "SPIKE_FACTOR"]

MAX_SERIAL_CALLS = 64
"""Longest run of one-thread products after stalls before several threads are tried again."""

SPIKE_FACTOR = 3.0
"""A product on several threads stalled when it took this many times the fastest run of its
shape on several threads (and longer than one thread would): a spin-wait stall costs 5-10x,
an idle machine's spread is well under 2x."""

FIRST_FACTOR = 4.0
"""The same test for a shape not seen yet, against one thread's time at the calibrated rate
(generous: that rate is a square product's, the fastest kind)."""

MAX_SHAPES = 4096
"""Product shapes whose fastest time is remembered (the table is cleared when full)."""

JUDGED_MIN_WORK = 1 << 20
"""Smallest product (multiply-adds) whose time decides stalls: shorter ones are too noisy."""

CALIBRATION_SIZE = 192
"""Side of the square float32 product whose one-thread rate seeds the stall test."""


class AdaptiveThreads:
    """The thread count of an OpenBLAS library, chosen per product from how the last ones ran.

    Args:
        threads: the most threads a product may use (1: always one).
        set_threads: sets the library's thread count (OpenBLAS's ``set_num_threads``).
        gemm: the library's float32 ``cblas_sgemm`` (row-major signature), used once by
            :meth:`calibrate`; None leaves calibration to the first one-thread products.
    """

    def __init__(self, threads: int, set_threads, gemm=None):
        self.threads = max(1, int(threads))
        self._set_threads = set_threads
        self._gemm = gemm
        self._current = None        # the library's thread count as last set here
        self.serial_left = 0        # products still to run on one thread after a stall
        self.backoff = 1            # one-thread products after the next stall
        self.stalls = 0             # stalls seen (for tests and reports)
        self.serial_rate = 0.0      # best recent multiply-adds per second on one thread
        self.fastest: dict = {}     # shape key -> fastest seconds on several threads

    def _use(self, count: int) -> None:
        if count != self._current:
            self._set_threads(count)
            self._current = count

    def calibrate(self) -> float:
        """Measure one thread's rate on a :data:`CALIBRATION_SIZE` cube product (best of 3);
        returns it (multiply-adds per second). Runs once, on the first judged product."""
        if self._gemm is None:
            return self.serial_rate
        size = CALIBRATION_SIZE
        a = np.ones((size, size), np.float32)
        out = np.empty((size, size), np.float32)
        address = a.__array_interface__["data"][0]
        target = out.__array_interface__["data"][0]
        self._use(1)
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            self._gemm(101, 111, 111, size, size, size, 1.0, address, size, address, size,
                       0.0, target, size)
            best = min(best, time.perf_counter() - start)
        self.serial_rate = max(self.serial_rate, size ** 3 / max(best, 1e-9))
        self._gemm = None
        return self.serial_rate

    def run(self, tasks, work: float, key=None) -> None:
        """Run ``function(*args)`` for each ``(function, args)`` of ``tasks``, in order, on
        the chosen thread count.

        Args:
            tasks: BLAS calls of the library whose threads this object sets.
            work: their multiply-adds, all together.
            key: what identifies the product's shape (hashable; default ``work``): its
                runs on several threads are compared with the fastest one of that key.
        """
        if self.threads == 1 or work < JUDGED_MIN_WORK:
            # Too short to judge: run on the current mode's count (OpenBLAS itself keeps
            # products of up to 2**18 multiply-adds on one thread).
            self._use(1 if self.threads == 1 or self.serial_left else self.threads)
            for function, args in tasks:
                function(*args)
            return
        if self._gemm is not None:
            self.calibrate()
        serial = self.serial_left > 0 or self.serial_rate == 0.0
        self._use(1 if serial else self.threads)
        start = time.perf_counter()
        for function, args in tasks:
            function(*args)
        elapsed = max(time.perf_counter() - start, 1e-9)
        if serial:
            if self.serial_left:
                self.serial_left -= 1
            self.serial_rate = max(self.serial_rate * 0.98, work / elapsed)
            return
        key = work if key is None else key
        fastest = self.fastest.get(key)
        one_thread = work / self.serial_rate
        if fastest is None:
            stalled = elapsed > FIRST_FACTOR * one_thread
        else:
            stalled = elapsed > SPIKE_FACTOR * fastest and elapsed > one_thread
        if not stalled and (fastest is None or elapsed < fastest):
            if len(self.fastest) >= MAX_SHAPES:
                self.fastest.clear()
            self.fastest[key] = elapsed
        if stalled:
            self.stalls += 1
            self.serial_left = self.backoff
            self.backoff = min(2 * self.backoff, MAX_SERIAL_CALLS)
        elif self.backoff > 1:
            self.backoff //= 2
