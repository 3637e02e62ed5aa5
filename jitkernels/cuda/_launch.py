"""Host-side helpers of the CUDA kernels: device copies and 1-D launch geometry."""

from __future__ import annotations

import numpy as np
from numba import cuda

THREADS_PER_BLOCK = 64


def to_device(array) -> object:
    """A device copy of a numpy array (C-contiguous)."""
    return cuda.to_device(np.ascontiguousarray(array))


def launch(kernel, count: int, *args) -> None:
    """Run ``kernel`` with at least ``count`` threads in 1-D blocks."""
    if count == 0:
        return
    blocks = (count + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK
    kernel[blocks, THREADS_PER_BLOCK](*args)


def run(kernel, out_shape, dtype, *host_args) -> np.ndarray:
    """Copy ``host_args`` (numpy arrays; other values pass through) to the device, launch one
    thread per element of a new ``out_shape`` array (the kernel's last argument), and return
    the result on the host."""
    args = [to_device(a) if isinstance(a, np.ndarray) else a for a in host_args]
    out = cuda.device_array(tuple(out_shape), np.dtype(dtype))
    launch(kernel, int(np.prod(out_shape, dtype=np.int64)), *args, out)
    return out.copy_to_host()
