"""conv1d/conv3d/conv1d_transpose, matmul, normalisations, 1-D/3-D/Lp/adaptive pools,
resize2d, grid_sample, upsampling, depth/space rearrangement and attention: reference vs an
independent oracle (onnxruntime on a one-node ONNX model, or loops on tiny inputs),
relation type vs oracle type, and gradients."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import irlib
from irlib import TensorType, size_var
from irlib.errors import TypeInferenceError

from op_test_helpers import OpRecord, check_gradient, check_record, type_of
from ort_oracle import run_node
from helpers import tvar

RNG = np.random.default_rng(5)


def f32(*shape):
    return RNG.standard_normal(shape).astype("float32")


def moved(array, layout, canonical):
    return np.transpose(array, [layout.index(c) for c in canonical])


def pads_onnx(padding, n):
    padding = tuple(padding) if not isinstance(padding, int) else (padding,)
    if len(padding) == 1:
        padding = padding * 2 * n
    elif len(padding) == n:
        padding = padding * 2
    return list(padding)


# -- oracles -----------------------------------------------------------------------------------

def conv_ort(data, weight, strides=1, padding=0, dilation=1, groups=1, data_layout=None,
             kernel_layout=None, **_):
    n = data.ndim - 2
    canonical = {1: ("NCW", "OIW"), 3: ("NCDHW", "OIDHW")}[n]
    data_layout = data_layout or canonical[0]
    x = moved(data, data_layout, canonical[0])
    w = moved(weight, kernel_layout or canonical[1], canonical[1])
    out = run_node("Conv", [x, w], {"strides": [strides] * n if isinstance(strides, int)
                                    else list(strides),
                                    "dilations": [dilation] * n if isinstance(dilation, int)
                                    else list(dilation),
                                    "pads": pads_onnx(padding, n), "group": groups})[0]
    return moved(out, canonical[0], data_layout)


def conv_transpose_ort(data, weight, strides=1, padding=0, dilation=1, groups=1,
                       output_padding=0, data_layout="NCW", canonical="NCW", **_):
    n = data.ndim - 2
    x = moved(data, data_layout, canonical)
    listed = (lambda v: [v] * n if isinstance(v, int) else list(v))
    out = run_node("ConvTranspose", [x, weight],
                   {"strides": listed(strides), "dilations": listed(dilation),
                    "pads": pads_onnx(padding, n), "group": groups,
                    "output_padding": listed(output_padding)})[0]
    return moved(out, canonical, data_layout)


def pool_ort(kind):
    def oracle(data, pool_size, strides=1, padding=0, dilation=1, layout=None,
               count_include_pad=False, p=2.0, **_):
        n = data.ndim - 2
        canonical = {1: "NCW", 2: "NCHW", 3: "NCDHW"}[n]
        layout = layout or canonical
        listed = (lambda v: [v] * n if isinstance(v, int) else list(v))
        attrs = {"kernel_shape": listed(pool_size), "strides": listed(strides),
                 "pads": pads_onnx(padding, n)}
        if kind == "MaxPool":
            attrs["dilations"] = listed(dilation)
        if kind == "AveragePool":
            attrs["count_include_pad"] = int(count_include_pad)
        if kind == "LpPool":
            attrs["p"] = int(p)
        out = run_node(kind, [moved(data, layout, canonical)], attrs, opset=18)[0]
        return moved(out, canonical, layout)
    return oracle


def adaptive_loop(kind):
    def oracle(data, output_size, layout=None):
        n = data.ndim - 2
        sizes = tuple(output_size) * (n if len(output_size) == 1 else 1)
        out = np.empty(data.shape[:2] + sizes, data.dtype)
        for index in np.ndindex(*sizes):
            box = tuple(slice((i * L) // o, -(-((i + 1) * L) // o))
                        for i, L, o in zip(index, data.shape[2:], sizes))
            window = data[(slice(None), slice(None)) + box]
            axes = tuple(range(2, 2 + n))
            out[(slice(None), slice(None)) + index] = (window.max(axis=axes) if kind == "max"
                                                       else window.mean(axis=axes))
        return out
    return oracle


def norm_oracle(kind):
    def oracle(data, gamma, beta=None, num_groups=1, axis=1, epsilon=1e-5, center=True,
               scale=True):
        if kind == "instance":
            return run_node("InstanceNormalization", [data, gamma, beta],
                            {"epsilon": epsilon})[0]
        if kind == "group":
            return run_node("GroupNormalization", [data, gamma, beta],
                            {"epsilon": epsilon, "num_groups": num_groups}, opset=21)[0]
        # rms: one sample at a time, with explicit sums
        axes = [axis] if isinstance(axis, int) else list(axis)
        count = np.prod([data.shape[a] for a in axes])
        mean_square = np.sum(data.astype(np.float64) ** 2, axis=tuple(axes),
                             keepdims=True) / count
        shape = [data.shape[a] if a in [x % data.ndim for x in axes] else 1
                 for a in range(data.ndim)]
        return (data / np.sqrt(mean_square + epsilon) * gamma.reshape(shape)).astype(data.dtype)
    return oracle


def resize_ort(data, size, roi=None, method="linear", coordinate_transformation_mode="half_pixel",
               rounding_method="", cubic_alpha=-0.5, cubic_exclude=0, extrapolation_value=0.0,
               layout="NCHW", **_):
    x = moved(data, layout, "NCHW")
    modes = {"nearest_neighbor": "nearest", "linear": "linear", "cubic": "cubic"}
    attrs = {"mode": modes[method], "coordinate_transformation_mode":
             coordinate_transformation_mode, "cubic_coeff_a": cubic_alpha,
             "exclude_outside": cubic_exclude, "extrapolation_value": extrapolation_value}
    if method == "nearest_neighbor":
        attrs["nearest_mode"] = rounding_method
    roi_input = None
    if roi is not None:
        roi_input = np.array([0, 0, roi[0], roi[1], 1, 1, roi[2], roi[3]], "float32")
    out = run_node("Resize", [x, roi_input, None, np.array(x.shape[:2] + tuple(size), "int64")],
                   attrs)[0]
    return moved(out, "NCHW", layout)


def grid_sample_ort(data, grid, method="bilinear", padding_mode="zeros", align_corners=True,
                    layout="NCHW"):
    return run_node("GridSample", [data, np.moveaxis(grid, 1, -1)],
                    {"mode": method, "padding_mode": padding_mode,
                     "align_corners": int(align_corners)}, opset=16)[0]


def upsampling_ort(data, scale_h=1, scale_w=1, layout="NCHW", method="nearest_neighbor",
                   align_corners=False):
    size = (int(data.shape[2] * scale_h), int(data.shape[3] * scale_w))
    mode = "align_corners" if align_corners else "asymmetric"
    rounding = "round_prefer_ceil" if align_corners else "floor"
    return resize_ort(data, size, method={"bilinear": "linear"}.get(method, method),
                      coordinate_transformation_mode=mode, rounding_method=rounding)


def attention_loop(query, key, value, scale=None, causal=False):
    scale = 1 / np.sqrt(query.shape[-1]) if scale is None else scale
    batch = np.broadcast_shapes(query.shape[:-2], key.shape[:-2], value.shape[:-2])
    query, key, value = (np.broadcast_to(t, batch + t.shape[-2:]) for t in (query, key, value))
    out = np.zeros(batch + (query.shape[-2], value.shape[-1]))
    for b in np.ndindex(*batch):
        q, k, v = query[b], key[b], value[b]
        for i in range(q.shape[0]):
            limit = i + 1 if causal else k.shape[0]
            scores = [float(np.dot(q[i], k[j])) * scale for j in range(limit)]
            top = max(scores)
            weights = [np.exp(s - top) for s in scores]
            out[b + (i,)] = sum(w * v[j] for j, w in enumerate(weights)) / sum(weights)
    return out.astype(query.dtype)


# -- records -----------------------------------------------------------------------------------

RECORDS = [
    OpRecord("nn.conv1d", irlib.nn.conv1d,
             [([f32(2, 4, 9), f32(6, 2, 3)], {"strides": 2, "padding": (1, 2), "groups": 2}),
              ([f32(1, 9, 3), f32(3, 3, 4)], {"dilation": 2, "padding": 1,
                                              "data_layout": "NWC", "kernel_layout": "WIO"})],
             conv_ort, tol=1e-4),
    OpRecord("nn.conv3d", irlib.nn.conv3d,
             [([f32(1, 2, 5, 4, 6), f32(4, 2, 3, 2, 3)], {"padding": 1}),
              ([f32(1, 5, 6, 5, 4), f32(3, 2, 3, 2, 2)],
               {"strides": (2, 1, 2), "dilation": (1, 2, 1), "groups": 2,
                "data_layout": "NDHWC", "kernel_layout": "DHWIO"})],
             conv_ort, tol=1e-4),
    OpRecord("nn.conv1d_transpose", irlib.nn.conv1d_transpose,
             [([f32(2, 4, 5), f32(4, 3, 3)], {"strides": 2, "padding": (1, 0),
                                              "output_padding": 1}),
              ([f32(1, 6, 4), f32(4, 2, 3)], {"groups": 2, "dilation": 2,
                                              "data_layout": "NWC"})],
             lambda d, w, **a: conv_transpose_ort(d, w, **a), tol=1e-4),
    OpRecord("nn.conv2d_transpose", irlib.nn.conv2d_transpose,
             [([f32(1, 4, 5, 3), f32(3, 2, 3, 3)],
               {"strides": 2, "padding": 1, "data_layout": "NHWC", "output_padding": 1})],
             lambda d, w, **a: conv_transpose_ort(d, w, canonical="NCHW", **a), tol=1e-4),
    OpRecord("nn.conv3d_transpose", irlib.nn.conv3d_transpose,
             [([f32(1, 4, 3, 2, 3), f32(4, 3, 2, 3, 2)],
               {"strides": 2, "padding": 1, "output_padding": (1, 0, 1), "groups": 2})],
             lambda d, w, **a: conv_transpose_ort(d, w, data_layout="NCDHW", canonical="NCDHW",
                                                  **a), tol=1e-4),
    OpRecord("nn.matmul", irlib.nn.matmul,
             [([f32(3, 4), f32(4, 5)], {}), ([f32(4, 3), f32(5, 4)],
                                             {"transpose_a": True, "transpose_b": True})],
             lambda a, b, transpose_a=False, transpose_b=False: run_node(
                 "Gemm", [a, b], {"transA": int(transpose_a), "transB": int(transpose_b)})[0],
             tol=1e-4),
    OpRecord("nn.group_norm", irlib.nn.group_norm,
             [([f32(2, 6, 3, 4), f32(6), f32(6)], {"num_groups": 3}),
              ([f32(2, 4, 5), f32(4), f32(4)], {"num_groups": 1, "epsilon": 1e-3})],
             norm_oracle("group"), tol=1e-4),
    OpRecord("nn.instance_norm", irlib.nn.instance_norm,
             [([f32(2, 3, 4, 5), f32(3), f32(3)], {}), ([f32(2, 3, 7), f32(3), f32(3)],
                                                       {"epsilon": 1e-3})],
             norm_oracle("instance"), tol=1e-4),
    OpRecord("nn.rms_norm", irlib.nn.rms_norm,
             [([f32(2, 3, 4), f32(4)], {}), ([f32(2, 3, 4), f32(3, 4)], {"axis": [1, 2]})],
             lambda d, g, axis=-1, epsilon=1e-5: norm_oracle("rms")(d, g, axis=axis,
                                                                   epsilon=epsilon),
             tol=1e-4),
    OpRecord("nn.lrn", irlib.nn.lrn,
             [([f32(2, 6, 3, 3)], {"size": 3, "alpha": 0.1, "beta": 0.75, "bias": 1.5}),
              ([f32(1, 7, 4, 2)], {"size": 5, "alpha": 0.3, "beta": 0.5, "bias": 2.0})],
             lambda d, size, alpha, beta, bias, axis=1: run_node(
                 "LRN", [d], {"size": size, "alpha": alpha, "beta": beta, "bias": bias})[0],
             tol=1e-4),
    OpRecord("nn.l2_normalize", lambda d, **a: irlib.nn.l2_normalize(d, 1e-12, **a),
             [([f32(3, 4)], {"axis": [1]}), ([f32(2, 3, 4)], {"axis": [0]})],
             lambda d, axis: run_node("LpNormalization", [d], {"axis": axis[0], "p": 2})[0],
             tol=1e-5),
    OpRecord("nn.prelu", irlib.nn.prelu,
             [([f32(2, 3, 4), f32(3)], {}), ([f32(2, 4, 3), f32(3)], {"axis": 2})],
             lambda d, a, axis=1: run_node(
                 "PRelu", [d, a.reshape((-1,) + (1,) * (d.ndim - 1 - axis))])[0]),
    OpRecord("nn.max_pool1d", irlib.nn.max_pool1d,
             [([f32(2, 3, 9)], {"pool_size": 3, "strides": 2, "padding": 1, "dilation": 2}),
              ([f32(1, 8, 2)], {"pool_size": 2, "layout": "NWC"})],
             pool_ort("MaxPool")),
    OpRecord("nn.max_pool3d", irlib.nn.max_pool3d,
             [([f32(1, 2, 5, 6, 4)], {"pool_size": (2, 3, 2), "strides": (1, 2, 2),
                                     "padding": 1})],
             pool_ort("MaxPool")),
    OpRecord("nn.avg_pool1d", irlib.nn.avg_pool1d,
             [([f32(2, 3, 9)], {"pool_size": 3, "strides": 2, "padding": 1}),
              ([f32(2, 3, 9)], {"pool_size": 3, "strides": 2, "padding": 1,
                                "count_include_pad": True})],
             pool_ort("AveragePool"), tol=1e-5),
    OpRecord("nn.avg_pool3d", irlib.nn.avg_pool3d,
             [([f32(1, 2, 5, 6, 4)], {"pool_size": 2, "strides": 2, "padding": (1, 0, 1)}),
              ([f32(1, 5, 6, 4, 2)], {"pool_size": 2, "padding": 1, "count_include_pad": True,
                                      "layout": "NDHWC"})],
             pool_ort("AveragePool"), tol=1e-5),
    OpRecord("nn.lp_pool1d", irlib.nn.lp_pool1d,
             [([f32(2, 3, 8)], {"pool_size": 3, "strides": 2, "padding": 1, "p": 3.0})],
             pool_ort("LpPool"), tol=1e-4),
    OpRecord("nn.lp_pool2d", irlib.nn.lp_pool2d,
             [([f32(1, 2, 6, 5)], {"pool_size": 2, "strides": 2, "padding": 1}),
              ([f32(1, 2, 6, 5)], {"pool_size": (3, 2), "p": 1.0})],
             pool_ort("LpPool"), tol=1e-4),
    OpRecord("nn.lp_pool3d", irlib.nn.lp_pool3d,
             [([f32(1, 2, 4, 5, 3)], {"pool_size": 2})], pool_ort("LpPool"), tol=1e-4),
] + [
    OpRecord(f"nn.adaptive_{kind}_pool{n}d", getattr(irlib.nn, f"adaptive_{kind}_pool{n}d"),
             [([f32(*((2, 3) + (7, 5, 6)[:n]))], {"output_size": (3, 2, 4)[:n]}),
              ([f32(*((1, 2) + (4, 9, 5)[:n]))], {"output_size": (4,)})],
             adaptive_loop(kind), tol=1e-5)
    for kind, n in itertools.product(("max", "avg"), (1, 2, 3))
] + [
    OpRecord("image.resize2d", irlib.image.resize2d,
             [([f32(1, 2, 4, 5)], dict(size=(7, 3), method=method,
                                       coordinate_transformation_mode=mode, **extra))
              for method, mode, extra in [
                  ("linear", "half_pixel", {}), ("linear", "align_corners", {}),
                  ("linear", "asymmetric", {}), ("linear", "pytorch_half_pixel", {}),
                  ("nearest_neighbor", "asymmetric", {"rounding_method": "floor"}),
                  ("nearest_neighbor", "half_pixel", {"rounding_method": "round_prefer_ceil"}),
                  ("nearest_neighbor", "tf_half_pixel_for_nn", {"rounding_method": "floor"}),
                  ("nearest_neighbor", "align_corners",
                   {"rounding_method": "round_prefer_floor"}),
                  ("nearest_neighbor", "half_pixel", {"rounding_method": "ceil"}),
                  ("cubic", "half_pixel", {"cubic_alpha": -0.75}),
                  ("cubic", "asymmetric", {"cubic_alpha": -0.5, "cubic_exclude": 1}),
                  ("linear", "tf_crop_and_resize", {"roi": (0.2, -0.3, 1.1, 0.9),
                                                    "extrapolation_value": 7.0})]]
             + [([f32(1, 4, 5, 2)], {"size": (8, 10), "layout": "NHWC"})],
             resize_ort, tol=1e-4),
    OpRecord("image.grid_sample", irlib.image.grid_sample,
             [([f32(2, 3, 4, 5), RNG.uniform(-1.2, 1.2, (2, 2, 3, 6)).astype("float32")],
               {"method": method, "padding_mode": padding, "align_corners": corners})
              for method, padding, corners in itertools.product(
                  ("bilinear", "nearest", "bicubic"), ("zeros", "border", "reflection"),
                  (True, False))],
             grid_sample_ort, tol=1e-4),
    OpRecord("nn.upsampling", irlib.nn.upsampling,
             [([f32(1, 2, 3, 4)], {"scale_h": 2, "scale_w": 3}),
              ([f32(1, 2, 3, 4)], {"scale_h": 2, "scale_w": 2, "method": "bilinear",
                                   "align_corners": True})],
             upsampling_ort, tol=1e-4),
    OpRecord("nn.depth_to_space", irlib.nn.depth_to_space,
             [([f32(2, 8, 3, 2)], {"block_size": 2, "mode": mode}) for mode in ("DCR", "CRD")],
             lambda d, block_size, mode="DCR": run_node(
                 "DepthToSpace", [d], {"blocksize": block_size, "mode": mode})[0]),
    OpRecord("nn.space_to_depth", irlib.nn.space_to_depth,
             [([f32(2, 3, 4, 6)], {"block_size": 2})],
             lambda d, block_size: run_node("SpaceToDepth", [d], {"blocksize": block_size})[0]),
    OpRecord("nn.attention", irlib.nn.attention,
             [([f32(2, 4, 8), f32(2, 6, 8), f32(2, 6, 5)], {}),
              ([f32(2, 3, 4, 8), f32(1, 3, 4, 8), f32(2, 1, 4, 5)], {"causal": True}),
              ([f32(5, 3), f32(5, 3), f32(5, 2)], {"scale": 0.3, "causal": True})],
             attention_loop, tol=1e-4),
]

CASES = [(r, i) for r in RECORDS for i in range(len(r.cases))]


@pytest.mark.parametrize("record,case", CASES, ids=[f"{r.name}-{i}" for r, i in CASES])
def test_reference_matches_oracle_and_type(record, case):
    check_record(record, case)


@pytest.mark.parametrize("attrs", [
    {"pool_size": 3, "strides": 2, "padding": 1, "ceil_mode": True},
    {"pool_size": 2, "strides": 3, "padding": (0, 1), "ceil_mode": True,
     "count_include_pad": True},
    {"pool_size": 3, "dilation": 2, "layout": "NWC"},
])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool1d_matches_pool2d_over_a_unit_height(kind, attrs):
    data = f32(2, 10, 3) if attrs.get("layout") == "NWC" else f32(2, 3, 10)
    if kind == "max":
        attrs = {k: v for k, v in attrs.items() if k != "count_include_pad"}
    builder = getattr(irlib.nn, f"{kind}_pool1d")
    one = irlib.op.evaluate(f"nn.{kind}_pool1d", [data],
                            builder(irlib.var("x", shape=data.shape), **attrs).attrs)
    layout = attrs.get("layout", "NCW")
    data2 = np.expand_dims(data, layout.index("W"))
    two_attrs = {k: v for k, v in attrs.items() if k not in ("layout", "padding")}
    padding = attrs.get("padding", 0)
    padding = (padding, padding) if isinstance(padding, int) else padding
    two_attrs.update(pool_size=(1, attrs["pool_size"]), strides=(1, attrs.get("strides", 1)),
                     dilation=(1, attrs.get("dilation", 1)), padding=(0, padding[0], 0,
                                                                      padding[1]),
                     layout=layout.replace("W", "HW"))
    two = irlib.op.evaluate(f"nn.{kind}_pool2d", [data2], getattr(irlib.nn, f"{kind}_pool2d")(
        irlib.var("x", shape=data2.shape), **two_attrs).attrs)
    np.testing.assert_allclose(one, np.squeeze(two, layout.index("W")), rtol=1e-6)


@pytest.mark.parametrize("mode", ["half_pixel", "asymmetric", "align_corners"])
def test_resize_round_half_away_from_zero(mode):
    data = np.arange(6, dtype="float32").reshape(1, 1, 1, 6)
    out = irlib.op.evaluate("image.resize2d", [data], irlib.image.resize2d(
        irlib.var("x", shape=data.shape), (1, 4), method="nearest_neighbor",
        coordinate_transformation_mode=mode, rounding_method="round").attrs)
    scale = 6 / 4
    expected = []
    for x in range(4):
        source = {"half_pixel": (x + 0.5) * scale - 0.5, "asymmetric": x * scale,
                  "align_corners": x * 5 / 3}[mode]
        rounded = int(np.floor(abs(source) + 0.5)) * (1 if source >= 0 else -1)
        expected.append(min(max(rounded, 0), 5))
    np.testing.assert_array_equal(out[0, 0, 0], expected)


# -- gradients ---------------------------------------------------------------------------------

def f64(*shape):
    return RNG.standard_normal(shape)


GRAD_CASES = [
    (irlib.nn.conv1d, [f64(2, 4, 7), f64(6, 2, 3)], {"strides": 2, "padding": (1, 2),
                                                     "groups": 2}),
    (irlib.nn.conv1d, [f64(1, 7, 4), f64(3, 4, 6)], {"padding": 1, "dilation": 2,
                                                     "data_layout": "NWC",
                                                     "kernel_layout": "WIO"}),
    (irlib.nn.conv1d_transpose, [f64(2, 4, 5), f64(4, 3, 3)], {"strides": 2, "padding": (1, 0),
                                                               "output_padding": 1}),
    (irlib.nn.conv1d_transpose, [f64(1, 5, 4), f64(4, 1, 3)], {"groups": 2, "dilation": 2,
                                                               "data_layout": "NWC"}),
    (irlib.nn.conv2d_transpose, [f64(1, 4, 3, 3), f64(4, 3, 2, 3)],
     {"strides": 2, "padding": (1, 0), "output_padding": 1}),
    (irlib.nn.conv2d_transpose, [f64(1, 3, 3, 4), f64(4, 1, 3, 2)],
     {"strides": (1, 2), "dilation": (2, 1), "groups": 2, "data_layout": "NHWC"}),
    (irlib.nn.conv3d, [f64(1, 2, 4, 3, 4), f64(3, 2, 2, 2, 3)],
     {"padding": (1, 0, 1), "strides": (2, 1, 1)}),
    (irlib.nn.conv3d, [f64(2, 5, 3, 4, 4), f64(2, 2, 3, 2, 2)],
     {"dilation": (2, 1, 1), "groups": 2, "padding": (1, 0, 0, 0, 1, 0),
      "data_layout": "NDHWC", "kernel_layout": "DHWIO"}),
    (irlib.nn.matmul, [f64(3, 4), f64(4, 5)], {}),
    (irlib.nn.matmul, [f64(4, 3), f64(5, 4)], {"transpose_a": True, "transpose_b": True}),
    (irlib.nn.group_norm, [f64(2, 4, 3), f64(4), f64(4)], {"num_groups": 2}),
    (irlib.nn.instance_norm, [f64(2, 3, 4), f64(3), f64(3)], {}),
    (irlib.nn.rms_norm, [f64(2, 3, 4), f64(3, 4)], {"axis": [1, 2]}),
    (irlib.nn.lrn, [f64(2, 5, 3)], {"size": 3, "alpha": 0.5}),
    (lambda d: irlib.nn.l2_normalize(d, 1e-12, axis=[1]), [f64(2, 5)], {}),
    (irlib.nn.prelu, [f64(2, 3, 4), f64(3)], {}),
    (irlib.nn.max_pool1d, [f64(1, 2, 7)], {"pool_size": 3, "strides": 2, "padding": 1}),
    (irlib.nn.avg_pool1d, [f64(1, 7, 2)], {"pool_size": 3, "strides": 2, "padding": 1,
                                           "layout": "NWC", "count_include_pad": True}),
    (irlib.nn.lp_pool1d, [f64(1, 2, 7)], {"pool_size": 3, "strides": 2, "padding": 1,
                                          "p": 3.0}),
    (irlib.nn.lp_pool2d, [f64(1, 2, 5, 5)], {"pool_size": 2, "padding": 1}),
    (irlib.nn.upsampling, [f64(1, 2, 3, 2)], {"scale_h": 2, "scale_w": 3}),
    (irlib.nn.upsampling, [f64(1, 2, 3, 2)], {"scale_h": 2, "scale_w": 1.5,
                                              "method": "bicubic"}),
    (irlib.nn.upsampling, [f64(1, 3, 2, 2)], {"scale_h": 2, "scale_w": 2, "layout": "NHWC",
                                              "method": "bilinear", "align_corners": True}),
    (irlib.image.resize2d, [f64(1, 2, 4, 3)], {"size": (5, 7)}),
    (irlib.image.resize2d, [f64(1, 4, 3, 2)], {"size": (2, 5), "layout": "NHWC",
                                               "method": "cubic", "cubic_exclude": 1,
                                               "coordinate_transformation_mode": "asymmetric"}),
    (irlib.image.resize2d, [f64(1, 2, 4, 3)], {"size": (3, 5), "method": "nearest_neighbor",
                                               "coordinate_transformation_mode":
                                               "align_corners"}),
    (irlib.image.resize2d, [f64(1, 2, 4, 3)],
     {"size": (5, 4), "coordinate_transformation_mode": "tf_crop_and_resize",
      "roi": (0.2, -0.3, 1.1, 0.9), "extrapolation_value": 3.0}),
] + [
    (getattr(irlib.nn, f"{kind}_pool3d"), [f64(1, 2, 5, 4, 5)],
     dict(pool_size=(2, 3, 2), strides=(2, 1, 2), padding=(1, 1, 0, 0, 1, 0), ceil_mode=True,
          **extra))
    for kind, extra in (("max", {}), ("avg", {"count_include_pad": True}), ("lp", {"p": 3.0}))
] + [
    (irlib.nn.max_pool3d, [f64(2, 4, 5, 3, 2)], {"pool_size": 2, "dilation": (2, 1, 1),
                                                 "padding": (1, 0, 1, 0, 1, 0),
                                                 "layout": "NDHWC"}),
    (irlib.nn.avg_pool3d, [f64(1, 4, 5, 3, 2)], {"pool_size": 2, "padding": 1,
                                                 "layout": "NDHWC"}),
] + [
    (getattr(irlib.nn, f"adaptive_{kind}_pool{n}d"), [f64(*((1, 2) + (5, 4, 3)[:n]))],
     {"output_size": (3, 2, 2)[:n]}) for kind in ("max", "avg") for n in (1, 2, 3)
] + [
    (irlib.nn.adaptive_avg_pool2d, [f64(1, 5, 7, 2)], {"output_size": (3, None),
                                                       "layout": "NHWC"}),
    (irlib.nn.depth_to_space, [f64(1, 8, 2, 3)], {"block_size": 2, "mode": "CRD"}),
    (irlib.nn.depth_to_space, [f64(1, 2, 3, 8)], {"block_size": 2, "layout": "NHWC"}),
    (irlib.nn.space_to_depth, [f64(1, 2, 4, 6)], {"block_size": 2}),
    (irlib.nn.attention, [f64(2, 3, 4), f64(2, 5, 4), f64(2, 5, 2)], {}),
    (irlib.nn.attention, [f64(1, 2, 3, 4), f64(1, 1, 3, 4), f64(1, 2, 3, 2)],
     {"causal": True}),
]


@pytest.mark.parametrize("builder,inputs,attrs", GRAD_CASES)
def test_gradient_matches_finite_differences(builder, inputs, attrs):
    check_gradient(builder, inputs, rtol=1e-4, atol=1e-6, **attrs)


@pytest.mark.parametrize("name,expr", [
    ("elu", lambda x: irlib.nn.elu(x, 0.7)),
    ("selu", irlib.nn.selu), ("celu", lambda x: irlib.nn.celu(x, 1.3)),
    ("softplus", irlib.nn.softplus), ("softsign", irlib.nn.softsign),
    ("hard_sigmoid", irlib.nn.hard_sigmoid), ("hard_swish", irlib.nn.hard_swish),
    ("thresholded_relu", lambda x: irlib.nn.thresholded_relu(x, 0.5)),
])
def test_elu_family_matches_onnx(name, expr):
    from irlib.testing.dataflow_eval import evaluate
    data = f32(3, 4) * 2
    x = irlib.var("x", shape=data.shape)
    onnx_op = {"elu": ("Elu", {"alpha": 0.7}), "selu": ("Selu", {}),
               "celu": ("Celu", {"alpha": 1.3}), "softplus": ("Softplus", {}),
               "softsign": ("Softsign", {}), "hard_sigmoid": ("HardSigmoid", {}),
               "hard_swish": ("HardSwish", {}),
               "thresholded_relu": ("ThresholdedRelu", {"alpha": 0.5})}[name]
    expected = run_node(onnx_op[0], [data], onnx_op[1])[0]
    np.testing.assert_allclose(evaluate(expr(x), {x: data}), expected, rtol=1e-5, atol=1e-6)


# -- relations: symbolic dims and errors -----------------------------------------------------------

n = size_var("n")


def test_symbolic_shapes():
    assert type_of(irlib.nn.conv1d(tvar("x", (n, 3, 8)), tvar("w", (4, 3, 3)), padding=1)) == \
        TensorType((n, 4, 8))
    assert type_of(irlib.nn.max_pool3d(tvar("x", (n, 2, 4, 4, 4)), pool_size=2, strides=2)) \
        == TensorType((n, 2, 2, 2, 2))
    assert type_of(irlib.nn.adaptive_avg_pool2d(tvar("x", (n, 3, 7, 7)), (1, 1))) == \
        TensorType((n, 3, 1, 1))
    assert type_of(irlib.nn.attention(tvar("q", (n, 4, 8)), tvar("k", (n, 6, 8)),
                                      tvar("v", (n, 6, 2)))) == TensorType((n, 4, 2))
    assert type_of(irlib.nn.matmul(tvar("a", (n, 4)), tvar("b", (4, 3)))) == \
        TensorType((n, 3))
    assert type_of(irlib.nn.upsampling(tvar("x", (1, 2, n, 3)), 2, 2)) == \
        TensorType((1, 2, 2 * n, 6))


@pytest.mark.parametrize("build,needle", [
    (lambda: irlib.nn.conv1d(tvar("x", (1, 3, 8)), tvar("w", (4, 2, 3))), "input channels"),
    (lambda: irlib.nn.conv3d(tvar("x", (1, 3, 8, 8)), tvar("w", (4, 3, 3, 3, 3))), "5-D"),
    (lambda: irlib.nn.conv1d(tvar("x", (1, 3, 8)), tvar("w", (4, 3, 3)),
                             data_layout="NCHW"), "data_layout"),
    (lambda: irlib.nn.matmul(tvar("a", (3, 4)), tvar("b", (5, 3))), "tensor_a"),
    (lambda: irlib.nn.group_norm(tvar("x", (1, 6, 4)), tvar("g", (6,)), tvar("b", (6,)), 4),
     "num_groups"),
    (lambda: irlib.nn.instance_norm(tvar("x", (1, 6, 4)), tvar("g", (5,)), tvar("b", (6,))),
     "gamma"),
    (lambda: irlib.nn.rms_norm(tvar("x", (2, 6)), tvar("g", (2,))), "gamma"),
    (lambda: irlib.nn.prelu(tvar("x", (2, 6)), tvar("a", (2,))), "alpha"),
    (lambda: irlib.nn.max_pool1d(tvar("x", (2, 3, 4)), pool_size=6), "pool_size"),
    (lambda: irlib.nn.adaptive_max_pool2d(tvar("x", (2, 3, 4, 4)), (1, 2, 3)), "output_size"),
    (lambda: irlib.image.resize2d(tvar("x", (1, 2, 3, 4)), (4, 4), method="area"), "method"),
    (lambda: irlib.image.resize2d(tvar("x", (1, 2, 3, 4)), (4, 4),
                                  coordinate_transformation_mode="x"),
     "coordinate_transformation_mode"),
    (lambda: irlib.image.grid_sample(tvar("x", (1, 2, 3, 4)), tvar("g", (1, 3, 2, 2))), "grid"),
    (lambda: irlib.nn.depth_to_space(tvar("x", (1, 6, 3, 4)), 2), "block_size"),
    (lambda: irlib.nn.space_to_depth(tvar("x", (1, 6, 3, 4)), 2), "block_size"),
    (lambda: irlib.nn.attention(tvar("q", (2, 4, 8)), tvar("k", (2, 6, 7)),
                                tvar("v", (2, 6, 2))), "head size"),
    (lambda: irlib.nn.lrn(tvar("x", (2, 4)), size=0), "size"),
])
def test_relation_errors_name_the_op_and_argument(build, needle):
    with pytest.raises(TypeInferenceError) as info:
        type_of(build())
    message = str(info.value)
    assert needle in message
    assert message.startswith(build().op.name + ":"), message


@pytest.mark.parametrize("mode,widths", [
    ("edge", ((1, 2), (0, 1))), ("reflect", ((2, 1), (1, 0))), ("reflect", ((0, 0), (2, 2))),
])
def test_pad_gradient_for_copy_modes(mode, widths):
    check_gradient(lambda d, v: irlib.nn.pad(d, widths, v, pad_mode=mode),
                   [f64(3, 4), f64()])
