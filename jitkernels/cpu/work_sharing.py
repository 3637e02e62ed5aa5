"""Chunks of one numba kernel shared with helper threads that join when they get a core.

A kernel split with numba's ``prange`` ends at a barrier that waits for every worker of the
team. On a machine whose cores other processes keep busy, a worker that is not scheduled
holds the caller up for a scheduler time slice (milliseconds; see :mod:`jitkernels.threads`),
so a 0.1-0.4 ms product took longer on two threads than on one. Here the work is a set of
independent chunks claimed one at a time from a shared counter (an atomic add, a numba
intrinsic), and the caller claims chunks itself from the start:

* :func:`share` posts the job to the helper threads' queues and runs the kernel on the
  calling thread (the kernel must be ``nogil``, so a helper can enter it meanwhile); a
  helper that wakes in time takes chunks off the same counter;
* when no chunk is left the caller waits only for chunks a helper has *claimed* and not yet
  finished (at most one per helper); a helper that never woke, or woke after the last chunk
  was claimed, costs the caller nothing. A helper that wakes late finds the job's counter
  exhausted and goes back to its queue.

Each job has its own counter array (``state``: ``[next chunk, finished chunks]``), so a
stale helper can never claim chunks of a later job. The kernel's protocol (see
:func:`claim` and :func:`finish`)::

    @njit(nogil=True)
    def kernel(..., state, total):
        while True:
            chunk = claim(state, total)
            if chunk < 0:
                break
            ...                     # compute chunk
            finish(state)

Helpers are daemon threads made on first use (re-made after ``os.fork``), one fewer than
the threads asked for.
"""

from __future__ import annotations

import os
import queue
import threading

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["atomic_add", "claim", "finish", "new_state", "share", "SPINS"]

SPINS = 20000
"""Atomic reads the caller spins for before it yields its core between checks (a helper's
unfinished chunk takes microseconds unless the helper lost its core)."""


@intrinsic
def atomic_add(typingctx, array, index, value):
    """``array[index] += value`` as one sequentially consistent atomic operation on a 1-D
    int64 array; returns the old value (``value`` 0 reads atomically)."""
    if not (isinstance(array, types.Array) and array.dtype == types.int64 and
            array.ndim == 1):
        return None
    sig = types.int64(array, types.intp, types.int64)

    def codegen(context, builder, signature, args):
        data, position, amount = args
        array_type = signature.args[0]
        view = context.make_array(array_type)(context, builder, data)
        pointer = cgutils.get_item_pointer(context, builder, array_type, view, [position])
        return builder.atomic_rmw("add", pointer, amount, "seq_cst")

    return sig, codegen


@njit(cache=True, nogil=True)
def claim(state, total):
    """The next unclaimed chunk index of the job whose counters are ``state`` (``0 <=
    index < total``), or -1 when every chunk is claimed."""
    chunk = atomic_add(state, 0, 1)
    return chunk if chunk < total else -1


@njit(cache=True, nogil=True)
def finish(state):
    """Count one chunk of the job as finished."""
    atomic_add(state, 1, 1)


@njit(cache=True, nogil=True)
def _finished(state, total, spins):
    for _ in range(spins):
        if atomic_add(state, 1, 0) >= total:
            return True
    return False


def new_state() -> np.ndarray:
    """A fresh job's counters: ``[next chunk, finished chunks]`` (int64 zeros)."""
    return np.zeros(2, np.int64)


class _Helpers:
    """The helper threads of this process, each blocked on its own queue of jobs."""

    def __init__(self):
        self.pid = None
        self.queues = []
        self.lock = threading.Lock()

    def get(self, count: int) -> list:
        """Queues of ``count`` running helpers (started on first use)."""
        if self.pid != os.getpid():
            with self.lock:
                if self.pid != os.getpid():       # after a fork the threads are gone
                    self.queues, self.pid = [], os.getpid()
        if len(self.queues) < count:
            with self.lock:
                while len(self.queues) < count:
                    jobs = queue.SimpleQueue()
                    thread = threading.Thread(target=_serve, args=(jobs,), daemon=True,
                                              name=f"irlib-helper-{len(self.queues)}")
                    thread.start()
                    self.queues.append(jobs)
        return self.queues[:count]


def _serve(jobs) -> None:
    while True:
        kernel, args = jobs.get()
        try:
            kernel(*args)
        except Exception:  # noqa: BLE001 - the caller computes every chunk it finds left
            pass


_HELPERS = _Helpers()


def share(kernel, args: tuple, state: np.ndarray, total: int, threads: int) -> None:
    """Run ``kernel(*args)`` on the calling thread and let up to ``threads - 1`` helper
    threads run it too; return once all ``total`` chunks of the job are finished.

    Args:
        kernel: a ``nogil`` numba function following the claim/finish protocol of the
            module docstring, ``state`` and ``total`` among ``args``.
        args: its arguments.
        state: the job's counters (:func:`new_state`; one per job, never reused).
        total: the job's chunk count.
        threads: threads wanted, the caller included (1: no helper).
    """
    helpers = min(threads - 1, total - 1)
    for jobs in _HELPERS.get(max(helpers, 0)):
        jobs.put((kernel, args))
    kernel(*args)
    while not _finished(state, total, SPINS):
        os.sched_yield()
