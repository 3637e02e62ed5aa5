"""Runs of small generated kernels called as one chain (interp.graph_chains,
jitkernels.codegen.chain): same results as the separate calls (numpy oracle written here),
made on the second run, off by switch, not for big arrays, invisible to the debug executor."""

import numpy as np
from hypothesis import given, settings, strategies as st

import irlib
import interp
from interp import debug_executor, graph_chains

_UNARY = {"tanh": (irlib.tanh, np.tanh), "exp": (irlib.exp, np.exp),
          "negative": (irlib.negative, np.negative), "sigmoid":
          (irlib.sigmoid, lambda v: 1 / (1 + np.exp(-v)))}


def _chain_program(shape, ops):
    """``x -> op_k(... op_1(x) ...) + x`` with every op its own graph node (opt_level 0),
    and its numpy oracle."""
    x = irlib.var("x", shape=shape)
    y = x
    for name in ops:
        y = _UNARY[name][0](y)
    body = irlib.add(y, x)

    def oracle(value):
        out = value.astype("float64")
        for name in ops:
            out = _UNARY[name][1](out)
        return out + value
    return irlib.IRModule.from_expr(irlib.Function([x], body)), oracle


def _executor(mod):
    with irlib.transform.PassContext(opt_level=0):
        factory = interp.build(mod, target="cpu")
    return factory["default"](interp.cpu(0))


@settings(max_examples=6, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3),
       ops=st.lists(st.sampled_from(sorted(_UNARY)), min_size=2, max_size=7))
def test_chained_runs_match_numpy(shape, ops):
    mod, oracle = _chain_program(tuple(shape), ops)
    executor = _executor(mod)
    runtime = executor.runtime
    rng = np.random.default_rng(len(ops))
    for run in range(3):
        value = (rng.standard_normal(shape) * 0.5).astype("float32")
        runtime.set_input(0, value)
        runtime.run()
        got = runtime.entries[runtime.output_entry(0)]
        np.testing.assert_allclose(got, oracle(value), rtol=2e-5, atol=1e-6)
    assert len(runtime.calls) == len(ops) + 1
    assert len(runtime._chained) == 1          # every node in one chain
    fn, (arrays,) = runtime._chained[0]
    assert isinstance(arrays, tuple) and len(arrays) <= len(ops) + 2


def test_first_run_is_not_chained_and_rebinding_rechains():
    mod, oracle = _chain_program((2, 3), ["tanh", "exp", "negative"])
    executor = _executor(mod)
    runtime = executor.runtime
    value = np.linspace(-1, 1, 6, dtype="float32").reshape(2, 3)
    runtime.set_input(0, value)
    runtime.run()
    assert runtime._chained is None
    runtime.run()
    assert len(runtime._chained) == 1
    other = np.full((2, 3), 0.25, "float32")
    runtime.bind_input(0, other)                # zero-copy input: the chain is rebuilt
    assert runtime._chained is None
    runtime.run()
    np.testing.assert_allclose(runtime.entries[runtime.output_entry(0)], oracle(other),
                               rtol=1e-5)
    runtime.run()
    assert len(runtime._chained) == 1
    np.testing.assert_allclose(runtime.entries[runtime.output_entry(0)], oracle(other),
                               rtol=1e-5)


def test_switch_off_and_big_arrays_keep_separate_calls(monkeypatch):
    mod, oracle = _chain_program((2, 3), ["tanh", "sigmoid", "exp"])
    monkeypatch.setenv(graph_chains.ENV_SWITCH, "0")
    runtime = _executor(mod).runtime
    value = np.ones((2, 3), "float32")
    runtime.set_input(0, value)
    runtime.run()
    runtime.run()
    assert runtime._chained is runtime.calls
    monkeypatch.delenv(graph_chains.ENV_SWITCH)
    big = (graph_chains.CHAIN_MAX_ELEMENTS + 1,)
    mod, oracle = _chain_program(big, ["tanh", "negative", "exp"])
    runtime = _executor(mod).runtime
    value = np.linspace(-1, 1, big[0], dtype="float32")
    runtime.set_input(0, value)
    runtime.run()
    runtime.run()
    assert runtime._chained is runtime.calls
    np.testing.assert_allclose(runtime.entries[runtime.output_entry(0)], oracle(value),
                               rtol=1e-5)


def test_the_debug_executor_still_times_every_node():
    mod, _ = _chain_program((4,), ["tanh", "exp", "negative", "sigmoid"])
    with irlib.transform.PassContext(opt_level=0):
        factory = interp.build(mod, target="cpu")
    gmod = debug_executor.GraphModuleDebug(factory["default"](interp.cpu(0)))
    value = np.arange(4, dtype="float32") / 4
    for _ in range(3):
        gmod.run(x=value)
    assert len(gmod.node_times()) == 5
    sig = 1 / (1 + np.exp(-(-np.exp(np.tanh(value.astype("float64"))))))
    np.testing.assert_allclose(gmod.get_output(0).numpy(), sig + value, rtol=1e-5)


def test_chain_source_names_kernels_by_digest():
    from jitkernels.codegen.chain import chain_source
    source = chain_source(["abc", "def", "abc"], [(0, 1), (1, 2), (2, 3)])
    assert source.count('generated_kernel("abc")') == 1
    assert "    k0(t[0], t[1])\n    k1(t[1], t[2])\n    k0(t[2], t[3])\n" in source


def test_a_long_run_becomes_several_chains(monkeypatch):
    monkeypatch.setattr(graph_chains, "CHAIN_MAX_CALLS", 4)
    ops = ["tanh", "negative", "exp", "sigmoid", "tanh", "negative", "tanh", "exp", "negative"]
    mod, oracle = _chain_program((3,), ops)
    runtime = _executor(mod).runtime
    value = np.array([-0.5, 0.1, 0.7], "float32")
    runtime.set_input(0, value)
    runtime.run()
    runtime.run()
    # 10 calls: chains of 4, 4, then 2 left as separate calls (fewer than CHAIN_MIN_CALLS)
    assert len(runtime.calls) == 10 and len(runtime._chained) == 4
    np.testing.assert_allclose(runtime.entries[runtime.output_entry(0)], oracle(value),
                               rtol=1e-5)
