"""Fused attention with its products on the packed GEMM's micro-kernel (float32, AVX-512):
against a float64 numpy formula written here, over odd sizes (key blocks of 64 and 256
split, 64-wide value heads read in place or packed), masks and causal diagonals, with the
packed path on and off."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

pytest.importorskip("numba")
from jitkernels.cpu import attention, packed_gemm  # noqa: E402


def _oracle(q, kt, v, scale, mask, mode, fill, causal, offset):
    q, kt, v = (a.astype("float64") for a in (q, kt, v))
    group = q.shape[1] // kt.shape[1]
    kt = np.repeat(kt, group, axis=1)
    v = np.repeat(v, group, axis=1)
    scores = q @ kt * scale
    if mode == "add":
        scores = scores + mask
    elif mode == "select":
        scores = np.where(mask, scores, fill)
    if causal:
        sq, sk = scores.shape[-2:]
        hidden = np.arange(sk)[None, :] > np.arange(sq)[:, None] + offset
        scores = np.where(hidden, -np.inf, scores)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    return (weights / weights.sum(axis=-1, keepdims=True)) @ v


@st.composite
def _cases(draw):
    heads_kv = draw(st.sampled_from([1, 2]))
    heads = heads_kv * draw(st.sampled_from([1, 3]))
    seq_q = draw(st.integers(1, 40))
    seq_k = draw(st.sampled_from([1, 7, 64, 65, 128, 200, 257, 330]))
    depth = draw(st.sampled_from([1, 5, 32, 64, 96]))
    depth_v = draw(st.sampled_from([64, 64, 3, 70, 130]))
    contiguous_v = draw(st.booleans())
    mode = draw(st.sampled_from(["none", "add", "select"]))
    causal = draw(st.booleans())
    switch = draw(st.sampled_from(["1", "0"]))
    return heads, heads_kv, seq_q, seq_k, depth, depth_v, contiguous_v, mode, causal, switch


@settings(max_examples=30, deadline=None)
@given(case=_cases(), seed=st.integers(0, 3))
def test_packed_attention_matches_numpy(case, seed):
    heads, heads_kv, seq_q, seq_k, depth, depth_v, contiguous_v, mode, causal, switch = case
    import os
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((1, seq_q, heads, depth)).astype("float32").transpose(0, 2, 1, 3)
    kt = rng.standard_normal((1, heads_kv, seq_k, depth)).astype("float32") \
        .transpose(0, 1, 3, 2)
    if contiguous_v:
        v = rng.standard_normal((1, heads_kv, seq_k, depth_v)).astype("float32")
    else:
        v = rng.standard_normal((1, seq_k, heads_kv, depth_v)).astype("float32") \
            .transpose(0, 2, 1, 3)
    out = np.full((1, heads, seq_q, depth_v), np.nan, "float32")
    offset = seq_k - seq_q
    mask = None
    if mode == "add":
        mask = (rng.standard_normal((1, 1, seq_q, seq_k)) * 2).astype("float32")
    elif mode == "select":
        mask = rng.random((1, 1, seq_q, seq_k)) < 0.8
        mask[..., 0] = True
    if causal and offset < 0:
        offset = 0
    saved = os.environ.get(packed_gemm.ENV_SWITCH)
    os.environ[packed_gemm.ENV_SWITCH] = switch
    try:
        attention.attention(q, kt, v, out, 0.3, mask=mask, mode=mode, fill=-5.0,
                            causal=causal, offset=offset)
    finally:
        if saved is None:
            del os.environ[packed_gemm.ENV_SWITCH]
        else:
            os.environ[packed_gemm.ENV_SWITCH] = saved
    want = _oracle(q, kt, v, 0.3, mask, mode, -5.0, causal, offset)
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5)
