"""A survey of everyday jax.numpy / jax.nn / jax.lax functions (each lowered, imported and
run on the interpreter, outputs equal to JAX's), and the ones that lower to StableHLO this
importer refuses, which must raise StableHLOOpNotImplemented naming the op."""

import numpy as np
import pytest

from ._helpers import check, jax, lower

from irlib.frontend.stablehlo import StableHLOOpNotImplemented, from_stablehlo  # noqa: E402

jnp = jax.numpy
lax = jax.lax

X = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
IDX = np.array([1, 3, 0, 2], np.int32)

CASES = {
    "one_hot": lambda x, i: jax.nn.one_hot(i, 5) + x[:, :1],
    "dot_product_attention": lambda x, i: jax.nn.dot_product_attention(
        x.reshape(1, 4, 2, 3), x.reshape(1, 4, 2, 3), x.reshape(1, 4, 2, 3)),
    "checkpoint": lambda x, i: jax.checkpoint(lambda v: jnp.sin(v) * 2)(x),
    "norm": lambda x, i: (jnp.linalg.norm(x, axis=1), jnp.linalg.norm(x)),
    "logsumexp": lambda x, i: jax.nn.logsumexp(x, axis=1),
    "resize_linear": lambda x, i: jax.image.resize(x, (8, 12), "linear"),
    "resize_nearest": lambda x, i: jax.image.resize(x, (8, 12), "nearest"),
    "take_fill": lambda x, i: jnp.take(x, i, axis=1),
    "get_fill": lambda x, i: x.at[i + 2].get(mode="fill", fill_value=-1.0),
    "nan_to_num": lambda x, i: jnp.nan_to_num(jnp.log(jnp.abs(x) - 0.5)),
    "fori_loop": lambda x, i: lax.fori_loop(0, 3, lambda k, v: v * 2 + k, x),
    "fori_loop_runtime_bound": lambda x, i: lax.fori_loop(0, i[0], lambda k, v: v * 2 + k, x),
    "map": lambda x, i: lax.map(lambda r: r.sum(), x),
    "vmap_index": lambda x, i: jax.vmap(lambda r, k: r[k])(x, i),
    "tril_triu": lambda x, i: (jnp.tril(x), jnp.triu(x, 1)),
    "median": lambda x, i: jnp.median(x, axis=1),
    "percentile": lambda x, i: jnp.percentile(x, 30.0),
    "std": lambda x, i: jnp.std(x, axis=0),
    "roll": lambda x, i: jnp.roll(x, 2, axis=1),
    "repeat_tile": lambda x, i: (jnp.repeat(x, 2, axis=0), jnp.tile(x, (2, 1))),
    "split_stack": lambda x, i: (*jnp.split(x, 3, axis=1), jnp.stack([x, x], 1)),
    "cumsum_reverse": lambda x, i: lax.cumsum(x, axis=1, reverse=True),
    "cummax": lambda x, i: lax.cummax(x, axis=1),
    "cumlogsumexp": lambda x, i: lax.cumlogsumexp(x, axis=1),
    "nanargmax": lambda x, i: jnp.nanargmax(jnp.where(x > 1, jnp.nan, x), axis=1),
    "softmax_where": lambda x, i: jax.nn.softmax(x, where=x > 0),
    "activations": lambda x, i: (jax.nn.silu(x), jax.nn.elu(x), jax.nn.leaky_relu(x),
                                 jax.nn.hard_tanh(x), jax.nn.selu(x), jax.nn.celu(x),
                                 jax.nn.mish(x)),
    "truncated_normal": lambda x, i: jax.random.truncated_normal(
        jax.random.PRNGKey(i[0]), -2.0, 2.0, (5,)) + x[0, 0],
    "erf_inv": lambda x, i: lax.erf_inv(jnp.tanh(x)),
    "reduce_precision": lambda x, i: (lax.reduce_precision(x * 1000, 5, 10),
                                      lax.reduce_precision(x, 8, 7)),
    "lexsort": lambda x, i: jnp.lexsort((x[:, 0], jnp.round(x[:, 1]))),
    "sort_two_keys": lambda x, i: lax.sort((jnp.round(x), x, x * 2), dimension=1, num_keys=2),
    "stable_argsort": lambda x, i: jnp.argsort(jnp.round(x), axis=1, stable=True),
    "nonzero_size": lambda x, i: jnp.nonzero(x[0] > 0, size=6, fill_value=0),
    "searchsorted": lambda x, i: jnp.searchsorted(jnp.sort(x[0]), x[1]),
    "einsum3": lambda x, i: jnp.einsum("ij,kj,k->i", x, x, x[:, 0]),
    "convolve": lambda x, i: jnp.convolve(x[0], x[1][:3]),
    "matvec": lambda x, i: (x @ x[0], x[0] @ x.T, x[0] @ x[0]),
    "scan_reverse": lambda x, i: lax.scan(lambda c, r: (c + r, c), jnp.zeros(6, jnp.float32),
                                          x, reverse=True),
    "switch_tuple": lambda x, i: lax.switch(i[0], [lambda v: (v, v.sum()),
                                                   lambda v: (v * 2, v.max())], x),
    "while_tuple": lambda x, i: lax.while_loop(lambda s: s[0] < 3,
                                               lambda s: (s[0] + 1, s[1] * 2, s[2] + s[1].sum()),
                                               (0, x, 0.0)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_jax_function(name):
    check(CASES[name], X, IDX, executors=("debug",))


@pytest.mark.parametrize("function, op", [
    (lambda x: jnp.abs(jnp.fft.fft(x)), "stablehlo.fft"),
    (lambda x: lax.reduce_precision(x, 4, 3), "stablehlo.reduce_precision"),
    (lambda x: jnp.linalg.cholesky(x @ x.T + 4 * jnp.eye(4)), "lapack"),
], ids=["fft", "reduce_precision_e4m3", "cholesky"])
def test_unsupported_functions_are_reported(function, op):
    with pytest.raises(StableHLOOpNotImplemented) as info:
        from_stablehlo(lower(function, X))
    assert any(op in name for name, _ in info.value.ops), info.value.ops
