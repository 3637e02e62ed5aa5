"""The cpu target's layout choice: at opt_level 3, build's AlterOpLayout runs the
convolutions that have a fast channels-last kernel in NHWC/HWIO (jitkernels.layout_preferences).

Checked: which convolutions are converted (one group and depthwise yes; other grouped
convolutions, integer data, already-NHWC ones and tiny layers the direct kernel runs
channels-first, jitkernels.cpu.direct_conv.keeps_channels_first, no), that opt_level 2 and
``disabled_pass=["AlterOpLayout"]`` keep NCHW, and that results equal the reference
interpreter on the unoptimised module (zoo models and generated conv stacks).
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import interp
import irlib
import zoo
from irlib.ir import expr as E
from irlib.ir.functor import post_order, children
from irlib.testing.budget import examples
from irlib.transform import PassContext

from graph_helpers import flatten, graph_module, outputs


def conv_layouts(factory) -> list:
    """``(data_layout, groups)`` of every nn.conv2d in the built library's functions."""
    found = []
    for function in factory.lib.functions.values():
        for node in post_order(function, children):
            if type(node) is E.Call and isinstance(node.op, E.Op) and \
                    node.op.name == "nn.conv2d":
                found.append((node.attrs["data_layout"], int(node.attrs["groups"])))
    return found


def build(mod, params=None, **context):
    with PassContext(**context):
        return graph_module(mod, "cpu", params)


def conv_module(channels=8, groups=1, dtype="float32", layout="NCHW", out_channels=None):
    """relu(conv2d(x, w) + 1) with a 3x3 kernel, padding 1."""
    out_channels = out_channels or channels
    if layout == "NCHW":
        x = irlib.var("x", shape=(1, channels, 6, 6), dtype=dtype)
        w = irlib.var("w", shape=(out_channels, channels // groups, 3, 3), dtype=dtype)
        conv = irlib.op.nn.conv2d(x, w, padding=(1, 1), groups=groups)
    else:
        x = irlib.var("x", shape=(1, 6, 6, channels), dtype=dtype)
        w = irlib.var("w", shape=(3, 3, channels // groups, out_channels), dtype=dtype)
        conv = irlib.op.nn.conv2d(x, w, padding=(1, 1), groups=groups, data_layout="NHWC",
                                  kernel_layout="HWIO")
    body = irlib.op.nn.relu(irlib.add(conv, irlib.const(1, dtype=dtype)))
    return irlib.IRModule.from_expr(irlib.Function([x, w], body))


def random_inputs(mod, rng):
    values = {}
    for param in mod["main"].params:
        ty = param.type_annotation
        shape = [int(d) for d in ty.shape]
        if ty.dtype.startswith("int"):
            values[param.name_hint] = rng.integers(-3, 4, shape).astype(ty.dtype)
        else:
            values[param.name_hint] = rng.standard_normal(shape).astype(ty.dtype)
    return values


def check_against_interpreter(mod, gmod, inputs, params=None):
    ordered = [inputs[p.name_hint] for p in mod["main"].params
               if p.name_hint not in (params or {})]
    expected = flatten(interp.create_executor("debug", mod, params=params).evaluate()(*ordered)
                       .numpy())
    gmod.run(**inputs)
    for got, want in zip(outputs(gmod), expected):
        # float32 sums of different order: absolute error scales with the values' size
        scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * scale)


@pytest.mark.parametrize("case, converted", [
    (dict(groups=1, out_channels=32), True),
    (dict(groups=1), False),                             # tiny: kept channels-first
    (dict(groups=8), True),                              # depthwise, multiplier 1
    (dict(groups=8, out_channels=16), False),            # depthwise, multiplier 2
    (dict(groups=2), False),                             # grouped: no channels-last path
    (dict(groups=1, dtype="float64", out_channels=32), True),
    (dict(groups=1, dtype="int32"), False),
    (dict(groups=1, layout="NHWC"), False),              # already channels-last
])
def test_which_convolutions_run_channels_last(case, converted):
    mod = conv_module(**case)
    weight = {"w": random_inputs(mod, np.random.default_rng(0))["w"]}
    gmod, factory = build(mod, weight, opt_level=3)
    layouts = conv_layouts(factory)
    expected_layout = "NHWC" if converted or case.get("layout") == "NHWC" else "NCHW"
    assert layouts == [(expected_layout, case["groups"])]
    inputs = random_inputs(mod, np.random.default_rng(1))
    check_against_interpreter(mod, gmod, {"x": inputs["x"]}, weight)


@pytest.mark.parametrize("context", [dict(opt_level=2),
                                     dict(opt_level=3, disabled_pass=["AlterOpLayout"])])
def test_lower_level_or_disabled_pass_keeps_nchw(context):
    _, factory = build(conv_module(), **context)
    assert conv_layouts(factory) == [("NCHW", 1)]


def test_python_target_keeps_nchw():
    with PassContext(opt_level=3):
        _, factory = graph_module(conv_module(), "python")
    assert conv_layouts(factory) == [("NCHW", 1)]


@pytest.mark.parametrize("name, make", [
    ("resnet18", lambda: zoo.resnet.get_workload(num_classes=10, image_shape=(3, 32, 32))),
    ("mobilenet", lambda: zoo.mobilenet.get_workload(num_classes=10,
                                                     image_shape=(3, 32, 32))),
    ("squeezenet1.1", lambda: zoo.squeezenet.get_workload(num_classes=10, version="1.1",
                                                          image_shape=(3, 32, 32))),
])
def test_zoo_models_at_opt_level_3_match_interpreter(name, make):
    mod, params = make()
    rng = np.random.default_rng(0)
    params = {k: v.numpy() for k, v in params.items()}
    gmod, factory = build(mod, params, opt_level=3)
    assert {layout for layout, _ in conv_layouts(factory)} == {"NHWC"}
    inputs = {p.name_hint: rng.standard_normal([int(d) for d in p.type_annotation.shape])
              .astype(p.type_annotation.dtype)
              for p in mod["main"].params if p.name_hint not in params}
    check_against_interpreter(mod, gmod, inputs, params)


@settings(max_examples=examples(15), deadline=None)
@given(data=st.data())
def test_generated_conv_stacks_match_interpreter(data):
    """conv -> (relu | add bias | max_pool | concat with a second conv) chains, random
    groups and strides, built at opt_level 3 (partly converted) vs the interpreter."""
    draw = data.draw
    channels = draw(st.sampled_from([2, 4, 6]))
    size = draw(st.integers(4, 9))
    x = irlib.var("x", shape=(1, channels, size, size))
    params, values = [x], {}
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    value = x
    for index in range(draw(st.integers(1, 3))):
        groups = draw(st.sampled_from([1, channels, 2]))
        out_channels = channels * draw(st.sampled_from([1, 2])) if groups != 2 else channels
        stride = draw(st.integers(1, 2))
        w = irlib.var(f"w{index}", shape=(out_channels, channels // groups, 3, 3))
        params.append(w)
        values[w.name_hint] = rng.standard_normal(
            [int(d) for d in w.type_annotation.shape]).astype("float32")
        value = irlib.op.nn.conv2d(value, w, strides=(stride, stride), padding=(1, 1),
                                   groups=groups)
        follow = draw(st.sampled_from(["relu", "bias", "pool", "none"]))
        if follow == "relu":
            value = irlib.op.nn.relu(value)
        elif follow == "bias":
            b = irlib.var(f"b{index}", shape=(out_channels,))
            params.append(b)
            values[b.name_hint] = rng.standard_normal(out_channels).astype("float32")
            value = irlib.op.nn.bias_add(value, b)
        elif follow == "pool":
            value = irlib.op.nn.max_pool2d(value, pool_size=(2, 2), padding=(1, 1))
        channels = out_channels
    mod = irlib.IRModule.from_expr(irlib.Function(params, value))
    gmod, _ = build(mod, values, opt_level=3)
    check_against_interpreter(
        mod, gmod, {"x": rng.standard_normal((1, x.type_annotation.shape[1], size, size))
                    .astype("float32")}, values)
