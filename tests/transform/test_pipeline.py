"""irlib.transform.optimize: opt levels, required/disabled passes, params, numerics."""

import numpy as np
import pytest

import irlib
from irlib import Function, IRModule, var
from irlib.ir import expr as E
from irlib.ir.functor import post_order
from irlib.transform import PassContext, bind_params, optimize

from _graph_opt_helpers import assert_close, op_names, run


def _net():
    x = var("data", shape=(1, 3, 6, 6))
    w = var("w", shape=(4, 3, 3, 3))
    g, b, m, v = (var(n, shape=(4,)) for n in ("gamma", "beta", "mean", "var"))
    conv = irlib.nn.conv2d(x, w, padding=(1, 1))
    bn = E.TupleGetItem(irlib.nn.batch_norm(conv, g, b, m, v).astuple(), 0)
    out = irlib.nn.softmax(irlib.nn.relu(bn))
    rng = np.random.default_rng(0)
    params = {"w": rng.standard_normal((4, 3, 3, 3)).astype("float32"),
              "gamma": rng.uniform(0.5, 2, 4).astype("float32"),
              "beta": rng.standard_normal(4).astype("float32"),
              "mean": rng.standard_normal(4).astype("float32"),
              "var": rng.uniform(0.5, 2, 4).astype("float32")}
    return IRModule.from_expr(Function([x, w, g, b, m, v], out)), params


def _outside_primitives(func):
    inside = set()
    for node in post_order(func):
        if isinstance(node, Function) and node.get_attr("Primitive"):
            inside.update(id(n) for n in post_order(node.body))
    return [n for n in post_order(func) if isinstance(n, E.Call)
            and isinstance(n.op, E.Op) and id(n) not in inside]


@pytest.mark.parametrize("level", [0, 1, 2, 3, 4])
def test_levels_preserve_meaning_and_fuse_everything(level):
    mod, params = _net()
    data = np.random.default_rng(1).standard_normal((1, 3, 6, 6)).astype("float32")
    expected = run(mod, [data] + list(params.values()))
    with PassContext(opt_level=level):
        out = optimize(mod, params)
    main = out["main"]
    assert [p.name_hint for p in main.params] == ["data"]
    assert _outside_primitives(main) == []
    names = op_names(main)
    assert "nn.batch_norm" not in names                       # SimplifyInference: level 0
    assert ("nn.softmax" in names) == (level < 4)               # FastMath: level 4
    if level == 0:
        assert all(len(op_names(f.body)) == 1 for f in post_order(main)
                   if isinstance(f, Function) and f.get_attr("Primitive"))
    if level >= 3:                                              # FoldScaleAxis folded bn
        conv_group = [f for f in post_order(main) if isinstance(f, Function)
                      and "nn.conv2d" in op_names(f.body)][0]
        assert "multiply" not in op_names(conv_group.body)
    assert_close(run(out, [data]), expected, rtol=1e-4, atol=1e-5)


def test_required_and_disabled_passes():
    mod, params = _net()
    with PassContext(opt_level=2, required_pass=["FastMath"]):
        assert "fast_exp" in op_names(optimize(mod, params)["main"])
    with PassContext(opt_level=4, disabled_pass=["FastMath"]):
        assert "nn.softmax" in op_names(optimize(mod, params)["main"])
    with PassContext(opt_level=2):
        unfused = optimize(mod, params, fuse=False)["main"]
    assert not any(isinstance(n, Function) for n in post_order(unfused.body))


def test_an_unregistered_pipeline_pass_is_an_error(monkeypatch):
    from irlib.transform import pipeline
    monkeypatch.setattr(pipeline, "PIPELINE", pipeline.PIPELINE[:2] + ("FoldConstnat",))
    mod, params = _net()
    with pytest.raises(irlib.errors.PassError, match="'FoldConstnat' is not registered"):
        optimize(mod, params)


def test_bind_params_by_name():
    x, y = var("x", shape=(2,)), var("y", shape=(2,))
    func = Function([x, y], irlib.add(x, y))
    bound = bind_params(func, {"y": np.ones(2, "float32"), "unused": np.zeros(1)})
    assert [p.name_hint for p in bound.params] == ["x"]
    assert isinstance(bound.body.args[1], E.Constant)
    with pytest.raises(irlib.errors.IRError, match="2 parameters are named 'x'"):
        bind_params(Function([x, var("x")], x), {"x": np.ones(2)})


def test_zoo_model_through_pipeline():
    import zoo
    mod, params = zoo.mobilenet.get_workload(batch_size=1, num_classes=10,
                                             image_shape=(3, 32, 32))
    data = np.random.default_rng(2).standard_normal((1, 3, 32, 32)).astype("float32")
    names = [p.name_hint for p in mod["main"].params]
    expected = run(mod, [data] + [params[n].numpy() for n in names[1:]])
    with PassContext(opt_level=3):
        out = optimize(mod, params)
    assert _outside_primitives(out["main"]) == []
    assert "nn.batch_norm" not in op_names(out["main"])
    assert_close(run(out, [data]), expected, rtol=1e-3, atol=1e-4)
