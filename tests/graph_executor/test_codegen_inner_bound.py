"""Run-time trip counts of generated innermost loops (jitkernels.codegen.loops.inner_bound):
a short innermost loop reads its trip count from the output's shape so that LLVM vectorises
it instead of unrolling it into scalar code. Results are compared with numpy written here,
with the rule on and off."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import irlib
import interp
from irlib import var

pytest.importorskip("numba")

from jitkernels.codegen import loops  # noqa: E402


def _run(params, body, values):
    """Build and run ``fn(params) { body }`` on the CPU: (output, generated sources)."""
    from interp import graph_executor
    factory = interp.build(irlib.IRModule.from_expr(irlib.Function(params, body)),
                           target="cpu")
    assert set(factory.report["functions"].values()) == {"codegen"}, factory.report
    gmod = graph_executor.GraphModule(factory["default"](interp.cpu(0)))
    for index, value in enumerate(values):
        gmod.set_input(index, value)
    gmod.run()
    return gmod.get_output(0).numpy(), [c.kernel.source for c in factory.lib.compiled.values()]


@pytest.mark.parametrize("body, cost", [
    (["t0 = a0[i0, i1]", "t1 = np.float32(t0)", "out0[i0, i1] = t1"], 2),
    (["t0 = a1[0, i1]", "t1 = a0[i0, i1]", "t2 = np.float32((t1 + t0))",
      "t3 = np.float32(max(t2, np.float32(0.0)))", "out0[i0, i1] = t3"], 7),
    (["t0 = a0[i0, i1]", "t1 = np.float32(min(max(t0, np.float32(0.0)), np.float32(6.0)))",
      "t2 = np.float32(math.exp(t1))", "out0[i0, i1] = t2"], 8),
])
def test_body_cost_counts_reads_and_operations(body, cost):
    assert loops.body_cost(body) == cost


def test_inner_bound_rule():
    copy = ["t0 = a0[i0, i1]", "t1 = np.float32(t0)", "out0[i0, i1] = t1"]
    assert loops.inner_bound("out0", (5, 32), (5, 32), copy) == (1, "out0.shape[1]")
    assert loops.inner_bound("out0", (5, 96), (5, 32), copy, 1) == (1, "(out0.shape[1] - 64)")
    assert loops.inner_bound("out0", (32, 1), (32, 1), copy) == (0, "out0.shape[0]")
    assert loops.inner_bound("out0", (5, 7), (5, 7), copy) is None            # too short
    assert loops.inner_bound("out0", (5, 200), (5, 200), copy) is None        # not unrolled


@settings(max_examples=10, deadline=None)
@given(rows=st.integers(1, 9), width=st.integers(1, 140),
       ops=st.sampled_from(["relu", "add_relu", "scale_shift_clip"]),
       dtype=st.sampled_from(["float32", "float64"]))
def test_elementwise_groups_match_numpy_around_the_unroll_limit(rows, width, ops, dtype):
    rng = np.random.default_rng(width * 7 + rows)
    xv = rng.standard_normal((1, rows, width)).astype(dtype)
    sv = rng.standard_normal((1, 1, width)).astype(dtype)
    x, s = var("x", shape=xv.shape, dtype=dtype), var("s", shape=sv.shape, dtype=dtype)
    if ops == "relu":
        params, values = [x], [xv]
        body, expected = irlib.nn.relu(x), np.maximum(xv, 0)
    elif ops == "add_relu":
        params, values = [x, s], [xv, sv]
        body, expected = irlib.nn.relu(irlib.add(x, s)), np.maximum(xv + sv, 0)
    else:
        params, values = [x, s], [xv, sv]
        body = irlib.clip(irlib.add(irlib.multiply(x, s), s), -0.5, 0.5)
        expected = np.clip(xv * sv + sv, -0.5, 0.5)
    got, sources = _run(params, body, values)
    np.testing.assert_allclose(got, expected, rtol=1e-6 if dtype == "float32" else 1e-12)
    trip = width if width > 1 else rows         # the innermost loop (unit dims are not)
    assert ("shape[" in sources[0]) == (trip >= loops.INNER_BOUND_MIN and (
        trip * loops.body_cost(_loop_body(sources[0])) <= loops.UNROLL_LIMIT))


def _loop_body(source: str) -> list:
    """The ``t<k> = ...`` lines and store of a one-nest generated kernel."""
    lines = [line.strip() for line in source.splitlines()]
    return [line for line in lines if line.startswith(("t", "out0["))]


def test_switch_off_keeps_every_literal(monkeypatch):
    monkeypatch.setattr(loops, "RUNTIME_INNER_BOUND", False)
    xs = [np.arange(2 * 3 * 32, dtype="float32").reshape(2, 3, 32) - 90 for _ in range(2)]
    params = [var("a", shape=(2, 3, 32)), var("b", shape=(2, 3, 32))]
    got, (source,) = _run(params, irlib.nn.relu(irlib.concatenate(params, axis=2)), xs)
    np.testing.assert_array_equal(got, np.maximum(np.concatenate(xs, 2), 0))
    assert "shape[" not in source and source.count("range(32)") == 2


def test_parallel_nest_keeps_its_prange_and_reads_the_inner_bound(monkeypatch):
    monkeypatch.setattr(loops, "PARALLEL_MIN_ELEMENTS", 1)
    xv = np.linspace(-1, 1, 40 * 24, dtype="float32").reshape(40, 24)
    x = var("x", shape=(40, 24))
    got, (source,) = _run([x], irlib.nn.relu(x), [xv])
    np.testing.assert_array_equal(got, np.maximum(xv, 0))
    assert "prange(40)" in source and "range(out0.shape[1])" in source
