"""ConvertLayout: the reference example, transform counts on conv nets, meaning preserved."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import irlib
from irlib import Function, IRModule, var
from irlib.analysis import count_ops
from irlib.ir import expr as E
from irlib.ir.structural import assert_structural_equal
from irlib.testing.budget import examples
from irlib.transform import (ConvertLayout, FoldConstant, InferType, PassContext, bind_params,
                             optimize)

from _graph_opt_helpers import assert_close, run


def layout_transform(expr, src, dst):
    return irlib.op.registry.make_call("layout_transform", (expr,),
                                       {"src_layout": src, "dst_layout": dst})


def test_reference_example_nhwc_to_nchw():
    x, w = var("x", shape=(1, 8, 8, 3)), var("w", shape=(3, 3, 3, 4))
    before = Function([x, w], irlib.nn.relu(irlib.nn.conv2d(
        x, w, padding=(1, 1), data_layout="NHWC", kernel_layout="HWIO")))
    out = ConvertLayout({"nn.conv2d": ["NCHW", "default"]})(IRModule.from_expr(before))
    x2, w2 = var("x", shape=(1, 8, 8, 3)), var("w", shape=(3, 3, 3, 4))
    conv = irlib.nn.conv2d(layout_transform(x2, "NHWC", "NCHW"),
                           layout_transform(w2, "HWIO", "OIHW"), padding=(1, 1))
    expected = Function([x2, w2], layout_transform(irlib.nn.relu(conv), "NCHW", "NHWC"))
    assert_structural_equal(out["main"], InferType()(expected), map_free_vars=True)


def test_no_op_when_already_in_layout():
    x, w = var("x", shape=(1, 3, 8, 8)), var("w", shape=(4, 3, 3, 3))
    mod = IRModule.from_expr(Function([x, w], irlib.nn.relu(irlib.nn.conv2d(x, w))))
    out = ConvertLayout({"nn.conv2d": ["NCHW", "default"]})(mod)
    assert count_ops(out).get("layout_transform", 0) == 0


def _convert_and_compare(mod, params, shape, desired=None):
    with PassContext(opt_level=3):
        before = optimize(mod, params, fuse=False)
    desired = desired or {"nn.conv2d": ["NHWC", "default"]}
    after = FoldConstant()(ConvertLayout(desired)(before))
    data = np.random.default_rng(0).standard_normal(shape).astype("float32")
    assert_close(run(after, [data]), run(before, [data]), rtol=1e-4, atol=1e-5)
    return after


@pytest.mark.parametrize("model", ["resnet20", "mobilenet"])
def test_conv_nets_keep_only_entry_and_exit_transforms(model):
    import zoo
    if model == "resnet20":         # 20 layers: 19 convolutions + the classifier
        mod, params = zoo.resnet.get_workload(batch_size=1, num_layers=20,
                                              image_shape=(3, 16, 16), num_classes=10)
        shape = (1, 3, 16, 16)
    else:
        mod, params = zoo.mobilenet.get_workload(batch_size=1, num_classes=10,
                                                 image_shape=(3, 32, 32))
        shape = (1, 3, 32, 32)
    after = _convert_and_compare(mod, params, shape)
    counts = count_ops(after)
    assert counts["layout_transform"] == 2
    assert counts["nn.conv2d"] >= 19
    convs = [n for n in irlib.ir.functor.post_order(after["main"])
             if isinstance(n, E.Call) and isinstance(n.op, E.Op) and n.op.name == "nn.conv2d"]
    assert all(c.attrs["data_layout"] == "NHWC" for c in convs)


def test_layout_flows_through_bias_pool_batch_norm_and_restores_for_others():
    rng = np.random.default_rng(1)
    x = var("data", shape=(1, 3, 8, 8))
    names = ["w", "b", "g", "beta", "m", "v", "scale"]
    shapes = [(4, 3, 3, 3), (4,), (4,), (4,), (4,), (4,), (4, 1, 1)]
    params = {n: rng.uniform(0.5, 1.5, s).astype("float32") for n, s in zip(names, shapes)}
    w, b, g, beta, m, v, scale = (var(n, shape=s) for n, s in zip(names, shapes))
    y = irlib.nn.bias_add(irlib.nn.conv2d(x, w, padding=(1, 1)), b)
    y = E.TupleGetItem(irlib.nn.batch_norm(y, g, beta, m, v).astuple(), 0)
    y = irlib.nn.max_pool2d(irlib.multiply(irlib.nn.relu(y), scale), pool_size=(2, 2),
                            strides=(2, 2))
    y = irlib.concatenate(E.Tuple((y, irlib.exp(y))), axis=1)
    y = irlib.nn.batch_flatten(y)                                  # layout-sensitive
    mod = IRModule.from_expr(Function([x, w, b, g, beta, m, v, scale], y))
    bound = IRModule.from_expr(bind_params(mod["main"], params))
    after = FoldConstant()(ConvertLayout({"nn.conv2d": ["NHWC", "default"]})(bound))
    data = rng.standard_normal((1, 3, 8, 8)).astype("float32")
    assert_close(run(after, [data]), run(bound, [data]), rtol=1e-5, atol=1e-6)
    assert count_ops(after)["layout_transform"] == 2     # input, and before batch_flatten


LAYERS = ["conv", "relu", "bias", "scale", "pool", "exp", "residual", "batch_norm"]


@settings(max_examples=examples(20), deadline=None)
@given(layers=st.lists(st.sampled_from(LAYERS), min_size=1, max_size=7),
       seed=st.integers(0, 1000), target=st.sampled_from(["NHWC", "NCHW"]))
def test_random_conv_nets_keep_their_meaning(layers, seed, target):
    rng = np.random.default_rng(seed)
    x = var("data", shape=(1, 8, 4, 4), dtype="float64")
    y, conv_layout = x, "NCHW"

    def constant(*shape):
        return E.Constant(rng.uniform(0.5, 1.5, shape))
    for layer in layers:
        if layer == "conv":
            y = irlib.nn.conv2d(y, constant(8, 8, 3, 3), padding=(1, 1))
        elif layer == "relu":
            y = irlib.nn.relu(y)
        elif layer == "bias":
            y = irlib.nn.bias_add(y, constant(8))
        elif layer == "scale":
            y = irlib.multiply(y, constant(8, 1, 1))
        elif layer == "pool":
            y = irlib.nn.max_pool2d(y, pool_size=(3, 3), padding=(1, 1))
        elif layer == "exp":
            y = irlib.exp(irlib.multiply(y, E.Constant(np.array(0.1))))
        elif layer == "residual":
            y = irlib.add(y, irlib.nn.conv2d(y, constant(8, 8, 1, 1)))
        else:
            bn = irlib.nn.batch_norm(y, constant(8), constant(8), constant(8), constant(8))
            y = E.TupleGetItem(bn.astuple(), 0)
    mod = IRModule.from_expr(Function([x], irlib.sum(y, axis=[1])))
    after = ConvertLayout({"nn.conv2d": [target, "default"]})(mod)
    data = rng.standard_normal((1, 8, 4, 4))
    assert_close(run(after, [data]), run(mod, [data]), rtol=1e-7, atol=1e-9)
