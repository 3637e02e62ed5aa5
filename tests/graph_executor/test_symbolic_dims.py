"""The graph executor on functions with symbolic dims: built once, run at many sizes.

Results are compared with numpy written here (and with the interpreter on the same
inputs); the number of numba compilations must not grow with the number of sizes run.
"""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import irlib
import interp
from interp import graph_executor
from interp.graph_runtime import GraphInputError
from irlib.ir.dims import size_var

N, C = size_var("n"), size_var("c")
F32 = "float32"


def _module(params, body, attrs=None):
    func = irlib.Function(params, body)
    if attrs:
        for key, value in attrs.items():
            func = func.with_attr(key, value)
    return irlib.IRModule.from_expr(func)


def _gmod(mod, params=None, target="cpu"):
    factory = interp.build(mod, target=target, params=params)
    return graph_executor.GraphModule(factory["default"](interp.cpu(0))), factory


def _run(gmod, **inputs):
    for name, value in inputs.items():
        gmod.set_input(name, value)
    gmod.run()
    return [gmod.get_output(i).numpy().copy() for i in range(gmod.get_num_outputs())]


def _np_layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _np_gelu(x):
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)).astype(x.dtype))


def _gelu(x):
    half, one = irlib.const(0.5, F32), irlib.const(1.0, F32)
    scaled = irlib.multiply(x, irlib.const(1.0 / math.sqrt(2.0), F32))
    return irlib.multiply(irlib.multiply(x, half), irlib.add(one, irlib.erf(scaled)))


# -- a dense/layer-norm/gelu/softmax chain with a growing cache ----------------------------------

def _chain_module(units=24, width=8):
    x = irlib.var("x", shape=(N, width), dtype=F32)
    cache = irlib.var("cache", shape=(C, width), dtype=F32)
    w = irlib.var("w", shape=(units, width), dtype=F32)
    gamma = irlib.var("gamma", shape=(units,), dtype=F32)
    beta = irlib.var("beta", shape=(units,), dtype=F32)
    hidden = _gelu(irlib.nn.layer_norm(irlib.nn.dense(x, w), gamma, beta))
    probs = irlib.nn.softmax(irlib.reshape(hidden, (-1, units // 4, 4)), axis=-1)
    grown = irlib.concatenate([cache, x], axis=0)
    scores = irlib.nn.softmax(irlib.nn.dense(x, grown))
    body = irlib.Tuple([irlib.reshape(probs, (-1, units)), grown, scores])
    return _module([x, cache, w, gamma, beta], body)


def _chain_numpy(x, cache, w, gamma, beta):
    hidden = _np_gelu(_np_layer_norm(x @ w.T, gamma, beta))
    probs = _np_softmax(hidden.reshape(x.shape[0], -1, 4)).reshape(x.shape[0], -1)
    grown = np.concatenate([cache, x], axis=0)
    return [probs, grown, _np_softmax(x @ grown.T)]


def _chain_params(rng, units=24, width=8):
    return {"w": rng.standard_normal((units, width)).astype(F32),
            "gamma": rng.standard_normal(units).astype(F32),
            "beta": rng.standard_normal(units).astype(F32)}


def _compiled_kernels(factory):
    return [c.kernel for c in factory.lib.compiled.values() if c.kernel is not None]


def test_chain_runs_at_many_sizes_against_numpy_and_the_interpreter():
    rng = np.random.default_rng(0)
    params = _chain_params(rng)
    mod = _chain_module()
    gmod, factory = _gmod(mod, params)
    assert "at_sizes" in factory.memory
    debug = interp.create_executor("debug", mod=mod)
    for n, c in [(1, 0), (1, 1), (3, 5), (1, 6), (7, 2), (2, 40)]:
        x = rng.standard_normal((n, 8)).astype(F32)
        cache = rng.standard_normal((c, 8)).astype(F32)
        got = _run(gmod, x=x, cache=cache)
        want = _chain_numpy(x, cache, **params)
        reference = debug.evaluate()(x, cache, params["w"], params["gamma"], params["beta"])
        for k in range(3):
            assert got[k].shape == want[k].shape
            np.testing.assert_allclose(got[k], want[k], rtol=2e-5, atol=2e-5)
            np.testing.assert_allclose(got[k], reference[k].numpy(), rtol=2e-5, atol=2e-5)


def test_new_sizes_compile_nothing():
    from jitkernels import codegen
    rng = np.random.default_rng(1)
    params = _chain_params(rng)
    gmod, factory = _gmod(_chain_module(), params)
    kernels = _compiled_kernels(factory)
    assert kernels, "the chain has generated kernels"
    assert all(k.size_names for k in kernels)
    _run(gmod, x=np.ones((1, 8), F32), cache=np.ones((1, 8), F32))
    loaded = len(codegen._COMPILED)
    jitted = [k.jit_fn for k in kernels] + [k.small_dense[0] for k in kernels
                                            if k.small_dense is not None]
    signatures = [len(fn.signatures) for fn in jitted]
    assert all(count <= 1 for count in signatures)
    for n, c in [(2, 3), (5, 9), (1, 17), (4, 0), (3, 64), (2000, 5)]:
        _run(gmod, x=np.ones((n, 8), F32), cache=np.ones((c, 8), F32))
    assert len(codegen._COMPILED) == loaded
    assert all(len(fn.signatures) <= 1 for fn in jitted)
    # Building the same program again reuses the same generated sources.
    _gmod(_chain_module(), params)
    assert len(codegen._COMPILED) == loaded


def test_generated_source_takes_sizes_as_arguments():
    gmod, factory = _gmod(_chain_module(), _chain_params(np.random.default_rng(2)))
    sources = [k.source for k in _compiled_kernels(factory)]
    assert any("range(sz_n)" in s for s in sources)
    assert any("sz_c" in s for s in sources)
    graph = json.loads(factory.get_graph_json())
    assert ["n", 8] in graph["attrs"]["shape"][1]
    assert ["c + n", 8] in graph["attrs"]["shape"][1]
    size_args = {n["attrs"].get("size_args") for n in graph["nodes"] if n["op"] == "tvm_op"}
    assert "c,n" in size_args
    # The layer norm's per-row sqrt(var + eps) is computed once per row, not per element.
    norm = next(s for s in sources if "math.sqrt" in s)
    lines = norm.splitlines()
    indent = {key: len(line) - len(line.lstrip()) for line in lines
              for key in ("math.sqrt", "out0[") if key in line}
    assert indent["math.sqrt"] < indent["out0["]


# -- a small attention block with a KV cache --------------------------------------------------

D, H = 32, 4
_WEIGHTS = [("g1", (D,)), ("b1", (D,)), ("wq", (D, D)), ("wk", (D, D)), ("wv", (D, D)),
            ("wo", (D, D)), ("g2", (D,)), ("b2", (D,)), ("w1", (4 * D, D)), ("w2", (D, 4 * D))]


def _attention_module():
    dh = D // H
    x = irlib.var("x", shape=(N, D), dtype=F32)
    k_cache = irlib.var("k_cache", shape=(C, H, dh), dtype=F32)
    v_cache = irlib.var("v_cache", shape=(C, H, dh), dtype=F32)
    w = {name: irlib.var(name, shape=shape, dtype=F32) for name, shape in _WEIGHTS}
    h = irlib.nn.layer_norm(x, w["g1"], w["b1"])
    q = irlib.transpose(irlib.reshape(irlib.nn.dense(h, w["wq"]), (-1, H, dh)), (1, 0, 2))
    k = irlib.reshape(irlib.nn.dense(h, w["wk"]), (-1, H, dh))
    v = irlib.reshape(irlib.nn.dense(h, w["wv"]), (-1, H, dh))
    k_all = irlib.concatenate([k_cache, k], axis=0)
    v_all = irlib.concatenate([v_cache, v], axis=0)
    scores = irlib.nn.batch_matmul(q, irlib.transpose(k_all, (1, 0, 2)))
    scores = irlib.multiply(scores, irlib.const(1.0 / math.sqrt(dh), F32))
    attn = irlib.nn.batch_matmul(irlib.nn.softmax(scores), irlib.transpose(v_all, (1, 2, 0)))
    attn = irlib.reshape(irlib.transpose(attn, (1, 0, 2)), (-1, D))
    x2 = irlib.add(x, irlib.nn.dense(attn, w["wo"]))
    mlp = irlib.nn.dense(_gelu(irlib.nn.dense(irlib.nn.layer_norm(x2, w["g2"], w["b2"]),
                                              w["w1"])), w["w2"])
    body = irlib.Tuple([irlib.add(x2, mlp), k_all, v_all])
    return _module([x, k_cache, v_cache] + [w[name] for name, _ in _WEIGHTS], body)


def _attention_numpy(x, k_cache, v_cache, p):
    dh = D // H
    n = x.shape[0]
    h = _np_layer_norm(x, p["g1"], p["b1"])
    q = (h @ p["wq"].T).reshape(n, H, dh).transpose(1, 0, 2)
    k_all = np.concatenate([k_cache, (h @ p["wk"].T).reshape(n, H, dh)])
    v_all = np.concatenate([v_cache, (h @ p["wv"].T).reshape(n, H, dh)])
    scores = q @ k_all.transpose(1, 2, 0) / np.float32(math.sqrt(dh))
    attn = (_np_softmax(scores) @ v_all.transpose(1, 0, 2)).transpose(1, 0, 2).reshape(n, D)
    x2 = x + attn @ p["wo"].T
    mlp = _np_gelu(_np_layer_norm(x2, p["g2"], p["b2"]) @ p["w1"].T) @ p["w2"].T
    return [x2 + mlp, k_all, v_all]


@pytest.fixture(scope="module")
def attention():
    rng = np.random.default_rng(3)
    params = {name: (rng.standard_normal(shape) * 0.2).astype(F32) for name, shape in _WEIGHTS}
    gmod, factory = _gmod(_attention_module(), params)
    return gmod, factory, params


def test_attention_block_decodes_with_a_growing_cache(attention):
    gmod, _, params = attention
    rng = np.random.default_rng(4)
    prompt = rng.standard_normal((5, D)).astype(F32)
    empty = np.zeros((0, H, D // H), F32)
    out, k_cache, v_cache = _run(gmod, x=prompt, k_cache=empty, v_cache=empty)
    want = _attention_numpy(prompt, empty, empty, params)
    for got, expected in zip((out, k_cache, v_cache), want):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    for step in range(6):               # decode: one new row, the cache grows by one
        token = out[-1:]
        out, new_k, new_v = _run(gmod, x=token, k_cache=k_cache, v_cache=v_cache)
        want = _attention_numpy(token, k_cache, v_cache, params)
        assert new_k.shape == (6 + step, H, D // H)
        for got, expected in zip((out, new_k, new_v), want):
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
        k_cache, v_cache = new_k, new_v


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 6), c=st.integers(0, 30), seed=st.integers(0, 2**16))
def test_attention_block_at_random_sizes(attention, n, c, seed):
    gmod, _, params = attention
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, D)).astype(F32)
    k_cache = rng.standard_normal((c, H, D // H)).astype(F32)
    v_cache = rng.standard_normal((c, H, D // H)).astype(F32)
    got = _run(gmod, x=x, k_cache=k_cache, v_cache=v_cache)
    for g, w in zip(got, _attention_numpy(x, k_cache, v_cache, params)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_bindings_are_cached_in_a_small_lru(attention):
    from interp.graph_symbolic import LRU_SIZE
    gmod, _, _ = attention
    runtime = gmod._runtime
    x = np.ones((1, D), F32)
    for c in range(LRU_SIZE + 3):
        cache = np.ones((c, H, D // H), F32)
        _run(gmod, x=x, k_cache=cache, v_cache=cache)
    assert len(runtime._states) == LRU_SIZE
    state = runtime.state
    cache = np.ones((LRU_SIZE + 2, H, D // H), F32)
    _run(gmod, x=x, k_cache=cache, v_cache=cache)
    assert runtime.state is state            # the same binding reuses its prepared state


# -- binding errors -----------------------------------------------------------------------------

def _pair_module():
    a = irlib.var("a", shape=(N, 3), dtype=F32)
    b = irlib.var("b", shape=(N, 3), dtype=F32)
    return _module([a, b], irlib.add(a, b))


def test_a_size_mismatch_between_inputs_raises():
    gmod, _ = _gmod(_pair_module())
    gmod.set_input("a", np.ones((4, 3), F32))
    gmod.set_input("b", np.ones((5, 3), F32))
    with pytest.raises(GraphInputError, match=r"input 'b'.*dim 0.*size variable n.*bound to 4"
                                              r".*input 'a'.*got 5"):
        gmod.run()
    gmod.set_input("b", np.full((4, 3), 2, F32))
    gmod.run()
    np.testing.assert_array_equal(gmod.get_output(0).numpy(), np.full((4, 3), 3, F32))


def test_static_dims_rank_and_dtype_are_checked_at_set_input():
    gmod, _ = _gmod(_pair_module())
    with pytest.raises(GraphInputError, match=r"input 'a'.*dim 1 is 3, got 4"):
        gmod.set_input("a", np.ones((2, 4), F32))
    with pytest.raises(GraphInputError, match=r"input 'a'.*rank 2"):
        gmod.set_input("a", np.ones((2, 3, 1), F32))
    with pytest.raises(GraphInputError, match="dtype"):
        gmod.set_input("a", np.ones((2, 3), "float64"))


def test_compound_dims_are_checked():
    a = irlib.var("a", shape=(N, 2), dtype=F32)
    b = irlib.var("b", shape=(N + 1, 2), dtype=F32)
    body = irlib.concatenate([a, b], axis=0)
    gmod, _ = _gmod(_module([a, b], body))
    with pytest.raises(GraphInputError, match=r"input 'b'.*n \+ 1 = 4.*got 5"):
        _run(gmod, a=np.ones((3, 2), F32), b=np.ones((5, 2), F32))
    got, = _run(gmod, a=np.ones((3, 2), F32), b=np.zeros((4, 2), F32))
    np.testing.assert_array_equal(got, np.concatenate([np.ones((3, 2)), np.zeros((4, 2))]))


def test_unset_inputs_and_outputs_before_run():
    gmod, _ = _gmod(_pair_module())
    with pytest.raises(GraphInputError, match="run the graph"):
        gmod.get_output(0)
    assert gmod.get_input("a") is None
    gmod.set_input("a", np.ones((2, 3), F32))
    with pytest.raises(GraphInputError, match="input 'b' was not set"):
        gmod.run()


def test_any_dims_still_fall_back_to_the_interpreter():
    from irlib.ir.dims import Any
    x = irlib.var("x", irlib.TensorType((Any, 3), F32))
    mod = _module([x], irlib.exp(x))
    executor = interp.create_executor("graph", mod=mod)
    value = np.ones((2, 3), F32)
    np.testing.assert_allclose(executor.evaluate()(value).numpy(), np.exp(value))
    assert executor.fallback and "Any" in executor.fallback


# -- size parameters and symbolic attributes ----------------------------------------------------

def _size_param_module():
    m = size_var("m")
    x = irlib.var("x", shape=(N, 4), dtype=F32)
    total = irlib.var("m", shape=(), dtype="int64")
    head = irlib.strided_slice(x, begin=[0, 0], end=[m, 4])
    body = irlib.Tuple([irlib.add(head, irlib.ones((m, 4), F32)), irlib.reshape(x, (2 * N, 2))])
    return _module([x, total], body, {"size_params": ["m"]})


def test_size_params_bind_sizes_used_by_attributes():
    gmod, factory = _gmod(_size_param_module())
    assert json.loads(factory.get_graph_json())["attrs"]["size_params"] == ["list_str", ["m"]]
    value = np.arange(24, dtype=F32).reshape(6, 4)
    for m in (1, 4, 6):
        head, flat = _run(gmod, x=value, m=m)
        np.testing.assert_array_equal(head, value[:m] + 1)
        np.testing.assert_array_equal(flat, value.reshape(12, 2))
    head, _ = _run(gmod, x=value[:3], m=np.int64(2))
    np.testing.assert_array_equal(head, value[:2] + 1)


def test_create_executor_graph_runs_symbolic_functions_without_fallback():
    mod = _size_param_module()
    executor = interp.create_executor("graph", mod=mod)
    run = executor.evaluate()
    assert executor.fallback is None
    value = np.arange(20, dtype=F32).reshape(5, 4)
    for m in (2, 5):
        head, flat = run(value, m)
        np.testing.assert_array_equal(head.numpy(), value[:m] + 1)
        np.testing.assert_array_equal(flat.numpy(), value.reshape(10, 2))
    debug = interp.create_executor("debug", mod=mod).evaluate()(value, 3)
    graph = run(value, 3)
    for got, want in zip(graph, debug):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_symbolic_library_round_trips_through_export(tmp_path):
    rng = np.random.default_rng(5)
    params = _chain_params(rng)
    _, factory = _gmod(_chain_module(), params)
    path = tmp_path / "chain.irlib"
    factory.export_library(path)
    loaded = interp.load_module(path)
    gmod = graph_executor.GraphModule(loaded["default"](interp.cpu(0)))
    x, cache = rng.standard_normal((2, 8)).astype(F32), rng.standard_normal((3, 8)).astype(F32)
    for got, want in zip(_run(gmod, x=x, cache=cache), _chain_numpy(x, cache, **params)):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_targets_without_codegen_take_sizes_too(target):
    mod = _size_param_module()
    gmod, _ = _gmod(mod, target=target)
    value = np.arange(12, dtype=F32).reshape(3, 4)
    head, flat = _run(gmod, x=value, m=2)
    np.testing.assert_array_equal(head, value[:2] + 1)
    np.testing.assert_array_equal(flat, value.reshape(6, 2))


def test_zero_copy_inputs_and_outputs():
    gmod, _ = _gmod(_pair_module())
    a, b = np.ones((3, 3), F32), np.full((3, 3), 2, F32)
    out = np.empty((3, 3), F32)
    gmod.set_input_zero_copy("a", a)
    gmod.set_input_zero_copy("b", b)
    gmod.set_output_zero_copy(0, out)
    gmod.run()
    np.testing.assert_array_equal(out, np.full((3, 3), 3, F32))
    a[:] = 5
    gmod.run()
    np.testing.assert_array_equal(out, np.full((3, 3), 7, F32))
    gmod.set_input_zero_copy("a", np.ones((4, 3), F32))
    gmod.set_input_zero_copy("b", np.ones((4, 3), F32))
    with pytest.raises(GraphInputError, match=r"output.*shape \(3, 3\).*\(4, 3\)"):
        gmod.run()


def test_benchmark_and_run_from_inputs_work_on_symbolic_graphs():
    gmod, _ = _gmod(_pair_module())
    a, b = np.ones((2, 3), F32), np.full((2, 3), 2, F32)
    result = gmod.benchmark(interp.cpu(0), repeat=2, number=2, a=a, b=b)
    assert len(result.results) == 2
    end_to_end = gmod.benchmark(interp.cpu(0), repeat=2, number=1, end_to_end=True,
                                a=np.ones((5, 3), F32), b=np.ones((5, 3), F32))
    assert len(end_to_end.results) == 2
    outputs = gmod.module["run_from_inputs"](1, 0, "a", a, "b", b)
    np.testing.assert_array_equal(outputs[0].numpy(), a + b)
    shapes, dtypes = gmod.get_input_info()
    assert shapes == {"a": ("n", 3), "b": ("n", 3)} and dtypes["a"] == F32


def test_symbolic_dense_runs_small_products_inline_and_large_ones_on_blas():
    from jitkernels.codegen import INLINE_DENSE_MAX_FLOPS
    x = irlib.var("x", shape=(N, 16), dtype=F32)
    w = irlib.var("w", shape=(32, 16), dtype=F32)
    bias = irlib.var("bias", shape=(32,), dtype=F32)
    body = irlib.nn.relu(irlib.add(irlib.nn.dense(x, w), bias))
    rng = np.random.default_rng(6)
    params = {"w": rng.standard_normal((32, 16)).astype(F32),
              "bias": rng.standard_normal(32).astype(F32)}
    gmod, factory = _gmod(_module([x, w, bias], body), params)
    kernels = [k for k in _compiled_kernels(factory) if k.anchor_op == "nn.dense"]
    assert kernels and all(k.small_dense is not None for k in kernels)
    assert "np.dot" in kernels[0].small_source and "np.dot" not in kernels[0].source
    large = INLINE_DENSE_MAX_FLOPS // (16 * 32) + 5
    for n in (1, 7, large):                      # inline, inline, BLAS anchor
        value = rng.standard_normal((n, 16)).astype(F32)
        got, = _run(gmod, x=value)
        want = np.maximum(value @ params["w"].T + params["bias"], 0)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


_RESHAPES = [  # (input dims, output dims) over n and c, as lambdas of (n, c)
    (lambda n, c: (n, 12), lambda n, c: (n, 3, 4)),
    (lambda n, c: (n, 3, 4), lambda n, c: (n, 12)),
    (lambda n, c: (1, n, 6), lambda n, c: (n, 2, 3)),
    (lambda n, c: (n, 4), lambda n, c: (2 * n, 2)),
    (lambda n, c: (n, c), lambda n, c: (n * c,)),
    (lambda n, c: (n, c, 2), lambda n, c: (c, n, 2)),          # no grouping: flat offset
    (lambda n, c: (3, n, 2), lambda n, c: (3 * n, 2, 1)),
]


@settings(max_examples=20, deadline=None)
@given(case=st.integers(0, len(_RESHAPES) - 1), n=st.integers(1, 5), c=st.integers(1, 4))
def test_symbolic_reshapes_inside_fused_groups(case, n, c):
    in_dims, out_dims = _RESHAPES[case]
    x = irlib.var("x", shape=in_dims(N, C), dtype=F32)
    y = irlib.var("y", shape=in_dims(N, C), dtype=F32)
    body = irlib.exp(irlib.reshape(irlib.add(x, y), out_dims(N, C)))
    gmod, factory = _gmod(_module([x, y], body))
    rng = np.random.default_rng(case * 100 + n * 10 + c)
    a = rng.standard_normal(in_dims(n, c)).astype(F32)
    b = rng.standard_normal(in_dims(n, c)).astype(F32)
    got, = _run(gmod, x=a, y=b)
    np.testing.assert_allclose(got, np.exp((a + b).reshape(out_dims(n, c))), rtol=1e-6)
    if case in (0, 1, 2):               # the size variable maps to itself: no division by it
        source = _compiled_kernels(factory)[0].source
        assert "// sz_" not in source and "% sz_" not in source


def test_concatenate_inside_a_group_with_an_empty_symbolic_field():
    cache = irlib.var("cache", shape=(C, 3), dtype=F32)
    x = irlib.var("x", shape=(N, 3), dtype=F32)
    body = irlib.transpose(irlib.exp(irlib.concatenate([cache, x], axis=0)), (1, 0))
    gmod, factory = _gmod(_module([cache, x], body))
    assert any("max(min(" in k.source for k in _compiled_kernels(factory))
    for c, n in [(0, 2), (3, 1), (2, 0)]:
        a = np.arange(c * 3, dtype=F32).reshape(c, 3) / 10
        b = -np.arange(n * 3, dtype=F32).reshape(n, 3) / 10
        got, = _run(gmod, cache=a, x=b)
        np.testing.assert_allclose(got, np.exp(np.concatenate([a, b])).T, rtol=1e-6)


def _kernel_signature_count() -> int:
    """Compiled specialisations of every numba function in the hand-written CPU kernels."""
    import sys
    from numba.core.registry import CPUDispatcher
    total = 0
    for name, module in list(sys.modules.items()):
        if name.startswith("jitkernels.cpu") and module is not None:
            total += sum(len(value.signatures) for value in vars(module).values()
                         if isinstance(value, CPUDispatcher))
    return total


def test_hand_written_kernels_do_not_recompile_per_size(attention):
    gmod, factory, _ = attention
    dh = D // H

    def step(n, c):
        cache = np.ones((c, H, dh), F32)
        _run(gmod, x=np.ones((n, D), F32), k_cache=cache, v_cache=cache)
    step(1, 2)
    step(3, 7)
    before = _kernel_signature_count()
    assert before > 0                       # softmax, reductions, small GEMMs ran on numba
    for n, c in [(1, 9), (2, 31), (5, 3), (1, 64), (4, 0)]:
        step(n, c)
    assert _kernel_signature_count() == before


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_full_and_broadcast_to_take_symbolic_shapes(target):
    m = size_var("m")
    total = irlib.var("m", shape=(), dtype="int64")
    row = irlib.var("row", shape=(4,), dtype=F32)
    filled = irlib.full(irlib.const(2.5, F32), (m, 4), F32)
    spread = irlib.broadcast_to(row, (m, 4))
    body = irlib.Tuple([filled, irlib.multiply(spread, irlib.const(3.0, F32))])
    gmod, _ = _gmod(_module([total, row], body, {"size_params": ["m"]}), target=target)
    vector = np.arange(4, dtype=F32)
    for size in (1, 3, 0, 6):
        got_full, got_spread = _run(gmod, m=size, row=vector)
        np.testing.assert_array_equal(got_full, np.full((size, 4), 2.5, F32))
        np.testing.assert_array_equal(got_spread, np.broadcast_to(vector * 3, (size, 4)))


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_split_into_equal_sections_of_a_symbolic_size_checks_divisibility(target, tmp_path):
    """Type checking accepts ``split(x, 3)`` along a symbolic axis; a run-time size that does
    not divide raises instead of dropping the remainder, also after export/load."""
    x = irlib.var("x", shape=(N, 2))
    body = irlib.add(irlib.split(x, 3, axis=0)[2], irlib.const(1.0))
    gmod, factory = _gmod(_module([x], body), target=target)
    data = np.arange(12, dtype=F32).reshape(6, 2)
    np.testing.assert_array_equal(_run(gmod, x=data)[0], data[4:] + 1)
    with pytest.raises(GraphInputError, match="divisible by 3, but n = 7"):
        _run(gmod, x=np.zeros((7, 2), F32))
    factory.export_library(tmp_path / "split.irlib")
    loaded = interp.load_module(tmp_path / "split.irlib")
    again = graph_executor.GraphModule(loaded["default"](interp.cpu(0)))
    with pytest.raises(GraphInputError, match="divisible by 3"):
        _run(again, x=np.zeros((8, 2), F32))


def test_storage_assignment_is_planned_once_and_resized_per_binding(monkeypatch):
    """Sharing decisions depend on lifetimes only: the first binding's storage assignment is
    reused by every later one (sizes growing and shrinking), with the same results."""
    from interp.memory_plan import PlanTemplate
    rng = np.random.default_rng(11)
    params = _chain_params(rng)
    gmod, _ = _gmod(_chain_module(), params)
    calls = []
    original = PlanTemplate.plan
    monkeypatch.setattr(PlanTemplate, "plan",
                        lambda self, nbytes: calls.append(1) or original(self, nbytes))
    for rows, cached in [(1, 2), (4, 9), (2, 30), (7, 1), (1, 2)]:
        x = rng.standard_normal((rows, 8)).astype(F32)
        cache = rng.standard_normal((cached, 8)).astype(F32)
        for got, want in zip(_run(gmod, x=x, cache=cache), _chain_numpy(x, cache, **params)):
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
    assert len(calls) == 1
