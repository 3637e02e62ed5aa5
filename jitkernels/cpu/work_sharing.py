"""Chunks of one numba kernel shared by numba's OpenMP workers, claimed from a counter.

A kernel split with a plain ``prange`` gives each worker a fixed share; when the shares
cost unequal time (tasks of different sizes, a worker that started late) the others wait at
the loop's closing barrier. Here the work is a set of independent chunks claimed one at a
time from a shared counter (an atomic add, a numba intrinsic), so whichever thread is free
takes the next chunk: :func:`share` runs the kernel on ``threads`` of numba's workers at
once (the calling thread among them), each claiming chunks until none is left. A worker
that starts late finds fewer chunks, or none, and costs nothing.

Each job has its own counter array (``state``: ``[next chunk, finished chunks]``). The
kernel's protocol (see :func:`claim` and :func:`finish`)::

    @njit(nogil=True)
    def kernel(..., state, total):
        while True:
            chunk = claim(state, total)
            if chunk < 0:
                break
            ...                     # compute chunk
            finish(state)

The kernel runs on the calling thread alone when one thread is asked for, when the job has
one chunk, or while other processes keep the cores busy: a worker that lost its core holds
the loop's barrier for a scheduler time slice (milliseconds), and at load average ~7 on 2
cores bert_int8 took 37 ms shared against 31 alone. :func:`others_busy` reads
``/proc/stat`` at most every :data:`SAMPLE_SECONDS` and subtracts this process's own CPU
time; when the rest of the machine used more than ``cores - threads + 0.5`` cores over the
last interval, jobs run on the calling thread. (The graph executor also drops numba's
thread count to 1 for a whole run then: :func:`jitkernels.threads.run_threads`.)

Workers started earlier run these jobs in microseconds because they spin between parallel
regions (:mod:`jitkernels.threads`); an earlier design posted jobs to Python helper threads,
which took tens of microseconds to wake and take the GIL, a large share of a 0.1 ms kernel.
"""

from __future__ import annotations

import os
import time

import numpy as np
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["atomic_add", "claim", "cores_taken", "finish", "machine_cores", "new_state",
           "share", "SAMPLE_SECONDS", "others_busy"]


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


def cores_taken(threads: int, cores: int = 0) -> bool:
    """Whether the other processes leave too little of the machine for ``threads`` threads
    of this one: they used more than ``cores - threads + 0.5`` cores over the last sample
    (:func:`others_busy`). Every shared-work decision of irlib uses this one rule.

    Args:
        threads: the threads this process would run on.
        cores: the cores to count with (default :func:`machine_cores`; a caller that keeps
            the count passes it).
    """
    return others_busy() > (cores or machine_cores()) - threads + 0.5


def machine_cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def new_state() -> np.ndarray:
    """A fresh job's counters: ``[next chunk, finished chunks]`` (int64 zeros)."""
    return np.zeros(2, np.int64)


@njit(parallel=True, nogil=True)
def _team(kernel, args, threads):
    """``kernel(*args)`` on ``threads`` of numba's workers at once: the driver of a kernel
    that brings no ``team`` of its own. Not cached (numba cannot cache a function taking a
    dispatcher), and compiling a ``prange`` loop around a large kernel takes seconds, so
    each process pays that once per kernel and signature: a kernel used in models brings a
    cached team instead."""
    for _ in prange(threads):
        kernel(*args)


def _team_arguments(args: tuple) -> tuple:
    """``args`` with each tuple of integers as an int64 array: numba's parallel driver takes
    arrays and scalars only (a kernel indexes either the same way)."""
    return tuple(np.asarray(value, np.int64) if isinstance(value, tuple) else value
                 for value in args)


def share(kernel, args: tuple, state: np.ndarray, total: int, threads: int,
          team=None) -> None:
    """Run ``kernel(*args)`` on up to ``threads`` of numba's threads at once (the caller
    included); return once all ``total`` chunks of the job are finished.

    Args:
        kernel: a ``nogil`` numba function following the claim/finish protocol of the
            module docstring, ``state`` and ``total`` among ``args``; it must not raise
            (numba's parallel driver does not carry a worker's exception to the caller).
        args: its arguments (arrays, scalars, tuples of integers: passed to the kernel
            as int64 arrays, see :func:`_team_arguments`).
        state: the job's counters (:func:`new_state`; one per job, never reused).
        total: the job's chunk count.
        threads: threads wanted, the caller included (1: the calling thread alone).
        team: ``team(*args, n)``: a numba ``parallel`` function (``cache=True``) running
            ``kernel`` in each of ``n`` ``prange`` iterations; default: :func:`_team`,
            compiled in each process (seconds for a large kernel).
    """
    workers = min(threads, total)
    if workers > 1 and cores_taken(workers):
        workers = 1                 # the cores are taken: no barrier to wait at
    if team is not None:
        if workers > 1:
            team(*args, workers)
        else:
            kernel(*args)
        return
    args = _team_arguments(args)    # one compiled signature whichever path runs
    if workers > 1:
        _team(kernel, args, workers)
    else:
        kernel(*args)
