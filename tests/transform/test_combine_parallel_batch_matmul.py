"""CombineParallelBatchMatmul: sibling batch_matmuls of one input become one batch_matmul
over the concatenated second inputs plus a slice per branch (hand-written expected program,
numpy oracle)."""

import numpy as np
from hypothesis import given, settings, strategies as st

import irlib
from irlib import Function, IRModule, var
from irlib.analysis import count_ops
from irlib.ir import expr as E
from irlib.testing.budget import examples
from irlib.transform import CombineParallelBatchMatmul, InferType

from _graph_opt_helpers import assert_close, run

RNG = np.random.default_rng(3)


def branches(widths, batch=2, rows=3, depth=4, shared=True, **attrs):
    x = var("x", shape=(batch, rows, depth), dtype="float64")
    x2 = var("x2", shape=(batch, rows, depth), dtype="float64")
    ys = [var(f"y{i}", shape=(batch, n, depth), dtype="float64") for i, n in enumerate(widths)]
    outs = [irlib.nn.relu(irlib.nn.batch_matmul(x if shared or i else x2, y, **attrs))
            for i, y in enumerate(ys)]
    params = [x] + ([] if shared else [x2]) + ys
    inputs = [RNG.standard_normal(p.type_annotation.shape) for p in params]
    return IRModule.from_expr(Function(params, E.Tuple(tuple(outs)))), inputs


def oracle(x, ys):
    return tuple(np.maximum(x @ np.swapaxes(y, 1, 2), 0.0) for y in ys)


def test_three_branches_become_one_batch_matmul_and_slices():
    mod, inputs = branches([2, 3, 4])
    out = CombineParallelBatchMatmul()(mod)
    params = ", ".join(f"%{name}: Tensor[(2, {n}, 4), float64]"
                       for name, n in (("y0", 2), ("y1", 3), ("y2", 4)))

    def part(begin, width):
        return (f"nn.relu(strided_slice(%0, begin=[0, 0, {begin}], end=[-1, -1, {width}], "
                f"strides=[1, 1, 1], slice_mode=\"size\"))")
    text = (f"fn (%x: Tensor[(2, 3, 4), float64], {params}) {{ "
            f"%0 = nn.batch_matmul(%x, concatenate((%y0, %y1, %y2), axis=1), "
            f"transpose_b=True); ({part(0, 2)}, {part(2, 3)}, {part(5, 4)}) }}")
    expected = InferType()(IRModule.from_expr(irlib.parse_expr(text)))["main"]
    assert irlib.structural_equal(out["main"], expected), irlib.astext(out["main"])
    assert_close(run(out, inputs), oracle(inputs[0], inputs[1:]))


def test_needs_min_branches_a_shared_input_and_one_batch_size():
    mod, _ = branches([2, 2])
    assert count_ops(CombineParallelBatchMatmul()(mod))["nn.batch_matmul"] == 2
    assert count_ops(CombineParallelBatchMatmul(2)(mod))["nn.batch_matmul"] == 1
    mod, _ = branches([2, 2, 2], shared=False)     # only two share %x
    assert count_ops(CombineParallelBatchMatmul()(mod))["nn.batch_matmul"] == 3
    x = var("x", shape=(1, 3, 4))
    ys = [var(f"y{i}", shape=(b, 2, 4)) for i, b in enumerate((1, 2, 2))]
    mixed = IRModule.from_expr(Function([x] + ys, E.Tuple(tuple(
        irlib.nn.batch_matmul(x, y) for y in ys))))
    assert count_ops(CombineParallelBatchMatmul()(mixed))["nn.batch_matmul"] == 3
    assert count_ops(CombineParallelBatchMatmul(2)(mixed))["nn.batch_matmul"] == 2


def test_only_the_transpose_b_form_is_combined():
    x = var("x", shape=(2, 3, 4))
    ys = [var(f"y{i}", shape=(2, 4, 5)) for i in range(3)]
    mod = IRModule.from_expr(Function([x] + ys, E.Tuple(tuple(
        irlib.nn.batch_matmul(x, y, transpose_b=False) for y in ys))))
    assert count_ops(CombineParallelBatchMatmul()(mod))["nn.batch_matmul"] == 3


def test_broadcast_batch_of_the_shared_input():
    # x has batch 1, the second inputs batch 2: still one compatible group.
    mod, inputs = branches([1, 2, 3], batch=2)
    x = var("x", shape=(1, 3, 4), dtype="float64")
    ys = list(mod["main"].params[1:])
    mod = IRModule.from_expr(Function([x] + ys, E.Tuple(tuple(
        irlib.nn.batch_matmul(x, y) for y in ys))))
    inputs[0] = RNG.standard_normal((1, 3, 4))
    out = CombineParallelBatchMatmul()(mod)
    assert count_ops(out)["nn.batch_matmul"] == 1
    expected = tuple(inputs[0] @ np.swapaxes(y, 1, 2) for y in inputs[1:])
    assert_close(run(out, inputs), expected)


@settings(max_examples=examples(15), deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=5), st.integers(1, 3))
def test_semantics_preserved(widths, min_branches):
    mod, inputs = branches(widths)
    out = CombineParallelBatchMatmul(min_branches)(mod)
    expected_count = 1 if len(widths) >= min_branches else len(widths)
    assert count_ops(out)["nn.batch_matmul"] == expected_count
    assert_close(run(out, inputs), oracle(inputs[0], inputs[1:]))


def test_a_lone_call_is_left_alone_even_with_min_one_branch():
    from irlib.transform import CombineParallelConv2D, CombineParallelDense
    x, w = var("x", shape=(2, 5)), var("w", shape=(4, 5))
    dense = IRModule.from_expr(Function([x, w], irlib.nn.dense(x, w)))
    for combine in (CombineParallelDense(1), CombineParallelDense(1, to_batch=False)):
        assert count_ops(combine(dense)) == {"nn.dense": 1}
    x, w = var("x", shape=(1, 3, 6, 6)), var("w", shape=(2, 3, 3, 3))
    conv = IRModule.from_expr(Function([x, w], irlib.nn.conv2d(x, w)))
    assert count_ops(CombineParallelConv2D(1)(conv)) == {"nn.conv2d": 1}
    mod, _ = branches([2])
    assert count_ops(CombineParallelBatchMatmul(1)(mod))["nn.batch_matmul"] == 1
