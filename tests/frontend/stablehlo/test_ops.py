"""StableHLO data-movement, contraction, reduction and indexing converters against JAX on
random inputs (hypothesis over shapes and attributes; the interpreter runs every example,
the graph executor a fixed one per family)."""

import numpy as np
from hypothesis import given, settings, strategies as st

from ._helpers import check, jax

jnp = jax.numpy
lax = jax.lax


def _rand(seed, shape, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)


@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_shape_ops(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=2, max_size=4)))
    x = _rand(data.draw(st.integers(0, 999)), shape)
    perm = data.draw(st.permutations(range(len(shape))))
    begin = [data.draw(st.integers(0, d - 1)) for d in shape]
    lows = [data.draw(st.integers(-1, 2)) for _ in shape]
    highs = [data.draw(st.integers(0, 2)) for _ in shape]
    inner = [data.draw(st.integers(0, 2)) for _ in shape]

    def f(x):
        return (jnp.transpose(x, perm), x.reshape(-1), x[tuple(slice(b, None, 2) for b in begin)],
                jnp.concatenate([x, x * 2], axis=len(shape) - 1),
                lax.pad(x, np.float32(-1), list(zip(lows, highs, inner))),
                jnp.flip(x, 0), x[None, ..., None] + jnp.zeros((2,) + shape + (3,), jnp.float32),
                lax.broadcast_in_dim(x[0], (2,) + shape[1:][::-1],
                                     tuple(range(len(shape) - 1, 0, -1))),
                lax.iota(jnp.int32, 5), lax.broadcasted_iota(jnp.float32, shape, len(shape) - 1))
    check(f, x, executors=("debug",))


@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_dynamic_slice_and_update(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    x = _rand(data.draw(st.integers(0, 999)), shape)
    sizes = [data.draw(st.integers(1, d)) for d in shape]
    starts = np.array([data.draw(st.integers(-2, d + 2)) for d in shape], np.int32)
    update = _rand(7, tuple(sizes))

    def f(x, starts, update):
        idx = [starts[i] for i in range(len(shape))]
        return (lax.dynamic_slice(x, idx, sizes), lax.dynamic_update_slice(x, update, idx),
                lax.dynamic_slice(x, [np.int32(0)] * len(shape), sizes))
    check(f, x, starts, update, executors=("debug",))


def test_shape_ops_graph_executor():
    x = _rand(0, (3, 4, 5))

    def f(x, i):
        return (jnp.transpose(x, (2, 0, 1)).reshape(5, 12), x[1:, ::2], jnp.pad(x, 1),
                lax.dynamic_slice(x, (i, i, np.int32(1)), (2, 2, 3)),
                lax.dynamic_update_slice(x, jnp.ones((1, 2, 2), jnp.float32), (i, i, i)))
    check(f, x, np.int32(1))


@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_dot_general(data):
    batch = tuple(data.draw(st.lists(st.integers(1, 3), max_size=2)))
    m, k, n = (data.draw(st.integers(1, 5)) for _ in range(3))
    seed = data.draw(st.integers(0, 999))
    lhs = _rand(seed, batch + (m, k))
    rhs = _rand(seed + 1, batch + (k, n))
    nb = len(batch)
    dims = (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb))))
    check(lambda a, b: (lax.dot_general(a, b, dims), jnp.einsum("...mk,...kn->...nm", a, b),
                        a[..., 0, :] @ b[..., :, 0] if nb == 0 else a.sum()),
          lhs, rhs, executors=("debug",))


def test_dot_graph_executor_and_int8():
    a, b = _rand(0, (2, 3, 4)), _rand(1, (4, 5))
    check(lambda a, b: (a @ b, jnp.einsum("bij,bkj->bik", a, a), jnp.dot(a[0, 0], b[:, 0]),
                        a[0] @ a[0].T, a[0] @ b.T[:, :, None][..., 0].T),
          a, b)
    ai = np.arange(12, dtype=np.int8).reshape(3, 4)
    check(lambda a: lax.dot_general(a, a, (((1,), (1,)), ((), ())),
                                    preferred_element_type=jnp.int32), ai, executors=("debug",))


@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_convolution(data):
    nsp = data.draw(st.integers(1, 3))
    groups = data.draw(st.sampled_from([1, 2]))
    cin, cout = 2 * groups, 2 * groups
    spatial = tuple(data.draw(st.integers(3, 6)) for _ in range(nsp))
    window = tuple(data.draw(st.integers(1, 3)) for _ in range(nsp))
    strides = tuple(data.draw(st.integers(1, 2)) for _ in range(nsp))
    lhs_dil = tuple(data.draw(st.integers(1, 2)) for _ in range(nsp))
    rhs_dil = tuple(data.draw(st.integers(1, 2)) for _ in range(nsp))
    padding = [(data.draw(st.integers(-1, 2)), data.draw(st.integers(0, 2))) for _ in range(nsp)]
    layout = data.draw(st.sampled_from(["channels_first", "channels_last"]))
    letters = "HWD"[:nsp] if nsp > 1 else "W"
    if nsp == 3:
        letters = "DHW"
    if layout == "channels_first":
        numbers = ("NC" + letters, "OI" + letters, "NC" + letters)
        x = _rand(1, (2, cin) + spatial)
    else:
        numbers = ("N" + letters + "C", letters + "IO", "N" + letters + "C")
        x = _rand(1, (2,) + spatial + (cin,))
    w_shape = (cout, cin // groups) + window if layout == "channels_first" \
        else window + (cin // groups, cout)
    w = _rand(2, w_shape)

    def f(x, w):
        return lax.conv_general_dilated(x, w, strides, padding, lhs_dilation=lhs_dil,
                                        rhs_dilation=rhs_dil, dimension_numbers=numbers,
                                        feature_group_count=groups)
    try:
        jax.eval_shape(f, x, w)
    except Exception:  # an empty output: JAX refuses these attributes
        return
    if 0 in jax.eval_shape(f, x, w).shape:
        return
    check(f, x, w, executors=("debug",))


def test_convolution_graph_executor_and_batch_groups():
    x, w = _rand(0, (2, 8, 8, 3)), _rand(1, (3, 3, 3, 4))
    check(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                                dimension_numbers=("NHWC", "HWIO", "NHWC")),
          x, w)
    x2, w2 = _rand(2, (4, 2, 5, 5)), _rand(3, (4, 2, 3, 3))
    check(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "VALID", batch_group_count=2),
          x2, w2, executors=("debug",))


@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_reductions(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    x = _rand(data.draw(st.integers(0, 999)), shape)
    axis = data.draw(st.integers(0, len(shape) - 1))

    def f(x):
        return (x.sum(axis), x.max(axis), x.min(), jnp.prod(x, axis), (x > 0).all(axis),
                (x > 0).any(), jnp.argmax(x, axis), jnp.argmin(x, axis), x.mean(),
                jnp.cumsum(x, axis), jnp.cumprod(x, axis))
    check(f, x, executors=("debug",))


@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_reduce_window(data):
    rank = data.draw(st.integers(1, 4))
    shape = tuple(data.draw(st.integers(2, 5)) for _ in range(rank))
    x = _rand(data.draw(st.integers(0, 999)), shape)
    window = tuple(data.draw(st.integers(1, d)) for d in shape)
    strides = tuple(data.draw(st.integers(1, 2)) for _ in shape)
    padding = tuple((data.draw(st.integers(0, 1)), data.draw(st.integers(0, 1))) for _ in shape)
    if sum(1 for w, s, p in zip(window, strides, padding) if (w, s, p) != (1, 1, (0, 0))) > 3:
        return

    def f(x):
        return (lax.reduce_window(x, -np.inf, lax.max, window, strides, padding),
                lax.reduce_window(x, np.float32(0), lax.add, window, strides, padding),
                lax.reduce_window(x, np.inf, lax.min, window, strides, padding))
    check(f, x, executors=("debug",))


def test_pooling_graph_executor():
    x = _rand(0, (2, 8, 8, 3))
    check(lambda x: (lax.reduce_window(x, -np.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME"),
                     lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1),
                                       "VALID") / 4,
                     x.mean(axis=(1, 2)), jnp.argmax(x, -1), jnp.cumsum(x, 1)), x)


@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_gather_scatter(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=2, max_size=3)))
    x = _rand(data.draw(st.integers(0, 999)), shape)
    count = data.draw(st.integers(1, 4))
    idx0 = np.array([data.draw(st.integers(-shape[0], shape[0] - 1)) for _ in range(count)],
                    np.int32)
    idx1 = np.array([data.draw(st.integers(0, shape[1] - 1)) for _ in range(count)], np.int32)
    along = np.array(data.draw(st.lists(st.integers(0, shape[1] - 1), min_size=shape[0] * 2,
                                        max_size=shape[0] * 2)), np.int32).reshape(shape[0], 2)
    if len(shape) == 3:
        along = np.broadcast_to(along[..., None], (shape[0], 2, shape[2])).copy()

    def f(x, i0, i1, along):
        ones = jnp.ones_like(x[i0])
        return (x[i0], x[:, i1], x[i0, i1], jnp.take(x, i1, axis=1),
                jnp.take_along_axis(x, along, axis=1), x.at[i0].set(ones),
                x.at[i0].add(ones), x.at[i0, i1].set(7.0), x.at[1].set(x[0]),
                jnp.where(x > 0)[0].size if False else x[-1])
    check(f, x, idx0, idx1, along, executors=("debug",))


@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_sort(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    x = _rand(data.draw(st.integers(0, 999)), shape)
    axis = data.draw(st.integers(0, len(shape) - 1))
    k = data.draw(st.integers(1, shape[-1]))
    check(lambda x: (jnp.sort(x, axis), jnp.argsort(x, axis), jnp.argsort(-x, axis),
                     jnp.sort(x, axis, descending=True), lax.top_k(x, k)[0],
                     lax.top_k(x, k)[1], lax.sort((x, x * 2), dimension=axis, num_keys=1)[1]),
          x, executors=("debug",))


def test_indexing_graph_executor():
    x, idx = _rand(0, (5, 4)), np.array([4, 0, 2], np.int32)
    check(lambda x, i: (x[i], x.at[i].add(1.0), jnp.sort(x, 0), jnp.argsort(x, 1)), x, idx)


@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_select_and_scatter_max_pool_gradient(data):
    shape = tuple(data.draw(st.integers(2, 5)) for _ in range(3))
    window = tuple(data.draw(st.integers(1, d)) for d in shape)
    strides = tuple(data.draw(st.integers(1, 2)) for _ in shape)
    padding = data.draw(st.sampled_from(["SAME", "VALID"]))
    x = _rand(data.draw(st.integers(0, 999)), shape)

    def f(x):
        return jax.grad(lambda v: (lax.reduce_window(v, -jnp.inf, lax.max, window, strides,
                                                     padding) ** 2).sum())(x)
    check(f, x, executors=("debug",))


def test_batch_norm_inference_and_infinity_tests():
    from irlib.frontend.stablehlo import from_stablehlo
    from ._helpers import run
    text = """
    func.func public @main(%x: tensor<2x3x4xf32>, %s: tensor<3xf32>, %o: tensor<3xf32>,
                           %m: tensor<3xf32>, %v: tensor<3xf32>)
        -> (tensor<2x3x4xf32>, tensor<2x3x4xi1>, tensor<2x3x4xi1>) {
      %0 = "stablehlo.batch_norm_inference"(%x, %s, %o, %m, %v)
             {epsilon = 1.0e-3 : f32, feature_index = 1 : i64}
             : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
             -> tensor<2x3x4xf32>
      %1 = chlo.is_pos_inf %x : tensor<2x3x4xf32> -> tensor<2x3x4xi1>
      %2 = chlo.is_inf %x : tensor<2x3x4xf32> -> tensor<2x3x4xi1>
      return %0, %1, %2 : tensor<2x3x4xf32>, tensor<2x3x4xi1>, tensor<2x3x4xi1>
    }"""
    x = _rand(0, (2, 3, 4))
    x[0, 0, 0], x[1, 2, 3] = np.inf, -np.inf
    s, o, m = _rand(1, (3,)), _rand(2, (3,)), _rand(3, (3,))
    v = np.abs(_rand(4, (3,))) + 0.5
    got = run(from_stablehlo(text), "debug", [x, s, o, m, v])
    b = (slice(None), None)  # the feature axis is 1
    want = (x - m[b]) / np.sqrt(v[b] + 1e-3) * s[b] + o[b]
    np.testing.assert_allclose(got[0], want, rtol=1e-5)
    np.testing.assert_array_equal(got[1], x == np.inf)
    np.testing.assert_array_equal(got[2], np.isinf(x))


def test_half_precision_contractions_accumulate_in_float32():
    x, w = _rand(0, (4, 6)), _rand(1, (1, 4, 4, 2))
    check(lambda x: (x.astype(jnp.bfloat16) @ x.T.astype(jnp.bfloat16)).astype(jnp.float32),
          x, rtol=1e-2, executors=("debug",))
    check(lambda x: x.astype(jnp.float16) @ x.T.astype(jnp.float16), x, rtol=1e-3,
          executors=("debug",))
    k = _rand(2, (3, 3, 2, 3))
    check(lambda w, k: lax.conv_general_dilated(w.astype(jnp.float16), k.astype(jnp.float16),
                                                (1, 1), "SAME",
                                                dimension_numbers=("NHWC", "HWIO", "NHWC")),
          w, k, rtol=1e-2, atol=1e-2, executors=("debug",))


@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_windowed_gather_from_vmapped_dynamic_slice(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=2, max_size=3)))
    x = _rand(data.draw(st.integers(0, 999)), shape)
    sizes = [data.draw(st.integers(1, d)) for d in shape[1:]]
    starts = np.array([[data.draw(st.integers(-1, d + 1)) for d in shape[1:]]
                       for _ in range(shape[0])], np.int32)

    def f(x, starts):
        rows = jax.vmap(lambda r, s: lax.dynamic_slice(r, tuple(s), sizes))(x, starts)
        shared = jax.vmap(lambda s: lax.dynamic_slice(x[0], tuple(s), sizes))(starts)
        return rows, shared
    assert "gather" in __import__("tests.frontend.stablehlo._helpers",
                                  fromlist=["lower"]).lower(f, x, starts)
    check(f, x, starts, executors=("debug",))


@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_scatter_windows_and_dropped_updates(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=2, max_size=3)))
    x = _rand(data.draw(st.integers(0, 999)), shape)
    sizes = [data.draw(st.integers(1, d)) for d in shape[1:]]
    starts = np.array([[data.draw(st.integers(-1, d + 1)) for d in shape[1:]]
                       for _ in range(shape[0])], np.int32)
    count = data.draw(st.integers(1, 4))
    idx = np.array([data.draw(st.integers(-3, shape[0] + 2)) for _ in range(count)], np.int32)
    updates = _rand(5, (shape[0],) + tuple(sizes))

    def f(x, starts, updates, idx):
        rows = jax.vmap(lambda r, u, s: lax.dynamic_update_slice(r, u, tuple(s)))(
            x, updates, starts)
        ones = jnp.ones((count,) + shape[1:], jnp.float32)
        dropped = x.at[idx].add(ones, mode="drop")
        dropped_set = x.at[idx].set(ones * 3, mode="drop")
        return rows, dropped, dropped_set, jnp.unique(idx, size=count)
    check(f, x, starts, updates, idx, executors=("debug",))


@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_generic_elementwise_bodies(data):
    """Bodies that are no single op: a pairwise tree (reduce) or unrolled windows."""
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    x = _rand(data.draw(st.integers(0, 999)), shape)
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1))))
    window = tuple(data.draw(st.integers(1, d)) for d in shape)
    base = tuple(data.draw(st.integers(1, 2)) for _ in shape)

    def f(x):
        return (lax.reduce(x, np.float32(-np.inf), jnp.logaddexp, axes),
                lax.cumlogsumexp(x, axis=len(shape) - 1),
                lax.reduce_window(x, -np.inf, lax.max, window, (1,) * len(shape), "VALID",
                                  base_dilation=base),
                lax.reduce_window(x, np.float32(1), lax.mul, window, (1,) * len(shape),
                                  "SAME"))
    check(f, x, executors=("debug",))


@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_multi_key_sort(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    rng = np.random.default_rng(data.draw(st.integers(0, 999)))
    keys = rng.integers(0, 3, shape).astype(np.float32)  # ties on the first key
    x = _rand(data.draw(st.integers(0, 999)), shape)
    axis = data.draw(st.integers(0, len(shape) - 1))
    check(lambda k, x: lax.sort((k, x, x * 2), dimension=axis, num_keys=2), keys, x,
          executors=("debug",))


def test_generic_bodies_graph_executor():
    """Bodies applied to whole tensors, with the NaN/-inf constants of JAX's comparators and
    inits, on the graph executor too."""
    x = _rand(0, (4, 6))
    check(lambda x: (jnp.lexsort((x[:, 0], jnp.round(x[:, 1]))),
                     jnp.nanargmax(jnp.where(x > 1, jnp.nan, x), axis=1),
                     lax.reduce_window(x, -np.inf, lax.max, (2, 2), (1, 1), "VALID",
                                       base_dilation=(2, 1)),
                     lax.cumlogsumexp(x, axis=1)), x)
