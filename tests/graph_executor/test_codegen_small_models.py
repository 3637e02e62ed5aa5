"""Small models' groups the fused-group generator takes whole (issue #24, silero-vad):
a small static ``nn.matmul`` (either operand transposed) computed inline, and integer
tensors read by comparisons (an ``If`` condition ``equal(sr, 16000)``); checked against
numpy written here."""

import numpy as np
from hypothesis import given, settings, strategies as st

import irlib
import interp

from graph_helpers import graph_module


def _build(params, body):
    gmod, factory = graph_module(irlib.IRModule.from_expr(irlib.Function(params, body)))

    def run(*values):
        for index, value in enumerate(values):
            gmod.set_input(index, value)
        gmod.run()
        return gmod.get_output(0).numpy()
    return factory, run


@settings(max_examples=8, deadline=None)
@given(rows=st.integers(1, 3), depth=st.integers(1, 90), units=st.integers(1, 300),
       transpose_a=st.booleans(), transpose_b=st.booleans(),
       dtype=st.sampled_from(["float32", "float64"]))
def test_a_small_static_matmul_is_generated_code(rows, depth, units, transpose_a,
                                                 transpose_b, dtype):
    a_shape = (depth, rows) if transpose_a else (rows, depth)
    b_shape = (units, depth) if transpose_b else (depth, units)
    a = irlib.var("a", shape=a_shape, dtype=dtype)
    b = irlib.var("b", shape=b_shape, dtype=dtype)
    body = irlib.sigmoid(irlib.nn.matmul(a, b, transpose_a=transpose_a,
                                         transpose_b=transpose_b))
    factory, run = _build([a, b], body)
    assert set(factory.lib.report()["functions"].values()) == {"codegen"}
    rng = np.random.default_rng(depth * 7 + units)
    av = rng.standard_normal(a_shape).astype(dtype)
    bv = rng.standard_normal(b_shape).astype(dtype)
    left = av.T if transpose_a else av
    right = bv.T if transpose_b else bv
    want = 1 / (1 + np.exp(-(left.astype("float64") @ right.astype("float64"))))
    np.testing.assert_allclose(run(av, bv), want, rtol=1e-4, atol=1e-5)


def test_a_lone_small_matmul_is_generated_and_a_big_one_keeps_its_kernel():
    a = irlib.var("a", shape=(1, 64))
    b = irlib.var("b", shape=(64, 1))
    factory, run = _build([a, b], irlib.nn.matmul(a, b))
    assert set(factory.lib.report()["functions"].values()) == {"codegen"}
    av = np.arange(64, dtype="float32").reshape(1, 64) / 64
    bv = np.linspace(-1, 1, 64, dtype="float32").reshape(64, 1)
    np.testing.assert_allclose(run(av, bv), av @ bv, rtol=1e-5)
    a = irlib.var("a", shape=(64, 256))
    b = irlib.var("b", shape=(256, 256))
    factory, run = _build([a, b], irlib.nn.matmul(a, b))
    assert set(factory.lib.report()["functions"].values()) == {"kernels"}
    np.testing.assert_allclose(run(np.ones((64, 256), "float32"),
                                   np.full((256, 256), 0.25, "float32")),
                               np.full((64, 256), 64.0), rtol=1e-6)


_COMPARE = {"equal": np.equal, "not_equal": np.not_equal, "less": np.less,
            "less_equal": np.less_equal, "greater": np.greater,
            "greater_equal": np.greater_equal}


@settings(max_examples=12, deadline=None)
@given(op=st.sampled_from(sorted(_COMPARE)), dtype=st.sampled_from(["int64", "int32",
                                                                    "uint8"]),
       shape=st.lists(st.integers(1, 4), min_size=0, max_size=2), data=st.data())
def test_integer_comparisons_are_generated_code(op, dtype, shape, data):
    """An integer input compared with a constant of its dtype, the bool squeezed and used to
    choose between floats: one generated kernel, numpy's answer (values near 2**62 too,
    where a float literal would round)."""
    info = np.iinfo(dtype)
    values = st.integers(int(info.min), int(info.max))
    constant = data.draw(values)
    x = irlib.var("x", shape=tuple(shape), dtype=dtype)
    y = irlib.var("y", shape=tuple(shape))
    test = getattr(irlib, op)(x, irlib.const(np.array(constant, dtype), dtype=dtype))
    body = irlib.where(test, irlib.exp(y), irlib.negative(y))
    factory, run = _build([x, y], body)
    assert set(factory.lib.report()["functions"].values()) == {"codegen"}
    near = data.draw(st.lists(st.sampled_from([-1, 0, 1]), min_size=int(np.prod(shape)),
                              max_size=int(np.prod(shape))))
    xv = np.array([min(max(constant + d, int(info.min)), int(info.max)) for d in near],
                  dtype).reshape(shape)
    yv = np.linspace(-1, 1, int(np.prod(shape)), dtype="float32").reshape(shape)
    mask = _COMPARE[op](xv, np.array(constant, dtype))
    np.testing.assert_allclose(run(xv, yv), np.where(mask, np.exp(yv), -yv), rtol=1e-6)


def test_a_scalar_condition_from_an_integer_input():
    """silero-vad's ``squeeze(equal(sr, [16000]))``: a rank-0 bool from an int64 (1,)."""
    sr = irlib.var("sr", shape=(1,), dtype="int64")
    body = irlib.squeeze(irlib.equal(sr, irlib.const(np.array([16000], "int64"), dtype="int64")))
    factory, run = _build([sr], body)
    assert set(factory.lib.report()["functions"].values()) == {"codegen"}
    assert run(np.array([16000], "int64")) == np.True_
    assert run(np.array([8000], "int64")) == np.False_


def test_integer_arithmetic_still_runs_op_by_op():
    """Integer arithmetic is not generated (numpy's wrap-around and division rules)."""
    x = irlib.var("x", shape=(3,), dtype="int64")
    body = irlib.less(irlib.add(x, x), irlib.const(np.array(5, "int64"), dtype="int64"))
    factory, run = _build([x], body)
    assert "codegen" not in set(factory.lib.report()["functions"].values())
    big = np.array([1, 2, 2 ** 62], "int64")
    np.testing.assert_array_equal(run(big), (big + big) < 5)
