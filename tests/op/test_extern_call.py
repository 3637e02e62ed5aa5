"""call_dps_packed (irlib/op/extern_call.py): registered Python/numba functions called in
destination-passing style on the interpreter and the graph executor against numpy written
here; value-returning functions; symbolic output shapes and scalar arguments; the text format;
passes that must leave the calls alone; errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import interp
import irlib
from irlib import TensorType, size_var
from irlib.errors import IRError, TypeInferenceError, UnknownNameError
from irlib.op import extern_call as ec
from irlib.testing.budget import examples


def _scale_shift(x, scale, b, out):
    out[...] = x * scale + b


def _split_sum(x, total, first):   # two outputs: the row sums and the first column
    total[...] = x.sum(axis=1)
    first[...] = x[:, 0]


SCALE_SHIFT = ec.register_unique("test.scale_shift", _scale_shift)
SPLIT_SUM = ec.register_unique("test.split_sum", _split_sum)


def run(mod, kind, *args):
    result = interp.create_executor(kind, mod).evaluate()(*args)
    if isinstance(result, (tuple, list)) or hasattr(result, "fields"):
        return [np.asarray(r.numpy()) for r in result]
    return result.numpy()


def module(params, body):
    return irlib.transform.InferType()(irlib.IRModule.from_expr(irlib.Function(params, body)))


@settings(max_examples=examples(8), deadline=None)
@given(rows=st.integers(1, 5), cols=st.integers(1, 6), scale=st.floats(-3, 3, width=32),
       kind=st.sampled_from(["debug", "graph"]))
def test_python_function_in_dps_with_symbolic_output(rows, cols, scale, kind):
    n = size_var("n")
    x = irlib.var("x", shape=(n, cols))
    b = irlib.var("b", shape=(cols,))
    call = ec.call_dps_packed(SCALE_SHIFT, [x, scale, b], TensorType((n, cols), "float32"))
    mod = module([x, b], irlib.exp(irlib.TupleGetItem(call, 0)))
    assert mod["main"].body.checked_type == TensorType((n, cols), "float32")
    xv = np.random.default_rng(rows).standard_normal((rows, cols)).astype("float32")
    bv = np.arange(cols, dtype="float32")
    np.testing.assert_allclose(run(mod, kind, xv, bv), np.exp(xv * np.float32(scale) + bv),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["debug", "graph"])
def test_two_outputs_and_a_size_expression_argument(kind):
    n = size_var("n")
    x = irlib.var("x", shape=(n, 3), dtype="float64")
    call = ec.call_dps_packed(SPLIT_SUM, [x], [TensorType((n,), "float64"),
                                               TensorType((n,), "float64")])
    mod = module([x], irlib.multiply(irlib.TupleGetItem(call, 0), irlib.TupleGetItem(call, 1)))
    xv = np.arange(12, dtype="float64").reshape(4, 3)
    np.testing.assert_allclose(run(mod, kind, xv), xv.sum(1) * xv[:, 0])

    seen = []

    def record(x, count, out):    # the size expression arrives as a Python int
        seen.append(count)
        out[...] = x[:count]

    name = ec.register_unique("test.record", record)
    half = ec.call_dps_packed(name, [x, n], TensorType((n, 3), "float64"))
    mod = module([x], irlib.TupleGetItem(half, 0))
    np.testing.assert_array_equal(run(mod, kind, xv), xv)
    assert seen == [4] and type(seen[0]) is int


def test_value_function_results_are_cast_and_checked():
    x = irlib.var("x", shape=(2, 2))

    def twice(a):
        return a.astype("float64") * 2      # cast back to the declared float32

    name = ec.register_unique("test.twice", ec.ValueFunc(twice))
    mod = module([x], irlib.TupleGetItem(
        ec.call_dps_packed(name, [x], TensorType((2, 2), "float32")), 0))
    xv = np.array([[1, 2], [3, 4]], "float32")
    out = run(mod, "debug", xv)
    assert out.dtype == np.float32 and out.tolist() == [[2, 4], [6, 8]]

    wrong = ec.register_unique("test.wrong_shape", ec.ValueFunc(lambda a: a[0]))
    mod = module([x], irlib.TupleGetItem(
        ec.call_dps_packed(wrong, [x], TensorType((2, 2), "float32")), 0))
    with pytest.raises(IRError, match=r"returned shape \(2,\) for output 0, declared \(2, 2\)"):
        run(mod, "debug", xv)


def test_numba_function():
    numba = pytest.importorskip("numba")

    @numba.njit(cache=False)
    def cumulative(x, out):
        acc = 0.0
        for i in range(x.shape[0]):
            acc += x[i]
            out[i] = acc

    name = ec.register_unique("test.cumulative", cumulative)
    n = size_var("n")
    x = irlib.var("x", shape=(n,), dtype="float64")
    mod = module([x], irlib.TupleGetItem(ec.call_dps_packed(name, [x], TensorType((n,), "float64")), 0))
    xv = np.random.default_rng(0).random(7)
    for kind in ("debug", "graph"):
        np.testing.assert_allclose(run(mod, kind, xv), np.cumsum(xv))


def test_text_format_round_trip():
    n = size_var("n")
    x = irlib.var("x", shape=(n, 4))
    call = ec.call_dps_packed(SCALE_SHIFT, [x, 2.5, irlib.const(np.ones(4, "float32"))],
                              TensorType((n, 4), "float32"))
    mod = module([x], irlib.TupleGetItem(call, 0))
    text = mod.astext()
    assert f'func_name="{SCALE_SHIFT}"' in text and "out_shapes=[[n, 4]]" in text
    assert irlib.structural_equal(irlib.transform.InferType()(irlib.parse(text)), mod)


def test_passes_do_not_fold_or_merge_calls():
    calls = []

    def counter(x, out):
        calls.append(1)
        out[...] = x + len(calls)

    name = ec.register_unique("test.counter", counter)
    c = irlib.const(np.zeros(2, "float32"))
    one = irlib.TupleGetItem(ec.call_dps_packed(name, [c], TensorType((2,), "float32")), 0)
    two = irlib.TupleGetItem(ec.call_dps_packed(name, [c], TensorType((2,), "float32")), 0)
    mod = module([], irlib.add(one, two))
    seq = irlib.transform.Sequential([irlib.transform.FoldConstant(),
                                      irlib.transform.EliminateCommonSubexpr()])
    optimized = seq(mod)
    assert calls == []                           # nothing ran at compile time
    assert optimized.astext().count("call_dps_packed") == 2
    assert run(optimized, "debug").tolist() == [3.0, 3.0]   # 1 + 2: both calls ran


def test_errors():
    with pytest.raises(ec.ExternFuncError, match="already registered"):
        ec.register_func(SCALE_SHIFT, _split_sum)
    with pytest.raises(ec.ExternFuncError, match="must be callable"):
        ec.register_func("test.not_callable", 3)
    x = irlib.var("x", shape=(2,))
    with pytest.raises(ec.ExternFuncError, match="argument 1 is a list"):
        ec.call_dps_packed(SCALE_SHIFT, [x, [1, 2]], TensorType((2,), "float32"))
    bad = irlib.op.registry.make_call("call_dps_packed", [irlib.Tuple([x])],
                                      {"func_name": "f", "out_shapes": [[2]],
                                       "out_dtypes": ["float32", "int32"]})
    with pytest.raises(TypeInferenceError, match="out_shapes"):
        module([x], bad)
    missing = ec.call_dps_packed("test.nobody_registered_this", [x], TensorType((2,), "float32"))
    mod = module([x], irlib.TupleGetItem(missing, 0))
    with pytest.raises(IRError, match="no extern function named 'test.nobody_registered_this'"):
        run(mod, "debug", np.ones(2, "float32"))
    with pytest.raises(UnknownNameError):
        ec.get_func("test.nobody_registered_this")


def test_register_func_decorator_and_override():
    @ec.register_func("test.decorated")
    def first(x, out):
        out[...] = x

    assert "test.decorated" in ec.list_funcs() and ec.get_func("test.decorated").fn is first
    ec.register_func("test.decorated", _scale_shift, override=True)
    assert ec.get_func("test.decorated").fn is _scale_shift
    # the same function asked for twice keeps its name; another one gets a fresh name
    assert ec.register_unique("test.scale_shift", _scale_shift) == SCALE_SHIFT
    assert ec.register_unique("test.scale_shift", first) != SCALE_SHIFT


def test_to_python_and_a_built_graph_run_the_call():
    x = irlib.var("x", shape=(3, 4))
    call = ec.call_dps_packed(SCALE_SHIFT, [x, 2.0, irlib.const(np.arange(4, dtype="float32"))],
                              TensorType((3, 4), "float32"))
    func = irlib.Function([x], irlib.negative(irlib.TupleGetItem(call, 0)))
    xv = np.random.default_rng(5).standard_normal((3, 4)).astype("float32")
    expected = -(xv * 2 + np.arange(4, dtype="float32"))
    out = interp.run_as_python(irlib.Call(func, [irlib.const(xv)]))
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
    lib = interp.build(irlib.IRModule.from_expr(func), target="cpu")
    graph = interp.graph_executor.GraphModule(lib["default"](interp.cpu(0)))
    graph.run(x=xv)
    np.testing.assert_allclose(graph.get_output(0).numpy(), expected, rtol=1e-6)
