"""Fused scaled dot-product attention on CPU: ``softmax(Q K^T * scale + mask) V`` in one
numba kernel.

:func:`attention` is the entry point: 4-D views (any strides, no copies) of the queries
``q (B, H, Sq, D)``, the *transposed* keys ``kt (B, Hkv, D, Sk)``, the values
``v (B, Hkv, Sk, Dv)`` and the output ``out (B, H, Sq, Dv)``; ``Hkv`` divides ``H``
(grouped-query attention: query head ``h`` reads key/value head ``h // (H // Hkv)``).

Strategy (:func:`_attention_body`): one task per (batch, head) block, claimed from a
counter by numba's workers (:mod:`jitkernels.cpu.work_sharing`, up to numba's thread
count; while other processes keep the cores busy the caller runs them alone: a ``prange``
barrier then waited milliseconds for a descheduled worker, bert_int8's three attentions
took 8.8-13 ms wall on 2 threads at load 5 against 2.0 ms of CPU on one). The task
first packs its key head into a contiguous ``(D, Sk)`` panel and its value head into a
contiguous ``(Sk, Dv)`` panel (``O(Sk * D)`` copies against ``O(Sq * Sk * D)`` work; the
callers' views are strided, e.g. the ``(B, S, H, D)`` projections read in place). Then for
each query row it walks the keys in blocks of :data:`KEY_BLOCK`: the block's scores are ``D``
axpy passes over a contiguous panel row (vectorised over the keys), scaled, masked, and
folded into an online softmax (running maximum ``m``, running sum ``l``, the ``Dv``
accumulator rescaled by ``exp(m_old - m_new)`` when the maximum grows), so a score block
of at most ``KEY_BLOCK`` floats is all that exists of the score matrix and it stays in L1.
The accumulator update is an axpy over a contiguous value row. At the end the row is
divided by ``l`` and written to ``out``. Masks:

* ``mode`` 0: none; 1: additive (``mask`` float, broadcast to ``(B, H, Sq, Sk)`` by
  strides, e.g. a ``(1, 1, 1, Sk)`` padding mask costs no memory); 2: select
  (``where(mask, scores, fill)``: ``mask`` bool, positions where it is False get ``fill``);
* ``causal``: key ``j`` is visible to query ``i`` when ``j <= i + offset`` (``offset = 0``
  top-left, ``Sk - Sq`` bottom-right); hidden keys are skipped, not computed.

A row whose every key is hidden (``-inf`` everywhere) gives NaN, as the unfused
``softmax`` does. The numpy formula (tests/jitkernels/test_attention.py) is the oracle.
"""

from __future__ import annotations

import math

import numpy as np
from numba import get_num_threads, njit, prange

from .broadcast_kernel import segmented_micro_kernels
from .epilogue import RESIDUAL
from .packed_gemm import _block
from .work_sharing import claim, finish, new_state, share

(_n1, _n2, _n3, _n4, _n5, _n6, _n7, _n8, _n9, _n10) = segmented_micro_kernels(32)

NARROW_ROWS = 10
"""Rows of the 32-column micro-kernel block (10 x 2 zmm accumulators)."""

__all__ = ["attention", "KEY_BLOCK", "MODES"]

KEY_BLOCK = 256
"""Keys per online-softmax block (whole score rows up to 256 keys)."""

QUERY_BLOCK = 64
"""Query rows per block: a score block is at most 64 x 256 floats (64 KiB float32, L2)."""

MODES = {"none": 0, "add": 1, "select": 2}
"""The mask modes of :func:`attention`."""


_LOG2E = np.float32(1.4426950408889634)
_LN2_HI = np.float32(0.693359375)
_LN2_LO = np.float32(-2.12194440e-4)
_EXP_LOW = np.float32(-87.0)
_HALF = np.float32(0.5)
_ONE = np.float32(1.0)
_P0, _P1, _P2 = np.float32(1.9875691500e-4), np.float32(1.3981999507e-3), \
    np.float32(8.3334519073e-3)
_P3, _P4, _P5 = np.float32(4.1665795894e-2), np.float32(1.6666665459e-1), \
    np.float32(5.0000001201e-1)


@njit(cache=True, fastmath=True)
def _exp_row(row, width, shift, bits, fast):
    """``row[:width] = exp(row[:width] - shift)``; returns their sum.

    numba has no vector ``exp`` here (no SVML), and a scalar libm call per score cost more
    than both products together; so float32 rows use Cephes' ``expf`` scheme written to
    vectorise: ``x = k ln2 + r`` (``|r| <= ln2 / 2``), a degree-6 polynomial for ``e^r``
    (relative error ~1e-7), and ``2^k`` built from its exponent bits in the int32 scratch
    ``bits`` viewed as float32; arguments below -87 give 0. Without ``fast`` (float64 rows)
    it is ``math.exp``.
    """
    total = 0.0
    if not fast:
        for j in range(width):
            value = math.exp(row[j] - shift)
            row[j] = value
            total += value
        return total
    powers = bits.view(np.float32)
    m = np.float32(shift)
    for j in range(width):
        x = row[j] - m
        low = x < _EXP_LOW
        x = max(x, _EXP_LOW)
        # np.floor keeps float32 (math.floor gives an int64, and k * _LN2_HI then ran in
        # float64 with conversions: 2-3x slower)
        k = np.floor(x * _LOG2E + _HALF)
        r = x - k * _LN2_HI - k * _LN2_LO
        poly = ((((_P0 * r + _P1) * r + _P2) * r + _P3) * r + _P4) * r + _P5
        value = poly * r * r + r + _ONE
        row[j] = np.float32(0.0) if low else value
        bits[j] = (np.int32(k) + np.int32(127)) << np.int32(23)
    for j in range(width):
        value = row[j] * powers[j]
        row[j] = value
        total += value
    return total


@njit(cache=True)
def _packed_scores(queries, kpack, first_block, width, scores, scratch):
    """``scores[:, :width] = queries @ keys[k0:k0 + width].T`` from the key head packed as
    64-key column blocks (``kpack[jb, d, c] = key[64 jb + c, d]``), block ``first_block``
    holding key ``k0``: the packed GEMM's micro-kernel (:mod:`jitkernels.cpu.packed_gemm`)."""
    rows, depth = queries.shape
    for jb in range((width + 63) // 64):
        j0 = jb * 64
        count_j = min(64, width - j0)
        for i0 in range(0, rows, 6):
            count = min(6, rows - i0)
            _block(scratch, queries, kpack, i0, first_block + jb, depth, depth, count)
            for r in range(count):
                for c in range(count_j):
                    scores[i0 + r, j0 + c] = scratch[r, c]


@njit(cache=True)
def _packed_accumulate(scores, panel, width, acc, e0, scratch):
    """``acc[:, e0:e0 + 64] += scores[:, :width] @ panel[:width]`` for a ``(width, 64)``
    value panel whose rows are 64 contiguous floats (a 64-column block of the packed value
    head, or the value head itself when it is 64 wide and contiguous)."""
    rows = scores.shape[0]
    lda = scores.shape[1]
    count_e = min(64, acc.shape[1] - e0)
    for i0 in range(0, rows, 6):
        count = min(6, rows - i0)
        _block(scratch, scores, panel, i0, 0, width, lda, count)
        for r in range(count):
            for c in range(count_e):
                acc[i0 + r, e0 + c] += scratch[r, c]


@njit(cache=True)
def _narrow_block(acc, c_off, ldc, width, a, a_off, lda, bp, b_off, steps, rows, kinds,
                  vectors):
    """``acc[c_off + r*ldc + j] += sum_k a[a_off + r*lda + k] * bp[b_off + 32k + j]`` for
    ``r < rows`` (at most :data:`NARROW_ROWS`) and ``j < width`` (at most 32): the 32-column
    segmented micro-kernel (one segment), its epilogue one RESIDUAL step that adds what
    ``acc`` holds, the store masked to ``width`` columns."""
    if rows == 10:
        _n10(acc, c_off, ldc, width, a, a_off, lda, bp, b_off, 1, steps, 0, kinds, vectors,
             0, 0, acc)
    elif rows == 9:
        _n9(acc, c_off, ldc, width, a, a_off, lda, bp, b_off, 1, steps, 0, kinds, vectors,
            0, 0, acc)
    elif rows == 8:
        _n8(acc, c_off, ldc, width, a, a_off, lda, bp, b_off, 1, steps, 0, kinds, vectors,
            0, 0, acc)
    elif rows == 7:
        _n7(acc, c_off, ldc, width, a, a_off, lda, bp, b_off, 1, steps, 0, kinds, vectors,
            0, 0, acc)
    elif rows == 6:
        _n6(acc, c_off, ldc, width, a, a_off, lda, bp, b_off, 1, steps, 0, kinds, vectors,
            0, 0, acc)
    elif rows == 5:
        _n5(acc, c_off, ldc, width, a, a_off, lda, bp, b_off, 1, steps, 0, kinds, vectors,
            0, 0, acc)
    elif rows == 4:
        _n4(acc, c_off, ldc, width, a, a_off, lda, bp, b_off, 1, steps, 0, kinds, vectors,
            0, 0, acc)
    elif rows == 3:
        _n3(acc, c_off, ldc, width, a, a_off, lda, bp, b_off, 1, steps, 0, kinds, vectors,
            0, 0, acc)
    elif rows == 2:
        _n2(acc, c_off, ldc, width, a, a_off, lda, bp, b_off, 1, steps, 0, kinds, vectors,
            0, 0, acc)
    else:
        _n1(acc, c_off, ldc, width, a, a_off, lda, bp, b_off, 1, steps, 0, kinds, vectors,
            0, 0, acc)


_ADD_TO_ACC = np.array([RESIDUAL], np.int64)
"""The narrow kernel's epilogue: add the accumulator's contents (a RESIDUAL step)."""


@njit(cache=True)
def _narrow_accumulate(scores, values, k0, width, acc):
    """``acc[:, :Dv] += scores[:, :width] @ values[k0:k0 + width, :Dv]`` for a value head
    packed as ``(Sk, 32)`` contiguous rows (``Dv <= 32``, zero padded) and a C-contiguous
    ``acc``: 10-row blocks of the 32-column micro-kernel, added in registers and stored
    straight into ``acc`` (a head of 32 values no longer pays for 64 columns)."""
    rows = scores.shape[0]
    lda = scores.shape[1]
    count_e = acc.shape[1]
    flat = acc.reshape(-1)
    kinds = _ADD_TO_ACC
    vectors = np.zeros(1, acc.dtype)
    for i0 in range(0, rows, NARROW_ROWS):
        count = min(NARROW_ROWS, rows - i0)
        _narrow_block(flat, i0 * count_e, count_e, count_e, scores, i0 * lda, lda, values,
                      k0 * 32, width, count, kinds, vectors)


def _attention_body(q, kt, v, mask, out, scale, mode, fill, causal, offset, fast, packed,
                    state, tasks):
    batch, heads, seq_q, depth = q.shape
    heads_kv = kt.shape[1]
    seq_k = kt.shape[3]
    depth_v = v.shape[3]
    group = heads // heads_kv
    narrow = packed and depth_v <= 32
    # an additive mask that is one row for every query (a padding mask broadcast over the
    # heads and queries) is read once per block into a contiguous row (the add vectorises)
    shared_row = mode == 1 and mask.strides[2] == 0
    while True:
        task = claim(state, tasks)          # one (batch, head) block per chunk
        if task < 0:
            break
        b = task // heads
        h = task % heads
        hk = h // group
        if packed:
            # float32 on AVX-512: both products on the packed GEMM's micro-kernel, the key
            # head packed transposed into 64-key blocks, the value head into 64-column
            # blocks (zero padding); no BLAS call or result allocation per block
            kblocks = (seq_k + 63) // 64
            keys = np.zeros((kblocks, depth, 64), q.dtype)
            for j in range(seq_k):
                for d in range(depth):
                    keys[j // 64, d, j % 64] = kt[b, hk, d, j]
            # a 64-wide value head with contiguous rows is read where it is
            direct = depth_v == 64 and v.strides[3] == v.itemsize and \
                v.strides[2] == 64 * v.itemsize
            if direct:
                values = np.zeros((1, 1, 64), q.dtype)
            elif narrow:
                # a head of at most 32 values: (Sk, 32) rows for the 32-column kernel
                values = np.zeros((1, seq_k, 32), q.dtype)
                for j in range(seq_k):
                    for e in range(depth_v):
                        values[0, j, e] = v[b, hk, j, e]
            else:
                values = np.zeros(((depth_v + 63) // 64, seq_k, 64), q.dtype)
                for j in range(seq_k):
                    for e in range(depth_v):
                        values[e // 64, j, e % 64] = v[b, hk, j, e]
            scratch = np.empty((6, 64), q.dtype)
        else:
            keys = np.empty((1, seq_k, depth), q.dtype)
            for j in range(seq_k):          # d innermost: adjacent in (B, S, H, D) and
                for d in range(depth):      # (B, H, S, D) keys alike
                    keys[0, j, d] = kt[b, hk, d, j]
            values = np.empty((1, seq_k, depth_v), q.dtype)
            for j in range(seq_k):
                for e in range(depth_v):
                    values[0, j, e] = v[b, hk, j, e]
            scratch = np.empty((1, 1), q.dtype)
            direct = False
        for q0 in range(0, seq_q, QUERY_BLOCK):
            rows = min(QUERY_BLOCK, seq_q - q0)
            queries = np.empty((rows, depth), q.dtype)
            for r in range(rows):
                for d in range(depth):
                    queries[r, d] = q[b, h, q0 + r, d] * scale
            acc = np.zeros((rows, depth_v), q.dtype)
            running = np.full(rows, -np.inf)
            total = np.zeros(rows)
            bits = np.empty(KEY_BLOCK, np.int32)
            limit = seq_k
            if causal:
                limit = min(seq_k, max(q0 + rows + offset, 0))
            if packed:
                block_scores = np.empty((rows, KEY_BLOCK), q.dtype)
            mask_row = np.empty(KEY_BLOCK, q.dtype)
            for k0 in range(0, limit, KEY_BLOCK):
                width = min(KEY_BLOCK, limit - k0)
                if shared_row:
                    for j in range(width):
                        mask_row[j] = mask[b, h, 0, k0 + j]
                if packed:
                    _packed_scores(queries, keys, k0 // 64, width, block_scores, scratch)
                    scores = block_scores
                else:
                    scores = np.dot(queries, keys[0, k0:k0 + width].T)
                for r in range(rows):
                    i = q0 + r
                    if shared_row:
                        for j in range(width):
                            scores[r, j] += mask_row[j]
                    elif mode == 1:
                        for j in range(width):
                            scores[r, j] += mask[b, h, i, k0 + j]
                    elif mode == 2:
                        for j in range(width):
                            if not mask[b, h, i, k0 + j]:
                                scores[r, j] = fill
                    if causal:
                        for j in range(max(i + offset + 1 - k0, 0), width):
                            scores[r, j] = -np.inf
                    block_max = -np.inf
                    for j in range(width):
                        if scores[r, j] > block_max:
                            block_max = scores[r, j]
                    if block_max == -np.inf:           # every key of the block hidden
                        for j in range(width):
                            scores[r, j] = 0.0
                        continue
                    if block_max > running[r]:
                        if running[r] != -np.inf:
                            correction = math.exp(running[r] - block_max)
                            total[r] *= correction
                            for e in range(depth_v):
                                acc[r, e] *= correction
                        running[r] = block_max
                    total[r] += _exp_row(scores[r], width, running[r], bits, fast)
                if narrow:
                    _narrow_accumulate(scores, values[0], k0, width, acc)
                elif packed and direct:
                    _packed_accumulate(scores, v[b, hk, k0:k0 + width], width, acc, 0,
                                       scratch)
                elif packed:
                    for jb in range(values.shape[0]):
                        _packed_accumulate(scores, values[jb, k0:k0 + width], width, acc,
                                           jb * 64, scratch)
                else:
                    acc += np.dot(scores, values[0, k0:k0 + width])
            for r in range(rows):
                if total[r] == 0.0:
                    for e in range(depth_v):
                        out[b, h, q0 + r, e] = np.nan
                else:
                    inv = 1.0 / total[r]
                    for e in range(depth_v):
                        out[b, h, q0 + r, e] = acc[r, e] * inv
        finish(state)


_KERNELS: dict = {}


def _packed_products() -> bool:
    """Whether float32 attention runs its products on the packed GEMM's micro-kernel
    (AVX-512, ``IRLIB_PACKED_GEMM`` not off; read per call), else on BLAS."""
    from .packed_gemm import available
    return available()


_FASTMATH = {"nsz", "arcp", "contract", "reassoc"}

_claims = njit(cache=True, nogil=True, fastmath=_FASTMATH)(_attention_body)
"""The kernel as a global dispatcher, for :func:`_attention_team` to call."""


def _attention_team(q, kt, v, mask, out, scale, mode, fill, causal, offset, fast, packed,
                    state, tasks, threads):
    """The kernel run by ``threads`` of numba's workers at once (``share``'s ``team``),
    each claiming (batch, head) blocks until none is left."""
    for _ in prange(threads):
        _claims(q, kt, v, mask, out, scale, mode, fill, causal, offset, fast, packed, state,
                tasks)


def _kernel(dtype, mask_dtype):
    """``(kernel, team)`` for ``dtype`` data and a ``mask_dtype`` mask: the kernel and its
    :func:`_attention_team` driver, compiled on first use for one signature whose arrays are all strided (``'A'``) views, so contiguous and
    strided callers share one machine-code version (numba would otherwise compile one per
    layout combination); cached on disk."""
    key = (np.dtype(dtype), np.dtype(mask_dtype))
    kernels = _KERNELS.get(key)
    if kernels is None:
        from numba import from_dtype, types
        real = from_dtype(key[0])
        ro = types.Array(real, 4, "A", readonly=True)
        sig = types.void(ro, ro, ro, types.Array(from_dtype(key[1]), 4, "A", readonly=True),
                         types.Array(real, 4, "A"), real, types.int64, real, types.boolean,
                         types.int64, types.boolean, types.boolean,
                         types.Array(types.int64, 1, "C"), types.int64)
        kernel = njit([sig], cache=True, nogil=True, fastmath=_FASTMATH)(_attention_body)
        team = njit([types.void(*sig.args, types.int64)], cache=True,
                    parallel=True)(_attention_team)
        kernels = _KERNELS[key] = kernel, team
    return kernels


def attention(q, kt, v, out, scale: float, mask=None, mode: str = "none", fill: float = 0.0,
              causal: bool = False, offset: int = 0) -> None:
    """``out = softmax(q @ kt * scale (+ mask | masked by mask), axis=-1) @ v`` per
    (batch, head), written into ``out`` (see the module docstring for the strategy and
    :func:`_prepared` for the arguments)."""
    _prepared(q, kt, v, out, scale, mask, mode, fill, causal, offset)()


def _prepared(q, kt, v, out, scale: float, mask=None, mode: str = "none", fill: float = 0.0,
              causal: bool = False, offset: int = 0):
    """Check the operands of :func:`attention` and return a callable that runs the kernel
    on them (so a caller that runs the same arrays again skips the checks).

    Args:
        q: ``(B, H, Sq, D)`` float32/float64 view (any strides).
        kt: ``(B, Hkv, D, Sk)``: the keys transposed (any strides); ``Hkv`` divides ``H``.
        v: ``(B, Hkv, Sk, Dv)``.
        out: ``(B, H, Sq, Dv)`` writable, same dtype (any strides; must not overlap inputs).
        scale: multiplies the scores.
        mask: ``None``, or an array broadcastable to ``(B, H, Sq, Sk)``: float (``mode``
            ``"add"``) or bool (``mode`` ``"select"``).
        mode: ``"none"``, ``"add"`` or ``"select"`` (see :data:`MODES`).
        fill: the score of a position a select mask hides.
        causal: hide key ``j`` from query ``i`` unless ``j <= i + offset``.
        offset: the causal diagonal (0 top-left, ``Sk - Sq`` bottom-right).

    Raises:
        ValueError: if the shapes or dtypes disagree.
    """
    batch, heads, seq_q, depth = q.shape
    if kt.ndim != 4 or v.ndim != 4 or out.ndim != 4:
        raise ValueError("attention: q, kt, v and out must be 4-D")
    seq_k = kt.shape[3]
    if kt.shape[:3] != (batch, kt.shape[1], depth) or heads % kt.shape[1] \
            or v.shape[:3] != (batch, kt.shape[1], seq_k) \
            or out.shape != (batch, heads, seq_q, v.shape[3]):
        raise ValueError(f"attention: shapes q {q.shape}, kt {kt.shape}, v {v.shape}, "
                         f"out {out.shape} do not agree")
    if not (q.dtype == kt.dtype == v.dtype == out.dtype) or q.dtype.kind != "f":
        raise ValueError(f"attention: q, kt, v and out need one float dtype, got "
                         f"{q.dtype}, {kt.dtype}, {v.dtype}, {out.dtype}")
    code = MODES[mode]
    full = (batch, heads, seq_q, seq_k)
    if code == 0:
        mask = np.zeros((1, 1, 1, 1), q.dtype)
    else:
        mask = np.asarray(mask)
        mask = mask.astype(bool if code == 2 else q.dtype, copy=False)
        mask = mask.reshape((1,) * (4 - mask.ndim) + mask.shape)
    mask = np.broadcast_to(mask, full if code else (1, 1, 1, 1))
    kernel, team = _kernel(q.dtype, mask.dtype)
    fast = q.dtype == np.float32
    args = (q, kt, v, mask, out, q.dtype.type(scale), code, q.dtype.type(fill), bool(causal),
            int(offset), fast, fast and _packed_products())
    total = batch * heads

    def run():
        state = new_state()
        share(kernel, args + (state, total), state, total, get_num_threads(), team)
    return run


# -- running a fused attention function of the graph executor ---------------------------------

def _apply_steps(array, steps):
    """``array`` after the view steps (``("reshape", shape)`` / ``("transpose", axes)``)."""
    for kind, value in steps:
        array = array.reshape(value) if kind == "reshape" else array.transpose(value)
    return array


def _view_steps(array, steps):
    """``array`` after the view steps, or None when a reshape would need a copy."""
    for kind, value in steps:
        array = _reshape_view(array, value) if kind == "reshape" else array.transpose(value)
        if array is None:
            return None
    return array


def _reshape_view(array, shape):
    """A view of ``array`` with ``shape``, or None when that needs a copy."""
    view = array.view()
    try:
        view.shape = shape
    except AttributeError:
        return None
    return view


def _inverse_view(out, steps, result_shape):
    """A ``result_shape`` view of ``out`` that the steps would turn into ``out``, or None."""
    shapes = [tuple(result_shape)]
    for kind, value in steps:
        last = shapes[-1]
        shapes.append(tuple(value) if kind == "reshape" else tuple(last[a] for a in value))
    view = out
    for (kind, value), before in zip(reversed(steps), reversed(shapes[:-1])):
        if kind == "reshape":
            view = _reshape_view(view, before)
            if view is None:
                return None
        else:
            view = view.transpose(np.argsort(value))
    return view


def fused_function(func):
    """A destination-passing callable ``fn(*inputs, out)`` running the fused attention
    function ``func`` (made by :class:`irlib.transform.fuse_attention.FuseAttention`) with
    :func:`attention`, the operands read through views of the inputs and the result written
    through a view of ``out``; None when ``func`` is not a plan this kernel runs (the
    caller then runs the body op by op)."""
    from irlib.transform.fuse_attention import describe_attention
    plan = describe_attention(func)
    if plan is None:
        return None
    count = len(func.params)
    dtype = func.body.checked_type.dtype
    if dtype not in ("float32", "float64"):
        return None
    constant_mask = plan.mask[1] if plan.mask is not None and plan.mask[0] is None else None

    last = [None]

    def prepare(arrays):
        """``(callable, reusable)``: the kernel call on views of ``arrays``; reusable when
        every operand is a view (not a copy) of the arrays, so a later run with the same
        arrays sees their new contents."""
        operands, reusable = [], True
        for index, steps in (plan.q, plan.kt, plan.v):
            array = _view_steps(arrays[index], steps)
            if array is None:
                array, reusable = _apply_steps(arrays[index], steps), False
            operands.append(array)
        q, kt, v = operands
        mask = None
        if plan.mask is not None:
            mask = constant_mask if constant_mask is not None else arrays[plan.mask[0]]
        out = arrays[count]
        shape = q.shape[:3] + v.shape[3:]
        view = _inverse_view(out, plan.out_steps, shape)
        target = view if view is not None else np.empty(shape, out.dtype)
        call = _prepared(q, kt, v, target, plan.scale, mask, plan.mode, plan.fill,
                         plan.causal, plan.offset)
        if view is not None:
            return call, reusable

        def copy_out():
            call()
            np.copyto(out, _apply_steps(target, plan.out_steps))
        return copy_out, reusable

    def run(*arrays):
        # The graph executor passes the same arrays on every run of a static plan: the
        # views and the kernel's arguments are made once per set of arrays (one tuple read
        # once, so threads with their own arrays never run each other's).
        entry = last[0]
        if entry is None or len(entry[0]) != len(arrays) or \
                any(a is not b for a, b in zip(arrays, entry[0])):
            call, reusable = prepare(arrays)
            entry = (arrays, call)
            if reusable:
                last[0] = entry
        entry[1]()

    run.plan = plan
    return run
