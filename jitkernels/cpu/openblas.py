"""irlib's own OpenBLAS: a second copy of the library, loaded with the core type the CPU has.

Why a copy of its own: the GEMM kernels must run on the CPU's widest vector unit (AVX-512
where present) and on irlib's threading policy (:mod:`jitkernels.threads`: this copy always
runs one thread per call, irlib splits large products itself), without changing the numpy
BLAS the user's own code runs on. OpenBLAS picks its kernels once, when it loads, from the
``OPENBLAS_CORETYPE`` environment variable or its own CPU detection (which has picked the
AVX2 "Haswell" kernels on AVX-512 AMD EPYCs). So this module loads the library of the PyPI
package ``scipy-openblas32`` (symbols prefixed ``scipy_``, 32-bit integers) by path with
``ctypes.CDLL``, with ``OPENBLAS_CORETYPE`` (and ``OPENBLAS_NUM_THREADS=1``) set in the
environment only for that load and restored right after; numpy's BLAS, loaded before,
keeps its kernels and threads. The package is not imported: its ``__init__`` loads the
library itself, globally and without a core type.

The core type comes from the CPU flags (:func:`cpu_features`, :func:`choose_coretype`):
AVX-512 F/BW/VL/DQ -> ``SkylakeX`` (``Haswell`` on AMD Zen 4, whose AVX-512 is no faster:
:func:`cpu_identity`). Without AVX-512 irlib keeps numpy's BLAS (nothing to
gain). The environment variable ``IRLIB_BLAS_CORETYPE`` overrides the choice: ``numpy``
keeps numpy's BLAS, ``auto`` (or unset) chooses as above, any other value is an OpenBLAS
core type name (``SkylakeX``, ``Haswell``, ``Zen``, ...) to load irlib's copy with.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import warnings

__all__ = ["ENV_CORETYPE", "OwnBlas", "cpu_features", "cpu_identity", "choose_coretype",
           "requested_coretype", "library_path", "load"]

ENV_CORETYPE = "IRLIB_BLAS_CORETYPE"
"""Environment variable overriding the core type (``numpy``, ``auto`` or a core type)."""

PACKAGE = "scipy_openblas32"
"""The import name of the PyPI package (``scipy-openblas32``) whose library is loaded."""

AVX512 = frozenset({"avx512f", "avx512bw", "avx512vl", "avx512dq"})
"""The AVX-512 subsets OpenBLAS's SkylakeX kernels need."""


def cpu_features() -> frozenset:
    """The host CPU's feature flags, lower case (``avx2``, ``avx512f``, ...).

    Read from ``/proc/cpuinfo`` (Linux); elsewhere from llvmlite's host feature list (the
    ``+name`` entries, the spelling LLVM uses: ``avx512f`` etc.); empty if neither works.
    """
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    try:
        from llvmlite import binding
        return frozenset(name for name, on in binding.get_host_cpu_features().items() if on)
    except (ImportError, RuntimeError, AttributeError):
        return frozenset()


def cpu_identity() -> tuple:
    """``(vendor, family)`` of the host CPU from ``/proc/cpuinfo`` (``("AuthenticAMD", 25)``);
    ``("", 0)`` where that cannot be read."""
    vendor, family = "", 0
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "vendor_id" and not vendor:
                    vendor = value.strip()
                elif key == "cpu family" and not family:
                    family = int(value.strip()) if value.strip().isdigit() else 0
                if vendor and family:
                    break
    except OSError:
        pass
    return vendor, family


ZEN4_FAMILY = 0x19
"""AMD's CPU family of Zen 3 and Zen 4; only Zen 4 has AVX-512, on 256-bit datapaths."""


def choose_coretype(features, vendor: str = "", family: int = 0) -> str | None:
    """The OpenBLAS core type irlib loads its copy with on a CPU with these ``features``.

    Returns ``"SkylakeX"`` when every AVX-512 subset of :data:`AVX512` is present, except on
    an AMD Zen 4 (``vendor == "AuthenticAMD"``, ``family`` :data:`ZEN4_FAMILY`): ``"Haswell"``
    there, since Zen 4 runs AVX-512 on 256-bit units and the AVX2 kernels were measured as
    fast or faster (one thread, this 2-core EPYC: 2048^3 106 vs 103 GFLOP/s, a
    ``(128, 384) @ (384, 1536)`` product 97 vs 86, the ``(16, 384) @ (384, 1536)`` of a
    decode step 54 vs 42 with the weights out of cache). None without AVX-512 (keep
    numpy's BLAS: on AVX2 or older CPUs OpenBLAS's own detection picks the same kernels in
    both copies). Cooperlake/SapphireRapids names were measured to load the SkylakeX GEMM
    kernels in this package's build, so they are not chosen.

    Args:
        features: the CPU flags (:func:`cpu_features`).
        vendor: the CPU's vendor id (:func:`cpu_identity`), ``""`` if unknown.
        family: the CPU family number (:func:`cpu_identity`), 0 if unknown.
    """
    if not AVX512 <= set(features):
        return None
    if vendor == "AuthenticAMD" and family == ZEN4_FAMILY:
        return "Haswell"
    return "SkylakeX"


def requested_coretype(environ=None) -> str | None:
    """The core type to load irlib's copy with, or None to use numpy's BLAS.

    Args:
        environ: the environment to read :data:`ENV_CORETYPE` from (default ``os.environ``).
    """
    value = (environ if environ is not None else os.environ).get(ENV_CORETYPE, "").strip()
    if value.lower() == "numpy":
        return None
    if value and value.lower() != "auto":
        return value
    return choose_coretype(cpu_features(), *cpu_identity())


def library_path() -> str | None:
    """The shared library of the ``scipy-openblas32`` package, found without importing it."""
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = os.path.join(list(spec.submodule_search_locations)[0], "lib")
    try:
        names = sorted(n for n in os.listdir(folder) if n.startswith("libscipy_openblas")
                       and (".so" in n or n.endswith((".dylib", ".dll"))))
    except OSError:
        return None
    return os.path.join(folder, names[0]) if names else None


class OwnBlas:
    """irlib's loaded OpenBLAS copy: its ``cblas_?gemm`` functions and what it runs.

    Attributes:
        path: the library file.
        corename: the kernels OpenBLAS chose (``openblas_get_corename``), e.g. ``SkylakeX``.
        requested: the core type irlib asked for.
        gemm: ``{numpy dtype: ctypes function}`` for float32 (``sgemm``) and float64
            (``dgemm``), cblas row-major signature with 32-bit integers.
        gemv: the same for ``cblas_?gemv`` (row-major; products with one row or column:
            a GEMM would pack the whole matrix operand for them).
        gemm_batch: the same for ``cblas_?gemm_batch`` (arrays of pointers, in groups; one
            call runs a batch of products, OpenBLAS's threads taking whole products), where
            the library has it.
    """

    def __init__(self, lib, path: str, requested: str):
        """Bind the functions of ``lib`` (a ``ctypes.CDLL`` of ``path``)."""
        import numpy as np
        self._lib = lib
        self.path = path
        self.requested = requested
        corename = getattr(lib, "scipy_openblas_get_corename")
        corename.restype = ctypes.c_char_p
        self.corename = (corename() or b"").decode("ascii", "replace")
        self._set_threads = lib.scipy_openblas_set_num_threads
        self._set_threads.argtypes = [ctypes.c_int]
        self._get_threads = lib.scipy_openblas_get_num_threads
        self._get_threads.restype = ctypes.c_int
        integer = ctypes.c_int
        self.gemm, self.gemv, self.gemm_batch = {}, {}, {}
        for letter, real, dtype in (("s", ctypes.c_float, np.float32),
                                    ("d", ctypes.c_double, np.float64)):
            function = getattr(lib, f"scipy_cblas_{letter}gemm")
            function.argtypes = [integer] * 6 + [real, ctypes.c_void_p, integer,
                                                 ctypes.c_void_p, integer, real,
                                                 ctypes.c_void_p, integer]
            function.restype = None
            self.gemm[np.dtype(dtype)] = function
            vector = getattr(lib, f"scipy_cblas_{letter}gemv")
            vector.argtypes = [integer] * 4 + [real, ctypes.c_void_p, integer, ctypes.c_void_p,
                                               integer, real, ctypes.c_void_p, integer]
            vector.restype = None
            self.gemv[np.dtype(dtype)] = vector
            batch = getattr(lib, f"scipy_cblas_{letter}gemm_batch", None)
            if batch is not None:
                batch.argtypes = [integer] + [ctypes.c_void_p] * 13 + [integer,
                                                                       ctypes.c_void_p]
                batch.restype = None
                self.gemm_batch[np.dtype(dtype)] = batch

    def set_num_threads(self, count: int) -> None:
        """Set this copy's own thread count (irlib keeps it at 1; see jitkernels.threads)."""
        self._set_threads(int(count))

    def num_threads(self) -> int:
        """This copy's own thread count."""
        return int(self._get_threads())


THREAD_TIMEOUT = 4
"""``OPENBLAS_THREAD_TIMEOUT`` irlib's copy is loaded with (unless the variable is set): its
idle threads spin ``2**value`` cycles, then sleep until the next product (OpenBLAS's
default, 28, is about 0.1 s). A thread spinning after a product holds a core that the
numba ``prange`` loop running next (an epilogue, a pool, a depthwise layer) waits for: on
the loaded dev machine (load ~7) 300 pairs of a ``(196, 512) @ (512, 512)`` product and a
``prange`` reduction took 0.76-0.88 s of CPU and 2.2-2.6 s of wall time at 4, against
0.86-0.99 s and 2.6-3.0 s at 28; on the idle machine resnet50, mobilenet and densenet121
ran within the noise of each other either way (50.8 / 11.0-11.3 / 33.6-35.1 ms at 4,
50.9 / 11.0 / 35.1-35.4 ms at 28)."""


def _set_env(name: str, value):
    """Set (or, with None, remove) an environment variable; return its previous value."""
    old = os.environ.get(name)
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
    return old


def load(coretype: str) -> OwnBlas | None:
    """Load irlib's copy of OpenBLAS with ``coretype`` kernels, on one thread.

    ``OPENBLAS_CORETYPE`` and ``OPENBLAS_NUM_THREADS`` are set only around the
    ``ctypes.CDLL`` call (OpenBLAS reads them when it loads) and restored after, so numpy's
    BLAS and any later library load see the environment as it was.

    Args:
        coretype: an OpenBLAS core type name.

    Returns:
        The loaded :class:`OwnBlas`, or None when the package is not installed or the library
        does not load (the caller then keeps numpy's BLAS). A core type OpenBLAS does not know
        loads its own detection's choice, with a warning naming both.
    """
    path = library_path()
    if path is None:
        return None
    import numpy  # noqa: F401  (numpy's BLAS is loaded first, with the environment untouched)
    old_core = _set_env("OPENBLAS_CORETYPE", coretype)
    old_threads = _set_env("OPENBLAS_NUM_THREADS", "1")
    old_timeout = os.environ.get("OPENBLAS_THREAD_TIMEOUT")
    if old_timeout is None:
        _set_env("OPENBLAS_THREAD_TIMEOUT", str(THREAD_TIMEOUT))
    try:
        lib = ctypes.CDLL(path)
        blas = OwnBlas(lib, path, coretype)
    except (OSError, AttributeError):
        return None
    finally:
        _set_env("OPENBLAS_CORETYPE", old_core)
        _set_env("OPENBLAS_NUM_THREADS", old_threads)
        _set_env("OPENBLAS_THREAD_TIMEOUT", old_timeout)
    blas.set_num_threads(1)
    if blas.corename.lower() != coretype.lower():
        warnings.warn(f"{ENV_CORETYPE}/CPU flags asked irlib's OpenBLAS for core type "
                      f"{coretype!r}; OpenBLAS loaded {blas.corename!r}", RuntimeWarning,
                      stacklevel=2)
    return blas
