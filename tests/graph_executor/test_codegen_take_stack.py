"""The fused-group generator inlines take of a constant scalar index and stack (the LSTM
converter's per-step slices and stacked outputs): whole groups compile to one kernel;
checked against numpy."""

import numpy as np
from hypothesis import given, settings, strategies as st

import irlib
import interp


def _build(params, body):
    factory = interp.build(irlib.IRModule.from_expr(irlib.Function(params, body)),
                           target="cpu")
    return factory, graph_run(factory)


def graph_run(factory):
    from interp import graph_executor
    gmod = graph_executor.GraphModule(factory["default"](interp.cpu(0)))

    def run(*values):
        for index, value in enumerate(values):
            gmod.set_input(index, value)
        gmod.run()
        return gmod.get_output(0).numpy()
    return run


@settings(max_examples=10, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data(),
       mode=st.sampled_from(["clip", "wrap", "fast"]))
def test_take_of_a_constant_index_inside_a_group(shape, data, mode):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    size = shape[axis]
    low, high = (-size, size - 1) if mode == "fast" else (-2 * size, 2 * size)
    k = data.draw(st.integers(low, high))
    x = irlib.var("x", shape=tuple(shape))
    body = irlib.sigmoid(irlib.take(irlib.exp(x), irlib.const(np.int64(k)), axis=axis,
                                    mode=mode))
    factory, run = _build([x], body)
    assert set(factory.lib.report()["functions"].values()) == {"codegen"}
    value = np.random.default_rng(k & 0xFF).standard_normal(shape).astype("float32")
    index = {"clip": min(max(k, 0), size - 1), "wrap": k % size, "fast": k}[mode]
    want = 1 / (1 + np.exp(-np.take(np.exp(value), index, axis=axis)))
    np.testing.assert_allclose(run(value), want, rtol=1e-5)


@settings(max_examples=8, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
       count=st.integers(1, 4), data=st.data())
def test_stack_inside_a_group(shape, count, data):
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    xs = [irlib.var(f"x{i}", shape=tuple(shape)) for i in range(count)]
    body = irlib.stack([irlib.tanh(x) if i % 2 else irlib.negative(x)
                        for i, x in enumerate(xs)], axis=axis)
    factory, run = _build(xs, irlib.add(body, irlib.const(1.0)))
    assert set(factory.lib.report()["functions"].values()) == {"codegen"}
    rng = np.random.default_rng(count)
    values = [rng.standard_normal(shape).astype("float32") for _ in range(count)]
    want = np.stack([np.tanh(v) if i % 2 else -v for i, v in enumerate(values)],
                    axis=axis) + 1
    np.testing.assert_allclose(run(*values), want, rtol=1e-5)


def test_take_of_a_run_time_index_stays_an_anchor():
    x = irlib.var("x", shape=(5, 3))
    i = irlib.var("i", shape=(2,), dtype="int64")
    factory, run = _build([x, i], irlib.exp(irlib.take(x, i, axis=0)))
    value = np.arange(15, dtype="float32").reshape(5, 3) / 10
    indices = np.array([4, 1], "int64")
    np.testing.assert_allclose(run(value, indices), np.exp(value[indices]), rtol=1e-6)


@settings(max_examples=6, deadline=None)
@given(rows=st.integers(1, 3), depth=st.integers(1, 70), units=st.integers(1, 300))
def test_a_lone_small_dense_is_generated_code(rows, depth, units):
    """A group that is only a small static nn.dense (an LSTM step's h @ R^T) runs inline in
    generated code; a big one keeps the BLAS kernel."""
    x = irlib.var("x", shape=(rows, depth))
    w = irlib.var("w", shape=(units, depth))
    factory, run = _build([x, w], irlib.nn.dense(x, w))
    assert set(factory.lib.report()["functions"].values()) == {"codegen"}
    rng = np.random.default_rng(depth)
    xv = rng.standard_normal((rows, depth)).astype("float32")
    wv = rng.standard_normal((units, depth)).astype("float32")
    np.testing.assert_allclose(run(xv, wv), xv @ wv.T, rtol=1e-4, atol=1e-4)


def test_a_lone_big_dense_keeps_its_kernel():
    x = irlib.var("x", shape=(64, 256))
    w = irlib.var("w", shape=(256, 256))
    factory, run = _build([x, w], irlib.nn.dense(x, w))
    assert set(factory.lib.report()["functions"].values()) == {"kernels"}
    xv = np.ones((64, 256), "float32")
    wv = np.full((256, 256), 0.5, "float32")
    np.testing.assert_allclose(run(xv, wv), np.full((64, 256), 128.0), rtol=1e-6)
