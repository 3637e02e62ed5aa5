"""jitkernels.codegen.fast_scalar's exp32 / tanh32 / sigmoid32 against float64 math, their
special values, and generated groups using them (an LSTM-style gate chain) against numpy
written here, with the switch that puts libm back."""

import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import irlib
import interp

pytest.importorskip("numba")
from jitkernels.codegen import fast_scalar  # noqa: E402
from jitkernels.codegen.fast_scalar import exp32, sigmoid32, tanh32  # noqa: E402


def _exp(x: float) -> float:
    return math.exp(x) if x < 709 else math.inf


@settings(max_examples=150, deadline=None)
@given(x=st.floats(-87.25, 88.5, width=32))
def test_exp32_is_within_1_2e_7_relative_for_normal_results(x):
    want = _exp(x)
    assert abs(float(exp32(np.float32(x))) - want) <= 1.2e-7 * want


@settings(max_examples=60, deadline=None)
@given(x=st.floats(-110, -87.25, width=32))
def test_exp32_denormal_results_are_within_two_denormal_steps(x):
    assert abs(float(exp32(np.float32(x))) - _exp(x)) <= 2 * 1.402e-45


@settings(max_examples=150, deadline=None)
@given(x=st.floats(-30, 30, width=32))
def test_tanh32_is_within_4e_7_relative(x):
    want = math.tanh(x)
    assert abs(float(tanh32(np.float32(x))) - want) <= 4e-7 * abs(want) + 1e-45


@settings(max_examples=150, deadline=None)
@given(x=st.floats(-87, 100, width=32))
def test_sigmoid32_is_within_2e_7_relative(x):
    want = 1.0 / (1.0 + _exp(-x))
    assert abs(float(sigmoid32(np.float32(x))) - want) <= 2e-7 * want


def test_special_values():
    nan, inf = np.float32("nan"), np.float32("inf")
    for fn in (exp32, tanh32, sigmoid32):
        assert math.isnan(fn(nan))
    assert exp32(inf) == math.inf and exp32(-inf) == 0.0 and exp32(np.float32(0)) == 1.0
    assert exp32(np.float32(88.8)) == math.inf           # past float32's largest
    assert exp32(np.float32(88.7)) < math.inf             # still finite
    assert tanh32(inf) == 1.0 and tanh32(-inf) == -1.0 and tanh32(np.float32(0)) == 0.0
    assert tanh32(np.float32(1e-5)) == np.float32(1e-5)
    assert sigmoid32(inf) == 1.0 and sigmoid32(-inf) == 0.0 and sigmoid32(np.float32(0)) == 0.5


def test_add_imports_adds_each_helper_once():
    source = "import math\nx = _exp32(1) + _tanh32(2) + _exp32(3)\n"
    done = fast_scalar.add_imports(source)
    assert done.count("import exp32 as _exp32\n") == 1
    assert done.count("import tanh32 as _tanh32\n") == 1
    assert "_sigmoid32" not in done and fast_scalar.add_imports(done) == done


def _lstm_gates(shape):
    """``o * tanh(f * c + i * g)`` with sigmoid gates and a tanh candidate, plus exp."""
    names = ("i", "f", "g", "o", "c")
    xs = [irlib.var(n, shape=shape) for n in names]
    i, f, g, o, c = xs
    cell = irlib.add(irlib.multiply(irlib.sigmoid(f), c),
                     irlib.multiply(irlib.sigmoid(i), irlib.tanh(g)))
    body = irlib.add(irlib.multiply(irlib.sigmoid(o), irlib.tanh(cell)),
                     irlib.exp(irlib.negative(irlib.abs(c))))
    return xs, body


def _gates_oracle(i, f, g, o, c):
    i, f, g, o, c = (v.astype("float64") for v in (i, f, g, o, c))
    sig = lambda v: 1 / (1 + np.exp(-v))   # noqa: E731
    return sig(o) * np.tanh(sig(f) * c + sig(i) * np.tanh(g)) + np.exp(-np.abs(c))


@pytest.mark.parametrize("switch", ["1", "0"])
@settings(max_examples=4, deadline=None)
@given(shape=st.lists(st.integers(1, 70), min_size=1, max_size=2),
       scale=st.sampled_from([0.5, 4.0, 40.0]))
def test_generated_gates_match_numpy(switch, shape, scale):
    xs, body = _lstm_gates(tuple(shape))
    saved = os.environ.get(fast_scalar.ENV_SWITCH)
    os.environ[fast_scalar.ENV_SWITCH] = switch
    try:
        lib = interp.build(irlib.IRModule.from_expr(irlib.Function(xs, body)))
    finally:
        if saved is None:
            del os.environ[fast_scalar.ENV_SWITCH]
        else:
            os.environ[fast_scalar.ENV_SWITCH] = saved
    sources = [c.kernel.source for c in lib.lib.compiled.values() if c.kernel is not None]
    assert len(sources) == 1
    assert ("_tanh32(" in sources[0]) == (switch == "1")
    assert ("_exp32(" in sources[0]) == (switch == "1")
    rng = np.random.default_rng(len(shape))
    values = [(rng.standard_normal(shape) * scale).astype("float32") for _ in xs]
    m = interp.graph_executor.GraphModule(lib["default"](interp.cpu(0)))
    for name, value in zip("ifgoc", values):
        m.set_input(name, value)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), _gates_oracle(*values),
                               rtol=2e-6, atol=1e-6)


def test_float64_groups_keep_libm():
    x = irlib.var("x", shape=(3,), dtype="float64")
    lib = interp.build(irlib.IRModule.from_expr(irlib.Function([x], irlib.tanh(irlib.exp(x)))))
    source = [c.kernel.source for c in lib.lib.compiled.values() if c.kernel is not None][0]
    assert "math.tanh(" in source and "_tanh32" not in source
