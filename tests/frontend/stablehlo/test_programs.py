"""Whole JAX programs (MLP, ResNet-style block with batch norm, transformer block, scan RNN,
while loop, cond/switch) lowered with ``jax.jit(...).lower(...).as_text()``, imported, and run
on the interpreter and the graph executor: outputs equal to JAX's (rtol 1e-4)."""

import numpy as np

from ._helpers import check, jax

jnp = jax.numpy
lax = jax.lax


def _rand(seed, shape, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def test_mlp():
    params = [(_rand(1, (8, 16), 0.3), _rand(2, (16,))), (_rand(3, (16, 16), 0.3),
                                                        _rand(4, (16,))),
              (_rand(5, (16, 4), 0.3), _rand(6, (4,)))]

    def mlp(x):
        for k, (w, b) in enumerate(params):
            x = x @ w + b
            if k < len(params) - 1:
                x = jax.nn.relu(x)
        return jax.nn.log_softmax(x, axis=-1)
    check(mlp, _rand(0, (5, 8)))


def _batch_norm(x, gamma, beta, mean, var):
    return (x - mean) * lax.rsqrt(var + 1e-5) * gamma + beta


def test_resnet_block_with_batch_norm():
    c = 8
    w1, w2 = _rand(1, (3, 3, c, c), 0.2), _rand(2, (3, 3, c, c), 0.2)
    stats = [(_rand(3 + k, (c,)) * 0.1 + 1, _rand(5 + k, (c,)) * 0.1, _rand(7 + k, (c,)) * 0.1,
              np.abs(_rand(9 + k, (c,))) + 0.5) for k in range(2)]

    def conv(x, w, stride=1):
        return lax.conv_general_dilated(x, w, (stride, stride), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def block(x):
        y = jax.nn.relu(_batch_norm(conv(x, w1), *stats[0]))
        y = _batch_norm(conv(y, w2), *stats[1])
        y = jax.nn.relu(y + x)
        pooled = lax.reduce_window(y, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
        return pooled.mean(axis=(1, 2))

    def train_stats(x):  # batch statistics, as a training step computes them
        y = conv(x, w1)
        mean = y.mean(axis=(0, 1, 2))
        var = y.var(axis=(0, 1, 2))
        return _batch_norm(y, stats[0][0], stats[0][1], mean, var)
    x = _rand(0, (2, 8, 8, c))
    check(block, x)
    check(train_stats, x, executors=("debug",))


def test_transformer_block():
    d, heads, seq = 16, 2, 6
    wq, wk, wv, wo = (_rand(k, (d, d), 0.25) for k in range(1, 5))
    w1, w2 = _rand(5, (d, 32), 0.25), _rand(6, (32, d), 0.25)
    g, b = _rand(7, (d,)) * 0.1 + 1, _rand(8, (d,)) * 0.1

    def layer_norm(x):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / jnp.sqrt(var + 1e-5) * g + b

    def attention(x):
        batch = x.shape[0]
        def split(t):
            return t.reshape(batch, seq, heads, d // heads).transpose(0, 2, 1, 3)
        q, k, v = split(x @ wq), split(x @ wk), split(x @ wv)
        scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(d // heads)
        mask = jnp.tril(jnp.ones((seq, seq), bool))
        scores = jnp.where(mask, scores, -1e9)
        out = jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(scores, -1), v)
        return out.transpose(0, 2, 1, 3).reshape(batch, seq, d) @ wo

    def block(x):
        x = x + attention(layer_norm(x))
        return x + jax.nn.gelu(layer_norm(x) @ w1) @ w2
    check(block, _rand(0, (2, seq, d)))


def test_scan_rnn():
    wx, wh, bias = _rand(1, (3, 5), 0.5), _rand(2, (5, 5), 0.5), _rand(3, (5,))

    def rnn(xs, h0):
        def step(h, x):
            h = jnp.tanh(x @ wx + h @ wh + bias)
            return h, h * 2
        return lax.scan(step, h0, xs)
    check(rnn, _rand(0, (7, 2, 3)), _rand(4, (2, 5)))


def test_while_loop():
    def f(x, limit):
        def cond(state):
            i, v = state
            return (i < limit) & (jnp.sum(v) < 1e4)

        def body(state):
            i, v = state
            return i + 1, v * 1.5 + jnp.float32(i)
        return lax.while_loop(cond, body, (np.int32(0), x))
    check(f, np.abs(_rand(0, (3, 4))), np.int32(6))


def test_cond_and_switch():
    def f(x, i):
        y = lax.cond(x.sum() > 0, lambda v: v * 2, lambda v: v - 1, x)
        z = lax.switch(i, [lambda v: v + 1, lambda v: v * v, lambda v: -v], y)
        return y, z
    x = _rand(0, (3,))
    for i in (-1, 0, 1, 2, 5):
        check(f, x, np.int32(i), executors=("debug",))
    check(f, -np.abs(x), np.int32(1))


def test_training_step_of_a_cnn():
    """jax.grad of a conv + max-pool + dense loss: transposed convolutions (lhs dilation,
    window reversal, batch groups), select_and_scatter, and an SGD update."""
    w = _rand(1, (3, 3, 3, 4), 0.3)
    dense = _rand(2, (16, 2), 0.3)
    labels = np.array([0, 1], np.int32)

    def loss(params, x):
        w, dense = params
        y = lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        y = lax.reduce_window(jax.nn.relu(y), -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1),
                              "SAME")
        logits = y.reshape(y.shape[0], -1)[:, :16] @ dense
        logp = jax.nn.log_softmax(logits)
        return -jnp.take_along_axis(logp, labels[:, None], axis=1).mean()

    def step(w, dense, x):
        value, grads = jax.value_and_grad(loss)((w, dense), x)
        return value, w - 0.1 * grads[0], dense - 0.1 * grads[1]
    check(step, w, dense, _rand(0, (2, 6, 6, 3)))


def test_dropout_with_jax_random():
    """jax.random's threefry (uint32 shifts, xor, bitcast_convert) inside the program."""
    def f(key, x):
        k1, k2 = jax.random.split(key)
        keep = jax.random.bernoulli(k1, 0.7, x.shape)
        return jnp.where(keep, x / 0.7, 0), jax.random.uniform(k2, (3,)), \
            jax.random.randint(k2, (4,), 0, 10)
    check(f, np.asarray(jax.random.PRNGKey(3)), _rand(0, (4, 5)))


def test_random_normal_init_and_non_finite_constants():
    """jax.random.normal (chlo.erf_inv) and -inf/+inf constants, on the graph executor too:
    a masked softmax over more elements than the importer folds into one constant."""
    def init(key):
        return jax.random.normal(key, (4, 3)), jax.random.uniform(key, (2,))
    check(init, np.asarray(jax.random.PRNGKey(1)), rtol=1e-5, atol=1e-6)

    def masked(x):
        return (jax.nn.softmax(jnp.where(x > 0, x, -jnp.inf), -1),
                jnp.isposinf(jnp.where(x > 1, jnp.inf, x)),
                jnp.isneginf(jnp.where(x > 1, -jnp.inf, x)))
    check(masked, _rand(0, (300, 300)))


def test_greedy_decoding_with_a_kv_cache():
    """A while loop carrying tokens and a KV cache: embedding gathers at a run-time position,
    dynamic_update_slice into the cache, a causal mask with -inf, argmax, scatter of the next
    token."""
    vocab, width, steps = 11, 8, 6
    emb = _rand(1, (vocab, width), 0.5)
    wq, wk, wv = (_rand(k, (width, width), 0.3) for k in (2, 3, 4))

    def generate(prompt):
        table = jnp.asarray(emb)
        k_cache = jnp.zeros((steps, width), jnp.float32)
        v_cache = jnp.zeros((steps, width), jnp.float32)
        tokens = jnp.zeros((steps,), jnp.int32).at[0].set(prompt)

        def body(state):
            i, tokens, k_cache, v_cache = state
            h = table[tokens[i]]
            k_cache = lax.dynamic_update_slice(k_cache, (h @ wk)[None], (i, 0))
            v_cache = lax.dynamic_update_slice(v_cache, (h @ wv)[None], (i, 0))
            scores = k_cache @ (h @ wq) / np.sqrt(width)
            scores = jnp.where(jnp.arange(steps) <= i, scores, -jnp.inf)
            out = jax.nn.softmax(scores) @ v_cache
            token = jnp.argmax(out @ table.T).astype(jnp.int32)
            return i + 1, tokens.at[i + 1].set(token), k_cache, v_cache
        return lax.while_loop(lambda s: s[0] < steps - 1, body,
                              (0, tokens, k_cache, v_cache))[1]
    for prompt in (0, 3, 10):
        check(generate, np.int32(prompt), executors=("debug", "graph") if prompt == 3
              else ("debug",))
