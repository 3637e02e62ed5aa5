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

A helper can still hold the caller up: it claims a chunk and loses its core before it
finishes (other processes want the cores). Then the caller's wait for that chunk lasts a
scheduler time slice, not microseconds; :func:`share` counts such a wait (over
:data:`STALL_SECONDS`) as a stall and runs the next jobs of the next :data:`BACKOFF_SECONDS`
on the calling thread alone. On an idle machine no wait comes near the limit.

Worse, a helper needs the GIL to leave its queue and enter the kernel: one that takes the
GIL and then loses its core blocks the caller's return from its own kernel call. On a
machine whose cores other processes keep busy (load average ~7 on 2 cores) bert_int8 took
37 ms with a helper against 31 ms without. So helpers are only posted while the other
processes leave a core idle: :func:`others_busy` reads ``/proc/stat`` at most every
:data:`SAMPLE_SECONDS` and subtracts this process's own CPU time; when the rest of the
machine used more than ``cores - threads + 0.5`` cores over the last interval, jobs run on
the calling thread alone.
"""

from __future__ import annotations

import os
import queue
import threading
import time

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["atomic_add", "claim", "finish", "new_state", "share", "SPINS", "STALL_SECONDS",
           "BACKOFF_SECONDS", "HELPER_TIMEOUT", "SAMPLE_SECONDS", "stalls", "others_busy"]

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


STALL_SECONDS = 0.0005
"""A wait for helpers' claimed chunks longer than this is a stall (a chunk is ~5-40 us of
work on a core)."""

BACKOFF_SECONDS = 0.5
"""After a stall, jobs run on the calling thread alone for this long."""

HELPER_TIMEOUT = 30.0
"""Seconds the caller waits for a helper's claimed chunk before it raises RuntimeError
(a kernel that raised in a helper never finishes its chunk; nothing else takes this long)."""

_STALLS = {"count": 0, "until": 0.0}

SAMPLE_SECONDS = 0.25
"""How often :func:`others_busy` re-reads the machine's CPU counters."""

_SAMPLE = {"time": None, "busy": 0.0, "own": 0.0, "others": 0.0}


def _machine_busy_seconds():
    """CPU seconds every core of the machine spent busy since boot (``/proc/stat``), or
    None where that file is missing."""
    try:
        with open("/proc/stat", "rb") as handle:
            fields = handle.readline().split()[1:]
    except OSError:
        return None
    ticks = [int(x) for x in fields]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
    return (sum(ticks[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def others_busy() -> float:
    """Cores' worth of CPU the *other* processes used over the last sample interval
    (machine busy time minus this process's CPU time, per second); 0.0 where
    ``/proc/stat`` cannot be read. Re-sampled at most every :data:`SAMPLE_SECONDS`."""
    now = time.monotonic()
    last = _SAMPLE["time"]
    if last is not None and now - last < SAMPLE_SECONDS:
        return _SAMPLE["others"]
    busy, own = _machine_busy_seconds(), time.process_time()
    if busy is None:
        return 0.0
    if last is not None:
        _SAMPLE["others"] = max(0.0, (busy - _SAMPLE["busy"]) - (own - _SAMPLE["own"])) \
            / max(now - last, 1e-6)
    _SAMPLE.update(time=now, busy=busy, own=own)
    return _SAMPLE["others"]


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def stalls() -> int:
    """How many waits for a helper's chunk were stalls in this process (see
    :data:`STALL_SECONDS`)."""
    return _STALLS["count"]


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
        except Exception:  # noqa: BLE001 - a chunk it claimed stays unfinished: the caller
            pass           # gives up waiting after HELPER_TIMEOUT and raises


_HELPERS = _Helpers()


def share(kernel, args: tuple, state: np.ndarray, total: int, threads: int,
          team=None) -> None:
    """Run ``kernel(*args)`` on the calling thread and let up to ``threads - 1`` helper
    threads run it too; return once all ``total`` chunks of the job are finished.

    Args:
        kernel: a ``nogil`` numba function following the claim/finish protocol of the
            module docstring, ``state`` and ``total`` among ``args``.
        args: its arguments.
        state: the job's counters (:func:`new_state`; one per job, never reused).
        total: the job's chunk count.
        threads: threads wanted, the caller included (1: no helper).
        team: optional ``team(*args, n)``: a numba ``parallel`` function running ``kernel``
            in each of ``n`` ``prange`` iterations. Where helpers would be posted (the
            other processes leave the cores free, no back-off) it runs instead: numba's
            workers start in microseconds, a helper thread in tens (it must take the GIL
            and go through the dispatcher), which on a 0.1 ms kernel left the caller doing
            nearly all the work (GPT-2 step's attention: 0.16 ms against 0.09).
    """
    helpers = min(threads - 1, total - 1)
    if helpers > 0 and (time.monotonic() < _STALLS["until"] or
                        others_busy() > _cores() - (helpers + 1) + 0.5):
        helpers = 0                 # backing off after a stall, or the cores are taken
    if helpers > 0 and team is not None:
        team(*args, helpers + 1)
        return
    for jobs in _HELPERS.get(max(helpers, 0)):
        jobs.put((kernel, args))
    kernel(*args)
    if _finished(state, total, SPINS):
        return
    start = time.perf_counter()
    while not _finished(state, total, SPINS):
        os.sched_yield()
        if time.perf_counter() - start > HELPER_TIMEOUT:
            raise RuntimeError(f"work_sharing: a helper thread did not finish its chunk of "
                               f"{kernel} in {HELPER_TIMEOUT} s (it raised, or the process "
                               f"is starved)")
    now = time.perf_counter()
    if now - start > STALL_SECONDS:
        _STALLS["count"] += 1
        _STALLS["until"] = time.monotonic() + BACKOFF_SECONDS
