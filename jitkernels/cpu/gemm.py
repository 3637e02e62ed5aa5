"""CPU kernels of ``nn.dense``, ``nn.matmul`` and ``nn.batch_matmul``: irlib's BLAS GEMM
(:func:`jitkernels.cpu.blas.gemm`), which owns the threads (see :mod:`jitkernels.threads`).

Each has a destination-passing form ``kernel.into(out, *inputs, **attrs)`` that multiplies
straight into the graph's output array (True once written; False, nothing written, where
the kernel itself would take another path): in a transformer's decode step these products
are GEMVs of a few microseconds, and the result copy and allocation are a visible share.

A float32 ``nn.dense``/``nn.matmul`` whose weight is an int8-valued constant and whose data
holds integers spanning at most 255 (a quantized Linear after LowerIntegerMatMul) runs on
the exact uint8 x int8 VNNI kernel instead (:mod:`jitkernels.cpu.int8_vnni`; off with
``IRLIB_INT8_GEMM=0``). A float32 product of at most 64 rows by a read-only weight (a
graph constant: a decode step's projections) runs on the weight packed once
(:mod:`jitkernels.cpu.packed_gemm`; off with ``IRLIB_PACKED_GEMM=0``)."""

from __future__ import annotations

import numpy as np
from numba import njit

from .. import register_kernel
from .._geometry import is_float, reference
from .blas import gemm
from .int8_vnni import try_product as try_int8_product
from .packed_gemm import try_product as try_packed_product


def _special_product(a, b, transposed, out) -> bool:
    """``out = a @ b`` (``b.T`` when ``transposed``) on the int8 VNNI kernel or the packed
    few-row kernel when one applies; False (nothing written) otherwise."""
    return try_int8_product(a, b, transposed, out) or try_packed_product(a, b, transposed, out)


SINGLE_THREAD_MAX_FLOPS = 1 << 20
"""2-D products with ``M*K*N`` up to this run on one thread (numba's ``np.dot``, which calls
the scipy-bundled BLAS that :mod:`jitkernels.threads` limits to one thread); larger ones on
:func:`jitkernels.cpu.blas.gemm` (on OpenBLAS's threads when large). A decode step's GEMVs (``M = 1``) are this small: two threads make
them at best ~1.5x faster on an idle machine (weights in cache), but every multi-threaded
call must wake and wait for the second BLAS worker, which on a busy 2-core machine costs
milliseconds (measured: a (1, 256) x (256, 2048) product 21 us on one thread, 13 ms as
the first multi-threaded call after other work)."""


@njit(cache=True)
def _dot_into(a, b, out):
    np.dot(a, b, out)


def _contiguous(array) -> bool:
    flags = array.flags
    return flags.c_contiguous or flags.f_contiguous


def product(a, b, out) -> None:
    """``out = a @ b`` for 2-D operands: on one thread when small (see
    :data:`SINGLE_THREAD_MAX_FLOPS`), else :func:`jitkernels.cpu.blas.gemm`."""
    rows, depth = a.shape
    cols = b.shape[1]
    if 0 < rows * depth * cols <= SINGLE_THREAD_MAX_FLOPS and a.dtype == b.dtype == out.dtype \
            and out.flags.c_contiguous and _contiguous(a) and _contiguous(b):
        _dot_into(a, b, out)
    else:
        gemm(a, b, out)


def dense_core(x, w, out):
    """``out = x @ w.T`` for 2-D ``x (M, K)`` and ``w (U, K)``; ``out (M, U)``."""
    product(x, w.T, out)


def batch_matmul_nn(a, b, out):
    """``out[i] = a[i or 0] @ b[i or 0]`` (a batch of 1 broadcasts)."""
    gemm(a, b, out)


def batch_matmul_nt(a, b, out):
    """``out[i] = a[i or 0] @ b[i or 0].T`` (a batch of 1 broadcasts)."""
    gemm(a, np.swapaxes(b, 1, 2), out)


def _out_dtype(out_dtype, like):
    return np.dtype(out_dtype or like.dtype)


@register_kernel("nn.dense")
def dense(data, weight, units=None, out_dtype="", **_):
    """``nn.dense`` on CPU: ``data @ weight.T`` over the last axis of ``data``."""
    if not is_float(data, weight) or weight.ndim != 2 or data.ndim < 1:
        return reference("nn.dense", (data, weight), dict(units=units, out_dtype=out_dtype))
    x = np.ascontiguousarray(data).reshape(-1, data.shape[-1])
    out = np.empty((x.shape[0], weight.shape[0]), data.dtype)
    if not _special_product(x, weight, True, out):
        dense_core(x, np.ascontiguousarray(weight), out)
    out = out.reshape(data.shape[:-1] + (weight.shape[0],))
    return (out.astype(_out_dtype(out_dtype, data), copy=False),)


def _writable(out, dtype, shape) -> bool:
    return out.dtype == dtype and out.shape == shape and out.flags.c_contiguous \
        and out.flags.writeable


def _dense_into(out, data, weight, units=None, out_dtype="", **_) -> bool:
    """``nn.dense`` into ``out``; False where the kernel would not run a float GEMM."""
    if not is_float(data, weight) or weight.ndim != 2 or data.ndim < 1 \
            or _out_dtype(out_dtype, data) != data.dtype \
            or not _writable(out, data.dtype, data.shape[:-1] + (weight.shape[0],)):
        return False
    rows, flat = data.reshape(-1, data.shape[-1]), out.reshape(-1, weight.shape[0])
    if not _special_product(rows, weight, True, flat):
        dense_core(rows, weight, flat)
    return True


dense.into = _dense_into


@register_kernel("nn.matmul")
def matmul(tensor_a, tensor_b, units=None, out_dtype="", transpose_a=False, transpose_b=False,
           **_):
    """``nn.matmul`` on CPU: a 2-D ``b`` (optionally transposed) times a 2-D ``a`` or the rows
    of an n-D one (leading dims flattened); a ``b`` in either memory order (a transposed
    weight view, a weight folded to column-major) is read in place, never copied per call."""
    if (not is_float(tensor_a, tensor_b) or tensor_b.ndim != 2 or tensor_a.ndim < 2
            or (transpose_a and tensor_a.ndim != 2)):
        exact = _integer_matmul(tensor_a, tensor_b, out_dtype, transpose_a, transpose_b)
        if exact is not None:
            return (exact,)
        return reference("nn.matmul", (tensor_a, tensor_b),
                         dict(units=units, out_dtype=out_dtype, transpose_a=transpose_a,
                              transpose_b=transpose_b))
    lead = tensor_a.shape[:-1] if not transpose_a else (tensor_a.shape[1],)
    a = np.ascontiguousarray(tensor_a.T if transpose_a else tensor_a).reshape(-1, tensor_b.shape[
        1 if transpose_b else 0])
    b = tensor_b.T if transpose_b else tensor_b          # (depth, units), either layout
    if not _contiguous(b):
        b = np.ascontiguousarray(b)
    out = np.empty((a.shape[0], b.shape[1]), a.dtype)
    if not _special_product(a, tensor_b, transpose_b, out):
        product(a, b, out)
    out = out.reshape(tuple(lead) + (b.shape[1],))
    return (out.astype(_out_dtype(out_dtype, tensor_a), copy=False),)


def _integer_matmul(tensor_a, tensor_b, out_dtype, transpose_a, transpose_b):
    """An integer ``nn.matmul`` (quantized models' MatMulInteger) on the float GEMM when that
    is exact (:mod:`jitkernels.cpu.int_gemm`), else None."""
    from .int_gemm import exact_product
    if tensor_b.ndim != 2 or tensor_a.ndim < 2 or (transpose_a and tensor_a.ndim != 2):
        return None
    a = tensor_a.T if transpose_a else tensor_a
    b = tensor_b.T if transpose_b else tensor_b
    if a.shape[-1] != b.shape[0]:
        return None
    out = exact_product(a.reshape(-1, a.shape[-1]), b, _out_dtype(out_dtype, tensor_a),
                        product)
    return None if out is None else out.reshape(a.shape[:-1] + (b.shape[1],))


@register_kernel("nn.batch_matmul")
def batch_matmul(tensor_a, tensor_b, out_dtype="", transpose_a=False, transpose_b=True, **_):
    """``nn.batch_matmul`` on CPU: one BLAS GEMM per batch entry (batch 1 broadcasts)."""
    if (not is_float(tensor_a, tensor_b) or tensor_a.ndim != 3 or tensor_b.ndim != 3
            or (tensor_a.shape[0] != tensor_b.shape[0] and 1 not in
                (tensor_a.shape[0], tensor_b.shape[0]))):
        return reference("nn.batch_matmul", (tensor_a, tensor_b),
                         dict(out_dtype=out_dtype, transpose_a=transpose_a,
                              transpose_b=transpose_b))
    a = np.ascontiguousarray(np.swapaxes(tensor_a, 1, 2) if transpose_a else tensor_a)
    b = np.ascontiguousarray(tensor_b)
    batch = max(a.shape[0], b.shape[0])
    cols = b.shape[1] if transpose_b else b.shape[2]
    out = np.empty((batch, a.shape[1], cols), a.dtype)
    (batch_matmul_nt if transpose_b else batch_matmul_nn)(a, b, out)
    return (out.astype(_out_dtype(out_dtype, tensor_a), copy=False),)


def _matmul_into(out, tensor_a, tensor_b, units=None, out_dtype="", transpose_a=False,
                 transpose_b=False, **_) -> bool:
    """``nn.matmul`` into ``out`` (2-D float operands)."""
    if not is_float(tensor_a, tensor_b) or tensor_a.ndim != 2 or tensor_b.ndim != 2 \
            or _out_dtype(out_dtype, tensor_a) != tensor_a.dtype:
        return False
    a = tensor_a.T if transpose_a else tensor_a
    b = tensor_b.T if transpose_b else tensor_b
    if a.shape[1] != b.shape[0] or not _writable(out, a.dtype, (a.shape[0], b.shape[1])):
        return False
    if not _special_product(a, tensor_b, transpose_b, out):
        product(a, b, out)
    return True


matmul.into = _matmul_into


def _batch_matmul_into(out, tensor_a, tensor_b, out_dtype="", transpose_a=False,
                       transpose_b=True, **_) -> bool:
    """``nn.batch_matmul`` into ``out`` (3-D float operands, batch 1 broadcasts)."""
    if (not is_float(tensor_a, tensor_b) or tensor_a.ndim != 3 or tensor_b.ndim != 3
            or _out_dtype(out_dtype, tensor_a) != tensor_a.dtype
            or (tensor_a.shape[0] != tensor_b.shape[0] and 1 not in
                (tensor_a.shape[0], tensor_b.shape[0]))):
        return False
    a = np.swapaxes(tensor_a, 1, 2) if transpose_a else tensor_a
    b = np.swapaxes(tensor_b, 1, 2) if transpose_b else tensor_b
    shape = (max(a.shape[0], b.shape[0]), a.shape[1], b.shape[2])
    if a.shape[2] != b.shape[1] or not _writable(out, a.dtype, shape):
        return False
    gemm(a, b, out)
    return True


batch_matmul.into = _batch_matmul_into
