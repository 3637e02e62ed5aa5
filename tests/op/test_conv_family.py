"""The six convolution ops share one definition parameterised by the spatial rank: every
``nn.conv{1,2,3}d`` and ``nn.conv{1,2,3}d_transpose`` agrees with torch (values and the
inferred result type) over drawn shapes, groups, strides, dilations and paddings."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import irlib
from irlib.op import registry

torch = pytest.importorskip("torch")
F = torch.nn.functional


@st.composite
def conv_cases(draw):
    n = draw(st.integers(1, 3))
    transpose = draw(st.booleans())
    groups = draw(st.sampled_from([1, 2]))
    per_group_in = draw(st.integers(1, 2))
    per_group_out = draw(st.integers(1, 2))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(n))
    strides = tuple(draw(st.integers(1, 2)) for _ in range(n))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(n))
    padding = tuple(draw(st.integers(0, 1)) for _ in range(n))
    sizes = tuple(draw(st.integers(k * d, k * d + 3)) for k, d in zip(kernel, dilation))
    output_padding = tuple(draw(st.integers(0, max(s, d) - 1))
                           for s, d in zip(strides, dilation)) if transpose else None
    return n, transpose, groups, per_group_in, per_group_out, kernel, strides, dilation, \
        padding, sizes, output_padding


@settings(max_examples=40, deadline=None)
@given(case=conv_cases(), seed=st.integers(0, 2 ** 16))
def test_conv_family_matches_torch(case, seed):
    (n, transpose, groups, per_in, per_out, kernel, strides, dilation, padding, sizes,
     output_padding) = case
    rng = np.random.default_rng(seed)
    channels_in = groups * per_in
    data = rng.standard_normal((2, channels_in) + sizes).astype("float32")
    if transpose:
        weight = rng.standard_normal((channels_in, per_out) + kernel).astype("float32")
        expected = getattr(F, f"conv_transpose{n}d")(
            torch.from_numpy(data), torch.from_numpy(weight), stride=strides, padding=padding,
            output_padding=output_padding, groups=groups, dilation=dilation).numpy()
        builder = getattr(irlib.nn, f"conv{n}d_transpose")
        extra = {"output_padding": output_padding}
    else:
        weight = rng.standard_normal((groups * per_out, per_in) + kernel).astype("float32")
        expected = getattr(F, f"conv{n}d")(
            torch.from_numpy(data), torch.from_numpy(weight), stride=strides, padding=padding,
            groups=groups, dilation=dilation).numpy()
        builder = getattr(irlib.nn, f"conv{n}d")
        extra = {}
    x = irlib.var("x", shape=data.shape, dtype="float32")
    w = irlib.var("w", shape=weight.shape, dtype="float32")
    call = builder(x, w, strides=strides, padding=padding, dilation=dilation, groups=groups,
                   **extra)
    typed = irlib.infer_type(irlib.Function([x, w], call))
    assert tuple(int(d) for d in typed.checked_type.ret_type.shape) == expected.shape
    got = registry.evaluate(call.op.name, [data, weight], call.attrs)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_the_six_ops_share_one_definition():
    names = [f"nn.conv{n}d{suffix}" for n in (1, 2, 3) for suffix in ("", "_transpose")]
    for name in names:
        op_def = registry.get_def(name)
        assert op_def.module == "irlib.op.nn_conv"
        assert op_def.impl.__qualname__.startswith("conv_ref.")
        assert op_def.grad is not None, name
