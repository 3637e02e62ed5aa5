"""FuseLayerNorm: layer norms written as primitives become one fused function and one kernel
call, and the results do not change.

Oracles: a numpy layer norm written here, and the interpreter on the rewritten program
(the fused function's body is the original ops).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import irlib
import interp
from interp import graph_executor
from irlib.testing.budget import examples
from irlib.transform.fuse_layer_norm import LAYER_NORM_ATTR, fuse_layer_norm


def _layer_norm_expr(x, eps, gamma, beta, square, scaling, commuted):
    mean = irlib.mean(x, axis=[-1], keepdims=True)
    d = irlib.subtract(x, mean)
    sq = irlib.multiply(d, d) if square == "multiply" else irlib.power(d, irlib.const(2.0))
    shifted = irlib.add(irlib.mean(sq, axis=[-1], keepdims=True), irlib.const(eps))
    if scaling == "rsqrt":
        normed = irlib.multiply(d, irlib.rsqrt(shifted))
    else:
        normed = irlib.divide(d, irlib.sqrt(shifted))
    if gamma is not None:
        g = irlib.const(gamma)
        normed = irlib.multiply(g, normed) if commuted else irlib.multiply(normed, g)
    if beta is not None:
        b = irlib.const(beta)
        normed = irlib.add(b, normed) if commuted else irlib.add(normed, b)
    return normed


def _numpy_layer_norm(x, eps, gamma, beta):
    x = x.astype("float64")
    d = x - x.mean(-1, keepdims=True)
    out = d / np.sqrt((d * d).mean(-1, keepdims=True) + eps)
    if gamma is not None:
        out = out * gamma
    if beta is not None:
        out = out + beta
    return out


def _fused_functions(lib):
    return [c for c in lib.lib.compiled.values() if hasattr(c.fn, "plan")]


@settings(max_examples=examples(12), deadline=None)
@given(rows=st.sampled_from([(1,), (3,), (2, 5), (1, 17)]), length=st.sampled_from([1, 7, 64]),
       eps=st.sampled_from([1e-12, 1e-5, 0.1]), affine=st.sampled_from(["none", "gamma",
                                                                        "both"]),
       square=st.sampled_from(["multiply", "power"]),
       scaling=st.sampled_from(["rsqrt", "sqrt"]), commuted=st.booleans(),
       offset=st.sampled_from([0.0, 1000.0]), seed=st.integers(0, 1000))
def test_layer_norm_chain_fuses_and_matches_numpy(rows, length, eps, affine, square, scaling,
                                                  commuted, offset, seed):
    rng = np.random.default_rng(seed)
    shape = rows + (length,)
    gamma = rng.standard_normal(length).astype("float32") if affine != "none" else None
    beta = rng.standard_normal(length).astype("float32") if affine == "both" else None
    x = irlib.var("x", shape=shape)
    body = irlib.exp(_layer_norm_expr(irlib.tanh(x), eps, gamma, beta, square, scaling,
                                      commuted))
    mod = irlib.IRModule.from_expr(irlib.Function([x], body))
    with irlib.transform.PassContext(opt_level=3):
        lib = interp.build(mod, target="cpu")
    assert len(_fused_functions(lib)) == 1
    data = (rng.standard_normal(shape) * 3 + offset).astype("float32")
    m = graph_executor.GraphModule(lib["default"](interp.cpu(0)))
    m.run(x=data)
    expected = np.exp(_numpy_layer_norm(np.tanh(data.astype("float64")), eps, gamma, beta))
    np.testing.assert_allclose(m.get_output(0).numpy(), expected, rtol=2e-4, atol=2e-5)


def test_rewritten_program_runs_the_same_ops_on_the_interpreter():
    rng = np.random.default_rng(0)
    gamma, beta = rng.standard_normal(8).astype("float32"), rng.standard_normal(8).astype(
        "float32")
    x = irlib.var("x", shape=(3, 8))
    func = irlib.Function([x], _layer_norm_expr(x, 1e-5, gamma, beta, "multiply", "rsqrt",
                                                 False))
    typed = irlib.transform.InferType()(irlib.IRModule.from_expr(func))["main"]
    fused = fuse_layer_norm(typed)
    marked = [n for n in irlib.ir.functor.post_order(fused)
              if isinstance(n, irlib.ir.expr.Function) and n.get_attr(LAYER_NORM_ATTR)]
    assert len(marked) == 1
    data = rng.standard_normal((3, 8)).astype("float32")
    result = interp.create_executor("debug", mod=irlib.IRModule.from_expr(fused)).evaluate()(
        data)
    np.testing.assert_allclose(result.numpy(), _numpy_layer_norm(data, 1e-5, gamma, beta),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", ["other_axis", "no_keepdims_mean_of_other"])
def test_norms_over_another_axis_are_left_alone(case):
    x = irlib.var("x", shape=(4, 6))
    axis = [0] if case == "other_axis" else [-1]
    mean = irlib.mean(x, axis=axis, keepdims=True)
    d = irlib.subtract(x, mean)
    other = [0] if case == "no_keepdims_mean_of_other" else axis
    var = irlib.mean(irlib.multiply(d, d), axis=other, keepdims=True)
    body = irlib.multiply(d, irlib.rsqrt(irlib.add(var, irlib.const(1e-5))))
    mod = irlib.IRModule.from_expr(irlib.Function([x], body))
    with irlib.transform.PassContext(opt_level=3):
        lib = interp.build(mod, target="cpu")
    assert not _fused_functions(lib)
    data = np.random.default_rng(1).standard_normal((4, 6)).astype("float32")
    m = graph_executor.GraphModule(lib["default"](interp.cpu(0)))
    m.run(x=data)
    d = data - data.mean(axis=axis[0], keepdims=True)
    expected = d / np.sqrt((d * d).mean(axis=other[0], keepdims=True) + 1e-5)
    np.testing.assert_allclose(m.get_output(0).numpy(), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("symbolic", [False, True])
def test_nn_layer_norm_as_simplify_inference_expands_it(symbolic):
    """SimplifyInference writes nn.layer_norm with the variance op; with a symbolic row
    count the fused kernel runs at every size."""
    from irlib.ir.dims import size_var
    rows = size_var("n") if symbolic else 5
    x = irlib.var("x", shape=(rows, 16))
    g, b = irlib.var("g", shape=(16,)), irlib.var("b", shape=(16,))
    mod = irlib.IRModule.from_expr(irlib.Function(
        [x, g, b], irlib.nn.relu(irlib.nn.layer_norm(x, g, b, epsilon=1e-3))))
    rng = np.random.default_rng(2)
    params = {"g": rng.standard_normal(16).astype("float32"),
              "b": rng.standard_normal(16).astype("float32")}
    with irlib.transform.PassContext(opt_level=3):
        lib = interp.build(mod, target="cpu", params=params)
    assert len(_fused_functions(lib)) == 1
    m = graph_executor.GraphModule(lib["default"](interp.cpu(0)))
    for count in ((3, 9) if symbolic else (5,)):
        data = rng.standard_normal((count, 16)).astype("float32")
        m.run(x=data)
        expected = np.maximum(_numpy_layer_norm(data, 1e-3, params["g"], params["b"]), 0)
        np.testing.assert_allclose(m.get_output(0).numpy(), expected, rtol=1e-5, atol=1e-5)
