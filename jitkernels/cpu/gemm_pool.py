"""irlib's GEMM threads: one-thread BLAS calls on panels, claimed dynamically by a few threads.

Why not OpenBLAS's own threads: OpenBLAS splits a product into one fixed share per thread,
and its threads wait for each other's packed panels by spinning. When another process holds
one of the cores, the thread on the other core spins until the descheduled one runs again,
every block of every GEMM: measured on the 2-core dev machine at load average ~8, a
``(64, 576) @ (576, 3136)`` product took 95 ms on two OpenBLAS threads, 17 ms on one and
16 ms split this way. Here a large product is cut into more panels than threads (disjoint
column or row blocks of the output); the calling thread and ``threads - 1`` helper threads
take panels from a shared counter until none is left, each panel one single-threaded cblas
call (ctypes releases the GIL for it). A helper that wakes after the work is gone does
nothing, and the caller never waits for it.

A helper the OS deschedules in the middle of a panel still makes the caller wait for that
panel until it runs again, and on a machine whose other processes take the cores (or
whose scheduler gives this process a fixed share, as cgroups do), a second thread only
adds that risk: at load average ~13-16 on 2 cores, products of 3 ms on one thread took
20-40 ms (median) as 2-thread splits. So the pool backs off to the calling thread alone
when splitting does not pay. A split call *stalls* when the caller waited for helpers longer
than half the time it worked itself, or when the call ran slower than the best rate (work
per second) seen on one thread lately; then the next calls run serially on the caller
(1, 2, 4, ... up to :data:`MAX_SERIAL_CALLS` calls, doubling while the stalls go on),
after which it tries the helpers again; each split call that did not stall halves the
back-off. On an idle machine splits run faster than one thread and never back off.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time

__all__ = ["GemmPool", "MAX_SERIAL_CALLS"]

MAX_SERIAL_CALLS = 64
"""Longest run of serial calls after stalls before the helpers are tried again."""


class _Job:
    """One batch of calls: ``(function, args)`` tasks, a claim counter and a done event."""

    __slots__ = ("tasks", "claims", "left", "lock", "done", "error")

    def __init__(self, tasks):
        self.tasks = tasks
        self.claims = itertools.count()       # next() is atomic under the GIL
        self.left = len(tasks)
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.error = None

    def work(self) -> None:
        """Run tasks until none is left to claim."""
        tasks = self.tasks
        count = len(tasks)
        while True:
            index = next(self.claims)
            if index >= count:
                return
            function, args = tasks[index]
            try:
                function(*args)
            except BaseException as error:     # reported to the caller by run()
                self.error = error
            with self.lock:
                self.left -= 1
                if self.left == 0:
                    self.done.set()


class GemmPool:
    """A calling thread plus ``threads - 1`` daemon helpers that run lists of BLAS calls.

    Args:
        threads: how many threads work on one :meth:`run` (the caller included); 1 runs
            every task in the caller.
    """

    def __init__(self, threads: int):
        self.threads = max(1, int(threads))
        self._queues = []
        self._start_lock = threading.Lock()
        self.serial_left = 0        # calls still to run serially after a stall
        self.backoff = 1            # serial calls after the next stall
        self.stalls = 0             # stalls seen (for tests and reports)
        self.serial_rate = 0.0      # best recent work per second on the caller alone

    def _start(self) -> None:
        with self._start_lock:
            while len(self._queues) < self.threads - 1:
                inbox = queue.SimpleQueue()
                worker = threading.Thread(target=self._serve, args=(inbox,), daemon=True,
                                          name=f"irlib-gemm-{len(self._queues) + 1}")
                worker.start()
                self._queues.append(inbox)

    @staticmethod
    def _serve(inbox) -> None:
        while True:
            job = inbox.get()
            if job is None:
                return
            job.work()

    def run(self, tasks, work: float = 0.0) -> None:
        """Run every ``function(*args)`` of ``tasks`` (a list) and return when all are done.

        Tasks must be independent (disjoint outputs). The first exception a task raised is
        raised again here after the others finished.

        Args:
            tasks: ``(function, args)`` pairs.
            work: the tasks' total work in any unit (irlib passes multiply-adds), for the
                back-off's serial-rate comparison; 0 leaves the rate out.
        """
        if not tasks:
            return
        if self.threads == 1 or len(tasks) == 1 or self.serial_left > 0:
            if self.serial_left > 0:
                self.serial_left -= 1
            start = time.perf_counter()
            for function, args in tasks:
                function(*args)
            if work:
                rate = work / max(time.perf_counter() - start, 1e-9)
                self.serial_rate = max(self.serial_rate * 0.98, rate)
            return
        if len(self._queues) < self.threads - 1:
            self._start()
        job = _Job(tasks)
        start = time.perf_counter()
        for inbox in self._queues[:len(tasks) - 1]:
            inbox.put(job)
        job.work()
        worked = time.perf_counter()
        job.done.wait()
        end = time.perf_counter()
        waited = end - worked
        if waited > 0.5 * (worked - start) or (      # a helper was descheduled mid-panel
                work and self.serial_rate and work / self.serial_rate < end - start):
            self.stalls += 1
            self.serial_left = self.backoff
            self.backoff = min(2 * self.backoff, MAX_SERIAL_CALLS)
        elif self.backoff > 1:
            self.backoff //= 2
        if job.error is not None:
            raise job.error

    def close(self) -> None:
        """Stop the helper threads (a later :meth:`run` starts new ones)."""
        with self._start_lock:
            for inbox in self._queues:
                inbox.put(None)
            self._queues = []
