"""CombineParallelConv2D / CombineParallelDense: structure and meaning."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import irlib
from irlib import Function, IRModule, var
from irlib.analysis import count_ops
from irlib.ir import expr as E
from irlib.testing.budget import examples
from irlib.transform import CombineParallelConv2D, CombineParallelDense

from _graph_opt_helpers import assert_close, run
from helpers import assert_rewrites

RNG = np.random.default_rng(0)


def dense_branches(widths, shared_input=True):
    x = var("x", shape=(2, 5), dtype="float64")
    ws = [var(f"w{i}", shape=(n, 5), dtype="float64") for i, n in enumerate(widths)]
    x2 = var("x2", shape=(2, 5), dtype="float64")
    outs = [irlib.nn.relu(irlib.nn.dense(x if shared_input or i else x2, w))
            for i, w in enumerate(ws)]
    params = [x] + ([] if shared_input else [x2]) + ws
    inputs = [RNG.standard_normal(p.type_annotation.shape) for p in params]
    return IRModule.from_expr(Function(params, E.Tuple(tuple(outs)))), inputs


THREE_DENSE = """
fn (%x: Tensor[(2, 3), float32], %w0: Tensor[(4, 3), float32], %w1: Tensor[(4, 3), float32],
    %w2: Tensor[(4, 3), float32]) {
  (nn.relu(nn.dense(%x, %w0)), nn.relu(nn.dense(%x, %w1)), nn.relu(nn.dense(%x, %w2)))
}"""
T23 = "Tensor[(2, 4), float32]"


def test_three_parallel_dense_become_one_batch_matmul():
    # the shared input and the weights are stacked, one batch_matmul computes every branch,
    # and each branch's tail (relu) reads its slice
    assert_rewrites(CombineParallelDense(), THREE_DENSE, f"""
    fn (%x: Tensor[(2, 3), float32], %w0: Tensor[(4, 3), float32],
        %w1: Tensor[(4, 3), float32], %w2: Tensor[(4, 3), float32]) -> ({T23}, {T23}, {T23}) {{
      %0 = stack((%x, %x, %x));
      %1 = stack((%w0, %w1, %w2));
      %2 = split(nn.batch_matmul(%0, %1), indices_or_sections=3);
      (nn.relu(squeeze(%2.0, axis=[0])), nn.relu(squeeze(%2.1, axis=[0])),
       nn.relu(squeeze(%2.2, axis=[0])))
    }}""")
    mod, inputs = dense_branches([4, 4, 4])
    out = CombineParallelDense()(mod)
    assert count_ops(out)["nn.batch_matmul"] == 1
    assert_close(run(out, inputs), run(mod, inputs))


def test_dense_concat_mode_slices_one_wide_dense():
    assert_rewrites(CombineParallelDense(to_batch=False), THREE_DENSE, f"""
    fn (%x: Tensor[(2, 3), float32], %w0: Tensor[(4, 3), float32],
        %w1: Tensor[(4, 3), float32], %w2: Tensor[(4, 3), float32]) -> ({T23}, {T23}, {T23}) {{
      %0 = nn.dense(%x, concatenate((%w0, %w1, %w2)), units=12);
      (nn.relu(strided_slice(%0, begin=[0, 0], end=[-1, 4], strides=[1, 1], slice_mode="size")),
       nn.relu(strided_slice(%0, begin=[0, 4], end=[-1, 4], strides=[1, 1], slice_mode="size")),
       nn.relu(strided_slice(%0, begin=[0, 8], end=[-1, 4], strides=[1, 1], slice_mode="size")))
    }}""")


def test_dense_concat_mode_allows_different_widths():
    mod, inputs = dense_branches([2, 3, 4])
    assert count_ops(CombineParallelDense()(mod))["nn.dense"] == 3     # shapes differ
    out = CombineParallelDense(to_batch=False)(mod)
    counts = count_ops(out)
    assert counts["nn.dense"] == 1 and counts["strided_slice"] == 3
    assert_close(run(out, inputs), run(mod, inputs))


def test_dense_needs_min_branches_and_a_shared_input():
    mod, _ = dense_branches([4, 4])
    assert count_ops(CombineParallelDense()(mod))["nn.dense"] == 2
    assert "nn.dense" not in count_ops(CombineParallelDense(min_num_branches=2)(mod))
    mod, _ = dense_branches([4, 4, 4], shared_input=False)
    assert count_ops(CombineParallelDense()(mod))["nn.dense"] == 3


def conv_branches(channels, layout="NCHW", kernel=(3, 3)):
    shape = (1, 3, 6, 6) if layout == "NCHW" else (1, 6, 6, 3)
    x = var("x", shape=shape, dtype="float64")
    ws = []
    for i, c in enumerate(channels):
        wshape = (c, 3) + kernel if layout == "NCHW" else kernel + (3, c)
        ws.append(var(f"w{i}", shape=wshape, dtype="float64"))
    outs = [irlib.nn.conv2d(x, w, padding=(1, 1), data_layout=layout,
                            kernel_layout="OIHW" if layout == "NCHW" else "HWIO")
            for w in ws]
    params = [x] + ws
    inputs = [RNG.standard_normal(p.type_annotation.shape) for p in params]
    return IRModule.from_expr(Function(params, E.Tuple(tuple(outs)))), inputs


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_parallel_conv2d_combined(layout):
    mod, inputs = conv_branches([2, 3, 4], layout)
    out = CombineParallelConv2D()(mod)
    counts = count_ops(out)
    assert counts["nn.conv2d"] == 1 and counts["strided_slice"] == 3
    assert_close(run(out, inputs), run(mod, inputs))


def test_conv2d_with_different_kernels_not_combined():
    mod, _ = conv_branches([2, 3, 4])
    x = mod["main"].params[0]
    extra = irlib.nn.conv2d(x, var("k", shape=(2, 3, 1, 1), dtype="float64"))
    body = E.Tuple(mod["main"].body.fields + (extra,))
    from irlib.analysis import free_vars
    mod2 = IRModule.from_expr(Function(list(free_vars(body)), body))
    assert count_ops(CombineParallelConv2D()(mod2))["nn.conv2d"] == 2


@settings(max_examples=examples(15), deadline=None)
@given(widths=st.lists(st.integers(1, 4), min_size=1, max_size=5), to_batch=st.booleans())
def test_combining_preserves_meaning(widths, to_batch):
    mod, inputs = dense_branches(widths)
    out = CombineParallelDense(min_num_branches=2, to_batch=to_batch)(mod)
    assert_close(run(out, inputs), run(mod, inputs))
    mod, inputs = conv_branches(widths)
    out = CombineParallelConv2D(min_num_branches=2)(mod)
    assert_close(run(out, inputs), run(mod, inputs))


def test_conv2d_following_elementwise_ops_are_merged():
    x = var("x", shape=(1, 3, 6, 6), dtype="float64")
    widths = [2, 3, 4]
    ws = [var(f"w{i}", shape=(c, 3, 3, 3), dtype="float64") for i, c in enumerate(widths)]
    bs = [var(f"b{i}", shape=(c, 1, 1), dtype="float64") for i, c in enumerate(widths)]
    scale = E.Constant(np.array(0.5))
    outs = [irlib.nn.relu(irlib.multiply(irlib.add(irlib.nn.conv2d(x, w, padding=(1, 1)), b),
                                         scale)) for w, b in zip(ws, bs)]
    outs[2] = irlib.exp(outs[2])                    # a branch-specific tail stays outside
    params = [x] + ws + bs
    mod = IRModule.from_expr(Function(params, E.Tuple(tuple(outs))))
    out = CombineParallelConv2D()(mod)
    counts = count_ops(out)
    assert counts["nn.conv2d"] == 1 and counts["add"] == 1 and counts["multiply"] == 1
    assert counts["nn.relu"] == 1 and counts["exp"] == 1 and counts["strided_slice"] == 3
    inputs = [RNG.standard_normal(p.type_annotation.shape) for p in params]
    assert_close(run(out, inputs), run(mod, inputs))


@settings(max_examples=examples(15), deadline=None)
@given(widths=st.lists(st.integers(1, 4), min_size=2, max_size=4),
       follow=st.lists(st.sampled_from(["relu", "bias", "scale", "shared"]), max_size=4),
       seed=st.integers(0, 999))
def test_combining_with_followers_preserves_meaning(widths, follow, seed):
    rng = np.random.default_rng(seed)
    x = var("x", shape=(1, 3, 5, 5), dtype="float64")
    shared = E.Constant(rng.standard_normal((1, 1, 1)))
    params, outs = [x], []
    for i, c in enumerate(widths):
        w = var(f"w{i}", shape=(c, 3, 3, 3), dtype="float64")
        params.append(w)
        y = irlib.nn.conv2d(x, w, padding=(1, 1))
        for k, kind in enumerate(follow):
            if kind == "relu":
                y = irlib.nn.relu(y)
            elif kind == "bias":
                y = irlib.add(y, E.Constant(rng.standard_normal((c, 1, 1))))
            elif kind == "scale":
                y = irlib.multiply(E.Constant(np.array(1.5)), y)
            else:
                y = irlib.subtract(y, shared)
        outs.append(y)
    mod = IRModule.from_expr(Function(params, E.Tuple(tuple(outs))))
    out = CombineParallelConv2D(min_num_branches=2)(mod)
    assert count_ops(out)["nn.conv2d"] == 1
    inputs = [rng.standard_normal(p.type_annotation.shape) for p in params]
    assert_close(run(out, inputs), run(mod, inputs))
