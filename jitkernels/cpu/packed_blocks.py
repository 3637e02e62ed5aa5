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
from numba import njit, prange

from .broadcast_kernel import FLOAT32, micro_kernels
from .simd import LANES, row_add_into, row_affine, row_copy, row_mul_into

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
def finish_block(block, count, width, out, units, i0, j0, first, last, kinds, vectors,
                 channels, residual, ones, zeros):
    """Merge one ``count x width`` block from the micro-kernel's scratch into the output.

    ``first``: the block's first depth chunk (store; else add to what the output holds);
    ``last``: its last one (apply the epilogue steps to the scratch before storing). Whole
    16-lane vectors go through :mod:`jitkernels.cpu.simd`'s intrinsics (numba's own loops
    stay scalar here: LLVM cannot rule out that the operands overlap), the last
    ``width % 16`` columns through scalar loops.

    Args:
        block: the flat ``(6 * 64,)`` float32 scratch (row ``r`` at ``64 * r``).
        count, width: rows and columns of the block that are inside the output.
        out: the flat C-contiguous ``(M * N,)`` output; units: ``N``.
        i0, j0: the block's first row and column.
        first, last: booleans (see above).
        kinds: the epilogue's step kinds; vectors: its flat ``(S * channels,)`` per-channel
            operands; channels: their row length (``N``); residual: the flat ``(M * N,)``
            residual when a RESIDUAL step is present.
        ones, zeros: 16 float32 ones and zeros (the ReLU as ``max(0, v * 1 + 0)``).
    """
    whole = width // LANES
    tail = whole * LANES
    for r in range(count):
        row = r * BLOCK_COLUMNS
        target = (i0 + r) * units + j0
        if not first:
            row_add_into(block, row, LANES, out, target, LANES, whole)
            for j in range(tail, width):
                block[row + j] += out[target + j]
        if last:
            for s in range(kinds.shape[0]):
                kind = kinds[s]
                at = s * channels + j0
                if kind == 0:
                    row_add_into(block, row, LANES, vectors, at, LANES, whole)
                    for j in range(tail, width):
                        block[row + j] += vectors[at + j]
                elif kind == 1:
                    row_mul_into(block, row, LANES, vectors, at, LANES, whole)
                    for j in range(tail, width):
                        block[row + j] *= vectors[at + j]
                elif kind == 2:
                    row_add_into(block, row, LANES, residual, target, LANES, whole)
                    for j in range(tail, width):
                        block[row + j] += residual[target + j]
                else:
                    row_affine(block, row, LANES, ones, zeros, 0, 0.0, whole)
                    for j in range(tail, width):
                        block[row + j] = max(block[row + j], np.float32(0))
        row_copy(out, target, LANES, block, row, LANES, whole)
        for j in range(tail, width):
            out[target + j] = block[row + j]


@njit(cache=True)
def _task(a, lda, bp, out, task, groups, chunk, group, kc, kinds, vectors, residual, scratch,
          ones, zeros):
    """Run one task ``task = row_chunk * groups + g``: rows ``chunk`` x column blocks
    ``g * group ...`` (see the module docstring)."""
    rows, units = out.shape
    depth = bp.shape[1]
    flat_b = bp.reshape(-1)
    flat_out = out.reshape(-1)
    block = scratch.reshape(-1)
    flat_vectors = vectors.reshape(-1)
    flat_residual = residual.reshape(-1)
    channels = vectors.shape[1]
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
                finish_block(block, count, min(BLOCK_COLUMNS, units - j0), flat_out, units,
                             i0, j0, k0 == 0, k0 + steps >= depth, kinds, flat_vectors,
                             channels, flat_residual, ones, zeros)


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
    ones, zeros = np.ones(LANES, np.float32), np.zeros(LANES, np.float32)
    for task in range(tasks):
        _task(a, lda, bp, out, task, groups, chunk, group, kc, kinds, vectors, residual,
              scratch, ones, zeros)


@njit(cache=True, parallel=True)
def gemm_parallel(a, lda, bp, out, chunk, group, kc, kinds, vectors, residual):
    """:func:`gemm_serial` with the tasks on numba's threads (same arguments)."""
    groups = -(-bp.shape[0] // group)
    tasks = -(-out.shape[0] // chunk) * groups
    ones, zeros = np.ones(LANES, np.float32), np.zeros(LANES, np.float32)
    for task in prange(tasks):
        scratch = np.empty((_ROWS, BLOCK_COLUMNS), np.float32)
        _task(a, lda, bp, out, task, groups, chunk, group, kc, kinds, vectors, residual,
              scratch, ones, zeros)
