"""The GEMMs every CPU kernel uses: irlib's own OpenBLAS, its threads chosen per product.

Called from Python, not from inside numba code. Where the CPU has AVX-512 and the
``scipy-openblas32`` package is installed, products run on irlib's own copy of OpenBLAS,
loaded with the core type chosen from the CPU (:mod:`jitkernels.cpu.openblas`; numpy's
BLAS is left as it is). Each product runs as one cblas call on OpenBLAS's own threads, all
of them on an idle machine and one after a product stalled because another process held a
core (:mod:`jitkernels.cpu.blas_threads`). Products of at most :data:`SMALL_MAX_FLOPS`
go to ``np.matmul`` (numpy's BLAS runs them on one thread, and a ctypes call costs more
than the product there).

Otherwise (``IRLIB_BLAS_CORETYPE=numpy``, no AVX-512, or the package missing) everything runs
on numpy's BLAS as before: :func:`gemm` is ``np.matmul(out=)`` and :func:`gemm_strided`
calls the ``cblas_?gemm`` of numpy's bundled OpenBLAS through ctypes, or ``np.matmul`` plus
a temporary where that is not found (:data:`HAVE_CBLAS` is False only then).

:func:`backend` says which BLAS runs; :func:`set_num_threads` sets how many threads irlib's
products may use.
"""

from __future__ import annotations

import ctypes
import glob
import os

import numpy as np

from ..threads import gemm_threads
from . import blas_team, openblas
from .blas_threads import AdaptiveThreads

__all__ = ["gemm", "gemm_strided", "HAVE_CBLAS", "HAVE_OWN_BLAS", "backend", "set_num_threads",
           "get_num_threads", "SMALL_MAX_FLOPS"]

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112

SMALL_MAX_FLOPS = 262144
"""Products with ``M*N*K`` (summed over a batch) up to this run on ``np.matmul``: numpy's
OpenBLAS runs them on one thread (its own threshold, 65536 x 4), and the pointer look-ups of
a ctypes call cost about as much as such a product."""

# -- numpy's bundled cblas: the fallback of gemm_strided ---------------------------------------

def _bind(lib, name: str, real, index):
    function = getattr(lib, name, None)
    if function is None:
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, index, index, index, real,
                         ctypes.c_void_p, index, ctypes.c_void_p, index, real,
                         ctypes.c_void_p, index]
    function.restype = None
    return function


def _works(functions) -> bool:
    """A 2x3 @ 3x2 product per dtype against numpy (catches a wrong integer width)."""
    for dtype, function in functions.items():
        a = np.arange(6, dtype=dtype).reshape(2, 3)
        b = np.arange(6, dtype=dtype).reshape(3, 2) - 2
        out = np.ones((2, 2), dtype)
        function(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, 2, 2, 3, 1.0, a.ctypes.data, 3,
                 b.ctypes.data, 2, 1.0, out.ctypes.data, 2)
        if not np.array_equal(out, a @ b + 1):
            return False
    return True


def _find_cblas() -> dict:
    """``{dtype: cblas_?gemm}`` from the OpenBLAS bundled with numpy, or ``{}``."""
    base = os.path.dirname(np.__file__)
    paths = sorted({path for folder in (base + ".libs", os.path.join(base, ".dylibs"))
                    for path in glob.glob(os.path.join(folder, "*openblas*"))})
    # (symbol pattern, integer type): ILP64 builds suffix their symbols with "64_".
    conventions = (("scipy_cblas_{}gemm64_", ctypes.c_int64), ("cblas_{}gemm64_", ctypes.c_int64),
                   ("scipy_cblas_{}gemm", ctypes.c_int), ("cblas_{}gemm", ctypes.c_int))
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for pattern, index in conventions:
            functions = {np.dtype(np.float32): _bind(lib, pattern.format("s"), ctypes.c_float,
                                                     index),
                         np.dtype(np.float64): _bind(lib, pattern.format("d"), ctypes.c_double,
                                                     index)}
            if all(functions.values()) and _works(functions):
                return functions
    return {}


_CBLAS = _find_cblas()


# -- irlib's own OpenBLAS ------------------------------------------------------------------------

def _load_own():
    """irlib's OpenBLAS copy when it is wanted and loads and computes right, else None."""
    coretype = openblas.requested_coretype()
    if coretype is None:
        return None
    own = openblas.load(coretype)
    if own is None or not _works(own.gemm):
        return None
    return own


_OWN = _load_own()
HAVE_OWN_BLAS = _OWN is not None
"""Whether the GEMMs run on irlib's own OpenBLAS (else on numpy's)."""

HAVE_CBLAS = HAVE_OWN_BLAS or bool(_CBLAS)
"""Whether :func:`gemm_strided` runs on a cblas (irlib's OpenBLAS, else numpy's bundled one)
rather than on ``np.matmul`` plus a temporary."""

TEAM_SWITCH = "IRLIB_BLAS_TEAM"
"""Environment variable: ``0`` (``off``/``false``/``no``) runs each product of irlib's
OpenBLAS on OpenBLAS's own threads (:class:`AdaptiveThreads`) instead of cutting it into
single-threaded parts for numba's workers (:class:`TeamProducts`). Read when this module
loads."""


def team_enabled(environ=None) -> bool:
    """Whether products are cut into parts for numba's OpenMP workers (the default where
    irlib's OpenBLAS loaded; see :mod:`jitkernels.cpu.blas_team`).

    Args:
        environ: the environment to read (default ``os.environ``).
    """
    environ = os.environ if environ is None else environ
    return _OWN is not None and environ.get(TEAM_SWITCH, "1").strip().lower() not in (
        "0", "off", "false", "no")


class TeamProducts:
    """Runs irlib's OpenBLAS products as single-threaded parts shared by numba's workers.

    OpenBLAS stays on one thread; each ``cblas_?gemm`` task of at least
    :data:`blas_team.MIN_PART_WORK` multiply-adds is cut by :func:`blas_team.split` and run
    by :func:`blas_team.run_parts`; a batch arrives as a parts table of its matrices. The
    parts run on the calling thread alone while other processes keep the cores busy
    (:func:`jitkernels.cpu.work_sharing.others_busy`), as the other shared kernels do.

    Args:
        threads: the most threads one product may use (1: every product on the caller).
    """

    def __init__(self, threads: int):
        self.threads = max(1, int(threads))
        _OWN.set_num_threads(1)     # parts run at once: each on its caller's thread only
        self.addresses = {dtype: ctypes.cast(function, ctypes.c_void_p).value
                          for dtype, function in _OWN.gemm.items()}
        self.gemm = {id(function): dtype for dtype, function in _OWN.gemm.items()}

    def _threads(self) -> int:
        from numba import get_num_threads
        from .work_sharing import cores_taken
        threads = min(self.threads, get_num_threads())
        return 1 if threads > 1 and cores_taken(threads) else threads

    def run(self, tasks, work: float, key=None) -> None:
        """Run each task: ``(function, args)`` of a cblas call of irlib's copy, or
        ``(None, (dtype, parts, beta))`` for a :data:`blas_team.FIELDS` table.

        Args:
            tasks: the calls, run in order.
            work, key: unused (the signature of :meth:`AdaptiveThreads.run`).
        """
        threads = self._threads() if work >= 2 * blas_team.MIN_PART_WORK else 1
        for function, args in tasks:
            if function is None:
                dtype, parts, beta = args
            elif id(function) in self.gemm and threads > 1:
                dtype, beta = self.gemm[id(function)], args[11]
                parts = blas_team.split((args[1], args[2], args[3], args[4], args[5],
                                         args[8], args[10], args[13], args[7], args[9],
                                         args[12]), threads, np.dtype(dtype).itemsize)
            else:
                function(*args)
                continue
            if threads > 1 and parts.shape[0] < threads:
                parts = np.concatenate([blas_team.split(row, -(-threads // parts.shape[0]),
                                                        np.dtype(dtype).itemsize)
                                        for row in parts])
            if threads == 1 or parts.shape[0] == 1:
                blas_team.run_serial(self.addresses[dtype], parts, dtype.type(beta))
            else:
                blas_team.run_parts(self.addresses[dtype], parts, dtype.type(beta))


def _policy(count: int):
    """The thread policy of irlib's OpenBLAS copy for ``count`` threads (None without it):
    :class:`TeamProducts` unless :data:`TEAM_SWITCH` turns it off."""
    if _OWN is None:
        return None
    if team_enabled():
        return TeamProducts(count)
    return AdaptiveThreads(count, _OWN.set_num_threads, _OWN.gemm[np.dtype(np.float32)])


def _batch_functions() -> dict:
    """``{dtype: cblas_?gemm_batch}`` of irlib's copy, each checked on a 3-matrix batch with
    distinct strides against numpy (``{}`` when absent or wrong)."""
    if _OWN is None:
        return {}
    checked = {}
    for dtype, function in _OWN.gemm_batch.items():
        a = np.arange(3 * 2 * 5, dtype=dtype).reshape(3, 2, 5) - 7
        b = np.arange(3 * 6 * 4, dtype=dtype).reshape(3, 6, 4)[:, :5, 1:] / 3
        out = np.full((3, 2, 3), 2.0, dtype)
        expected = a @ b + 0.5 * out
        alive = []
        task = _batch_task(a, b, out, 0.5, alive, function)
        if task is None:
            continue
        task[0](*task[1])
        if np.allclose(out, expected):
            checked[dtype] = function
    return checked


_BATCH: dict = {}
"""``{dtype: cblas_?gemm_batch}`` of irlib's copy that passed :func:`_batch_functions`'
check (filled at the end of this module, once :func:`_batch_task` exists)."""

_THREADS = gemm_threads()
_POLICY = _policy(_THREADS)


def backend() -> dict:
    """Which BLAS irlib's GEMMs run on, for reports and tests.

    Returns:
        ``{"library": "irlib-openblas" | "numpy", "corename": OpenBLAS's kernel name or None,
        "requested": the core type asked for or None, "path": the library or None,
        "threads": the most threads one product may use}``.
    """
    if _OWN is None:
        return {"library": "numpy", "corename": None, "requested": None, "path": None,
                "threads": _THREADS}
    return {"library": "irlib-openblas", "corename": _OWN.corename, "requested": _OWN.requested,
            "path": _OWN.path, "threads": _THREADS}


def set_num_threads(count: int) -> None:
    """Set how many threads one product of irlib's BLAS may run on.

    Args:
        count: at least 1. Has no effect on numpy's BLAS (the fallback backend).
    """
    global _THREADS, _POLICY
    count = max(1, int(count))
    if count != _THREADS:
        _THREADS, _POLICY = count, _policy(count)


def get_num_threads() -> int:
    """How many threads one product of irlib's BLAS may run on."""
    return _THREADS


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def _operand(array: np.ndarray):
    """``(transpose flag, leading dimension)`` BLAS reads ``array`` with, or None."""
    item = array.itemsize
    rows, cols = array.shape
    row_stride, col_stride = array.strides
    if (col_stride == item or cols == 1) and row_stride % item == 0 \
            and (rows == 1 or row_stride >= cols * item):
        return _NO_TRANS, max(row_stride // item if rows > 1 else cols, 1)
    if (row_stride == item or rows == 1) and col_stride % item == 0 \
            and (cols == 1 or col_stride >= rows * item):
        return _TRANS, max(col_stride // item if cols > 1 else rows, 1)
    return None


def _readable(operand: np.ndarray):
    """``(operand, (transpose, ld))``: the view itself when BLAS can read it, else a copy."""
    layout = _operand(operand) if operand.flags.aligned else None
    if layout is None:
        operand = np.ascontiguousarray(operand)
        layout = _operand(operand)
    return operand, layout


def _vector_step(array: np.ndarray, axis: int):
    """The element step of a 1-row/1-column operand along ``axis`` (None if not positive)."""
    if array.shape[axis] == 1:
        return 1
    stride = array.strides[axis]
    return stride // array.itemsize if stride > 0 and stride % array.itemsize == 0 else None


def _task(a, b, out, beta: float):
    """``(function, args)``: the one cblas call of ``out = a @ b + beta * out`` (2-D views
    BLAS can read, ``out``'s rows contiguous), a GEMV when ``out`` has one row or column."""
    (trans_a, lda), (trans_b, ldb) = _operand(a), _operand(b)
    rows, inner = a.shape
    cols = b.shape[1]
    dtype = out.dtype
    if rows == 1 or cols == 1:
        if rows == 1:            # out row = b^T @ a row
            matrix, trans, ld, vector, step = b, trans_b, ldb, a, _vector_step(a, 1)
            height, width, flip = inner, cols, _TRANS
            out_step = 1
        else:                    # out column = a @ b column
            matrix, trans, ld, vector, step = a, trans_a, lda, b, _vector_step(b, 0)
            height, width, flip = rows, inner, _NO_TRANS
            out_step = _vector_step(out, 0)
        if step is not None and out_step is not None:
            if trans == _TRANS:   # the matrix is stored transposed: swap its shape
                height, width, flip = width, height, _TRANS if flip == _NO_TRANS else _NO_TRANS
            return (_OWN.gemv[dtype], (_ROW_MAJOR, flip, height, width, 1.0, _address(matrix),
                                       ld, _address(vector), step, beta, _address(out),
                                       out_step))
    return (_OWN.gemm[dtype], (_ROW_MAJOR, trans_a, trans_b, rows, cols, inner, 1.0,
                               _address(a), lda, _address(b), ldb, beta, _address(out),
                               _operand(out)[1]))


def _batch_layout(a, b, out):
    """The parts table of a batched ``out[...] = a @ b`` (operands already broadcast to
    ``out``'s leading shape): an int64 ``(count, 11)`` table of every matrix's
    :data:`blas_team.FIELDS` (one layout, the addresses from the leading strides), or None
    when it does not apply (one matrix, a one-row or one-column product, an operand BLAS
    cannot read in place).

    The matrices of a batch share their strides, so one layout serves them all; their
    addresses are computed at once (the per-matrix Python of :func:`_task` cost ~10 us per
    matrix: a Winograd layer has 16-36 of them).
    """
    batch_shape = out.shape[:-2]
    count = out.size // max(out.shape[-2] * out.shape[-1], 1)
    rows, inner = a.shape[-2:]
    cols = b.shape[-1]
    if count < 2 or rows < 2 or cols < 2:
        return None
    first = (0,) * len(batch_shape)
    layouts = [_operand(x[first]) if x.flags.aligned else None for x in (a, b, out)]
    if any(layout is None for layout in layouts) or layouts[2][0] != _NO_TRANS:
        return None
    (trans_a, lda), (trans_b, ldb), (_, ldc) = layouts
    index = np.indices(batch_shape, np.int64).reshape(len(batch_shape), -1)
    table = np.empty((count, len(blas_team.FIELDS)), np.int64)
    table[:, :8] = (trans_a, trans_b, rows, cols, inner, lda, ldb, ldc)
    for column, x in zip((8, 9, 10), (a, b, out)):   # int64: a reversed batch steps back
        table[:, column] = _address(x) + np.asarray(x.strides[:-2], np.int64) @ index
    return table


def _batch_task(a, b, out, beta: float, alive: list, function=None):
    """One task running every matrix of the batched ``out[...] = a @ b + beta * out``
    (operands already broadcast to ``out``'s leading shape), or None when it does not apply
    (see :func:`_batch_layout`; or no batch function).

    With :class:`TeamProducts` the task is the parts table itself (``(None, (dtype, table,
    beta))``); otherwise one ``cblas_?gemm_batch`` call. Arrays the call reads by address
    are appended to ``alive``. ``function``: the batch function to call (default: the
    checked one of ``out``'s dtype; the load-time check passes its candidate).
    """
    table = _batch_layout(a, b, out)
    if table is None:
        return None
    if function is None and isinstance(_POLICY, TeamProducts) and out.dtype in _OWN.gemm:
        return None, (out.dtype, table, beta)
    if function is None:
        function = _BATCH.get(out.dtype)
    if function is None:
        return None
    count = table.shape[0]
    pointers = [np.ascontiguousarray(table[:, column]) for column in (8, 9, 10)]
    ints = np.append(table[0, :8], count).astype(np.int32)
    scalars = np.array([1.0, beta], out.dtype)
    alive.append((pointers, ints, scalars))
    base, scalar, item = _address(ints), _address(scalars), ints.itemsize
    return (function, (_ROW_MAJOR, base, base + item, base + 2 * item, base + 3 * item,
                       base + 4 * item, scalar, _address(pointers[0]), base + 5 * item,
                       _address(pointers[1]), base + 6 * item, scalar + scalars.itemsize,
                       _address(pointers[2]), base + 7 * item, 1, base + 8 * item))


def _own_tasks(a, b, out, beta: float, alive: list) -> list:
    """The cblas calls of ``out[...] = a @ b (+ out)`` on irlib's BLAS, one per matrix.

    ``a``, ``b`` and ``out`` are 2-D or batched with the same leading shape (already
    broadcast); ``out``'s rows are contiguous. Zero-size products are left to the caller.
    Operands copied for BLAS are appended to ``alive``: the tasks hold only their addresses.
    """
    batch_shape = out.shape[:-2]
    if not batch_shape:
        left, _ = _readable(a)
        right, _ = _readable(b)
        alive.append((left, right))
        return [_task(left, right, out, beta)]
    batched = _batch_task(a, b, out, beta, alive)
    if batched is not None:
        return [batched]
    tasks = []
    for index in np.ndindex(*batch_shape):
        left, _ = _readable(a[index])
        right, _ = _readable(b[index])
        alive.append((left, right))
        tasks.append(_task(left, right, out[index], beta))
    return tasks


def _own_product(a, b, out, accumulate: bool) -> bool:
    """Run ``out = a @ b`` (``+= `` when accumulating) on irlib's BLAS; False if it cannot."""
    dtype = out.dtype
    if dtype not in _OWN.gemm or a.dtype != dtype or b.dtype != dtype or a.ndim < 2 \
            or b.ndim < 2 or out.ndim < 2 or not out.flags.writeable:
        return False
    batch = out.shape[:-2]
    rows, cols = out.shape[-2:]
    if a.shape[-2] != rows or b.shape[-1] != cols or a.shape[-1] != b.shape[-2]:
        return False
    if batch or a.ndim > 2 or b.ndim > 2:
        try:
            if np.broadcast_shapes(a.shape[:-2], b.shape[:-2], batch) != batch:
                return False
        except ValueError:
            return False
    item = out.itemsize
    row_stride, col_stride = out.strides[-2:]
    if (col_stride != item and cols > 1) or (rows > 1 and (row_stride < cols * item
                                                          or row_stride % item)) \
            or not out.flags.aligned or np.may_share_memory(out, a) \
            or np.may_share_memory(out, b):
        return False
    if out.size == 0:
        return True
    if a.shape[-1] == 0:
        if not accumulate:
            out[...] = 0
        return True
    if a.shape[:-2] != batch:
        a = np.broadcast_to(a, batch + a.shape[-2:])
    if b.shape[:-2] != batch:
        b = np.broadcast_to(b, batch + b.shape[-2:])
    alive = []
    _POLICY.run(_own_tasks(a, b, out, 1.0 if accumulate else 0.0, alive),
                out.size * a.shape[-1], (out.shape, a.shape[-1]))
    return True


def _plain_2d(a, b, out) -> bool:
    """``out = a @ b`` in one cblas call when the operands are the common case of a graph's
    2-D product (row-major ``a`` and ``out``, ``b`` row- or column-major, one float dtype,
    no overlap, more than one output row and column); False, nothing written, otherwise.

    The general path (:func:`_own_product`) spends ~7 us of Python on broadcasting and
    layout decisions: a few percent of a decode step's 16-row products (~60 us each).
    """
    if a.ndim != 2 or b.ndim != 2 or out.ndim != 2:
        return False
    dtype = out.dtype
    function = _OWN.gemm.get(dtype)
    rows, inner = a.shape
    cols = out.shape[1]
    if function is None or a.dtype != dtype or b.dtype != dtype or rows < 2 or cols < 2 \
            or inner == 0 or b.shape[0] != inner or b.shape[1] != cols or out.shape[0] != rows:
        return False
    a_flags, b_flags, out_flags = a.flags, b.flags, out.flags
    if not (a_flags.c_contiguous and out_flags.c_contiguous and out_flags.writeable
            and (b_flags.c_contiguous or b_flags.f_contiguous)):
        return False
    if np.may_share_memory(out, a) or np.may_share_memory(out, b):
        return False
    if b_flags.c_contiguous:
        trans_b, ldb = _NO_TRANS, cols
    else:
        trans_b, ldb = _TRANS, inner
    _POLICY.run([(function, (_ROW_MAJOR, _NO_TRANS, trans_b, rows, cols, inner, 1.0,
                              _address(a), inner, _address(b), ldb, 0.0, _address(out),
                              cols))], rows * inner * cols, ((rows, cols), inner))
    return True


def _is_small(a, out) -> bool:
    """Whether ``M*N*K`` (times the batch) is at most :data:`SMALL_MAX_FLOPS`."""
    return out.size * (a.shape[-1] if a.ndim else 1) <= SMALL_MAX_FLOPS


# -- the public GEMMs ------------------------------------------------------------------------------

def gemm(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out[...] = a @ b`` with numpy broadcasting over leading axes; returns ``out``.

    Args:
        a: ``(..., M, K)``; b: ``(..., K, N)`` (transposed and row-strided views are read in
            place: BLAS gets a transpose flag and a leading dimension, no copy).
        out: ``(..., M, N)`` of the result dtype, overwritten.
    """
    if _OWN is None or _is_small(a, out) or not (_plain_2d(a, b, out)
                                                 or _own_product(a, b, out, False)):
        np.matmul(a, b, out=out)
    return out


def gemm_strided(a: np.ndarray, b: np.ndarray, out: np.ndarray, accumulate: bool) -> None:
    """``out = a @ b`` or ``out += a @ b`` for 2-D operands, strided views read in place.

    Args:
        a: ``(M, K)``; b: ``(K, N)``: views whose elements along one axis are adjacent
            (the other stride may be anything at least that long, e.g. a tap of a padded
            image), else they are copied first.
        out: ``(M, N)`` with adjacent elements along its rows; must not overlap ``a``/``b``.
        accumulate: add the product to ``out`` instead of overwriting it.
    """
    if out.size == 0 or a.shape[-1] == 0:          # nothing to multiply
        if out.size and not accumulate:
            out[...] = 0
        return
    if _OWN is not None and not _is_small(a, out) and _own_product(a, b, out, accumulate):
        return
    function = _CBLAS.get(out.dtype)
    out_layout = _operand(out)
    if function is None or a.dtype != out.dtype or b.dtype != out.dtype \
            or out_layout is None or out_layout[0] != _NO_TRANS:
        if accumulate:
            out += np.matmul(a, b)
        else:
            np.matmul(a, b, out=out)
        return
    a, (trans_a, lda) = _readable(a)
    b, (trans_b, ldb) = _readable(b)
    rows, inner = a.shape
    function(_ROW_MAJOR, trans_a, trans_b, rows, b.shape[1], inner, 1.0, a.ctypes.data, lda,
             b.ctypes.data, ldb, 1.0 if accumulate else 0.0, out.ctypes.data, out_layout[1])


_BATCH.update(_batch_functions())
