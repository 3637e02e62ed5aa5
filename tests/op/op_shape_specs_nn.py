"""Hypothesis draws of valid (inputs, attrs) for the nn, image and layout-sensitive ops (see
op_shape_specs.py)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import irlib

from op_shape_specs import FLOATS, SPECS, arr, axis_of, shape, spec

_CANONICAL = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def _layout(draw, n):
    canonical = _CANONICAL[n]
    return draw(st.sampled_from([canonical, canonical[0] + canonical[2:] + "C"]))


def _in_layout(dims_canonical, canonical, layout):
    return tuple(dims_canonical[canonical.index(c)] for c in layout)


def _conv(n, transpose=False):
    def draw_spec(draw):
        groups = draw(st.integers(1, 2))
        per_group_in, per_group_out = draw(st.integers(1, 2)), draw(st.integers(1, 2))
        kernel = tuple(draw(st.integers(1, 3)) for _ in range(n))
        strides = tuple(draw(st.integers(1, 2)) for _ in range(n))
        dilation = tuple(draw(st.integers(1, 2)) for _ in range(n))
        padding = tuple(draw(st.integers(0, 1)) for _ in range(2 * n))
        spatial = tuple(draw(st.integers(d * (k - 1) + 1, d * (k - 1) + 4))
                        for k, d in zip(kernel, dilation))
        batch = draw(st.integers(1, 2))
        canonical = _CANONICAL[n]
        layout = _layout(draw, n) if not transpose or n == 2 else canonical
        data = arr(draw, _in_layout((batch, groups * per_group_in) + spatial, canonical,
                                    layout))
        if transpose:
            weight = arr(draw, (groups * per_group_in, per_group_out) + kernel, data.dtype.name)
            padding = tuple(min(p, d * (k - 1)) for p, d, k in zip(
                padding, dilation * 2, kernel * 2))
            extra = tuple(draw(st.integers(0, s - 1)) for s in strides)
            return [data, weight], {"strides": strides, "padding": padding,
                                    "dilation": dilation, "groups": groups,
                                    "data_layout": layout, "output_padding": extra}
        kernel_canonical = "OI" + canonical[2:]
        kernel_layout = draw(st.sampled_from([kernel_canonical, kernel_canonical[2:] + "IO"]))
        weight = arr(draw, _in_layout((groups * per_group_out, per_group_in) + kernel,
                                      kernel_canonical, kernel_layout), data.dtype.name)
        return [data, weight], {"strides": strides, "padding": padding, "dilation": dilation,
                                "groups": groups, "data_layout": layout,
                                "kernel_layout": kernel_layout}
    return draw_spec


SPECS["nn.conv1d"] = _conv(1)
SPECS["nn.conv2d"] = _conv(2)
SPECS["nn.conv3d"] = _conv(3)
SPECS["nn.conv1d_transpose"] = _conv(1, True)
SPECS["nn.conv2d_transpose"] = _conv(2, True)
SPECS["nn.conv3d_transpose"] = _conv(3, True)


@spec("nn.conv2d_backward_weight")
def _(draw):
    (data, weight), attrs = _conv(2)(draw)
    data = np.ascontiguousarray(np.transpose(data, [attrs["data_layout"].index(c)
                                                    for c in "NCHW"]))
    weight = np.transpose(weight, [attrs["kernel_layout"].index(c) for c in "OIHW"])
    attrs.update(data_layout="NCHW", kernel_layout="OIHW")
    if data.shape[1] != weight.shape[1] * attrs["groups"] or weight.shape[0] % attrs["groups"]:
        attrs["groups"] = 1
        weight = arr(draw, (weight.shape[0], data.shape[1]) + weight.shape[2:], data.dtype.name)
    weight = np.zeros((weight.shape[0], data.shape[1] // attrs["groups"], weight.shape[2],
                       weight.shape[3]), data.dtype)
    out = irlib.op.evaluate("nn.conv2d", [data, weight],
                            irlib.op.get_def("nn.conv2d").make_attrs(attrs))
    del attrs["data_layout"], attrs["kernel_layout"]
    attrs["kernel_size"] = weight.shape[2:]
    return [arr(draw, out.shape, data.dtype.name), data], attrs


def _pool(n, kind):
    def draw_spec(draw):
        pool = tuple(draw(st.integers(1, 3)) for _ in range(n))
        strides = tuple(draw(st.integers(1, 2)) for _ in range(n))
        dilation = tuple(draw(st.integers(1, 2)) for _ in range(n)) if kind != "avg" \
            else (1,) * n
        padding = tuple(draw(st.integers(0, (p - 1) // 2 + 0)) for p in pool * 2)
        spatial = tuple(draw(st.integers(d * (p - 1) + 1, d * (p - 1) + 4))
                        for p, d in zip(pool, dilation))
        canonical = _CANONICAL[n]
        layout = _layout(draw, n)
        data = arr(draw, _in_layout((draw(st.integers(1, 2)), draw(st.integers(1, 2)))
                                    + spatial, canonical, layout))
        attrs = {"pool_size": pool, "strides": strides, "dilation": dilation,
                 "padding": padding, "layout": layout, "ceil_mode": draw(st.booleans())}
        if kind == "avg":
            attrs["count_include_pad"] = draw(st.booleans())
        if kind == "lp":
            attrs["p"] = draw(st.sampled_from([1.0, 2.0, 3.0]))
        return [data], attrs
    return draw_spec


for _n in (1, 2, 3):
    SPECS[f"nn.max_pool{_n}d"] = _pool(_n, "max")
    SPECS[f"nn.avg_pool{_n}d"] = _pool(_n, "avg")
    SPECS[f"nn.lp_pool{_n}d"] = _pool(_n, "lp")


def _pool_grad(kind):
    def draw_spec(draw):
        (data,), attrs = _pool(2, kind)(draw)
        out = irlib.op.evaluate(f"nn.{kind}_pool2d", [data],
                                irlib.op.get_def(f"nn.{kind}_pool2d").make_attrs(attrs))
        return [arr(draw, out.shape, data.dtype.name), data], attrs
    return draw_spec


SPECS["nn.max_pool2d_grad"] = _pool_grad("max")
SPECS["nn.avg_pool2d_grad"] = _pool_grad("avg")


def _adaptive(n):
    def draw_spec(draw):
        layout = _layout(draw, n)
        dims = (draw(st.integers(1, 2)), draw(st.integers(1, 2))) + tuple(
            draw(st.integers(1, 6)) for _ in range(n))
        sizes = draw(st.one_of(st.none(), st.lists(st.one_of(st.none(), st.integers(1, 4)),
                                                   min_size=n, max_size=n).map(tuple),
                               st.integers(1, 4).map(lambda s: (s,))))
        return [arr(draw, _in_layout(dims, _CANONICAL[n], layout))], {
            "output_size": sizes, "layout": layout}
    return draw_spec


for _n in (1, 2, 3):
    SPECS[f"nn.adaptive_max_pool{_n}d"] = _adaptive(_n)
    SPECS[f"nn.adaptive_avg_pool{_n}d"] = _adaptive(_n)


@spec("nn.global_avg_pool2d")
def _(draw):
    layout = _layout(draw, 2)
    return [arr(draw, shape(draw, 4, 4))], {"layout": layout}


SPECS["nn.global_max_pool2d"] = SPECS["nn.global_avg_pool2d"]


@spec("nn.dense")
def _(draw):
    dims = shape(draw, 1, 3)
    units = draw(st.integers(1, 3))
    return [arr(draw, dims, "float32"), arr(draw, (units, dims[-1]), "float32")], {}


@spec("nn.matmul")
def _(draw):
    k, m, units = (draw(st.integers(1, 3)) for _ in range(3))
    transpose_a, transpose_b = draw(st.booleans()), draw(st.booleans())
    a_shape = (k, m) if transpose_a else shape(draw, 0, 2) + (k,)
    b_shape = (units, k) if transpose_b else (k, units)
    return [arr(draw, a_shape, "float32"), arr(draw, b_shape, "float32")], {
        "transpose_a": transpose_a, "transpose_b": transpose_b}


@spec("nn.batch_matmul")
def _(draw):
    b, m, k, n = (draw(st.integers(1, 3)) for _ in range(4))
    transpose_a, transpose_b = draw(st.booleans()), draw(st.booleans())
    return [arr(draw, (b, k, m) if transpose_a else (b, m, k), "float32"),
            arr(draw, (b, n, k) if transpose_b else (b, k, n), "float32")], {
        "transpose_a": transpose_a, "transpose_b": transpose_b}


@spec("nn.bias_add")
def _(draw):
    dims = shape(draw, 1)
    axis = axis_of(draw, len(dims))
    return [arr(draw, dims, "float32"), arr(draw, (dims[axis],), "float32")], {"axis": axis}


@spec("nn.batch_norm")
def _(draw):
    dims = shape(draw, 2)
    axis = axis_of(draw, len(dims))
    channels = dims[axis]
    params = [arr(draw, (channels,), "float32", 0.5, 2) for _ in range(4)]
    return [arr(draw, dims, "float32")] + params, {"axis": axis}


def _norm(grouped):
    def draw_spec(draw):
        groups = draw(st.integers(1, 3))
        dims = (draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))) + shape(draw, 0, 2)
        attrs = {"epsilon": 1e-5, "center": draw(st.booleans()), "scale": draw(st.booleans())}
        if grouped:
            attrs["num_groups"] = groups
        channels = dims[1]
        return [arr(draw, dims), arr(draw, (channels,)), arr(draw, (channels,))], attrs
    return draw_spec


SPECS["nn.group_norm"] = _norm(True)
SPECS["nn.instance_norm"] = _norm(False)


@spec("nn.layer_norm")
def _(draw):
    dims = shape(draw, 1)
    axis = axis_of(draw, len(dims))
    return [arr(draw, dims), arr(draw, (dims[axis],)), arr(draw, (dims[axis],))], {
        "axis": axis}


@spec("nn.rms_norm")
def _(draw):
    dims = shape(draw, 1)
    axes = sorted(draw(st.lists(st.integers(0, len(dims) - 1), unique=True, min_size=1)))
    return [arr(draw, dims), arr(draw, tuple(dims[a] for a in axes))], {"axis": axes}


@spec("nn.lrn")
def _(draw):
    dims = shape(draw, 2)
    return [arr(draw, dims)], {"size": draw(st.integers(1, 4)),
                               "axis": axis_of(draw, len(dims))}


@spec("nn.l2_normalize")
def _(draw):
    dims = shape(draw, 1)
    return [arr(draw, dims)], {"eps": 1e-6, "axis": draw(st.one_of(st.none(), st.lists(
        st.integers(0, len(dims) - 1), unique=True, min_size=1)))}


@spec("nn.prelu")
def _(draw):
    dims = shape(draw, 1)
    axis = axis_of(draw, len(dims))
    return [arr(draw, dims), arr(draw, (dims[axis],))], {"axis": axis}


@spec("nn.leaky_relu")
def _(draw):
    return [arr(draw, shape(draw))], {"alpha": 0.1}


def _axis_op(draw):
    dims = shape(draw, 1)
    return [arr(draw, dims)], {"axis": axis_of(draw, len(dims))}


SPECS["nn.softmax"] = SPECS["nn.log_softmax"] = _axis_op


@spec("nn.dropout")
def _(draw):
    return [arr(draw, shape(draw))], {"rate": 0.5}


@spec("nn.batch_flatten")
def _(draw):
    return [arr(draw, shape(draw, 1))], {}


@spec("nn.pad")
def _(draw):
    dims = shape(draw, 1, 3, 2)
    mode = draw(st.sampled_from(["constant", "edge", "reflect"]))
    limit = 1 if mode == "reflect" else 2
    widths = tuple((draw(st.integers(0, min(limit, d - 1) if mode == "reflect" else limit)),
                    draw(st.integers(0, min(limit, d - 1) if mode == "reflect" else limit)))
                   for d in dims)
    data = arr(draw, dims)
    return [data, arr(draw, (), data.dtype.name)], {"pad_width": widths, "pad_mode": mode}


@spec("nn.attention")
def _(draw):
    batch = shape(draw, 0, 2, max_side=2)
    q, k, d, v = (draw(st.integers(1, 3)) for _ in range(4))
    dtype = draw(st.sampled_from(FLOATS))
    return [arr(draw, batch + (q, d), dtype), arr(draw, batch + (k, d), dtype),
            arr(draw, batch + (k, v), dtype)], {"causal": draw(st.booleans()) and q <= k,
                                                "scale": draw(st.one_of(st.none(),
                                                                        st.just(0.5)))}


def _space(to_depth):
    def draw_spec(draw):
        block = draw(st.integers(1, 2))
        layout = _layout(draw, 2)
        n, c, h, w = (draw(st.integers(1, 2)) for _ in range(4))
        if to_depth:
            dims = (n, c, h * block, w * block)
        else:
            dims = (n, c * block * block, h, w)
        attrs = {"block_size": block, "layout": layout}
        if not to_depth:
            attrs["mode"] = draw(st.sampled_from(["DCR", "CRD"]))
        return [arr(draw, _in_layout(dims, "NCHW", layout))], attrs
    return draw_spec


SPECS["nn.depth_to_space"] = _space(False)
SPECS["nn.space_to_depth"] = _space(True)


@spec("nn.upsampling")
def _(draw):
    layout = _layout(draw, 2)
    return [arr(draw, _in_layout(shape(draw, 4, 4), "NCHW", layout))], {
        "scale_h": draw(st.sampled_from([1.0, 2.0, 1.5])),
        "scale_w": draw(st.sampled_from([1.0, 3.0])), "layout": layout,
        "method": draw(st.sampled_from(["nearest_neighbor", "bilinear", "bicubic"])),
        "align_corners": draw(st.booleans())}


@spec("image.resize2d")
def _(draw):
    layout = _layout(draw, 2)
    mode = draw(st.sampled_from(["half_pixel", "align_corners", "asymmetric",
                                 "pytorch_half_pixel", "tf_half_pixel_for_nn",
                                 "tf_crop_and_resize"]))
    return [arr(draw, _in_layout(shape(draw, 4, 4), "NCHW", layout))], {
        "size": (draw(st.integers(1, 5)), draw(st.integers(1, 5))), "layout": layout,
        "method": draw(st.sampled_from(["nearest_neighbor", "linear", "cubic"])),
        "coordinate_transformation_mode": mode,
        "rounding_method": draw(st.sampled_from(["", "round", "floor", "round_prefer_ceil"])),
        "roi": (0.1, 0.0, 0.9, 1.2) if mode == "tf_crop_and_resize" else None,
        "out_dtype": draw(st.sampled_from(["", "float64"]))}


@spec("image.grid_sample")
def _(draw):
    dims = shape(draw, 4, 4)
    out = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    data = arr(draw, dims)
    return [data, arr(draw, (dims[0], 2) + out, data.dtype.name, -1.2, 1.2)], {
        "method": draw(st.sampled_from(["nearest", "bilinear", "bicubic"])),
        "padding_mode": draw(st.sampled_from(["zeros", "border", "reflection"])),
        "align_corners": draw(st.booleans())}


@spec("nn.contrib_conv2d_winograd_weight_transform")
def _(draw):
    dims = (draw(st.integers(1, 3)), draw(st.integers(1, 3)), 3, 3)
    return [arr(draw, dims)], {"tile_size": draw(st.sampled_from([2, 4]))}


@spec("nn.contrib_conv2d_winograd_without_weight_transform")
def _(draw):
    tile = draw(st.sampled_from([2, 4]))
    padding = tuple(draw(st.integers(0, 1)) for _ in range(4))
    batch, channels, out_channels = (draw(st.integers(1, 2)) for _ in range(3))
    height = draw(st.integers(3 - padding[0] - padding[2], 7))
    width = draw(st.integers(3 - padding[1] - padding[3], 7))
    layout = draw(st.sampled_from(["NCHW", "NHWC"]))
    kernel_layout = draw(st.sampled_from(["OIHW", "HWIO"]))
    data = arr(draw, _in_layout((batch, channels, height, width), "NCHW", layout))
    pair = (out_channels, channels) if kernel_layout == "OIHW" else (channels, out_channels)
    weight = arr(draw, (tile + 2, tile + 2) + pair, data.dtype.name)
    return [data, weight], {"tile_size": tile, "padding": padding, "data_layout": layout,
                            "kernel_layout": kernel_layout}
