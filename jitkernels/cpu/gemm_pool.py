"""irlib's GEMM threads: one-thread BLAS calls on panels, claimed dynamically by a few threads.

Why not OpenBLAS's own threads: OpenBLAS splits a product into one fixed share per thread,
and its threads wait for each other's packed panels by spinning. When another process holds
one of the cores, the thread on the other core spins until the descheduled one runs again,
every block of every GEMM: measured on the 2-core dev machine at load average ~8, a
``(64, 576) @ (576, 3136)`` product took 95 ms on two OpenBLAS threads, 17 ms on one and
16 ms split this way. Here a large product is cut into more panels than threads (disjoint
column or row blocks of the output); the calling thread and ``threads - 1`` helper threads
take panels from a shared counter until none is left, each panel one single-threaded cblas
call (ctypes releases the GIL for it). A helper that is descheduled costs at most the panel
it holds; one that wakes after the work is gone does nothing, and the caller never waits
for it.
"""

from __future__ import annotations

import itertools
import queue
import threading

__all__ = ["GemmPool"]


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

    def run(self, tasks) -> None:
        """Run every ``function(*args)`` of ``tasks`` (a list) and return when all are done.

        Tasks must be independent (disjoint outputs). The first exception a task raised is
        raised again here after the others finished.
        """
        if not tasks:
            return
        if self.threads == 1 or len(tasks) == 1:
            for function, args in tasks:
                function(*args)
            return
        if len(self._queues) < self.threads - 1:
            self._start()
        job = _Job(tasks)
        for inbox in self._queues[:len(tasks) - 1]:
            inbox.put(job)
        job.work()
        job.done.wait()
        if job.error is not None:
            raise job.error

    def close(self) -> None:
        """Stop the helper threads (a later :meth:`run` starts new ones)."""
        with self._start_lock:
            for inbox in self._queues:
                inbox.put(None)
            self._queues = []
