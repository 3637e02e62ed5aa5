"""Recurrent layers: ``nn.LSTM``/``nn.GRU`` modules and ``aten.lstm``/``aten.gru``, unrolled
over the (static) sequence length. Multi-layer and bidirectional; no projections.

The input projection of all time steps is one ``nn.dense``; each step adds the hidden
projection (another ``nn.dense``) and applies the gates (torch's order: LSTM ``i, f, g, o``,
GRU ``r, z, n``).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .errors import unsupported
from .registry import converter

aten = torch.ops.aten


def _cell_step(ctx, kind, x_proj, h, c, w_hh, b_hh, hidden):
    """One time step; returns ``(h, c)`` (``c`` is None for a GRU)."""
    h_proj = ctx.emit("nn.dense", h, w_hh)
    if b_hh is not None:
        h_proj = ctx.emit("add", h_proj, b_hh)
    if kind == "lstm":
        gates = ctx.emit("add", x_proj, h_proj)
        parts = ctx.emit("split", gates, indices_or_sections=4, axis=-1)
        i, f, g, o = (ctx.tuple_get(parts, k) for k in range(4))
        i, f, o = (ctx.emit("sigmoid", t) for t in (i, f, o))
        c = ctx.emit("add", ctx.emit("multiply", f, c), ctx.emit("multiply", i,
                                                                 ctx.emit("tanh", g)))
        return ctx.emit("multiply", o, ctx.emit("tanh", c)), c
    xs = ctx.emit("split", x_proj, indices_or_sections=3, axis=-1)
    hs = ctx.emit("split", h_proj, indices_or_sections=3, axis=-1)
    r = ctx.emit("sigmoid", ctx.emit("add", ctx.tuple_get(xs, 0), ctx.tuple_get(hs, 0)))
    z = ctx.emit("sigmoid", ctx.emit("add", ctx.tuple_get(xs, 1), ctx.tuple_get(hs, 1)))
    n = ctx.emit("tanh", ctx.emit("add", ctx.tuple_get(xs, 2),
                                  ctx.emit("multiply", r, ctx.tuple_get(hs, 2))))
    one = ctx.scalar(1.0, ctx.dtype(n))
    h = ctx.emit("add", ctx.emit("multiply", ctx.emit("subtract", one, z), n),
                 ctx.emit("multiply", z, h))
    return h, None


def _direction(ctx, kind, seq, weights, h, c, reverse):
    """Run one direction of one layer over ``seq`` (T, N, I); returns outputs and finals."""
    w_ih, w_hh, b_ih, b_hh = weights
    steps = int(ctx.shape(seq)[0])
    hidden = int(ctx.shape(w_hh)[1])
    proj = ctx.emit("nn.dense", seq, w_ih)
    if b_ih is not None:
        proj = ctx.emit("add", proj, b_ih)
    outputs = [None] * steps
    order = range(steps - 1, -1, -1) if reverse else range(steps)
    for t in order:
        x_t = ctx.emit("squeeze", ctx.emit("strided_slice", proj, begin=[t], end=[t + 1],
                                           strides=[1], axes=[0]), axis=[0])
        h, c = _cell_step(ctx, kind, x_t, h, c, w_hh, b_hh, hidden)
        outputs[t] = h
    return ctx.emit_tuple_op("stack", outputs, axis=0), h, c


def rnn(ctx, kind, x, h0, c0, weights, num_layers, bidirectional, batch_first):
    """An LSTM/GRU stack. ``weights[layer * dirs + d] = (w_ih, w_hh, b_ih, b_hh)``.

    Returns ``(output, h_n, c_n)`` (``c_n`` None for a GRU) in torch's layouts.

    Args:
        kind: ``"lstm"`` or ``"gru"``.
        x: the input sequence.
        h0: the initial hidden state, or None (zeros).
        c0: the initial cell state (LSTM), or None.
        weights: the per layer and direction weights (above).
        num_layers: the number of stacked layers.
        bidirectional: run each layer both ways.
        batch_first: ``x`` is ``(batch, seq, feature)`` instead of ``(seq, batch, feature)``.
    """
    unbatched = ctx.ndim(x) == 2
    if unbatched:
        x = ctx.emit("expand_dims", x, axis=1)
        h0 = None if h0 is None else ctx.emit("expand_dims", h0, axis=1)
        c0 = None if c0 is None else ctx.emit("expand_dims", c0, axis=1)
    elif batch_first:
        x = ctx.emit("transpose", x, axes=[1, 0, 2])
    dirs = 2 if bidirectional else 1
    batch = ctx.shape(x)[1]
    hidden = int(ctx.shape(weights[0][1])[1])
    dtype = ctx.dtype(x)
    if not isinstance(batch, int):
        unsupported("recurrent layers with a symbolic batch size")
    finals_h, finals_c, seq = [], [], x
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            index = layer * dirs + d
            h = ctx.const(np.zeros((batch, hidden), dtype)) if h0 is None else \
                ctx.emit("squeeze", ctx.emit("strided_slice", h0, begin=[index],
                                             end=[index + 1], strides=[1], axes=[0]), axis=[0])
            c = None
            if kind == "lstm":
                c = ctx.const(np.zeros((batch, hidden), dtype)) if c0 is None else \
                    ctx.emit("squeeze", ctx.emit("strided_slice", c0, begin=[index],
                                                 end=[index + 1], strides=[1], axes=[0]),
                             axis=[0])
            out, h, c = _direction(ctx, kind, seq, weights[index], h, c, reverse=d == 1)
            outs.append(out)
            finals_h.append(h)
            finals_c.append(c)
        seq = outs[0] if dirs == 1 else ctx.emit_tuple_op("concatenate", outs, axis=2)
    h_n = ctx.emit_tuple_op("stack", finals_h, axis=0)
    c_n = ctx.emit_tuple_op("stack", finals_c, axis=0) if kind == "lstm" else None
    output = seq
    if unbatched:
        output = ctx.emit("squeeze", output, axis=[1])
        h_n = ctx.emit("squeeze", h_n, axis=[1])
        c_n = None if c_n is None else ctx.emit("squeeze", c_n, axis=[1])
    elif batch_first:
        output = ctx.emit("transpose", output, axes=[1, 0, 2])
    return output, h_n, c_n


def _module_weights(ctx, module):
    dirs = 2 if module.bidirectional else 1
    weights = []
    for layer in range(module.num_layers):
        for d in range(dirs):
            suffix = f"_l{layer}" + ("_reverse" if d else "")
            names = [f"weight_ih{suffix}", f"weight_hh{suffix}", f"bias_ih{suffix}",
                     f"bias_hh{suffix}"]
            weights.append(tuple(
                None if getattr(module, n, None) is None else
                ctx.weight(f"{ctx.module_path}.{n}", getattr(module, n)) for n in names))
    return weights


@converter(nn.LSTM, nn.GRU)
def _rnn_module(ctx, module, args, kwargs):
    kind = "lstm" if isinstance(module, nn.LSTM) else "gru"
    if getattr(module, "proj_size", 0):
        unsupported("LSTM with proj_size")
    x = args[0]
    hx = args[1] if len(args) > 1 else kwargs.get("hx")
    if kind == "lstm":
        h0, c0 = (None, None) if hx is None else hx
    else:
        h0, c0 = hx, None
    output, h_n, c_n = rnn(ctx, kind, x, h0, c0, _module_weights(ctx, module),
                           module.num_layers, module.bidirectional, module.batch_first)
    return (output, (h_n, c_n)) if kind == "lstm" else (output, h_n)


def _aten_weights(params, has_biases, num_layers, dirs):
    per = 4 if has_biases else 2
    weights = []
    for index in range(num_layers * dirs):
        group = list(params[index * per:(index + 1) * per])
        weights.append(tuple(group) if has_biases else (group[0], group[1], None, None))
    return weights


@converter(aten.lstm.input)
def _aten_lstm(ctx, args, kwargs):
    x, hx, params, has_biases, num_layers, _dropout, _train, bidirectional, batch_first = \
        args[:9]
    weights = _aten_weights(params, has_biases, num_layers, 2 if bidirectional else 1)
    return rnn(ctx, "lstm", x, hx[0], hx[1], weights, num_layers, bidirectional, batch_first)


@converter(aten.gru.input)
def _aten_gru(ctx, args, kwargs):
    x, hx, params, has_biases, num_layers, _dropout, _train, bidirectional, batch_first = \
        args[:9]
    weights = _aten_weights(params, has_biases, num_layers, 2 if bidirectional else 1)
    output, h_n, _ = rnn(ctx, "gru", x, hx, None, weights, num_layers, bidirectional,
                         batch_first)
    return (output, h_n)
