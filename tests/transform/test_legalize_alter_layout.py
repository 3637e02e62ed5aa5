"""Legalize and AlterOpLayout with hooks registered for the test (and removed after)."""

import numpy as np
import pytest

import irlib
from irlib import Function, IRModule, const, var
from irlib.analysis import count_ops
from irlib.errors import IRError, PassError
from irlib.op.registry import get_def, make_call
from irlib.transform import AlterOpLayout, Legalize

from _graph_opt_helpers import assert_close, op_names, run


@pytest.fixture
def hook():
    installed = []

    def install(op_name, key, fn):
        get_def(op_name).set_attr(key, fn)
        installed.append((op_name, key))
    yield install
    for op_name, key in installed:
        get_def(op_name).set_attr(key, None)


def _conv_relu():
    x, w = var("x", shape=(1, 3, 6, 6)), var("w", shape=(4, 3, 3, 3))
    return IRModule.from_expr(Function([x, w], irlib.nn.relu(irlib.nn.conv2d(
        x, w, padding=(1, 1))))), [np.random.default_rng(0).standard_normal(s)
                                   .astype("float32") for s in ((1, 3, 6, 6), (4, 3, 3, 3))]


def test_legalize_reference_example(hook):
    seen = {}

    def legalize_conv(attrs, args, types):
        seen["types"] = types
        return make_call("nn.conv2d", (args[0], irlib.multiply(args[1], const(2.0))),
                         dict(attrs))
    hook("nn.conv2d", "FTVMLegalize", legalize_conv)
    mod, inputs = _conv_relu()
    out = Legalize()(mod)
    assert op_names(out["main"]) == ["multiply", "nn.conv2d", "nn.relu"]
    assert [tuple(t.shape) for t in seen["types"]] == [(1, 3, 6, 6), (4, 3, 3, 3),
                                                      (1, 4, 6, 6)]
    assert_close(run(out, inputs), run(mod, [inputs[0], inputs[1] * 2]), rtol=1e-5)
    assert op_names(Legalize("OtherAttr")(mod)["main"]) == ["nn.conv2d", "nn.relu"]


def test_legalize_hook_returning_none_or_garbage(hook):
    mod, _ = _conv_relu()
    hook("nn.relu", "FTVMLegalize", lambda attrs, args, types: None)
    assert op_names(Legalize()(mod)["main"]) == ["nn.conv2d", "nn.relu"]
    hook("nn.relu", "FTVMLegalize", lambda attrs, args, types: 42)
    with pytest.raises((IRError, PassError), match="returned int"):
        Legalize()(mod)


def _to(expr, src, dst):
    return make_call("layout_transform", (expr,), {"src_layout": src, "dst_layout": dst})


def test_alter_op_layout_sinks_the_transform(hook):
    def alter_conv(attrs, inputs, tinfos, out_type):
        data, weight = inputs
        new = dict(attrs)
        new.update(data_layout="NHWC", kernel_layout="HWIO")
        conv = make_call("nn.conv2d", (_to(data, "NCHW", "NHWC"), _to(weight, "OIHW", "HWIO")),
                         new)
        return _to(conv, "NHWC", "NCHW")
    hook("nn.conv2d", "FTVMAlterOpLayout", alter_conv)
    mod, inputs = _conv_relu()
    out = AlterOpLayout()(mod)
    body = out["main"].body
    assert body.op.name == "layout_transform" and body.args[0].op.name == "nn.relu"
    assert count_ops(out)["layout_transform"] == 3
    assert_close(run(out, inputs), run(mod, inputs), rtol=1e-5)


def test_alter_op_layout_without_hooks_changes_nothing():
    mod, _ = _conv_relu()
    assert AlterOpLayout()(mod)["main"].astext() == irlib.transform.InferType()(mod)["main"] \
        .astext()
