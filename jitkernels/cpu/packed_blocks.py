"""Drivers of the packed float32 GEMM for any number of rows, with a fused epilogue
(issue #17: the conv nets' GEMMs on irlib's own micro-kernel).

``out = a @ W`` where ``W`` is packed as :func:`jitkernels.cpu.packed_gemm.pack` makes it,
``(ceil(N / 64), K, 64)``, and ``a`` is ``(M, K)`` with rows ``lda`` elements apart.

Strategy:

* **Tasks**: the output is cut into row chunks of ``chunk`` rows (a multiple of 6) times
  groups of ``group`` 64-column blocks; a task is one (row chunk, column group) pair,
  numbered row chunk major so that a thread's tasks share their rows of ``a`` and write
  contiguous output rows. :func:`gemm_parallel` runs the tasks in a ``prange``,
  :func:`gemm_serial` in order; the caller picks one (a work threshold) and the sizes
  (:func:`jitkernels.cpu.packed_gemm.task_shape`).
* **K-blocking**: a task walks the depth in chunks of ``kc``; the group's panel chunks
  (``group * kc * 256`` bytes) stay in L2 while its 6-row blocks stream past them. For each
  6-row block (its ``a`` rows in L1) the block's column blocks run in turn, so an output
  row's columns are written side by side. Each (6 rows, 64 columns) block runs the
  register-blocked micro-kernel (:mod:`jitkernels.cpu.broadcast_kernel`: 6 x 4 zmm
  accumulators) into a ``(6, 64)`` scratch in L1; the first chunk stores it, later ones
  add the partial sums already in the output block.
* **Epilogue**: after the last chunk the block's steps (:mod:`jitkernels.cpu.epilogue`:
  per-channel add/multiply, residual add, ReLU) are applied to the scratch while it is in
  L1, then the block is stored: the output is written once, finished.

The micro-kernel addresses its operands from their data pointers: the depth offset ``k0``
is applied by passing the flat views ``a[k0:]`` and ``W[jb, k0:]`` with block index 0 (as
:mod:`jitkernels.cpu.attention` does).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange, uint64

from .broadcast_kernel import FLOAT32, micro_kernels

__all__ = ["BLOCK_COLUMNS", "ROWS", "block", "gemm_serial", "gemm_parallel", "finish_block"]

BLOCK_COLUMNS = 64
"""Columns of one micro-kernel block (four 16-lane float32 vectors)."""

ROWS = 6
"""Rows of the full micro-kernel (6 x 4 accumulators + 4 weight vectors + 1 broadcast)."""

_ROWS = ROWS

_mk1, _mk2, _mk3, _mk4, _mk5, _mk6 = micro_kernels(FLOAT32)


@njit(cache=True)
def block(c, a, bp, i0, jb, depth, lda, rows):
    """One ``rows x 64`` block (``rows`` <= 6) of ``a @ W`` into the ``(6, 64)`` scratch
    ``c``: rows ``i0..`` of ``a`` (``lda`` apart), column block ``jb`` of the packed ``bp``,
    ``depth`` steps (see :mod:`jitkernels.cpu.broadcast_kernel`)."""
    if rows == 6:
        _mk6(c, a, bp, i0, jb, depth, lda)
    elif rows == 5:
        _mk5(c, a, bp, i0, jb, depth, lda)
    elif rows == 4:
        _mk4(c, a, bp, i0, jb, depth, lda)
    elif rows == 3:
        _mk3(c, a, bp, i0, jb, depth, lda)
    elif rows == 2:
        _mk2(c, a, bp, i0, jb, depth, lda)
    else:
        _mk1(c, a, bp, i0, jb, depth, lda)


_block = block


@njit(cache=True, inline="always")
def finish_block(scratch, count, width, out, i0, j0, first, last, kinds, vectors, residual):
    """Merge one ``count x width`` block from ``scratch`` into ``out[i0:, j0:]``.

    ``first``: the block's first depth chunk (store; else add to what ``out`` holds);
    ``last``: its last one (apply the epilogue steps to the scratch before storing).
    Flat unsigned indices, so that numba emits no negative-index checks and LLVM
    vectorises the 64-column loops (as :func:`jitkernels.cpu.epilogue.apply_pixel`).

    Args:
        scratch: ``(6, 64)`` float32, the micro-kernel's block.
        count, width: rows and columns of the block that are inside ``out``.
        out: ``(M, N)`` C-contiguous; i0, j0: the block's first row and column.
        first, last: booleans (see above).
        kinds, vectors, residual: the epilogue's arrays (``residual`` ``(M, N)`` when a
            RESIDUAL step is present).
    """
    units = uint64(out.shape[1])
    flat = out.reshape(-1)
    block = scratch.reshape(-1)
    cols = uint64(width)
    if not first:
        for r in range(uint64(count)):
            source = (uint64(i0) + r) * units + uint64(j0)
            row = r * uint64(BLOCK_COLUMNS)
            for j in range(cols):
                block[row + j] += flat[source + j]
    if last:
        zero = np.float32(0)
        rflat = residual.reshape(-1)
        for s in range(kinds.shape[0]):
            kind = kinds[s]
            vector = vectors[s]
            for r in range(uint64(count)):
                row = r * uint64(BLOCK_COLUMNS)
                if kind == 0:
                    for j in range(cols):
                        block[row + j] += vector[uint64(j0) + j]
                elif kind == 1:
                    for j in range(cols):
                        block[row + j] *= vector[uint64(j0) + j]
                elif kind == 2:
                    source = (uint64(i0) + r) * units + uint64(j0)
                    for j in range(cols):
                        block[row + j] += rflat[source + j]
                else:
                    for j in range(cols):
                        block[row + j] = max(block[row + j], zero)
    for r in range(uint64(count)):
        target = (uint64(i0) + r) * units + uint64(j0)
        row = r * uint64(BLOCK_COLUMNS)
        for j in range(cols):
            flat[target + j] = block[row + j]


@njit(cache=True)
def _task(a, lda, bp, out, task, groups, chunk, group, kc, kinds, vectors, residual, scratch):
    """Run one task ``task = row_chunk * groups + g``: rows ``chunk`` x column blocks
    ``g * group ...`` (see the module docstring)."""
    rows, units = out.shape
    depth = bp.shape[1]
    flat_b = bp.reshape(-1)
    row_chunk, g = task // groups, task % groups
    lo = row_chunk * chunk
    hi = min(rows, lo + chunk)
    first_block = g * group
    last_block = min(bp.shape[0], first_block + group)
    for k0 in range(0, depth, kc):
        steps = min(kc, depth - k0)
        rows_from = a[k0:]
        for i0 in range(lo, hi, _ROWS):
            count = min(_ROWS, hi - i0)
            for jb in range(first_block, last_block):
                j0 = jb * BLOCK_COLUMNS
                panel = flat_b[(jb * depth + k0) * BLOCK_COLUMNS:]
                _block(scratch, rows_from, panel, i0, 0, steps, lda, count)
                finish_block(scratch, count, min(BLOCK_COLUMNS, units - j0), out, i0, j0,
                             k0 == 0, k0 + steps >= depth, kinds, vectors, residual)


@njit(cache=True)
def gemm_serial(a, lda, bp, out, chunk, group, kc, kinds, vectors, residual):
    """``out = epilogue(a @ W)`` task after task on the calling thread.

    Args:
        a: float32, flat (1-D) view of the rows: row ``i`` starts at element ``i * lda``.
        lda: elements between rows of ``a`` (at least ``K``).
        bp: the packed weight ``(ceil(N / 64), K, 64)`` (C-contiguous).
        out: float32 ``(M, N)`` C-contiguous, overwritten.
        chunk: rows per task (a multiple of 6); group: 64-column blocks per task;
            kc: depth per chunk (at least 1).
        kinds, vectors, residual: the epilogue (:class:`jitkernels.cpu.epilogue.Epilogue`
            arrays; ``residual`` the ``(M, N)`` rows when a RESIDUAL step is present).
    """
    groups = -(-bp.shape[0] // group)
    tasks = -(-out.shape[0] // chunk) * groups
    scratch = np.empty((_ROWS, BLOCK_COLUMNS), np.float32)
    for task in range(tasks):
        _task(a, lda, bp, out, task, groups, chunk, group, kc, kinds, vectors, residual,
              scratch)


@njit(cache=True, parallel=True)
def gemm_parallel(a, lda, bp, out, chunk, group, kc, kinds, vectors, residual):
    """:func:`gemm_serial` with the tasks on numba's threads (same arguments)."""
    groups = -(-bp.shape[0] // group)
    tasks = -(-out.shape[0] // chunk) * groups
    for task in prange(tasks):
        scratch = np.empty((_ROWS, BLOCK_COLUMNS), np.float32)
        _task(a, lda, bp, out, task, groups, chunk, group, kc, kinds, vectors, residual,
              scratch)
