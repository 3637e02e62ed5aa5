"""StableHLO elementwise, comparison, select/clamp/convert converters against JAX on random
inputs (hypothesis over shapes)."""

import numpy as np
from hypothesis import given, settings, strategies as st

from ._helpers import check, jax

jnp = jax.numpy
lax = jax.lax

shapes = st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple)


def _rand(seed, shape, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)


UNARY = {
    "abs": jnp.abs, "neg": jnp.negative, "exp": jnp.exp, "tanh": jnp.tanh,
    "logistic": jax.nn.sigmoid, "erf": lax.erf, "floor": jnp.floor, "ceil": jnp.ceil,
    "sign": jnp.sign, "sin": jnp.sin, "cos": jnp.cos, "round_even": jnp.round,
    "round_afz": lax.round, "cbrt": jnp.cbrt, "expm1": jnp.expm1, "erfc": lax.erfc,
    "square": jnp.square, "tan": jnp.tan, "gelu": jax.nn.gelu,
    "gelu_erf": lambda x: jax.nn.gelu(x, approximate=False), "relu": jax.nn.relu,
    "softplus": jax.nn.softplus, "isfinite": jnp.isfinite,
}
POSITIVE = {"log": jnp.log, "sqrt": jnp.sqrt, "rsqrt": lax.rsqrt, "log1p": jnp.log1p}


@settings(max_examples=4, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2**16))
def test_unary(shape, seed):
    names = sorted(UNARY)
    check(lambda x: tuple(UNARY[n](x) for n in names), _rand(seed, shape),
          executors=("debug",))


@settings(max_examples=6, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2**16))
def test_unary_positive(shape, seed):
    names = sorted(POSITIVE)
    check(lambda x: tuple(POSITIVE[n](x) for n in names), _rand(seed, shape, 0.1, 3.0),
          executors=("debug",))


def test_unary_graph_executor():
    names = sorted(UNARY)
    check(lambda x: tuple(UNARY[n](x) for n in names), _rand(1, (2, 3)))


BINARY = {
    "add": jnp.add, "sub": jnp.subtract, "mul": jnp.multiply, "div": jnp.divide,
    "max": jnp.maximum, "min": jnp.minimum, "atan2": jnp.arctan2,
    "rem": lax.rem, "pow": lambda a, b: jnp.power(jnp.abs(a) + 0.5, b),
    "lt": jnp.less, "le": jnp.less_equal, "gt": jnp.greater, "ge": jnp.greater_equal,
    "eq": jnp.equal, "ne": jnp.not_equal,
    "where": lambda a, b: jnp.where(a > b, a, b * 2),
}


@settings(max_examples=6, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2**16))
def test_binary(shape, seed):
    b = _rand(seed + 1, shape)
    b = np.where(np.abs(b) < 0.25, 1.0, b).astype(np.float32)  # div, rem
    names = sorted(BINARY)
    check(lambda a, b: tuple(BINARY[n](a, b) for n in names), _rand(seed, shape), b,
          executors=("debug",))


@settings(max_examples=6, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2**16))
def test_integer_arithmetic_and_logic(shape, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-20, 20, shape).astype(np.int32)
    b = rng.integers(1, 7, shape).astype(np.int32) * rng.choice([-1, 1], shape).astype(np.int32)

    def f(a, b):
        return (a // b, lax.div(a, b), lax.rem(a, b), a & b, a | b, a ^ b, ~a,
                (a > 0) & (b > 0), (a > 0) | (b < 0), jnp.logical_not(a > 0),
                lax.shift_left(a, 2), lax.shift_right_arithmetic(a, 1), jnp.abs(a), -a,
                jnp.maximum(a, b), jnp.sign(a), lax.population_count(a), lax.clz(a),
                lax.population_count(a.astype(jnp.uint8)), lax.clz(b.astype(jnp.int16)))
    check(f, a, b, executors=("debug",))


@settings(max_examples=6, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2**16), low=st.floats(-1, 0), high=st.floats(0, 1))
def test_clamp_and_convert(shape, seed, low, high):
    x = _rand(seed, shape)
    lo = np.float32(low)

    def f(x, lo):
        return (jnp.clip(x, low, high), lax.clamp(lo, x, np.float32(high)),
                x.astype(jnp.int32), (x > 0).astype(jnp.float32), x.astype(jnp.float16),
                x.astype(jnp.int8).astype(jnp.float32), (jnp.abs(x) * 3).astype(jnp.uint8))
    check(f, x, lo, executors=("debug",))


def test_constants_of_many_dtypes():
    def f(x):
        return (x + jnp.array([[1.5, -2.0, 3.25]], jnp.float32),
                jnp.array([1, 2, 3], jnp.int64 if jax.config.jax_enable_x64 else jnp.int32),
                jnp.array([True, False]), jnp.full((2, 2), 7, jnp.uint8),
                jnp.array([1.5, 2.5], jnp.float16))
    check(f, _rand(0, (2, 3)), executors=("debug",))


def test_bfloat16_constants():
    """Splat and non-splat bfloat16 constants (mixed-precision weights)."""
    w = _rand(4, (3, 4))
    check(lambda x: ((x.astype(jnp.bfloat16) * jnp.bfloat16(2)).astype(jnp.float32),
                     x.astype(jnp.bfloat16) @ jnp.asarray(w, jnp.bfloat16)),
          _rand(3, (2, 3)), rtol=1e-2, atol=1e-2, executors=("debug",))


@settings(max_examples=6, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2**16))
def test_lgamma_digamma(shape, seed):
    x = _rand(seed, shape, -4.5, 8.0)
    x = np.where(np.abs(x - np.round(x)) < 0.05, x + 0.2, x).astype(np.float32)  # no poles
    special = jax.scipy.special
    check(lambda x: (special.gammaln(x), special.digamma(x)), x, rtol=1e-4, atol=1e-4,
          executors=("debug",))


@settings(max_examples=6, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2**16))
def test_next_after(shape, seed):
    x, y = _rand(seed, shape), _rand(seed + 1, shape)
    if x.size:
        x.reshape(-1)[0] = 0.0
    check(lambda x, y: (lax.nextafter(x, y), lax.nextafter(x, x), lax.nextafter(y, -y)), x, y,
          rtol=0, atol=0, executors=("debug",))
