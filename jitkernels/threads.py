"""One thread pool for all of irlib's CPU work: numba's OpenMP workers, spinning between jobs.

Thread pools that can live in one irlib process: numpy's OpenBLAS (the user's; irlib leaves
it alone), the OpenBLAS that scipy bundles (numba's ``np.dot`` calls it through
``scipy.linalg.cython_blas``), irlib's own OpenBLAS copy (:mod:`jitkernels.cpu.openblas`),
and numba's OpenMP pool. The rules, and the measurements behind them (2-core AMD EPYC dev
machine):

* **numba's OpenMP workers run everything parallel**: ``prange`` loops (pools, depthwise,
  norms, epilogues, irlib's own micro-kernel products), the chunked kernels of
  :mod:`jitkernels.cpu.work_sharing`, and irlib's OpenBLAS products, which
  :mod:`jitkernels.cpu.blas_team` cuts into single-threaded cblas calls, one part per
  worker. OpenBLAS itself stays on one thread, and so does scipy's BLAS.
* **The workers spin between jobs** (``GOMP_SPINCOUNT`` = :data:`GOMP_SPINCOUNT`, about 3 ms,
  unless the user set it). A worker that went to sleep takes tens of microseconds to wake:
  a 2-thread ``prange`` region after a 20-100 us gap took 45-63 us at 1000 spins against 18
  spinning, and an inference runs 40-200 such regions with gaps of Python dispatch between
  them. With a second pool in the process (OpenBLAS's own threads, the earlier design)
  spinning workers held the core that pool's thread needed (a GPT-2 step gained 2.5 ms from
  spinning, BERT and ResNet-50 lost 20-30%); with one pool nothing else waits for it. Where
  irlib's OpenBLAS is not in use (no AVX-512, the package missing, ``IRLIB_BLAS_TEAM=0``),
  products run on OpenBLAS's own threads and the workers sleep after 1000 spins
  (:data:`GOMP_SPINCOUNT_WITH_BLAS_THREADS`).
* **A busy machine gets one thread.** A parallel loop ends at a barrier that waits for every
  worker; when other processes keep the cores busy, a worker that lost its core holds the
  caller up for a scheduler time slice (milliseconds: a SqueezeNet inference took 35-110 ms
  instead of 7 while two other processes ran benchmarks). :func:`run_threads` (entered by
  the graph executor around each run) therefore sets numba's thread count to 1 while the
  other processes used more than the spare cores (``/proc/stat``, sampled every 0.25 s:
  :func:`jitkernels.cpu.work_sharing.others_busy`), or for a second after a run on several
  threads took over 3x the fastest run of the same model (load that started between two
  samples; the back-off doubles while the stalls go on), and restores it after.

Thread counts: numba's from ``NUMBA_NUM_THREADS``; the most threads one product of irlib's
BLAS is cut for from :func:`gemm_threads` (``IRLIB_NUM_THREADS``, else
``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS``, else the usable cores;
``blas.set_num_threads`` at run time).

:func:`configure` (run when the code generator first loads) limits scipy's BLAS to one thread
and sets ``GOMP_SPINCOUNT``; irlib's OpenBLAS copy and its product policy are set up by
:mod:`jitkernels.cpu.blas` when it loads.
"""

from __future__ import annotations

import os
import time

__all__ = ["configure", "gemm_threads", "run_threads", "BACKOFF_SECONDS", "GOMP_SPINCOUNT",
           "GOMP_SPINCOUNT_WITH_BLAS_THREADS", "JUDGED_MIN_SECONDS", "MAX_BACKOFF_SECONDS",
           "STALL_FACTOR", "STALL_MIN_SECONDS", "THREAD_VARIABLES"]

GOMP_SPINCOUNT = "300000"
"""Spins an idle OpenMP worker makes before sleeping when it is the only pool (about 3 ms on
the dev machine: a 2-thread region after a 1 ms gap took 20 us, after 3 ms 25 us; at 30,000
spins 50 and 85 us)."""

GOMP_SPINCOUNT_WITH_BLAS_THREADS = "1000"
"""The same where products run on OpenBLAS's own threads: its threads need the cores the
workers would spin on."""

THREAD_VARIABLES = ("IRLIB_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
"""Environment variables that set irlib's GEMM threads, the first one set (to a positive
integer) wins."""

_DONE = False


def gemm_threads(environ=None) -> int:
    """How many threads work on one large GEMM of irlib's BLAS (the caller included).

    The first of :data:`THREAD_VARIABLES` set to a positive integer, else the cores this
    process may run on (``os.sched_getaffinity``, else ``os.cpu_count()``).

    Args:
        environ: the environment to read (default ``os.environ``).
    """
    environ = os.environ if environ is None else environ
    for name in THREAD_VARIABLES:
        value = environ.get(name, "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def configure() -> None:
    """Apply the threading policy above, once per process (later calls do nothing).

    The environment variable only takes effect if numba's OpenMP pool has not started yet;
    the BLAS limit needs ``threadpoolctl`` and is skipped quietly without it.
    """
    global _DONE
    if _DONE:
        return
    _DONE = True
    from .cpu import blas
    os.environ.setdefault("GOMP_SPINCOUNT", GOMP_SPINCOUNT if blas.team_enabled()
                          else GOMP_SPINCOUNT_WITH_BLAS_THREADS)
    try:
        import numpy.linalg  # noqa: F401  (load numpy's BLAS first, to tell the two apart)
        import scipy.linalg.cython_blas  # noqa: F401
        import threadpoolctl
    except ImportError:
        return
    for library in threadpoolctl.ThreadpoolController().lib_controllers:
        if library.internal_api in ("openblas", "mkl", "blis") and \
                "scipy" in os.path.basename(os.path.dirname(library.filepath)):
            library.set_num_threads(1)


STALL_FACTOR = 3.0
"""A run on several threads that took this many times the fastest one of the same model
(and at least :data:`STALL_MIN_SECONDS` more) stalled: another process took a core."""

STALL_MIN_SECONDS = 0.002
"""Smallest excess over the fastest run that counts as a stall (a time slice is ~3 ms)."""

JUDGED_MIN_SECONDS = 0.0005
"""Models whose fastest run is shorter than this are not judged: a 2 ms hiccup of the
machine (a page fault, an interrupt) is no stall of their few parallel loops, and a
back-off costs a 12 us multilayer perceptron 7 us a run (setting numba's thread count
and back)."""

BACKOFF_SECONDS = 1.0
"""After a stalled run, runs use one thread for this long; doubled for each further stall
(up to :data:`MAX_BACKOFF_SECONDS`) and halved back by each run that does not stall."""

MAX_BACKOFF_SECONDS = 64.0
"""Longest back-off (a machine that stays busy pays one stalled run per this long)."""

_RUNS = {"until": 0.0, "backoff": BACKOFF_SECONDS, "fastest": {}}


class run_threads:
    """Numba's thread count for one run of a model: as configured on an idle machine, 1
    while other processes keep the cores busy (see the module docstring); the caller's count
    is restored on exit. A context manager: ``with run_threads(key): ...``.

    The busy test samples ``/proc/stat`` every 0.25 s, so load that starts between samples
    is caught by timing instead: a run on several threads that took :data:`STALL_FACTOR`
    times the fastest one of the same ``key`` stalled, and the runs of the next
    :data:`BACKOFF_SECONDS` (doubling while the stalls go on) use one thread.

    On an idle machine it costs ~1.5 us a run: numba's thread count is only read when it
    is to be lowered (a multilayer perceptron's whole run is ~12 us).

    Args:
        key: what identifies the model being run (hashable, e.g. ``id`` of its runtime);
            None skips the stall test.
    """

    __slots__ = ("key", "saved", "start")

    def __init__(self, key=None):
        self.key = key

    def __enter__(self) -> "run_threads":
        """Lower numba's thread count to 1 where the machine is busy; return self."""
        self.saved = 0                  # 0: the count was left as it was
        most = _configured_threads()
        if most > 1 and (time.monotonic() < _RUNS["until"] or
                         _sharing().cores_taken(most, _cores())):
            numba = _numba()
            saved = numba.get_num_threads()
            if saved > 1:
                numba.set_num_threads(1)
                self.saved = saved
        self.start = time.perf_counter()
        return self

    @property
    def threads(self) -> int:
        """The thread count in effect inside the block."""
        return 1 if self.saved else _numba().get_num_threads()

    def __exit__(self, *exc) -> None:
        if self.saved:
            _numba().set_num_threads(self.saved)
        elif self.key is not None:
            _judge(self.key, time.perf_counter() - self.start)


def _configured_threads() -> int:
    most = _MODULES.get("threads")
    if most is None:
        most = _MODULES["threads"] = int(_numba().config.NUMBA_NUM_THREADS)
    return most


_MODULES: dict = {}


def _numba():
    numba = _MODULES.get("numba")
    if numba is None:
        import numba
        _MODULES["numba"] = numba
    return numba


def _sharing():
    sharing = _MODULES.get("work_sharing")
    if sharing is None:
        from .cpu import work_sharing as sharing
        _MODULES["work_sharing"] = sharing
    return sharing


def _cores() -> int:
    cores = _MODULES.get("cores")
    if cores is None:
        cores = _MODULES["cores"] = _sharing().machine_cores()
    return cores


def _judge(key, elapsed: float) -> None:
    """Record a multi-threaded run of ``key``; start a back-off if it stalled."""
    fastest = _RUNS["fastest"]
    best = fastest.get(key)
    if best is not None and best >= JUDGED_MIN_SECONDS and elapsed > STALL_FACTOR * best \
            and elapsed - best > STALL_MIN_SECONDS:
        _RUNS["until"] = time.monotonic() + _RUNS["backoff"]
        _RUNS["backoff"] = min(2.0 * _RUNS["backoff"], MAX_BACKOFF_SECONDS)
        return
    _RUNS["backoff"] = max(0.5 * _RUNS["backoff"], BACKOFF_SECONDS)
    if best is None or elapsed < best:
        if len(fastest) > 1024:
            fastest.clear()
        fastest[key] = elapsed
