"""interp.build's Winograd rewrite (interp/winograd_rewrite.py): at opt_level 3 on the cpu
target, 3x3 stride-1 convolutions with constant weights where the cost model says so run as
``nn.contrib_conv2d_winograd_without_weight_transform`` on a weight transformed at build
time (the graph's param is the ``(a, a, I, O)`` transformed weight); fused epilogues (bias,
ReLU, residual add) still fuse; the switches turn it off; results agree with the reference
interpreter on the unoptimised module to 1e-3 of the output's scale (Winograd's float32
error; measured ~1e-6 here).
"""

import numpy as np
import pytest

import interp
import irlib
import zoo
from irlib.ir import expr as E
from irlib.ir.functor import children, post_order
from irlib.transform import PassContext

from graph_helpers import graph_module, outputs

WINOGRAD = "nn.contrib_conv2d_winograd_without_weight_transform"


def ops_of(factory) -> list:
    """The op names of every call in the built library's functions."""
    return [node.op.name for function in factory.lib.functions.values()
            for node in post_order(function, children)
            if type(node) is E.Call and isinstance(node.op, E.Op)]


def residual_block(channels=64, size=28):
    """relu(conv3x3(x) + b) + x with the weight and bias as parameters."""
    x = irlib.var("x", shape=(1, channels, size, size))
    w = irlib.var("w", shape=(channels, channels, 3, 3))
    b = irlib.var("b", shape=(channels, 1, 1))
    body = irlib.add(irlib.nn.relu(irlib.add(irlib.nn.conv2d(x, w, padding=(1, 1)), b)), x)
    rng = np.random.default_rng(0)
    params = {"w": rng.standard_normal((channels, channels, 3, 3)).astype("float32") * 0.1,
              "b": rng.standard_normal((channels, 1, 1)).astype("float32")}
    return irlib.IRModule.from_expr(irlib.Function([x, w, b], body)), params


def run_against_interpreter(mod, params, rel=1e-3, **context):
    """Build under ``context``, run on random inputs, compare with the interpreter; return
    the factory."""
    rng = np.random.default_rng(1)
    inputs = {p.name_hint: rng.standard_normal([int(d) for d in p.type_annotation.shape])
              .astype(p.type_annotation.dtype)
              for p in mod["main"].params if p.name_hint not in params}
    with PassContext(**context):
        gmod, factory = graph_module(mod, "cpu", params)
    gmod.run(**inputs)
    ordered = [inputs[p.name_hint] for p in mod["main"].params if p.name_hint not in params]
    expected = interp.create_executor("debug", mod, params=params).evaluate()(*ordered)
    expected = np.asarray(expected.numpy())
    got = outputs(gmod)[0]
    scale = float(np.abs(expected).max())
    assert got.shape == expected.shape
    assert float(np.abs(got - expected).max()) <= rel * scale
    return factory


def test_constant_weight_conv_becomes_winograd_with_fused_epilogue():
    mod, params = residual_block()
    factory = run_against_interpreter(mod, params, opt_level=3)
    assert WINOGRAD in ops_of(factory) and "nn.conv2d" not in ops_of(factory)
    groups = [[n.op.name for n in post_order(f, children)
               if type(n) is E.Call and isinstance(n.op, E.Op)]
              for f in factory.lib.functions.values()]
    fused = next(g for g in groups if WINOGRAD in g)
    assert {"add", "nn.relu"} <= set(fused)             # epilogue fused with the anchor
    shapes = sorted(v.shape for v in factory.get_params().values())
    assert (6, 6, 64, 64) in shapes or (4, 4, 64, 64) in shapes      # folded at build time


@pytest.mark.parametrize("context, env", [
    (dict(opt_level=2), None),
    (dict(opt_level=3, config={"cpu.winograd": False}), None),
    (dict(opt_level=3, disabled_pass=["Winograd"]), None),
    (dict(opt_level=3), "0"),
])
def test_switches_keep_the_gemm_convolution(context, env, monkeypatch):
    if env is not None:
        monkeypatch.setenv("IRLIB_WINOGRAD", env)
    mod, params = residual_block()
    factory = run_against_interpreter(mod, params, rel=1e-4, **context)
    assert WINOGRAD not in ops_of(factory) and "nn.conv2d" in ops_of(factory)


def test_non_constant_weight_is_not_rewritten():
    mod, params = residual_block()
    factory = run_against_interpreter(mod, {"b": params["b"]}, opt_level=3)
    assert WINOGRAD not in ops_of(factory)


@pytest.mark.parametrize("name, make", [
    ("resnet18", lambda: zoo.resnet.get_workload(num_classes=10, image_shape=(3, 128, 128))),
    ("vgg11", lambda: zoo.vgg.get_workload(1, num_classes=10, image_shape=(3, 32, 32),
                                           num_layers=11, batch_norm=True)),
])
def test_zoo_models_with_winograd_match_interpreter(name, make):
    mod, params = make()
    params = {k: v.numpy() for k, v in params.items()}
    factory = run_against_interpreter(mod, params, opt_level=3)
    assert WINOGRAD in ops_of(factory), name


def test_profile_counts_winograd_as_the_direct_convolution():
    """The profiler's FLOPs of a Winograd group are the replaced 3x3 convolution's (2 per
    multiply-add), so its GFLOP/s compares with a GEMM-based conv; it is the group's
    anchor in the per-op summary."""
    from interp.profile_report import FLOP_OPS, group_flops
    x = irlib.var("x", shape=(1, 9, 10, 5))
    u = irlib.var("u", shape=(6, 6, 5, 7))
    call = irlib.nn.contrib_conv2d_winograd_without_weight_transform(
        x, u, tile_size=4, padding=(1, 1, 1, 1), data_layout="NHWC", kernel_layout="HWIO")
    func = irlib.transform.InferType()(irlib.IRModule.from_expr(
        irlib.Function([x, u], irlib.nn.relu(call))))["main"]
    assert group_flops(func) == 2 * (9 * 10 * 7) * 9 * 5
    assert WINOGRAD in FLOP_OPS
