"""FastMath (against its documented error bounds) and CanonicalizeCast."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import irlib
from irlib import Function, IRModule, var
from irlib.op import registry
from irlib.testing import strategies as irst
from irlib.testing.budget import examples
from irlib.transform import CanonicalizeCast, CanonicalizeOps, FastMath, SimplifyInference
from irlib.transform.fast_math import ERROR_BOUNDS

from _graph_opt_helpers import assert_close, op_names, run
from helpers import assert_rewrites


def test_replaces_every_slow_op():
    # softmax becomes its stable formula over fast_exp
    t = "Tensor[(2, 5), float32]"
    assert_rewrites(FastMath(), f"""
    fn (%x: {t}) {{ (exp(%x), erf(%x), tanh(%x), nn.softmax(%x)) }}""", f"""
    fn (%x: {t}) -> ({t}, {t}, {t}, {t}) {{
      %0 = fast_exp(subtract(%x, max(%x, axis=[-1], keepdims=True)));
      (fast_exp(%x), fast_erf(%x), fast_tanh(%x), divide(%0, sum(%0, axis=[-1], keepdims=True)))
    }}""")


def _within(kind, bound, approx, exact):
    error = np.abs(approx.astype("float64") - exact)
    if kind == "relative":
        error = error / np.maximum(np.abs(exact), np.finfo("float32").tiny)
    return float(error.max()) <= bound


@pytest.mark.parametrize("name,exact,low,high", [
    ("fast_exp", np.exp, -88.0, 88.0),
    ("fast_tanh", np.tanh, -10.0, 10.0),
    ("fast_erf", np.vectorize(math.erf), -5.0, 5.0),
])
def test_fast_ops_meet_documented_bounds(name, exact, low, high):
    data = np.linspace(low, high, 20001, dtype="float32")
    approx = np.asarray(registry.evaluate(name, [data]))
    kind, bound = ERROR_BOUNDS[name]
    assert approx.dtype == np.float32
    assert _within(kind, bound, approx, exact(data.astype("float64")))


@settings(max_examples=examples(20), deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), seed=st.integers(0, 999))
def test_softmax_expansion_meets_bound(shape, seed):
    data = (np.random.default_rng(seed).standard_normal(shape) * 5).astype("float32")
    x = var("x", shape=tuple(shape))
    out = FastMath()(IRModule.from_expr(Function([x], irlib.nn.softmax(x, axis=-1))))
    shifted = np.exp(data.astype("float64") - data.max(axis=-1, keepdims=True))
    exact = shifted / shifted.sum(axis=-1, keepdims=True)
    kind, bound = ERROR_BOUNDS["nn.softmax"]
    assert _within(kind, bound, run(out, [data]), exact)


PASSES = {"fast_math": FastMath(), "canonicalize_cast": CanonicalizeCast(),
          "canonicalize_ops": CanonicalizeOps(), "simplify_inference": SimplifyInference()}


@pytest.mark.parametrize("name", sorted(PASSES))
@settings(max_examples=examples(20), deadline=None)
@given(program=irst.tensor_exprs(max_steps=10, dtypes=("float64",)), data=st.data())
def test_passes_preserve_meaning_on_generated_programs(name, program, data):
    inputs = data.draw(program.inputs_strategy())
    mod = program.module()
    text = mod.astext()
    out = PASSES[name](mod)
    assert mod.astext() == text
    assert_close(run(out, [inputs[p] for p in program.params]), program.reference(inputs))


def test_canonicalize_cast_splits_shared_up_cast():
    x = var("x", shape=(3,), dtype="int8")
    b1, b2 = var("b1", shape=(3,), dtype="int32"), var("b2", shape=(3,), dtype="int32")
    wide = irlib.cast(x, "int32")
    func = Function([x, b1, b2], irlib.Tuple((irlib.add(wide, b1), irlib.add(wide, b2))))
    out = CanonicalizeCast()(func)
    first, second = (field.args[0] for field in out.body.fields)
    assert first.op.name == second.op.name == "cast" and first is not second
    values = [np.array([1, -2, 3], "int8"), np.arange(3, dtype="int32"),
              np.ones(3, "int32")]
    got = run(IRModule.from_expr(out), values)
    assert [g.tolist() for g in got] == [[1, -1, 5], [2, -1, 4]]


def test_canonicalize_cast_keeps_down_casts_and_single_uses():
    x = var("x", shape=(3,), dtype="int32")
    narrow = irlib.cast(x, "int8")
    func = Function([x], irlib.Tuple((irlib.add(narrow, narrow), irlib.negative(narrow))))
    out = CanonicalizeCast()(func)
    assert op_names(out).count("cast") == 1
    y = var("y", shape=(3,), dtype="int8")
    single = Function([y], irlib.negative(irlib.cast(y, "int32")))
    assert op_names(CanonicalizeCast()(single)).count("cast") == 1
