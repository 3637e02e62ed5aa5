"""Fused attention with value heads of at most 32 (the 32-column micro-kernel, 10-row
blocks) and additive masks that are one row for every query (read once per key block):
against a float64 numpy formula written here, over query counts across the 10-row block
edge, key counts across the 256-key block edge (the online-softmax rescale), value widths
around 32, padding masks broadcast over heads and queries, per-head rows, full masks,
causal diagonals, grouped heads, and the (batch, head) blocks shared by one or two
threads."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

pytest.importorskip("numba")
from jitkernels.cpu import attention, packed_gemm, work_sharing  # noqa: E402


@pytest.fixture(autouse=True)
def _idle_machine(monkeypatch):
    """Heads are shared by numba's workers even when other processes keep the cores busy
    (the test machine is shared), so the tests exercise that path."""
    monkeypatch.setattr(work_sharing, "others_busy", lambda: 0.0)


def _softmax_attention(q, kt, v, scale, mask, causal, offset):
    q, kt, v = (a.astype("float64") for a in (q, kt, v))
    group = q.shape[1] // kt.shape[1]
    kt, v = np.repeat(kt, group, axis=1), np.repeat(v, group, axis=1)
    scores = q @ kt * scale
    if mask is not None:
        scores = scores + mask
    if causal:
        sq, sk = scores.shape[-2:]
        hidden = np.arange(sk)[None, :] > np.arange(sq)[:, None] + offset
        scores = np.where(hidden, -np.inf, scores)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    return (weights / weights.sum(axis=-1, keepdims=True)) @ v


@settings(max_examples=40, deadline=None)
@given(heads_kv=st.sampled_from([1, 2]), group=st.sampled_from([1, 3]),
       batch=st.sampled_from([1, 2]),
       seq_q=st.sampled_from([1, 9, 10, 11, 21, 64, 65, 70]),
       seq_k=st.sampled_from([1, 31, 128, 256, 257, 300]),
       depth=st.sampled_from([8, 32]), depth_v=st.sampled_from([1, 16, 31, 32, 33]),
       mask_shape=st.sampled_from(["none", "padding", "per_head", "per_batch", "full"]),
       causal=st.booleans(), threads=st.sampled_from([1, 2]), seed=st.integers(0, 3))
def test_narrow_values_and_shared_mask_rows_match_numpy(heads_kv, group, batch, seq_q, seq_k,
                                                        depth, depth_v, mask_shape, causal,
                                                        threads, seed):
    if not packed_gemm.available():
        pytest.skip("no AVX-512: the packed products do not run")
    heads = heads_kv * group
    rng = np.random.default_rng(seed)
    # (B, S, H, D) projections read through transposed views, as a transformer has them
    q = rng.standard_normal((batch, seq_q, heads, depth)).astype("float32").transpose(0, 2, 1, 3)
    kt = rng.standard_normal((batch, seq_k, heads_kv, depth)).astype("float32") \
        .transpose(0, 2, 3, 1)
    v = rng.standard_normal((batch, seq_k, heads_kv, depth_v)).astype("float32") \
        .transpose(0, 2, 1, 3)
    shapes = {"padding": (1, 1, 1, seq_k), "per_head": (1, heads, 1, seq_k),
              "per_batch": (batch, 1, 1, seq_k), "full": (batch, heads, seq_q, seq_k)}
    mask = None
    if mask_shape != "none":
        mask = (rng.standard_normal(shapes[mask_shape]) * 2).astype("float32")
        if seq_k > 3:
            mask[..., -3:] = -1e4          # padded keys
    offset = max(seq_k - seq_q, 0)
    out = np.full((batch, heads, seq_q, depth_v), np.nan, "float32")
    import numba
    numba.set_num_threads(threads)
    try:
        attention.attention(q, kt, v, out, 0.35, mask=mask,
                            mode="add" if mask is not None else "none",
                            causal=causal, offset=offset)
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    expected = _softmax_attention(q, kt, v, 0.35, mask, causal, offset)
    np.testing.assert_allclose(out, expected, rtol=2e-5, atol=2e-5)
