"""Pooling beyond 2-D: ``nn.max_pool1d/3d``, ``nn.avg_pool1d/3d``, ``nn.lp_pool1d/2d/3d``
and the adaptive pools ``nn.adaptive_max_pool1d/2d/3d``, ``nn.adaptive_avg_pool1d/2d/3d``.

Before/after in the text format::

    nn.max_pool1d(%x, pool_size=[3], strides=[2])     /* Tensor[(1, 4, 9), float32] */
    -> Tensor[(1, 4, 4), float32]
    nn.adaptive_avg_pool2d(%x, output_size=[2, 3])    /* Tensor[(1, 4, 7, 8), float32] */
    -> Tensor[(1, 4, 2, 3), float32]

Layouts are permutations of ``NCW`` / ``NCHW`` / ``NCDHW``; padding is normalised to ``2n``
ints (befores, then afters). Adaptive bin ``i`` of an axis of size ``L`` split into ``O``
covers ``[floor(i * L / O), ceil((i + 1) * L / O))``. ``nn.lp_pool*`` (ONNX LpPool, not a
Relay op) computes ``sum(|x| ** p) ** (1 / p)`` over each window, padding counting as 0.
"""

from __future__ import annotations

import numpy as np

from ..errors import GradientError, TypeInferenceError
from ..ir.expr import Tuple, const
from ..ir.types import TensorType
from ._composite import arg_types, composite_grad
from ._layouts import from_canonical, layout_positions, to_canonical
from ._windows import ntuple, pad_n, padding_n, windows_n
from .registry import OpPattern, make_call, register_op
from .type_relations import expect_tensor

__all__ = ["max_pool1d", "max_pool3d", "avg_pool1d", "avg_pool3d", "lp_pool1d", "lp_pool2d",
           "lp_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d"]

_LAYOUT = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def pool_out_size(size, pool, stride, dilation, before, after, ceil_mode):
    """Output length of a pooling window along one axis (Relay's ceil_mode rule).

    Args:
        size: the input length.
        pool: the window length.
        stride: the stride.
        dilation: the dilation.
        before: the padding before.
        after: the padding after.
        ceil_mode: round up (a last window may start in the padding after, never past it).
    """
    extra = stride - 1 if ceil_mode else 0
    return (size + before + after - dilation * (pool - 1) - 1 + extra) // stride + 1


def _geometry(attrs, n):
    return (ntuple(attrs["pool_size"], n, "pool_size"), ntuple(attrs["strides"], n, "strides"),
            ntuple(attrs["dilation"], n, "dilation"), padding_n(attrs["padding"], n))


def _placed(dims: dict, layout: str, ndim: int) -> list:
    shape = [None] * ndim
    for letter, position in layout_positions(layout, _LAYOUT[ndim - 2], "layout").items():
        shape[position] = dims[letter]
    return shape


def _pool_rel(name: str, n: int):
    canonical = _LAYOUT[n]

    def relation(arg_types, attrs):
        data = expect_tensor(arg_types[0], f"{name}: data")
        if data.ndim != n + 2:
            raise TypeInferenceError(f"{name}: data must be {n + 2}-D, got {data}")
        pos = layout_positions(attrs["layout"], canonical, f"{name}: layout")
        out_layout = attrs["out_layout"] or attrs["layout"]
        layout_positions(out_layout, canonical, f"{name}: out_layout")
        pool, strides, dilation, pads = _geometry(attrs, n)
        dims = {"N": data.shape[pos["N"]], "C": data.shape[pos["C"]]}
        for i, letter in enumerate(canonical[2:]):
            size = pool_out_size(data.shape[pos[letter]], pool[i], strides[i], dilation[i],
                                 pads[i], pads[n + i], attrs["ceil_mode"])
            if isinstance(size, int) and size <= 0:
                raise TypeInferenceError(f"{name}: pool_size {pool} is larger than the padded "
                                         f"input {data}")
            dims[letter] = size
        return TensorType(_placed(dims, out_layout, n + 2), data.dtype)
    return relation


def _windows(data, attrs, n, fill):
    """Windows ``(N, C, *out, *pool)`` of canonical ``data``, padded with ``fill`` (also the
    positions past the end that ceil_mode reaches); also the output size."""
    pool, strides, dilation, pads = _geometry(attrs, n)
    out = [pool_out_size(data.shape[2 + i], pool[i], strides[i], dilation[i], pads[i],
                         pads[n + i], attrs["ceil_mode"]) for i in range(n)]
    need = [(out[i] - 1) * strides[i] + dilation[i] * (pool[i] - 1) + 1 for i in range(n)]
    after = [max(pads[n + i], need[i] - data.shape[2 + i] - pads[i]) for i in range(n)]
    padded = pad_n(data, tuple(pads[:n]) + tuple(after), fill)
    return windows_n(padded, pool, strides, dilation, out), out


def _lowest(dtype):
    return -np.inf if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).min


def _pool_ref(kind: str, n: int):
    canonical = _LAYOUT[n]

    def reference(data, **attrs):
        x = to_canonical(data, attrs["layout"], canonical)
        axes = tuple(range(2 + n, 2 + 2 * n))
        if kind == "max":
            view, _ = _windows(x, attrs, n, _lowest(x.dtype))
            out = view.max(axis=axes)
        elif kind == "lp":
            p = attrs["p"]
            view, _ = _windows(np.power(np.abs(x.astype(np.float64)), p), attrs, n, 0)
            out = np.power(view.sum(axis=axes), 1.0 / p)
        else:
            view, _ = _windows(x.astype(np.float64), attrs, n, 0)
            counts = window_counts(x.shape[2:], attrs, n, attrs["count_include_pad"])
            out = view.sum(axis=axes) / np.maximum(counts, 1)
        out = from_canonical(np.asarray(out).astype(data.dtype, copy=False), canonical,
                             attrs["out_layout"] or attrs["layout"])
        return (out,)
    return reference


def window_counts(spatial, attrs, n, include_pad) -> np.ndarray:
    """How many real (with ``include_pad``, also explicit-padding) positions each pooling
    window covers; ceil_mode's extra positions never count. Shape: the output's spatial.

    Args:
        spatial: the input's spatial shape.
        attrs: the pool's attrs.
        n: the number of spatial axes.
        include_pad: count explicit padding positions.
    """
    ones = np.ones((1, 1) + tuple(spatial))
    if include_pad:
        # Pre-padded with ones, windowed without padding: the same window grid.
        ones = pad_n(ones, _geometry(attrs, n)[3], 1.0)
        view = _windows(ones, dict(attrs, padding=(0,) * (2 * n)), n, 0)[0]
    else:
        view = _windows(ones, attrs, n, 0)[0]
    return view.sum(axis=tuple(range(2 + n, 2 + 2 * n)))[0, 0]


def _pool3d_forward(kind: str):
    """3-D pooling as 2-D pooling of depth-strided slices (depth folded into the batch),
    combined over the depth taps: the composition its gradient is taken through."""
    def forward(data, **attrs):
        shape = arg_types([data], f"nn.{kind}_pool3d")[0].shape
        layout = attrs["layout"]
        batch, depth, height, width = (shape[layout.index(c)] for c in "NDHW")
        if not all(isinstance(v, int) for v in (batch, depth, height, width)):
            raise GradientError(f"the gradient of nn.{kind}_pool3d needs static sizes")
        pool, strides, dilation, pads = _geometry(attrs, 3)
        out = [pool_out_size(size, pool[i], strides[i], dilation[i], pads[i], pads[3 + i],
                             attrs["ceil_mode"]) for i, size in enumerate((depth, height,
                                                                           width))]
        x = _transpose(data, [layout.index(c) for c in "NCDHW"])
        if kind == "lp":
            x = make_call("power", (make_call("abs", (x,)), _const(attrs["p"], x)))
        need = (out[0] - 1) * strides[0] + dilation[0] * (pool[0] - 1) + 1
        after = max(pads[3], need - depth - pads[0])
        fill = -np.inf if kind == "max" else 0.0
        x = make_call("nn.pad", (x, _const(fill, x)), {
            "pad_width": ((0, 0), (0, 0), (pads[0], after), (0, 0), (0, 0)),
            "pad_mode": "constant"})
        attrs2 = {"pool_size": pool[1:], "strides": strides[1:], "dilation": dilation[1:],
                  "padding": (pads[1], pads[2], pads[4], pads[5]), "layout": "NCHW",
                  "out_layout": "", "ceil_mode": attrs["ceil_mode"]}
        sums_per_window = None
        if kind != "max":
            attrs2["count_include_pad"] = True
            sums_per_window = window_counts((height, width), attrs2, 2, True)
        total = None
        for tap in range(pool[0]):
            start = tap * dilation[0]
            planes = make_call("strided_slice", (x,), {
                "begin": [start], "end": [start + (out[0] - 1) * strides[0] + 1],
                "strides": [strides[0]], "axes": [2], "slice_mode": "end"})
            planes = make_call("reshape", (_transpose(planes, (0, 2, 1, 3, 4)),),
                               {"newshape": (-3, -2), "allowzero": False})
            if kind == "max":
                pooled = make_call("nn.max_pool2d", (planes,),
                                   {k: v for k, v in attrs2.items()})
                total = pooled if total is None else make_call("maximum", (total, pooled))
            else:
                pooled = make_call("multiply", (make_call("nn.avg_pool2d", (planes,), attrs2),
                                                _const(sums_per_window, x)))
                total = pooled if total is None else make_call("add", (total, pooled))
        total = make_call("reshape", (total,), {"newshape": (-4, batch, out[0], -2),
                                                "allowzero": False})
        total = _transpose(total, (0, 2, 1, 3, 4))
        if kind == "avg":
            counts = window_counts((depth, height, width), attrs, 3, attrs["count_include_pad"])
            total = make_call("divide", (total, _const(np.maximum(counts, 1), x)))
        elif kind == "lp":
            total = make_call("power", (total, _const(1.0 / attrs["p"], x)))
        target = attrs["out_layout"] or layout
        return _transpose(total, ["NCDHW".index(c) for c in target])
    return composite_grad(forward)


def _transpose(expr, axes):
    axes = tuple(axes)
    if axes == tuple(range(len(axes))):
        return expr
    return make_call("transpose", (expr,), {"axes": axes})


def _const(value, like):
    return make_call("cast_like", (const(np.asarray(value, dtype=np.float64)), like))


def _pool_fields(n, avg=False, lp=False):
    fields = [("pool_size", (1,) * n), ("strides", (1,) * n), ("dilation", (1,) * n),
              ("padding", (0,) * (2 * n)), ("layout", _LAYOUT[n]), ("out_layout", ""),
              ("ceil_mode", False)]
    if avg:
        fields.append(("count_include_pad", False))
    if lp:
        fields.insert(0, ("p", 2.0))
    return fields


def _lift_1d_grad(name2d: str):
    """Gradient of a 1-D pool: the 2-D pool over a unit height (NCW/NWC layouts)."""
    def forward(data, **attrs):
        layout = attrs["layout"]
        height_axis = layout.index("W")
        lifted = {k: v for k, v in attrs.items() if k != "p"}
        lifted.update(pool_size=(1,) + tuple(attrs["pool_size"]),
                      strides=(1,) + tuple(attrs["strides"]),
                      dilation=(1,) + tuple(attrs["dilation"]),
                      padding=(0, attrs["padding"][0], 0, attrs["padding"][1]),
                      layout=layout.replace("W", "HW"),
                      out_layout=(attrs["out_layout"] or layout).replace("W", "HW"))
        x = make_call("expand_dims", (data,), {"axis": height_axis, "num_newaxis": 1})
        if name2d == "lp":
            return _lp_expr(x, lifted, attrs["p"], (1,) + tuple(attrs["pool_size"]),
                            height_axis)
        out = make_call(name2d, (x,), lifted)
        return make_call("squeeze", (out,), {"axis": [height_axis]})
    return composite_grad(forward)


def _lp_expr(x, attrs2d, p, pool, height_axis):
    # sum(|x|^p) = avg_pool(|x|^p, count_include_pad) * window size (no ceil_mode).
    if attrs2d["ceil_mode"]:
        raise GradientError("the gradient of an lp pool with ceil_mode is not "
                                  "implemented")
    powered = make_call("power", (make_call("abs", (x,)), make_call("cast_like", (const(p), x))))
    attrs2d = dict(attrs2d, count_include_pad=True)
    pooled = make_call("nn.avg_pool2d", (powered,), attrs2d)
    total = make_call("multiply", (pooled, make_call("cast_like", (const(float(np.prod(pool))),
                                                                   x))))
    out = make_call("power", (total, make_call("cast_like", (const(1.0 / p), x))))
    if height_axis is None:
        return out
    return make_call("squeeze", (out,), {"axis": [height_axis]})


def _register_pools():
    builders = {}
    for n in (1, 2, 3):
        kinds = ("max", "avg", "lp") if n != 2 else ("lp",)
        for kind in kinds:
            name = f"nn.{kind}_pool{n}d"
            key = {"max": "MaxPool", "avg": "AvgPool", "lp": "LPPool"}[kind]
            op_def = register_op(
                name, ("data",),
                attrs=(f"relay.attrs.{key}{n}DAttrs",
                       _pool_fields(n, kind == "avg", kind == "lp")),
                type_rel=_pool_rel(name, n), pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                description=f"{n}-D {'Lp' if kind == 'lp' else kind} pooling", support_level=2)
            op_def.def_impl(_pool_ref(kind, n))
            if n == 3:
                op_def.def_grad(_pool3d_forward(kind))
            elif n == 1:
                op_def.def_grad(_lift_1d_grad("lp" if kind == "lp" else f"nn.{kind}_pool2d"))
            elif n == 2:
                op_def.def_grad(composite_grad(
                    lambda data, **attrs: _lp_expr(
                        data, {k: v for k, v in attrs.items() if k != "p"}, attrs["p"],
                        attrs["pool_size"], None)))
            builders[name] = _pool_builder(name, n, kind)
    return builders


def _pool_builder(name: str, n: int, kind: str):
    def builder(data, pool_size=(1,) * n, strides=(1,) * n, dilation=(1,) * n,
                padding=(0,) * n, layout=_LAYOUT[n], out_layout="", ceil_mode=False,
                count_include_pad=False, p=2.0):
        attrs = {"pool_size": ntuple(pool_size, n, "pool_size"),
                 "strides": ntuple(strides, n, "strides"),
                 "dilation": ntuple(dilation, n, "dilation"),
                 "padding": padding_n(padding, n), "layout": layout, "out_layout": out_layout,
                 "ceil_mode": bool(ceil_mode)}
        if kind == "avg":
            attrs["count_include_pad"] = bool(count_include_pad)
        elif count_include_pad:
            raise TypeError(f"{name} has no count_include_pad attribute")
        if kind == "lp":
            attrs["p"] = float(p)
        return make_call(name, (data,), attrs)
    builder.__name__ = builder.__qualname__ = name.split(".")[1]
    builder.__doc__ = f"""{n}-D {kind} pooling (``{name}``).

    Args:
        data: the input in ``layout`` (a permutation of ``{_LAYOUT[n]}``).
        pool_size, strides, dilation: an int or {n} ints.
        padding: 1, {n} or {2 * n} ints (stored as {2 * n}: befores, then afters).
        layout: the data layout; out_layout: the output layout (default: layout).
        ceil_mode: round the output size up.
        count_include_pad: (avg only) count padding in the divisor.
        p: (lp only) the norm's exponent.

    Returns:
        A Call of ``{name}``.
    """
    return builder


_BUILDERS = _register_pools()
max_pool1d = _BUILDERS["nn.max_pool1d"]
max_pool3d = _BUILDERS["nn.max_pool3d"]
avg_pool1d = _BUILDERS["nn.avg_pool1d"]
avg_pool3d = _BUILDERS["nn.avg_pool3d"]
lp_pool1d = _BUILDERS["nn.lp_pool1d"]
lp_pool2d = _BUILDERS["nn.lp_pool2d"]
lp_pool3d = _BUILDERS["nn.lp_pool3d"]


# -- adaptive pools ------------------------------------------------------------------------------

def _adaptive_rel(name: str, n: int):
    canonical = _LAYOUT[n]

    def relation(arg_types, attrs):
        data = expect_tensor(arg_types[0], f"{name}: data")
        if data.ndim != n + 2:
            raise TypeInferenceError(f"{name}: data must be {n + 2}-D, got {data}")
        pos = layout_positions(attrs["layout"], canonical, f"{name}: layout")
        out_layout = attrs["out_layout"] or attrs["layout"]
        layout_positions(out_layout, canonical, f"{name}: out_layout")
        sizes = attrs["output_size"]
        spatial = canonical[2:]
        if sizes is None:
            sizes = (None,) * n
        sizes = tuple(sizes)
        if len(sizes) == 1 and n > 1:
            sizes = sizes * n
        if len(sizes) != n:
            raise TypeInferenceError(f"{name}: output_size must have 1 or {n} values, got "
                                     f"{sizes}")
        dims = {"N": data.shape[pos["N"]], "C": data.shape[pos["C"]]}
        for letter, size in zip(spatial, sizes):
            if size is not None and (not isinstance(size, int) or size < 1):
                raise TypeInferenceError(f"{name}: output_size entries must be positive ints "
                                         f"(or None), got {sizes}")
            dims[letter] = data.shape[pos[letter]] if size is None else size
        return TensorType(_placed(dims, out_layout, n + 2), data.dtype)
    return relation


def adaptive_bins(size: int, out: int):
    """``(starts, ends)`` of the ``out`` adaptive bins over an axis of length ``size``."""
    index = np.arange(out)
    return (index * size) // out, -((-(index + 1) * size) // out)


def _adaptive_axis(data, axis, out, kind):
    starts, ends = adaptive_bins(data.shape[axis], out)
    if kind == "avg":
        # Bin sums from a cumulative sum with a leading 0.
        shape = list(data.shape)
        shape[axis] = 1
        cumulative = np.concatenate([np.zeros(shape), np.cumsum(data, axis=axis)], axis=axis)
        sums = np.take(cumulative, ends, axis) - np.take(cumulative, starts, axis)
        counts = (ends - starts).reshape((-1,) + (1,) * (data.ndim - 1 - axis))
        return sums / counts
    # Max: each bin's positions, the short bins repeating their last position.
    width = int(np.max(ends - starts))
    positions = np.minimum(starts[:, None] + np.arange(width), ends[:, None] - 1)
    gathered = np.take(data, positions.reshape(-1), axis)
    shape = data.shape[:axis] + (out, width) + data.shape[axis + 1:]
    return gathered.reshape(shape).max(axis=axis + 1)


def _adaptive_ref(kind: str, n: int):
    canonical = _LAYOUT[n]

    def reference(data, output_size=None, layout=canonical, out_layout=""):
        x = to_canonical(data, layout, canonical)
        sizes = (None,) * n if output_size is None else tuple(output_size)
        if len(sizes) == 1:
            sizes = sizes * n
        out = x.astype(np.float64) if kind == "avg" else x
        for i, size in enumerate(sizes):
            out = _adaptive_axis(out, 2 + i, x.shape[2 + i] if size is None else size, kind)
        out = from_canonical(out.astype(data.dtype, copy=False), canonical,
                             out_layout or layout)
        return (out,)
    return reference


def _adaptive_forward(kind: str, n: int):
    """Adaptive pooling as primitives, one spatial axis at a time: averaging is an einsum
    with a constant bin-averaging matrix; max takes each bin's positions and reduces."""
    canonical = _LAYOUT[n]

    def forward(data, output_size=None, layout=canonical, out_layout=""):
        shape = arg_types([data], f"nn.adaptive_{kind}_pool{n}d")[0].shape
        x = _transpose(data, [layout.index(c) for c in canonical])
        sizes = (None,) * n if output_size is None else tuple(output_size)
        sizes = sizes * n if len(sizes) == 1 else sizes
        rank = n + 2
        for i, size in enumerate(sizes):
            axis = 2 + i
            length = shape[layout.index(canonical[axis])]
            if not isinstance(length, int):
                raise GradientError("the gradient of an adaptive pool needs static "
                                          "spatial sizes")
            size = length if size is None else size
            starts, ends = adaptive_bins(length, size)
            if kind == "avg":
                matrix = np.zeros((size, length))
                for row, (start, end) in enumerate(zip(starts, ends)):
                    matrix[row, start:end] = 1.0 / (end - start)
                letters = "abcdefgh"[:rank]
                result = letters[:axis] + "z" + letters[axis + 1:]
                x = make_call("einsum", (Tuple([x, _const(matrix, x)]),),
                              {"equation": f"{letters},z{letters[axis]}->{result}"})
            else:
                width = int(np.max(ends - starts))
                positions = np.minimum(starts[:, None] + np.arange(width), ends[:, None] - 1)
                taken = make_call("take", (x, const(positions.astype(np.int32))),
                                  {"axis": axis, "batch_dims": 0, "mode": "clip"})
                x = make_call("max", (taken,), {"axis": [axis + 1], "keepdims": False,
                                                "exclude": False})
        return _transpose(x, [canonical.index(c) for c in (out_layout or layout)])
    return forward


def _register_adaptive():
    builders = {}
    for n in (1, 2, 3):
        for kind in ("max", "avg"):
            name = f"nn.adaptive_{kind}_pool{n}d"
            op_def = register_op(
                name, ("data",),
                attrs=(f"relay.attrs.AdaptivePool{n}DAttrs",
                       [("output_size", None), ("layout", _LAYOUT[n]), ("out_layout", "")]),
                type_rel=_adaptive_rel(name, n), pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                description=f"{n}-D adaptive {kind} pooling to output_size", support_level=2)
            op_def.def_impl(_adaptive_ref(kind, n))
            op_def.def_grad(composite_grad(_adaptive_forward(kind, n)))
            builders[name] = _adaptive_builder(name, n)
    return builders


def _adaptive_builder(name: str, n: int):
    def builder(data, output_size=None, layout=_LAYOUT[n], out_layout=""):
        if output_size is not None:
            output_size = tuple(None if s is None else int(s)
                                for s in np.atleast_1d(np.asarray(output_size, object)))
        return make_call(name, (data,), {"output_size": output_size, "layout": layout,
                                         "out_layout": out_layout})
    builder.__name__ = builder.__qualname__ = name.split(".")[1]
    builder.__doc__ = f"""Adaptive pooling to a fixed output size (``relay.{name}``).

    Args:
        data: the input in ``layout`` (a permutation of ``{_LAYOUT[n]}``).
        output_size: 1 or {n} sizes (None keeps that axis's size); None keeps every size.
        layout: the data layout; out_layout: the output layout (default: layout).

    Returns:
        A Call of ``{name}``.
    """
    return builder


_ADAPTIVE = _register_adaptive()
adaptive_max_pool1d = _ADAPTIVE["nn.adaptive_max_pool1d"]
adaptive_max_pool2d = _ADAPTIVE["nn.adaptive_max_pool2d"]
adaptive_max_pool3d = _ADAPTIVE["nn.adaptive_max_pool3d"]
adaptive_avg_pool1d = _ADAPTIVE["nn.adaptive_avg_pool1d"]
adaptive_avg_pool2d = _ADAPTIVE["nn.adaptive_avg_pool2d"]
adaptive_avg_pool3d = _ADAPTIVE["nn.adaptive_avg_pool3d"]
