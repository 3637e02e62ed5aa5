"""One owner per kind of CPU work: OpenBLAS threads for products, numba ``prange`` for the rest.

Thread pools that can live in one irlib process: numpy's OpenBLAS (the user's; irlib leaves
it alone), the OpenBLAS that scipy bundles (numba's ``np.dot`` calls it through
``scipy.linalg.cython_blas``), irlib's own OpenBLAS copy (:mod:`jitkernels.cpu.openblas`),
and numba's OpenMP pool. The rules,
and the measurements behind them (2-core AMD EPYC dev machine):

* **OpenBLAS's own threads share a product only while they do not stall.** They split it
  into fixed shares and wait for each other's packed panels by spinning; when another
  process holds one core, the thread on the other core spins until the descheduled one
  runs again, block after block (at load average ~9 a ``(64, 576) @ (576, 3136)`` product
  took 95-190 ms on numpy's two OpenBLAS threads and 3.5 ms on one). On an idle machine
  they are the fastest split (1.6-1.9x one thread on the conv nets' shapes). irlib's copy
  therefore times its products and falls back to one thread for a while after one stalls
  (:mod:`jitkernels.cpu.blas_threads`); numpy's BLAS has no such guard, so irlib does not
  use it when its own copy loads. scipy's BLAS is limited to one thread here.
* **Small products stay on the calling thread**: ``np.matmul`` up to ``blas.SMALL_MAX_FLOPS``
  (numpy's BLAS runs those on one thread), numba's ``np.dot`` on the one-thread scipy BLAS
  for a dense of up to 2**20 multiply-adds (:mod:`jitkernels.cpu.gemm`) or inside generated
  code; OpenBLAS itself keeps products of up to 2**18 multiply-adds on one thread.
* **numba ``prange`` owns the non-GEMM loops** (pools, depthwise, norms, large epilogues),
  and never runs around a BLAS call inside one numba function. ``GOMP_SPINCOUNT`` is set
  (unless the user set it) so OpenMP workers sleep soon after a parallel loop instead of
  spinning through the next product (a ``prange`` loop next to a threaded GEMM turned a
  1.1 ms product into 8 ms under libgomp's default). A parallel loop still ends at a
  barrier that waits for every worker: under load, one that follows a stretch of
  single-threaded work waits for its sleeping worker to be scheduled again (a 0.6 ms max
  pool took 3-25 ms right after 3 ms of single-threaded work at load average ~10).

Thread counts: irlib's product threads from :func:`gemm_threads` (``IRLIB_NUM_THREADS``, else
``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS``, else the usable cores; ``blas.set_num_threads``
at run time); numba's from ``NUMBA_NUM_THREADS``. On a machine shared with other heavy work,
``NUMBA_NUM_THREADS=1`` (or all of them at 1) trades the idle-machine speed-up of the
``prange`` loops for latency that does not depend on the other processes.

:func:`configure` (run when the CPU kernels or the code generator first load) limits scipy's
BLAS to one thread and sets ``GOMP_SPINCOUNT``; irlib's OpenBLAS copy and its thread policy are
set up by :mod:`jitkernels.cpu.blas` when it loads.
"""

from __future__ import annotations

import os

__all__ = ["configure", "gemm_threads", "GOMP_SPINCOUNT", "THREAD_VARIABLES"]

GOMP_SPINCOUNT = "1000"
"""Spins an idle OpenMP worker makes before sleeping (libgomp's default is 300,000)."""

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
    os.environ.setdefault("GOMP_SPINCOUNT", GOMP_SPINCOUNT)
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
