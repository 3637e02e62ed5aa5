"""One owner for the CPU threads: numpy's BLAS for GEMMs, numba ``prange`` for the rest.

Three thread pools can live in one process here: numpy's OpenBLAS, the *second* OpenBLAS
that scipy bundles (numba's ``np.dot`` calls BLAS through ``scipy.linalg.cython_blas``), and
numba's OpenMP pool. Each pool's idle workers spin for a while before they sleep, so when
two pools take turns, every call waits for the other pool's spinning workers to be
descheduled: measured here (2 cores), an ``(64, 64) @ (64, 3136)`` product costs 0.13 ms
with numpy alone and 16 ms when it alternates with scipy's BLAS; a ``prange`` loop next to
a numpy GEMM turned a 1.1 ms product into 8 ms under libgomp's default spin count.

:func:`configure` (run when the CPU kernels or the code generator first load) therefore

* runs every large GEMM on numpy's BLAS (the kernels call ``np.matmul(..., out=...)``, or
  the cblas entry point of numpy's own OpenBLAS through ctypes, from Python: see
  :mod:`jitkernels.cpu.blas`);
* limits scipy's BLAS to one thread, so the small products numba code still computes with
  ``np.dot`` never wake a second pool;
* sets ``GOMP_SPINCOUNT`` (unless the user set it) so numba's OpenMP workers go to sleep
  soon after a parallel loop instead of spinning through the next BLAS call.
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
