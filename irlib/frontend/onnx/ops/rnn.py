"""Recurrent ONNX ops (RNN, GRU, LSTM): unrolled over a static sequence length, a loop over
one known only at run time.

Each step is a handful of ``nn.dense`` + elementwise calls (one ``cell`` function per op);
a static length unrolls the steps, a run-time one (``x`` of shape ``[T, batch, input]`` with
``T`` a size variable or ``?``: silero-vad's LSTM on a chunk of any length) runs the same cell
in a recursive loop (:func:`.loops.build_loop`) whose step outputs are stacked. Forward,
reverse and bidirectional layers and both layouts are supported; the batch size must be
static. With ``sequence_lens`` (shorter
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
    """Shared input handling.

    Returns:
        ``(x, steps, layout, direction, directions, hidden, batch, seq_lens)``: ``x`` time
        major (``[seq, batch, input]``), ``steps`` its static length or None (known only at
        run time: the cells then run in a loop), ``seq_lens`` None or ``[batch, 1]`` int64.
    """
    x = inputs[0]
    layout = attrs.get("layout", 0)
    if layout:
        x = ctx.emit("transpose", x, axes=[1, 0, 2])
    shape = ctx.shape(x)
    steps, batch = shape[0], shape[1]
    if not _is_int(batch):
        unsupported("recurrent ops need a static batch size")
    batch = int(batch)
    steps = int(steps) if _is_int(steps) else None
    seq_lens = inputs[4] if len(inputs) > 4 else None
    if seq_lens is not None:
        lens = ctx.const_value(seq_lens)
        if lens is not None and steps is not None and np.all(lens == steps):
            seq_lens = None
        else:
            # [batch, 1] so that it broadcasts against the [batch, hidden] states
            seq_lens = ctx.emit("reshape", ctx.emit("cast", seq_lens, dtype="int64"),
                                newshape=[batch, 1])
    direction = attrs.get("direction", "forward")
    directions = 2 if direction == "bidirectional" else 1
    hidden = attrs.get("hidden_size") or int(ctx.shape(inputs[2])[-1])
    return x, steps, layout, direction, directions, int(hidden), batch, seq_lens


def _is_int(dim) -> bool:
    return isinstance(dim, (int, np.integer)) and not isinstance(dim, bool)


def _masked(ctx, seq_lens, t, new, old):
    """``new`` where step ``t`` (an int64 scalar expression) is inside the entry's
    sequence, else ``old`` (the state held over, or zeros for the step output when ``old``
    is None)."""
    if seq_lens is None:
        return new
    if old is None:
        old = scalar(ctx, 0, ctx.dtype(new))
    inside = ctx.emit("less", t, seq_lens)
    return ctx.emit("where", inside, new, old)


def _run_direction(ctx, x, steps, reverse, states, cell, name):
    """Run ``cell`` over the time steps of ``x`` (forward, or from the end when
    ``reverse``), starting from ``states``.

    ``cell(x_t, t, states) -> (new_states, y_t)`` builds one step; ``t`` is the step's int64
    scalar index. A static ``steps`` unrolls the steps; otherwise they run in a loop (a
    recursive function, :func:`.loops.build_loop`) whose trip count is ``x``'s run-time
    length.

    Returns:
        ``(ys, final_states)``: ``ys`` the step outputs stacked in time order
        (``[seq, batch, hidden]``).
    """
    if steps is not None:
        ys = [None] * steps
        order = range(steps - 1, -1, -1) if reverse else range(steps)
        for t in order:
            index = ctx.const(np.int64(t))
            x_t = ctx.emit("take", x, index, axis=0, mode="clip")
            states, ys[t] = cell(x_t, index, states)
        return ctx.emit("stack", ctx.make_tuple(ys), axis=0), states
    from .loops import build_loop, run_loop
    length = ctx.emit("take", ctx.emit("shape_of", x, dtype="int64"),
                      ctx.const(np.int64(0)), axis=0, mode="clip")

    def make_body(i, cond, state_vars):
        t = i if not reverse else ctx.emit(
            "subtract", ctx.emit("subtract", length, ctx.const(np.int64(1))), i)
        x_t = ctx.emit("take", x, t, axis=0, mode="clip")
        new_states, y = cell(x_t, t, list(state_vars))
        return None, list(new_states), [y]

    parts = build_loop(ctx, list(states), make_body, length, name)
    finals, stacks = run_loop(ctx, *parts, list(states), ctx.const(np.bool_(True)))
    ys = stacks[0]
    if reverse:
        ys = ctx.emit("reverse", ys, axis=0)
    return ys, finals


def _state(ctx, tensor, d, batch, hidden, dtype, layout):
    if tensor is None:
        return ctx.const(np.zeros((batch, hidden), dtype=dtype))
    if layout:
        tensor = ctx.emit("transpose", tensor, axes=[1, 0, 2])
    return _direction_slice(ctx, tensor, d)


def _finish(ctx, per_direction_ys, finals, layout):
    """Stack the directions' outputs (each ``[seq, batch, H]``) into Y ``[seq, dirs, batch,
    H]`` and the final states into ``[dirs, batch, H]``."""
    y = ctx.emit("stack", ctx.make_tuple(per_direction_ys), axis=1)
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


def _clip(ctx, value, attrs):
    if "clip" not in attrs:
        return value
    limit = float(attrs["clip"])
    return ctx.emit("clip", value, a_min=-limit, a_max=limit)


@converter("RNN")
def _rnn(ctx, inputs, attrs):
    x, steps, layout, direction, directions, hidden, batch, lens = _prepare(ctx, inputs, attrs, 1)
    dtype = ctx.dtype(inputs[0])
    acts = _activations(ctx, attrs, ["Tanh"], directions)
    ys_all, finals = [], [[]]
    for d in range(directions):
        w = _direction_slice(ctx, inputs[1], d)
        r = _direction_slice(ctx, inputs[2], d)
        wb, rb = _bias_parts(ctx, inputs[3] if len(inputs) > 3 else None, d, 1, hidden, dtype)
        h0 = _state(ctx, inputs[5] if len(inputs) > 5 else None, d, batch, hidden, dtype, layout)

        def cell(x_t, t, states, w=w, r=r, wb=wb, rb=rb, act=acts[d][0]):
            (h,) = states
            pre = ctx.emit("add", ctx.emit("add", ctx.emit("nn.dense", x_t, w),
                                           ctx.emit("nn.dense", h, r)),
                           ctx.emit("add", wb, rb))
            h = _masked(ctx, lens, t, act(_clip(ctx, pre, attrs)), h)
            return [h], _masked(ctx, lens, t, h, None)
        ys, (h,) = _run_direction(ctx, x, steps, _reversed(direction, d), [h0], cell, "rnn")
        ys_all.append(ys)
        finals[0].append(h)
    return _finish(ctx, ys_all, finals, layout)


def _reversed(direction, d) -> bool:
    return direction == "reverse" or d == 1


@converter("GRU")
def _gru(ctx, inputs, attrs):
    x, steps, layout, direction, directions, hidden, batch, lens = _prepare(ctx, inputs, attrs, 3)
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
        h0 = _state(ctx, inputs[5] if len(inputs) > 5 else None, d, batch, hidden, dtype, layout)

        def cell(x, t, states, wz=wz, wr=wr, wh=wh, rz=rz, rr=rr, rh=rh, wbz=wbz, wbr=wbr,
                 wbh=wbh, rbz=rbz, rbr=rbr, rbh=rbh, f=f, g=g):
            (h,) = states

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
            return [h], _masked(ctx, lens, t, h, None)
        ys, (h,) = _run_direction(ctx, x, steps, _reversed(direction, d), [h0], cell, "gru")
        ys_all.append(ys)
        finals[0].append(h)
    return _finish(ctx, ys_all, finals, layout)


@converter("LSTM")
def _lstm(ctx, inputs, attrs):
    x, steps, layout, direction, directions, hidden, batch, lens = _prepare(ctx, inputs, attrs, 4)
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
        h0 = _state(ctx, inputs[5] if len(inputs) > 5 else None, d, batch, hidden, dtype, layout)
        c0 = _state(ctx, inputs[6] if len(inputs) > 6 else None, d, batch, hidden, dtype, layout)
        peep = None
        if peepholes is not None:
            peep = _split(ctx, _direction_slice(ctx, peepholes, d), 3, 0)

        def cell(x_t, t, states, w=w, r=r, bias=bias, peep=peep, acts=acts[d]):
            h, c = states
            f, g, hact = acts
            pre = ctx.emit("add", ctx.emit("add", ctx.emit("nn.dense", x_t, w),
                                           ctx.emit("nn.dense", h, r)), bias)
            i_pre, o_pre, f_pre, c_pre = _split(ctx, pre, 4, 1)
            if peep is not None:
                i_pre = ctx.emit("add", i_pre, ctx.emit("multiply", peep[0], c))
                f_pre = ctx.emit("add", f_pre, ctx.emit("multiply", peep[2], c))
            i_gate = f(_clip(ctx, i_pre, attrs))
            f_gate = f(_clip(ctx, f_pre, attrs))
            c_new = ctx.emit("add", ctx.emit("multiply", f_gate, c),
                             ctx.emit("multiply", i_gate, g(_clip(ctx, c_pre, attrs))))
            if peep is not None:
                o_pre = ctx.emit("add", o_pre, ctx.emit("multiply", peep[1], c_new))
            o_gate = f(_clip(ctx, o_pre, attrs))
            h = _masked(ctx, lens, t, ctx.emit("multiply", o_gate, hact(c_new)), h)
            c = _masked(ctx, lens, t, c_new, c)
            return [h, c], _masked(ctx, lens, t, h, None)
        ys, (h, c) = _run_direction(ctx, x, steps, _reversed(direction, d), [h0, c0], cell,
                                    "lstm")
        ys_all.append(ys)
        finals[0].append(h)
        finals[1].append(c)
    return _finish(ctx, ys_all, finals, layout)
