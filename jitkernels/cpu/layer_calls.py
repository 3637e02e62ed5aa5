"""Conv layers as prepared calls: their per-call Python done once.

``implicit_conv.conv2d_nhwc`` spends ~15 us of Python per call before its kernel starts
(argument checks, the layer's plan, the packed weight's cache lookup, the padding buffer,
the epilogue's arrays, fresh job counters, the choice between one thread and a team), and a
depthwise layer's path through ``conv.py`` ~23 us (attributes, layouts, its plan). Inside a
built graph all of that is the same at every run, so the graph's call chains
(:mod:`jitkernels.codegen.chain_steps`, :mod:`interp.graph_chains`) take such a layer as a
*standalone step*: a ``prepare`` function works out the arguments once per runtime binding
and each run is one call of a ``run`` function, which runs the kernel on numba's current
thread count: the graph executor's choice for the run
(:func:`jitkernels.threads.run_threads`: one thread while other processes keep the cores
busy).

* implicit-GEMM layers: :func:`prepare`, :func:`run_layer` (the job's counters reset, then
  ``implicit_conv``'s team or its serial kernel);
* depthwise NHWC layers: :func:`prepare_depthwise`, :func:`run_depthwise` (the plan of
  ``depthwise_nhwc``, then its serial or ``prange`` driver).
"""

from __future__ import annotations

import numpy as np
from numba import config, get_num_threads, njit

from . import depthwise_nhwc
from .conv_core import scratch
from .implicit_conv import FLAT_ROW_BLOCKS, _plan, _shared, _team, packed_weight
from .work_sharing import new_state, share

__all__ = ["prepare", "prepare_depthwise", "run_depthwise", "run_layer"]


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
    """Run a layer :func:`prepare` set up: reset the job's counters, then share the kernel's
    chunks as ``implicit_conv`` does, on numba's current thread count. (Called from Python:
    a numba function that calls the team, or numba's thread count, cannot be cached on
    disk.)"""
    _reset(pad_state, state)
    share(_shared, (x, padded, pad, bp, out, geometry, kinds, vectors, residual, chunks,
                    pad_state, state), state, chunks, get_num_threads(), _team)


def prepare_depthwise(x, weight, out, strides, dilation, before, epilogue) -> list:
    """The arguments of :func:`run_depthwise` for one depthwise layer (multiplier 1).

    Args:
        x: C-contiguous NHWC data; out: the C-contiguous NHWC output, of x's dtype.
        weight: ``(KH, KW, C)``, C-contiguous.
        strides, dilation, before: pairs of ints (H, W); the bottom/right padding follows
            from ``out``'s shape.
        epilogue: ``(kinds, vectors, residual)`` arrays of the fused epilogue.
    """
    params, planes, split, tasks, serial = depthwise_nhwc.layer_plan(
        x.shape, weight.shape, out.shape, out.itemsize, tuple(strides), tuple(dilation),
        tuple(before))
    kinds, vectors, residual = epilogue
    return [x, weight, out, np.ascontiguousarray(kinds, np.int64),
            np.ascontiguousarray(vectors, out.dtype), np.ascontiguousarray(residual, out.dtype),
            params, tasks, split, planes, serial]


def run_depthwise(x, w, out, kinds, vectors, residual, params, tasks, split, planes,
                  serial) -> None:
    """Run a layer :func:`prepare_depthwise` set up, on numba's current thread count (its
    serial driver for a layer planned serial, or with one thread)."""
    threads = 1 if serial else min(get_num_threads(), tasks)
    depthwise_nhwc.run_planned(x, w, out, kinds, vectors, residual, params, tasks, split,
                               planes, threads)
