"""The fused attention kernel (jitkernels.cpu.attention) against a numpy formula written here.

Oracle: ``softmax(Q K^T * scale + mask) V`` with numpy (float64), the masks built by hand:
additive masks, bool (select) masks with a fill value, causal top-left / bottom-right,
grouped-query heads (``H`` a multiple of ``Hkv``), one query row (a decode step), strided
views of ``(B, S, H, D)`` projections.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irlib.testing.budget import examples

pytest.importorskip("numba")
from jitkernels.cpu.attention import attention  # noqa: E402


def oracle(q, k, v, scale, mask=None, mode="none", fill=0.0, causal=False, offset=0):
    """q (B, H, Sq, D), k (B, Hkv, Sk, D), v (B, Hkv, Sk, Dv) -> (B, H, Sq, Dv), float64."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k = np.repeat(k, group, axis=1)
    v = np.repeat(v, group, axis=1)
    scores = np.einsum("bhid,bhjd->bhij", q, k) * scale
    if mode == "add":
        scores = scores + mask
    elif mode == "select":
        scores = np.where(mask, scores, fill)
    if causal:
        sq, sk = scores.shape[-2:]
        visible = np.arange(sk)[None, :] <= np.arange(sq)[:, None] + offset
        scores = np.where(visible, scores, -np.inf)
    with np.errstate(invalid="ignore"):
        top = scores.max(axis=-1, keepdims=True)
        e = np.exp(scores - top)
        p = e / e.sum(axis=-1, keepdims=True)
    return np.einsum("bhij,bhjd->bhid", p, v)


@st.composite
def cases(draw):
    batch = draw(st.integers(1, 2))
    heads_kv = draw(st.integers(1, 3))
    heads = heads_kv * draw(st.sampled_from([1, 2, 4]))
    seq_q = draw(st.sampled_from([1, 2, 5, 17, 70]))
    seq_k = draw(st.sampled_from([1, 3, 16, 65, 300]))
    depth = draw(st.sampled_from([1, 4, 8, 32]))
    depth_v = draw(st.sampled_from([depth, 3]))
    mode = draw(st.sampled_from(["none", "add", "select"]))
    causal = draw(st.sampled_from([None, "top", "bottom"]))
    dtype = draw(st.sampled_from(["float32", "float64"]))
    seed = draw(st.integers(0, 2**16))
    return batch, heads, heads_kv, seq_q, seq_k, depth, depth_v, mode, causal, dtype, seed


@settings(max_examples=examples(40), deadline=None)
@given(case=cases())
def test_attention_matches_numpy(case):
    batch, heads, heads_kv, seq_q, seq_k, depth, depth_v, mode, causal, dtype, seed = case
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((batch, heads, seq_q, depth)).astype(dtype)
    k = rng.standard_normal((batch, heads_kv, seq_k, depth)).astype(dtype)
    v = rng.standard_normal((batch, heads_kv, seq_k, depth_v)).astype(dtype)
    scale = 1.0 / np.sqrt(depth)
    mask, fill = None, 0.0
    if mode == "add":                # a padding mask: (B, 1, 1, Sk), last keys hidden
        mask = np.zeros((batch, 1, 1, seq_k), dtype)
        mask[..., seq_k - seq_k // 3:] = -10000.0
        mask = mask + rng.standard_normal(mask.shape).astype(dtype)
    elif mode == "select":           # a full bool mask with at least one key per row
        mask = rng.random((batch, heads, seq_q, seq_k)) < 0.7
        mask[..., 0] = True
        fill = -1e9
    offset = 0 if causal in (None, "top") else seq_k - seq_q
    out = np.full((batch, heads, seq_q, depth_v), 7.0, dtype)
    attention(q, np.swapaxes(k, 2, 3), v, out, scale, mask, mode, fill,
              causal is not None, offset)
    expected = oracle(q, k, v, scale, mask, mode, fill, causal is not None, offset)
    tol = 2e-5 if dtype == "float32" else 1e-10
    assert np.array_equal(np.isnan(out), np.isnan(expected))
    finite = ~np.isnan(expected)
    np.testing.assert_allclose(out[finite], expected[finite], rtol=tol * 10, atol=tol)


def test_strided_views_are_read_and_written_in_place():
    """(B, S, H, D) projections viewed as (B, H, S, D): no copies, output through a view."""
    rng = np.random.default_rng(1)
    b, s, h, d = 2, 33, 3, 8
    q, k, v = (rng.standard_normal((b, s, h, d)).astype("float32") for _ in range(3))
    buffer = np.zeros((b, s, h * d), "float32")
    view = buffer.reshape(b, s, h, d).transpose(0, 2, 1, 3)
    assert np.shares_memory(view, buffer)
    attention(q.transpose(0, 2, 1, 3), k.transpose(0, 2, 3, 1), v.transpose(0, 2, 1, 3),
              view, 0.25)
    expected = oracle(q.transpose(0, 2, 1, 3), k.transpose(0, 2, 1, 3),
                      v.transpose(0, 2, 1, 3), 0.25)
    np.testing.assert_allclose(buffer, expected.transpose(0, 2, 1, 3).reshape(b, s, h * d),
                               rtol=1e-5, atol=1e-6)


def test_a_fully_hidden_row_is_nan_like_softmax():
    q = np.ones((1, 1, 2, 4), "float32")
    k = np.ones((1, 1, 3, 4), "float32")
    v = np.arange(12, dtype="float32").reshape(1, 1, 3, 4)
    mask = np.array([[True, True, False], [False, False, False]])
    out = np.zeros((1, 1, 2, 4), "float32")
    attention(q, np.swapaxes(k, 2, 3), v, out, 1.0, mask, "select", -np.inf)
    np.testing.assert_allclose(out[0, 0, 0], [2, 3, 4, 5], rtol=1e-6)   # mean of rows 0, 1
    assert np.isnan(out[0, 0, 1]).all()


def test_extreme_scores_stay_finite():
    """Large score differences (the fast float32 exp clamps below -87) keep the arithmetic
    finite and exact for the largest score."""
    q = np.array([[[[100.0], [-100.0]]]], "float32")
    k = np.array([[[[1.0], [0.5], [-1.0]]]], "float32")
    v = np.array([[[[1.0], [2.0], [3.0]]]], "float32")
    out = np.zeros((1, 1, 2, 1), "float32")
    attention(q, np.swapaxes(k, 2, 3), v, out, 1.0)
    np.testing.assert_allclose(out.ravel(), oracle(q, k, v, 1.0).ravel(), rtol=1e-6)


def test_bad_shapes_raise_value_error():
    q = np.zeros((1, 3, 2, 4), "float32")
    kt = np.zeros((1, 2, 4, 5), "float32")        # 2 key heads do not divide 3 query heads
    v = np.zeros((1, 2, 5, 4), "float32")
    with pytest.raises(ValueError, match="do not agree"):
        attention(q, kt, v, np.zeros((1, 3, 2, 4), "float32"), 1.0)
    with pytest.raises(ValueError, match="one float dtype"):
        attention(q.astype("int32"), kt[:, :1].astype("int32"), v[:, :1].astype("int32"),
                  np.zeros((1, 3, 2, 4), "int32"), 1.0)
