"""One implicit-GEMM conv layer as a prepared call: its per-call Python done once.

``implicit_conv.conv2d_nhwc`` spends ~15 us of Python per call before its kernel starts:
argument checks, the layer's plan, the packed weight's cache lookup, the padding buffer,
the epilogue's arrays, fresh job counters and the choice between one thread and a team.
Inside a built graph all of that is the same at every run, so the graph's call chains
(:mod:`jitkernels.codegen.chain_steps`, :mod:`interp.graph_chains`) take the layer as a
*standalone step*: :func:`prepare` works out the arguments once per runtime binding and
each run is one call of :func:`run_layer`, which resets the counters and runs the kernel on
numba's current thread count. That count is the graph executor's choice for the run
(:func:`jitkernels.threads.run_threads`: one thread while other processes keep the cores
busy), so no other test of the machine's load is made here.
"""

from __future__ import annotations

import numpy as np
from numba import config, get_num_threads, njit

from .conv_core import scratch
from .implicit_conv import FLAT_ROW_BLOCKS, _plan, _shared, _team, packed_weight
from .work_sharing import new_state

__all__ = ["prepare", "run_layer"]


def prepare(x, weight, out, strides, dilation, before, after, epilogue) -> list:
    """The arguments of :func:`run_layer` for one layer (the caller has checked that the
    implicit kernel takes it: :func:`jitkernels.cpu.implicit_conv.pays`).

    Args:
        x: C-contiguous float32 NHWC data (the graph's buffer, read at each run).
        weight: the read-only float32 HWIO weight (packed here, once).
        out: the C-contiguous float32 NHWC output buffer.
        strides, dilation, before, after: pairs of ints (H, W).
        epilogue: ``(kinds, vectors, residual)`` arrays of the fused epilogue.
    """
    plan = _plan(x.shape, weight.shape, tuple(strides), tuple(dilation), tuple(before),
                 tuple(after), FLAT_ROW_BLOCKS, config.NUMBA_NUM_THREADS)
    padded = scratch("implicit_pad", plan.padded_shape, np.float32) if plan.pad else x
    kinds, vectors, residual = epilogue
    return [x, padded, plan.pad, packed_weight(weight, plan.cols), out, plan.geometry,
            np.ascontiguousarray(kinds, np.int64), np.ascontiguousarray(vectors, np.float32),
            np.ascontiguousarray(residual, np.float32), plan.chunks, new_state(),
            new_state()]


@njit(cache=True, nogil=True)
def _reset(pad_state, state):
    """Zero the job's counters."""
    pad_state[0] = 0
    pad_state[1] = 0
    state[0] = 0
    state[1] = 0


def run_layer(x, padded, pad, bp, out, geometry, kinds, vectors, residual, chunks,
              pad_state, state) -> None:
    """Run a layer :func:`prepare` set up: reset the job's counters, then the kernel's
    chunks on numba's current thread count (the team of ``implicit_conv``) or, with one
    thread or one chunk, on the calling thread. (Compiled calls from Python: a numba
    function that calls the team, or numba's thread count, cannot be cached on disk.)"""
    _reset(pad_state, state)
    workers = min(get_num_threads(), chunks)
    if workers > 1:
        _team(x, padded, pad, bp, out, geometry, kinds, vectors, residual, chunks,
              pad_state, state, workers)
    else:
        _shared(x, padded, pad, bp, out, geometry, kinds, vectors, residual, chunks,
                pad_state, state)
