"""Chain steps: graph node calls other than generated kernels that a call chain can run.

:mod:`interp.graph_chains` runs consecutive small node calls inside one generated numba
function (:mod:`jitkernels.codegen.chain`). Generated kernels join a chain as they are; a
tiny model also has nodes whose work runs in hand-written kernels behind Python dispatch
(keyword spotting's two 3x3 conv2d and its conv1d, its mean and softmax), and there that
Python is as costly as the arithmetic: each conv node spent 10-16 us in attribute parsing,
cost rules, plan and scratch lookups and epilogue gathering around a 28-45 us kernel.
:func:`steps_of` turns such a call, for one fixed set of graph arrays, into *steps*
``(callee, values)``: a compiled function (named by module and function, so the chain's
source imports it and is cached on disk) and its arguments, everything a call works out per
run (the packed weight, the plan, the zero-padded planes buffer, the epilogue's vectors)
worked out once. Steps are made per runtime binding (a rebound input rebuilds them). A
:func:`standalone` step (a conv layer) is called from Python on its own, prepared, instead
of inside a chain (:mod:`interp.graph_chains` says why); :func:`resolve` gives that call.

Cost rule (which calls become steps):

* a ``FusedKernel`` anchored on ``nn.conv2d`` (channels-last with its fused epilogue, or
  channels-first) or ``nn.conv1d`` (channels-first) whose layer the direct kernel takes
  (:func:`jitkernels.cpu.direct_conv.direct_pays`) and runs on one thread (under
  :data:`CONV_MAX_FLOPS`): the direct kernel's serial form, then (channels-first, no fused
  epilogue) the group's generated kernel on the anchor's buffer. The layer's weight and
  per-channel epilogue operands must be read-only (a built graph's bound weights are): their
  packed or gathered form is kept;
* a ``FusedKernel`` anchored on a channels-last ``nn.conv2d`` with its fused epilogue that
  the implicit-GEMM kernel takes (:func:`jitkernels.cpu.implicit_conv.pays`, a read-only
  weight): a standalone step, :func:`jitkernels.cpu.layer_calls.run_layer` on the
  arguments prepared once (it spent ~15-20 us of Python per call in checks, plan, packed
  weight and epilogue lookups; one thread, CPU time: SqueezeNet 1.1 8.5-9.3 -> 7.8 ms,
  DenseNet-121 38.1-38.5 -> 37.0-37.9 ms); likewise a channels-last depthwise layer with
  its fused epilogue (:func:`jitkernels.cpu.layer_calls.run_depthwise`);
* a single-op ``mean``/``sum`` over contiguous axes or ``nn.softmax``/``nn.log_softmax`` of
  at most :data:`SMALL_ELEMENTS` elements (the kernels' serial sizes).

Anything else returns None and keeps its own call. ``IRLIB_CHAIN_STEPS=0`` turns these
steps off (chains then hold generated kernels only).
"""

from __future__ import annotations

import math
import os

import numpy as np
from numba import njit

from .._geometry import conv_out, normalize_axes, ntuple, padding_pairs
from .chain import Literal, kernel_digest

__all__ = ["steps_of", "enabled", "reduce_serial", "resolve", "standalone",
           "match_channels_first", "ENV_SWITCH",
           "CONV_MAX_FLOPS", "SMALL_ELEMENTS"]

ENV_SWITCH = "IRLIB_CHAIN_STEPS"
"""Environment variable: ``0`` (``off``/``false``/``no``) keeps every non-generated call
out of chains (read per call of :func:`steps_of`)."""

CONV_MAX_FLOPS = 4e6
"""Largest conv layer (flops, 2 per multiply-add) run as a chain step: the direct kernel's
serial size (:data:`jitkernels.cpu.direct_conv.PARALLEL_MIN_FLOPS`); larger layers keep
their own call, where the kernel may use threads and the Python share is small."""

SMALL_ELEMENTS = 4096
"""Largest reduction or softmax input (elements) run as a chain step (the CPU kernels'
serial size for softmax, :data:`jitkernels.cpu.norm.SMALL_SOFTMAX`)."""

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_DIRECT = ("jitkernels.cpu.direct_conv", "_direct_serial")
_IMPLICIT = ("jitkernels.cpu.layer_calls", "run_layer")
_DEPTHWISE = ("jitkernels.cpu.layer_calls", "run_depthwise")
_REDUCE = ("jitkernels.codegen.chain_steps", "reduce_serial")
_SOFTMAX = ("jitkernels.cpu.norm", "softmax_arb")
_KINDS = {"sum": 0, "mean": 1}


def enabled() -> bool:
    """Whether chains take the steps of this module (:data:`ENV_SWITCH`)."""
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "off", "false", "no")


def steps_of(fn, args) -> list | None:
    """The chain steps doing the work of one node call, or None (see the module docstring).

    Args:
        fn: the node's library function (a ``FusedKernel``, an into-call, ...).
        args: its argument arrays (inputs then outputs) as the graph binds them.

    Returns:
        ``[(callee, values)]``: ``callee`` a generated kernel's digest or ``(module,
        function name)``, ``values`` its arguments (arrays or :class:`Literal`); None when
        the call keeps its own call.
    """
    if not enabled() or not all(type(a) is np.ndarray and a.ndim > 0 for a in args):
        return None
    from . import FusedKernel
    if isinstance(fn, FusedKernel):
        return _fused_steps(fn, args)
    ops = getattr(fn, "kernel_ops", None)
    if ops is not None and len(ops) == 1 and not getattr(fn, "reference_ops", True) \
            and hasattr(fn, "into") and getattr(fn, "operands", 1) is None \
            and type(getattr(fn, "attrs", None)) is dict and len(args) == fn.num_inputs + 1:
        if ops[0] in _KINDS and fn.num_inputs == 1:
            return _reduce_steps(_KINDS[ops[0]], args[0], args[1], fn.attrs)
        if ops[0] in ("nn.softmax", "nn.log_softmax") and fn.num_inputs == 1:
            return _softmax_steps(ops[0] == "nn.log_softmax", args[0], args[1], fn.attrs)
    return None


def standalone(callee) -> bool:
    """Whether a step runs as its own prepared call rather than inside a chain: a conv
    layer's direct, implicit-GEMM or depthwise kernel (see :mod:`interp.graph_chains` for
    the measurement)."""
    return callee in (_DIRECT, _IMPLICIT, _DEPTHWISE)


def resolve(callee, values) -> tuple:
    """A step as a plain call ``(function, arguments)`` made from Python: the generated
    kernel or the named numba function, :class:`Literal` arguments as their values.

    Args:
        callee, values: one step of :func:`steps_of`.
    """
    import importlib
    from .chain import generated_kernel
    if isinstance(callee, tuple):
        function = getattr(importlib.import_module(callee[0]), callee[1])
    else:
        function = generated_kernel(callee)
    if any(isinstance(v, Literal) for v in values):
        values = [v.value if isinstance(v, Literal) else v for v in values]
    return function, values if type(values) is tuple else tuple(values)


# -- channels-first epilogues ----------------------------------------------------------------

def match_channels_first(group, anchor):
    """The epilogue of a group anchored on a channels-first (NCW/NCHW) ``nn.conv1d`` or
    ``nn.conv2d`` as ``[(kind, operand)]`` (kinds of :mod:`jitkernels.cpu.epilogue`; an
    operand is an input slot, a per-channel constant vector or None), or None.

    The group must be a straight chain from the anchor to its one output of ``nn.relu``,
    ``nn.bias_add`` on axis 1, ``add``/``multiply`` with an operand that varies along the
    channel axis only (a bias, a folded batch norm), or ``add`` of a tensor shaped like
    the output (a residual). The direct kernel's step then applies it while each block of
    output rows is in cache (:func:`steps_of`), instead of a generated kernel making a
    second pass over an anchor buffer. Called by the code generator when it compiles a
    group (the group's nodes are gone by run time).

    Args:
        group: the code generator's group (``nodes``, ``outputs``, ``slot_of``).
        anchor: the anchor call.
    """
    from ..cpu.epilogue import RELU, RESIDUAL
    from irlib.ir import expr as E
    name = anchor.op.name
    if name not in ("nn.conv1d", "nn.conv2d") or len(group.outputs) != 1:
        return None
    canon = "NCW" if name == "nn.conv1d" else "NCHW"
    attrs = anchor.attrs
    if (attrs.get("data_layout") or canon) != canon or \
            (attrs.get("out_layout") or attrs.get("data_layout") or canon) != canon:
        return None
    out_shape = _static(anchor)
    dtype = getattr(anchor._checked_type, "dtype", None)
    if out_shape is None or len(out_shape) != len(canon):
        return None
    consumers: dict = {}
    calls = [n for n in group.nodes if isinstance(n, E.Call)]
    for call in calls:
        for arg in call.args:
            consumers.setdefault(arg, []).append(call)
    steps, current, seen = [], anchor, {anchor}
    while current is not group.outputs[0]:
        users = consumers.get(current, [])
        if len(users) != 1:
            return None
        call = users[0]
        if not isinstance(call.op, E.Op) or _static(call) != out_shape \
                or call._checked_type.dtype != dtype:
            return None
        op, args = call.op.name, call.args
        if op == "nn.relu":
            steps.append((RELU, None))
        elif op in ("nn.bias_add", "add", "multiply") and len(args) == 2 \
                and (args[0] is current) != (args[1] is current):
            other = args[1] if args[0] is current else args[0]
            if op == "nn.bias_add" and (args[0] is not current
                                        or int(call.attrs.get("axis", 1)) % len(out_shape) != 1):
                return None
            step = _operand_step(op, other, out_shape, dtype, group)
            if step is None:
                return None
            steps.append(step)
        else:
            return None
        seen.add(call)
        current = call
    if any(call not in seen for call in calls) or \
            sum(1 for kind, _ in steps if kind == RESIDUAL) > 1:
        return None
    return steps


def _static(node):
    try:
        return tuple(int(d) for d in node._checked_type.shape)
    except (TypeError, ValueError, AttributeError):
        return None


def _operand_step(op, other, out_shape, dtype, group):
    """``(kind, operand)`` of an add/multiply/bias_add link, or None."""
    from irlib.ir import expr as E
    from ..cpu.epilogue import ADD, MUL, RESIDUAL
    shape = _static(other)
    if shape is None or getattr(other._checked_type, "dtype", None) != dtype:
        return None
    if op == "nn.bias_add":
        if len(shape) != 1:
            return None
        full = (1, shape[0]) + (1,) * (len(out_shape) - 2)
    else:
        if len(shape) > len(out_shape):
            return None
        full = (1,) * (len(out_shape) - len(shape)) + shape
    kind = MUL if op == "multiply" else ADD
    if full == out_shape and op == "add" and not isinstance(other, E.Constant) \
            and other in group.slot_of:
        return (RESIDUAL, group.slot_of[other])
    if not all(d == 1 for i, d in enumerate(full) if i != 1) or full[1] not in (1, out_shape[1]):
        return None
    if isinstance(other, E.Constant):
        value = other.data.numpy()
        return (kind, np.ascontiguousarray(np.broadcast_to(value.reshape(-1),
                                                           (out_shape[1],))).astype(dtype))
    if other in group.slot_of and full[1] == out_shape[1]:
        return (kind, group.slot_of[other])
    return None


# -- conv layers ----------------------------------------------------------------------------

def _fused_steps(fn, args) -> list | None:
    """Steps of a ``FusedKernel`` anchored on a direct-kernel conv layer."""
    anchor = fn.anchor
    if anchor is None or anchor.op_name not in ("nn.conv1d", "nn.conv2d") \
            or fn._num_sizes or fn.small_dense is not None or len(anchor.operands) != 2 \
            or not all(isinstance(o, int) for o in anchor.operands):
        return None
    n = 1 if anchor.op_name == "nn.conv1d" else 2
    x, w = args[anchor.operands[0]], args[anchor.operands[1]]
    out = args[fn.num_inputs]
    fused = fn.fused_epilogue
    if fused is not None:
        epilogue = _epilogue_arrays(fused, args, out)
        if epilogue is None:
            return None
        step = _conv_step(x, w, out, anchor.attrs, n, epilogue)
        if step is None and n == 2:
            step = _implicit_step(x, w, out, anchor.attrs, epilogue)
        if step is None and n == 2:
            step = _depthwise_step(x, w, out, anchor.attrs, epilogue)
        return None if step is None else [step]
    matched = getattr(fn, "chain_epilogue", None)
    if matched is not None:                 # channels-first: the kernel applies it
        epilogue = _channels_first_arrays(matched, args, out)
        if epilogue is not None:
            step = _conv_step(x, w, out, anchor.attrs, n, epilogue)
            if step is not None:
                return [step]
    digest = kernel_digest(fn.jit_fn)
    shape = fn._anchor_type.shape if fn._anchor_type is not None else None
    if digest is None or shape is None or not all(isinstance(d, int) for d in shape):
        return None
    buffer = np.empty(shape, fn._anchor_type.dtype)
    step = _conv_step(x, w, buffer, anchor.attrs, n, None)
    if step is None:
        return None
    inputs = list(args[:fn.num_inputs])
    return [step, (digest, inputs + [buffer] + list(args[fn.num_inputs:]))]


def _epilogue_arrays(fused, args, out):
    """``(kinds, vectors, residual)`` of a fused epilogue on these arrays, gathered once;
    None when a per-channel operand may change between runs (a writable array)."""
    got = _gather_epilogue(fused.steps, args, out, fused.channels, fused.dtype,
                           fused.placeholder, False)
    return None if got is None else (fused.kinds,) + got


def _channels_first_arrays(steps, args, out):
    """:func:`_epilogue_arrays` for :func:`match_channels_first`'s steps (a constant
    per-channel operand may be a writable array: it is the build's own copy)."""
    got = _gather_epilogue(steps, args, out, out.shape[1], out.dtype,
                           np.zeros((1, 1, 1, 1), out.dtype), True)
    if got is None:
        return None
    vectors, residual = got
    if residual.ndim != 4:
        residual = residual[:, :, None, :]
    return np.array([kind for kind, _ in steps], np.int64), vectors, residual


def _gather_epilogue(steps, args, out, channels: int, dtype, placeholder,
                     writable_constants: bool):
    """``(vectors, residual)`` of epilogue ``steps`` (``(kind, operand)``: an input slot of
    ``args``, a constant array or None) on these arrays, or None: a residual not shaped,
    typed and laid out like ``out``, a per-channel operand of another size, or one that
    may change between runs (writable; a constant array too unless
    ``writable_constants``)."""
    from ..cpu.epilogue import RESIDUAL
    vectors = np.zeros((len(steps), channels), dtype)
    residual = placeholder
    for s, (kind, operand) in enumerate(steps):
        if operand is None:
            continue
        value = args[operand] if isinstance(operand, int) else operand
        if kind == RESIDUAL:
            if value.shape != out.shape or value.dtype != out.dtype \
                    or not value.flags.c_contiguous:
                return None
            residual = value
        elif value.flags.writeable and not (writable_constants
                                            and isinstance(operand, np.ndarray)) \
                or value.size != channels:
            return None
        else:
            vectors[s] = value.reshape(-1)
    return vectors, residual


def _conv_step(x, w, out, attrs, n: int, epilogue):
    """The direct kernel's serial call of one conv layer into ``out``, or None."""
    from ..cpu import direct_conv
    from ..cpu.epilogue import empty
    dtype = x.dtype
    if dtype not in _FLOATS or w.dtype != dtype or out.dtype != dtype or x.ndim != n + 2 \
            or w.ndim != n + 2 or out.ndim != n + 2 or not x.flags.c_contiguous \
            or not out.flags.c_contiguous or not w.flags.c_contiguous \
            or int(attrs.get("groups", 1)) != 1 or not direct_conv.enabled():
        return None
    if np.dtype(attrs.get("out_dtype") or dtype) != dtype:
        return None
    canon = "NCW" if n == 1 else "NCHW"
    data_layout = attrs.get("data_layout") or canon
    kernel_layout = attrs.get("kernel_layout") or ("OIW" if n == 1 else "OIHW")
    out_layout = attrs.get("out_layout") or data_layout
    channels_last = (n == 2 and (data_layout, kernel_layout, out_layout)
                     == ("NHWC", "HWIO", "NHWC"))
    if not channels_last and (data_layout, kernel_layout, out_layout) != (
            canon, "OI" + canon[2:], canon):
        return None
    strides, dilation = ntuple(attrs.get("strides", 1), n), ntuple(attrs.get("dilation", 1), n)
    before, after = padding_pairs(attrs.get("padding", 0), n)
    if n == 1:                              # a 1-D convolution as height 1
        x, w, out = x[:, :, None, :], w[:, :, None, :], out[:, :, None, :]
        strides, dilation = (1,) + strides, (1,) + dilation
        before, after = (0,) + tuple(before), (0,) + tuple(after)
    if channels_last:
        channels, kernel, out_channels = x.shape[3], w.shape[:2], w.shape[3]
        spatial = x.shape[1:3]
        if w.shape[2] != channels:
            return None
    else:
        channels, kernel, out_channels = x.shape[1], w.shape[2:], w.shape[0]
        spatial = x.shape[2:]
        if w.shape[1] != channels:
            return None
    sizes = tuple(conv_out(spatial[i], kernel[i], strides[i], dilation[i], before[i],
                           after[i]) for i in range(2))
    expected = ((x.shape[0],) + sizes + (out_channels,) if channels_last
                else (x.shape[0], out_channels) + sizes)
    if tuple(out.shape) != expected or min(sizes) <= 0:
        return None
    pointwise = tuple(kernel) == (1, 1) and strides == (1, 1) and not any(before) \
        and not any(after)
    positions = x.shape[0] * sizes[0] * sizes[1]
    flops = 2.0 * positions * out_channels * channels * math.prod(kernel)
    if pointwise or flops >= CONV_MAX_FLOPS or not direct_conv.direct_pays(
            channels, out_channels, tuple(kernel), positions):
        return None
    geometry, layout, size, spare = direct_conv.plan(
        x.shape, out.shape, tuple(kernel), strides, dilation, (before[0], before[1]),
        channels_last)
    planes = np.zeros(size + spare, dtype)
    hwio = w if channels_last else w.transpose(2, 3, 1, 0)
    wpack = direct_conv.packed_weight(w, not channels_last)
    packed = wpack is not None
    if not packed:                          # a writable weight: packed by every call
        wpack = np.zeros((math.prod(hwio.shape[:3]) + 1, -(-out_channels // 4) * 4), dtype)
    if epilogue is None:
        steps = empty(dtype)
        epilogue = steps.kinds, steps.vectors, steps.residual
    kinds, vectors, residual = epilogue
    return (_DIRECT, [x, hwio, wpack, Literal(packed), planes, out, geometry, layout,
                      kinds, vectors, residual])


def _implicit_step(x, w, out, attrs, epilogue):
    """The implicit-GEMM kernel's call of one NHWC conv layer with a fused epilogue, all its
    per-call work done once (:mod:`jitkernels.cpu.layer_calls`), or None: the layers
    ``conv._conv2d_nhwc`` gives that kernel (:func:`jitkernels.cpu.implicit_conv.pays`),
    with a read-only weight (its packed form is kept) and the layout the kernel takes."""
    from ..cpu import implicit_conv
    if x.dtype != np.float32 or w.dtype != np.float32 or out.dtype != np.float32 \
            or x.ndim != 4 or w.ndim != 4 or not x.flags.c_contiguous \
            or not out.flags.c_contiguous or w.flags.writeable \
            or int(attrs.get("groups", 1)) != 1 or not implicit_conv.enabled() \
            or np.dtype(attrs.get("out_dtype") or x.dtype) != x.dtype \
            or (attrs.get("data_layout"), attrs.get("kernel_layout"),
                attrs.get("out_layout") or "NHWC") != ("NHWC", "HWIO", "NHWC"):
        return None
    strides, dilation, before, after, sizes = _nhwc_window(attrs, x.shape, w.shape[:2])
    channels, out_channels = x.shape[3], w.shape[3]
    if w.shape[2] != channels or tuple(out.shape) != (x.shape[0],) + sizes + (out_channels,) \
            or min(sizes) <= 0 or not implicit_conv.pays(
                channels, out_channels, w.shape[:2], strides, dilation,
                x.shape[0] * sizes[0] * sizes[1], x.dtype):
        return None
    from ..cpu.layer_calls import prepare
    return (_IMPLICIT, prepare(x, w, out, strides, dilation, before, after, epilogue))


def _depthwise_step(x, w, out, attrs, epilogue):
    """The depthwise kernel's call of one NHWC layer (one output channel per input channel)
    with a fused epilogue, its per-call work done once
    (:func:`jitkernels.cpu.layer_calls.prepare_depthwise`), or None: the layers
    ``conv.into_fused`` gives ``depthwise_nhwc``, with a read-only weight."""
    from .._geometry import is_float, to_canonical
    layout = attrs.get("kernel_layout") or "OIHW"
    groups = int(attrs.get("groups", 1))
    if (attrs.get("data_layout"), attrs.get("out_layout") or "NHWC") != ("NHWC", "NHWC") \
            or x.ndim != 4 or w.ndim != 4 or sorted(layout) != sorted("HWIO") \
            or groups <= 1 or groups != x.shape[3] or w.shape[layout.index("O")] != groups \
            or w.shape[layout.index("I")] != 1 or not is_float(x, w) \
            or out.dtype != x.dtype or w.dtype != x.dtype or w.flags.writeable \
            or np.dtype(attrs.get("out_dtype") or x.dtype) != x.dtype \
            or not x.flags.c_contiguous or not out.flags.c_contiguous:
        return None
    hwoi = to_canonical(w, layout, "HWOI")
    strides, dilation, before, _, sizes = _nhwc_window(attrs, x.shape, hwoi.shape[:2])
    if tuple(out.shape) != (x.shape[0],) + sizes + (groups,) or min(sizes) <= 0:
        return None
    from ..cpu.layer_calls import prepare_depthwise
    weight = np.ascontiguousarray(hwoi).reshape(hwoi.shape[0], hwoi.shape[1], groups)
    return (_DEPTHWISE, prepare_depthwise(x, weight, out, strides, dilation, before, epilogue))


def _nhwc_window(attrs, shape, kernel) -> tuple:
    """``(strides, dilation, before, after, sizes)`` of a 2-D NHWC conv: its attributes as
    pairs of ints and the output's spatial sizes for data of ``shape`` and a ``kernel``
    of ``(KH, KW)``."""
    strides, dilation = ntuple(attrs.get("strides", 1), 2), ntuple(attrs.get("dilation", 1), 2)
    strides, dilation = tuple(int(v) for v in strides), tuple(int(v) for v in dilation)
    before, after = padding_pairs(attrs.get("padding", 0), 2)
    before, after = tuple(int(v) for v in before), tuple(int(v) for v in after)
    sizes = tuple(conv_out(shape[1 + i], kernel[i], strides[i], dilation[i], before[i],
                           after[i]) for i in range(2))
    return strides, dilation, before, after, sizes


# -- reductions and softmax -----------------------------------------------------------------

@njit(cache=True)
def reduce_serial(x, out, kind):
    """``out[a, b] = sum_r x[a, r, b]`` (``kind`` 0) or its mean (1), float64 accumulators,
    on the calling thread (a small input: no parallel region)."""
    rows, extent, inner = x.shape
    if inner == 1:                          # a reduction over the last axes: one sum a row
        for a in range(rows):
            total = 0.0
            for r in range(extent):
                total += x[a, r, 0]
            out[a, 0] = total / extent if kind == 1 else total
        return
    acc = np.empty(inner, np.float64)
    for a in range(rows):
        acc[:] = 0.0
        for r in range(extent):
            for b in range(inner):
                acc[b] += x[a, r, b]
        if kind == 1:
            for b in range(inner):
                acc[b] /= extent
        for b in range(inner):
            out[a, b] = acc[b]


def _arb(data, axes):
    """``data`` as an ``(A, R, B)`` view reducing the contiguous ``axes``, or None."""
    if not axes or axes[-1] - axes[0] + 1 != len(axes) or not data.flags.c_contiguous:
        return None
    shape = data.shape
    return data.reshape(math.prod(shape[:axes[0]]), math.prod(shape[axes[0]:axes[-1] + 1]),
                        math.prod(shape[axes[-1] + 1:]))


def _reduce_steps(kind, data, out, attrs):
    if data.dtype not in _FLOATS or out.dtype != data.dtype or data.size > SMALL_ELEMENTS \
            or not out.flags.c_contiguous or data.size == 0:
        return None
    axes = normalize_axes(attrs.get("axis"), data.ndim)
    if attrs.get("exclude"):
        axes = tuple(a for a in range(data.ndim) if a not in axes)
    x = _arb(data, tuple(sorted(axes)))
    if x is None or out.size != x.shape[0] * x.shape[2]:
        return None
    return [(_REDUCE, [x, out.reshape(x.shape[0], x.shape[2]), Literal(kind)])]


def _softmax_steps(log, data, out, attrs):
    if data.dtype not in _FLOATS or out.dtype != data.dtype or out.shape != data.shape \
            or data.size > SMALL_ELEMENTS or not out.flags.c_contiguous \
            or not data.flags.c_contiguous:
        return None
    axis = int(attrs.get("axis", -1)) % data.ndim
    x = _arb(data, (axis,))
    return [(_SOFTMAX, [x, out.reshape(x.shape), Literal(bool(log))])]
