"""Recurrent ONNX ops (RNN, GRU, LSTM), unrolled over the (static) sequence length.

Each step is a handful of ``nn.dense`` + elementwise calls; forward, reverse and
bidirectional layers and both layouts are supported. With ``sequence_lens`` (shorter
sequences in a batch, known only at run time), step ``t`` of batch entry ``b`` updates the
state only where ``t < sequence_lens[b]`` and yields zeros elsewhere: the final state is the
state after the entry's last step, and a reverse pass starts at the entry's own last step.
"""

from __future__ import annotations

import numpy as np

from ..registry import converter
from .common import scalar, unsupported


def _activation(ctx, name, alpha, beta):
    def apply(x):
        s = lambda v: scalar(ctx, v, ctx.dtype(x))  # noqa: E731
        lowered = name.lower()
        if lowered == "sigmoid":
            return ctx.emit("sigmoid", x)
        if lowered == "tanh":
            return ctx.emit("tanh", x)
        if lowered == "relu":
            return ctx.emit("nn.relu", x)
        if lowered == "leakyrelu":
            return ctx.emit("nn.leaky_relu", x, alpha=float(alpha if alpha is not None else 0.01))
        if lowered == "hardsigmoid":
            a = alpha if alpha is not None else 0.2
            b = beta if beta is not None else 0.5
            return ctx.emit("clip", ctx.emit("add", ctx.emit("multiply", x, s(a)), s(b)),
                            a_min=0.0, a_max=1.0)
        if lowered == "scaledtanh":
            return ctx.emit("multiply", s(alpha), ctx.emit("tanh", ctx.emit("multiply", x,
                                                                            s(beta))))
        if lowered == "affine":
            return ctx.emit("add", ctx.emit("multiply", x, s(alpha)), s(beta))
        unsupported(f"RNN activation {name!r} is not supported")
    return apply


def _activations(ctx, attrs, defaults, directions):
    names = list(attrs.get("activations", defaults * directions))
    alphas = list(attrs.get("activation_alpha", []))
    betas = list(attrs.get("activation_beta", []))
    funcs = []
    for i, name in enumerate(names):
        funcs.append(_activation(ctx, name, alphas[i] if i < len(alphas) else None,
                                 betas[i] if i < len(betas) else None))
    per = len(defaults)
    return [funcs[d * per:(d + 1) * per] for d in range(directions)]


def _direction_slice(ctx, tensor, index):
    return ctx.emit("take", tensor, ctx.const(np.int64(index)), axis=0, mode="clip")


def _split(ctx, tensor, parts, axis):
    tup = ctx.emit("split", tensor, indices_or_sections=parts, axis=axis)
    return [ctx.tuple_get(tup, i) for i in range(parts)]


def _prepare(ctx, inputs, attrs, gates):
    """Shared input handling; returns (X steps, per-direction weights, initial states...)."""
    x = inputs[0]
    layout = attrs.get("layout", 0)
    if layout:
        x = ctx.emit("transpose", x, axes=[1, 0, 2])
    shape = ctx.static_shape(x)
    if shape is None:
        unsupported("recurrent ops need a static sequence length and batch size")
    steps, batch = shape[0], shape[1]
    seq_lens = inputs[4] if len(inputs) > 4 else None
    if seq_lens is not None:
        lens = ctx.const_value(seq_lens)
        if lens is not None and np.all(lens == steps):
            seq_lens = None
        else:
            # [batch, 1] so that it broadcasts against the [batch, hidden] states
            seq_lens = ctx.emit("reshape", ctx.emit("cast", seq_lens, dtype="int64"),
                                newshape=[batch, 1])
    direction = attrs.get("direction", "forward")
    directions = 2 if direction == "bidirectional" else 1
    hidden = attrs.get("hidden_size") or int(ctx.shape(inputs[2])[-1])
    xs = [ctx.emit("take", x, ctx.const(np.int64(t)), axis=0, mode="clip") for t in range(steps)]
    return xs, layout, direction, directions, int(hidden), batch, seq_lens


def _masked(ctx, seq_lens, t, new, old):
    """``new`` where step ``t`` is inside the entry's sequence, else ``old`` (the state held
    over, or zeros for the step output when ``old`` is None)."""
    if seq_lens is None:
        return new
    if old is None:
        old = scalar(ctx, 0, ctx.dtype(new))
    inside = ctx.emit("less", ctx.const(np.int64(t)), seq_lens)
    return ctx.emit("where", inside, new, old)


def _state(ctx, tensor, d, batch, hidden, dtype, layout):
    if tensor is None:
        return ctx.const(np.zeros((batch, hidden), dtype=dtype))
    if layout:
        tensor = ctx.emit("transpose", tensor, axes=[1, 0, 2])
    return _direction_slice(ctx, tensor, d)


def _finish(ctx, per_direction_ys, finals, layout):
    """Stack step outputs into Y [seq, dirs, batch, H] and finals into [dirs, batch, H]."""
    ys = [ctx.emit("stack", ctx.make_tuple(ys), axis=0) for ys in per_direction_ys]
    y = ctx.emit("stack", ctx.make_tuple(ys), axis=1)
    outputs = [y] + [ctx.emit("stack", ctx.make_tuple(states), axis=0) for states in finals]
    if layout:
        outputs[0] = ctx.emit("transpose", y, axes=[2, 0, 1, 3])
        outputs[1:] = [ctx.emit("transpose", o, axes=[1, 0, 2]) for o in outputs[1:]]
    return outputs


def _bias_parts(ctx, bias, d, gates, hidden, dtype):
    if bias is None:
        zero = ctx.const(np.zeros(gates * hidden, dtype=dtype))
        return zero, zero
    return _split(ctx, _direction_slice(ctx, bias, d), 2, 0)


def _order(direction, d, steps):
    reverse = direction == "reverse" or d == 1
    return list(range(steps - 1, -1, -1)) if reverse else list(range(steps))


def _clip(ctx, value, attrs):
    if "clip" not in attrs:
        return value
    limit = float(attrs["clip"])
    return ctx.emit("clip", value, a_min=-limit, a_max=limit)


@converter("RNN")
def _rnn(ctx, inputs, attrs):
    xs, layout, direction, directions, hidden, batch, lens = _prepare(ctx, inputs, attrs, 1)
    dtype = ctx.dtype(inputs[0])
    acts = _activations(ctx, attrs, ["Tanh"], directions)
    ys_all, finals = [], [[]]
    for d in range(directions):
        w = _direction_slice(ctx, inputs[1], d)
        r = _direction_slice(ctx, inputs[2], d)
        wb, rb = _bias_parts(ctx, inputs[3] if len(inputs) > 3 else None, d, 1, hidden, dtype)
        h = _state(ctx, inputs[5] if len(inputs) > 5 else None, d, batch, hidden, dtype, layout)
        ys = [None] * len(xs)
        for t in _order(direction, d, len(xs)):
            pre = ctx.emit("add", ctx.emit("add", ctx.emit("nn.dense", xs[t], w),
                                           ctx.emit("nn.dense", h, r)),
                           ctx.emit("add", wb, rb))
            h = _masked(ctx, lens, t, acts[d][0](_clip(ctx, pre, attrs)), h)
            ys[t] = _masked(ctx, lens, t, h, None)
        ys_all.append(ys)
        finals[0].append(h)
    return _finish(ctx, ys_all, finals, layout)


@converter("GRU")
def _gru(ctx, inputs, attrs):
    xs, layout, direction, directions, hidden, batch, lens = _prepare(ctx, inputs, attrs, 3)
    dtype = ctx.dtype(inputs[0])
    acts = _activations(ctx, attrs, ["Sigmoid", "Tanh"], directions)
    before_reset = attrs.get("linear_before_reset", 0)
    ys_all, finals = [], [[]]
    for d in range(directions):
        wz, wr, wh = _split(ctx, _direction_slice(ctx, inputs[1], d), 3, 0)
        rz, rr, rh = _split(ctx, _direction_slice(ctx, inputs[2], d), 3, 0)
        wb, rb = _bias_parts(ctx, inputs[3] if len(inputs) > 3 else None, d, 3, hidden, dtype)
        wbz, wbr, wbh = _split(ctx, wb, 3, 0)
        rbz, rbr, rbh = _split(ctx, rb, 3, 0)
        f, g = acts[d]
        h = _state(ctx, inputs[5] if len(inputs) > 5 else None, d, batch, hidden, dtype, layout)
        ys = [None] * len(xs)
        for t in _order(direction, d, len(xs)):
            x = xs[t]

            def gate(w, r, wbias, rbias, state):
                return ctx.emit("add", ctx.emit("add", ctx.emit("nn.dense", x, w), wbias),
                                ctx.emit("add", ctx.emit("nn.dense", state, r), rbias))
            z = f(_clip(ctx, gate(wz, rz, wbz, rbz, h), attrs))
            reset = f(_clip(ctx, gate(wr, rr, wbr, rbr, h), attrs))
            if before_reset:
                inner = ctx.emit("multiply", reset, ctx.emit("add", ctx.emit("nn.dense", h, rh),
                                                             rbh))
                pre = ctx.emit("add", ctx.emit("add", ctx.emit("nn.dense", x, wh), wbh), inner)
            else:
                pre = gate(wh, rh, wbh, rbh, ctx.emit("multiply", reset, h))
            candidate = g(_clip(ctx, pre, attrs))
            one = scalar(ctx, 1, dtype)
            h = _masked(ctx, lens, t, ctx.emit(
                "add", ctx.emit("multiply", ctx.emit("subtract", one, z), candidate),
                ctx.emit("multiply", z, h)), h)
            ys[t] = _masked(ctx, lens, t, h, None)
        ys_all.append(ys)
        finals[0].append(h)
    return _finish(ctx, ys_all, finals, layout)


@converter("LSTM")
def _lstm(ctx, inputs, attrs):
    xs, layout, direction, directions, hidden, batch, lens = _prepare(ctx, inputs, attrs, 4)
    dtype = ctx.dtype(inputs[0])
    acts = _activations(ctx, attrs, ["Sigmoid", "Tanh", "Tanh"], directions)
    if attrs.get("input_forget", 0):
        unsupported("LSTM input_forget=1 is not supported")
    ys_all, finals = [], [[], []]
    peepholes = inputs[7] if len(inputs) > 7 else None
    for d in range(directions):
        w = _direction_slice(ctx, inputs[1], d)
        r = _direction_slice(ctx, inputs[2], d)
        wb, rb = _bias_parts(ctx, inputs[3] if len(inputs) > 3 else None, d, 4, hidden, dtype)
        bias = ctx.emit("add", wb, rb)
        h = _state(ctx, inputs[5] if len(inputs) > 5 else None, d, batch, hidden, dtype, layout)
        c = _state(ctx, inputs[6] if len(inputs) > 6 else None, d, batch, hidden, dtype, layout)
        if peepholes is not None:
            pi, po, pf = _split(ctx, _direction_slice(ctx, peepholes, d), 3, 0)
        f, g, hact = acts[d]
        ys = [None] * len(xs)
        for t in _order(direction, d, len(xs)):
            pre = ctx.emit("add", ctx.emit("add", ctx.emit("nn.dense", xs[t], w),
                                           ctx.emit("nn.dense", h, r)), bias)
            i_pre, o_pre, f_pre, c_pre = _split(ctx, pre, 4, 1)
            if peepholes is not None:
                i_pre = ctx.emit("add", i_pre, ctx.emit("multiply", pi, c))
                f_pre = ctx.emit("add", f_pre, ctx.emit("multiply", pf, c))
            i_gate = f(_clip(ctx, i_pre, attrs))
            f_gate = f(_clip(ctx, f_pre, attrs))
            c_new = ctx.emit("add", ctx.emit("multiply", f_gate, c),
                             ctx.emit("multiply", i_gate, g(_clip(ctx, c_pre, attrs))))
            if peepholes is not None:
                o_pre = ctx.emit("add", o_pre, ctx.emit("multiply", po, c_new))
            o_gate = f(_clip(ctx, o_pre, attrs))
            h = _masked(ctx, lens, t, ctx.emit("multiply", o_gate, hact(c_new)), h)
            c = _masked(ctx, lens, t, c_new, c)
            ys[t] = _masked(ctx, lens, t, h, None)
        ys_all.append(ys)
        finals[0].append(h)
        finals[1].append(c)
    return _finish(ctx, ys_all, finals, layout)
