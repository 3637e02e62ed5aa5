"""from_stablehlo itself: module objects, input_info, symbolic dims from jax.export, private
calls and composites, custom calls, the unsupported-op error (every op with its location),
and the other errors."""

import numpy as np
import pytest

from ._helpers import jax, lower, run, check

from irlib import IRError  # noqa: E402
from irlib.frontend import ConversionError, OpNotImplemented  # noqa: E402
from irlib.frontend.stablehlo import (StableHLOConversionError,  # noqa: E402
                                      StableHLOOpNotImplemented, from_stablehlo,
                                      supported_ops)
from irlib.ir.dims import size_var  # noqa: E402

jnp = jax.numpy
lax = jax.lax


def _rand(seed, shape):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_module_object_and_main_signature():
    from jaxlib.mlir import ir
    from irlib.frontend.stablehlo.mlir import context
    text = lower(lambda x, y: (x * y, x + 1), _rand(0, (2, 3)), _rand(1, (2, 3)))
    with context():
        module = ir.Module.parse(text)
    mod = from_stablehlo(module)
    main = mod["main"]
    assert [p.name_hint for p in main.params] == ["arg0", "arg1"]
    x, y = _rand(0, (2, 3)), _rand(1, (2, 3))
    got = run(mod, "debug", [x, y])
    np.testing.assert_allclose(got[0], x * y, rtol=1e-6)
    np.testing.assert_allclose(got[1], x + 1, rtol=1e-6)
    # a module of JAX's own MLIR context
    own = jax.jit(lambda x: jnp.argmax(x @ x.T, 1)).lower(x).compiler_ir("stablehlo")
    got = run(from_stablehlo(own), "debug", [x])
    np.testing.assert_array_equal(got[0], np.argmax(x @ x.T, 1))


def _export_text(function, *specs):
    from jax import export
    exported = export.export(jax.jit(function))(*specs)
    return exported.mlir_module()


def test_symbolic_batch_from_jax_export():
    from jax import export
    b, = export.symbolic_shape("b")
    w = _rand(1, (4, 5))

    def f(x):
        h = jnp.tanh(x @ w)
        return h.sum(axis=1) + jnp.ones((x.shape[0],), jnp.float32), h.reshape(-1)
    text = _export_text(f, jax.ShapeDtypeStruct((b, 4), np.float32))
    mod = from_stablehlo(text)
    param_type = mod["main"].params[0].type_annotation
    assert param_type.shape[0] == size_var("b")
    for batch in (1, 3, 6):
        x = _rand(batch, (batch, 4))
        want = [np.asarray(v) for v in jax.jit(f)(x)]
        for executor in ("debug", "graph"):
            got = run(mod, executor, [x])
            for g, e in zip(got, want):
                np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


def test_serialized_export_bytes():
    from jax import export
    b, = export.symbolic_shape("b")
    exported = export.export(jax.jit(lambda x: jnp.sin(x) * 2))(
        jax.ShapeDtypeStruct((b, 3), np.float32))
    mod = from_stablehlo(exported.mlir_module_serialized)
    x = _rand(0, (4, 3))
    np.testing.assert_allclose(run(mod, "debug", [x])[0], np.sin(x) * 2, rtol=1e-5)
    with pytest.raises(StableHLOConversionError, match="serialized"):
        from_stablehlo(b"ML\xefR" + b"garbage")


def test_input_info_names_dims_and_checks_arity():
    text = lower(lambda x: x * 2, _rand(0, (3, 4)))
    mod = from_stablehlo(text, input_info=[((3, 4), "float32")])
    assert tuple(mod["main"].params[0].type_annotation.shape) == (3, 4)
    with pytest.raises(StableHLOConversionError, match="input_info has 2 entries"):
        from_stablehlo(text, input_info=[((3, 4), "float32"), ((1,), "float32")])
    with pytest.raises(StableHLOConversionError, match="rank 1"):
        from_stablehlo(text, input_info=[((12,), "float32")])
    with pytest.raises(StableHLOConversionError, match="input_info\\[0\\].*floaty"):
        from_stablehlo(text, input_info=[((3, 4), "floaty")])
    with pytest.raises(StableHLOConversionError, match="must be \\(shape, dtype\\)"):
        from_stablehlo(text, input_info=[((3, 4),)])
    tanh = lower(jnp.tanh, _rand(0, (3, 4)))
    named = from_stablehlo(tanh, input_info=[((3, "n"), "float32")])
    assert tuple(named["main"].params[0].type_annotation.shape) == (3, size_var("n"))
    x = _rand(1, (3, 7))
    np.testing.assert_allclose(run(named, "debug", [x])[0], np.tanh(x), rtol=1e-5)
    # a constant of the static shape does not fit a renamed dim: a conversion error
    with pytest.raises(StableHLOConversionError, match="stablehlo.multiply at"):
        from_stablehlo(text, input_info=[((3, "n"), "float32")])


def test_private_calls_are_inlined_and_composites_decomposed():
    def helper(v):
        return jnp.where(v > 0, v, 0.1 * v)

    def f(x):
        a = jax.jit(helper)(x)
        return jax.jit(helper)(a - 1), jnp.argmax(x, axis=0)
    check(f, _rand(0, (4, 3)))
    affine = lax.composite(lambda v: v * 2 + 1, name="my.affine")
    check(lambda x: affine(x) - x, _rand(2, (3, 2)))
    composite_text = """
    func.func public @main(%arg0: tensor<3xf32>) -> tensor<3xf32> {
      %0 = stablehlo.composite "my.double" %arg0 {decomposition = @double} : (tensor<3xf32>) -> tensor<3xf32>
      return %0 : tensor<3xf32>
    }
    func.func private @double(%arg0: tensor<3xf32>) -> tensor<3xf32> {
      %0 = stablehlo.add %arg0, %arg0 : tensor<3xf32>
      return %0 : tensor<3xf32>
    }"""
    mod = from_stablehlo(composite_text)
    x = _rand(1, (3,))
    np.testing.assert_allclose(run(mod, "debug", [x])[0], 2 * x, rtol=1e-6)


def test_unsupported_ops_listed_with_locations():
    text = """
    func.func public @main(%arg0: tensor<3xf32>, %arg1: tensor<2x2xf32>,
                           %arg2: tensor<3xcomplex<f32>>) -> tensor<3xf32> {
      %0 = stablehlo.cosine %arg0 : tensor<3xf32>
      %1 = stablehlo.real %arg2 : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
      %2 = stablehlo.custom_call @my_kernel(%0) : (tensor<3xf32>) -> tensor<3xf32>
      %3 = stablehlo.cholesky %arg1, lower = true : tensor<2x2xf32>
      return %2 : tensor<3xf32>
    }"""
    with pytest.raises(StableHLOOpNotImplemented) as info:
        from_stablehlo(text)
    error = info.value
    assert isinstance(error, OpNotImplemented) and isinstance(error, IRError)
    names = [name for name, _ in error.ops]
    assert names == ["stablehlo.real", "stablehlo.custom_call (target @my_kernel)",
                     "stablehlo.cholesky"]
    lines = [int(loc.split(":")[1]) for _, loc in error.ops]
    assert lines == [5, 6, 7]
    for name in ("stablehlo.real", "@my_kernel", "stablehlo.cholesky", '"-":5:'):
        assert name in str(error)


def test_shape_assertion_custom_call_is_dropped():
    from jax import export
    b, = export.symbolic_shape("b")
    text = _export_text(lambda x: x * 3, jax.ShapeDtypeStruct((b, 2), np.float32))
    assert "shape_assertion" in text
    mod = from_stablehlo(text)
    x = _rand(0, (5, 2))
    np.testing.assert_allclose(run(mod, "debug", [x])[0], x * 3, rtol=1e-6)


def test_bad_inputs_raise_conversion_errors():
    with pytest.raises(StableHLOConversionError, match="cannot parse"):
        from_stablehlo("func.func @main( {")
    with pytest.raises(StableHLOConversionError, match="expects MLIR text"):
        from_stablehlo(42)
    assert issubclass(StableHLOConversionError, ConversionError)
    with pytest.raises(StableHLOConversionError, match="no function @main"):
        from_stablehlo("""
        func.func public @f(%a: tensor<f32>) -> tensor<f32> { return %a : tensor<f32> }
        func.func public @g(%a: tensor<f32>) -> tensor<f32> { return %a : tensor<f32> }""")


def test_registry_covers_the_issue_list():
    ops = set(supported_ops())
    for name in ("stablehlo.dot_general", "stablehlo.convolution", "stablehlo.reduce",
                 "stablehlo.reduce_window", "stablehlo.broadcast_in_dim", "stablehlo.gather",
                 "stablehlo.scatter", "stablehlo.sort", "stablehlo.while", "stablehlo.case",
                 "stablehlo.if", "func.call", "stablehlo.composite", "stablehlo.custom_call",
                 "stablehlo.dynamic_slice", "stablehlo.dynamic_update_slice", "stablehlo.pad",
                 "stablehlo.iota", "stablehlo.tuple", "stablehlo.get_tuple_element",
                 "chlo.erf", "stablehlo.logistic", "stablehlo.clamp", "stablehlo.select"):
        assert name in ops, name


_W = np.random.default_rng(7).standard_normal((8, 8)).astype(np.float32) * 0.3
_K = np.random.default_rng(8).standard_normal((3, 3, 2, 4)).astype(np.float32)


def _sym_mlp(x):
    h = jax.nn.relu(x @ _W + 1.0)
    return (jax.nn.softmax(h, -1), h.mean(0), jnp.argmax(h, -1), h[:, ::2],
            jnp.concatenate([h, h], 0), jnp.sort(h, 0), h[jnp.array([0, -1])])


def _sym_attention(x):
    scores = jnp.einsum("bqd,bkd->bqk", x @ _W, x)
    return jax.nn.softmax(scores, -1) @ x


def _sym_conv(x):
    y = lax.conv_general_dilated(x, _K, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def _sym_scan(x):
    step = lambda h, xt: (jnp.tanh(h @ _W + xt), h.sum(-1))  # noqa: E731
    return lax.scan(step, jnp.zeros((x.shape[1], 8), jnp.float32), x)


_WA = [np.random.default_rng(9 + k).standard_normal((8, 8)).astype(np.float32) * 0.3
       for k in range(4)]


def _sym_causal_block(x):
    b, t, d = x.shape
    split = lambda v: v.reshape(b, t, 2, d // 2).transpose(0, 2, 1, 3)  # noqa: E731
    q, k, v = split(x @ _WA[0]), split(x @ _WA[1]), split(x @ _WA[2])
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) / 2.0
    scores = jnp.where(jnp.arange(t)[:, None] >= jnp.arange(t)[None, :], scores, -1e9)
    out = jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(scores, -1), v)
    out = out.transpose(0, 2, 1, 3).reshape(b, t, d)
    return ((out - out.mean(-1, keepdims=True)) @ _WA[3], jnp.cumsum(out, axis=1), out[:, -1],
            jnp.pad(out, ((0, 0), (1, 1), (0, 0))))


def _sym_conv_spatial(x):
    y = lax.conv_general_dilated(x, _K, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return jax.nn.relu(y).mean(axis=(1, 2)), jnp.pad(x, ((0, 0), (1, 2), (0, 0), (0, 0)))


def _sym_iota(x):
    ramp = jnp.arange(x.shape[0])
    return x.reshape(x.shape[0] * 8), ramp * 2, x + ramp[:, None]


@pytest.mark.parametrize("function, spec, shapes", [
    (_sym_mlp, ("b", 8), [(3, 8), (5, 8)]),
    (_sym_attention, ("b", 4, 8), [(2, 4, 8)]),
    (_sym_conv, ("b", 6, 6, 2), [(2, 6, 6, 2)]),
    (_sym_scan, (5, "b", 8), [(5, 3, 8)]),
    (_sym_iota, ("b", 8), [(3, 8)]),
    (_sym_causal_block, ("b", "t", 8), [(2, 5, 8), (1, 3, 8)]),
    (_sym_conv_spatial, (2, "h", "w", 2), [(2, 6, 5, 2)]),
], ids=["mlp", "attention", "conv", "scan", "iota", "causal_block_b_t", "conv_h_w"])
def test_symbolic_programs(function, spec, shapes):
    from jax import export
    symbols = dict(zip("bthw", export.symbolic_shape("b, t, h, w")))
    dims = tuple(symbols.get(d, d) for d in spec)
    mod = from_stablehlo(_export_text(function, jax.ShapeDtypeStruct(dims, np.float32)))
    declared = tuple(mod["main"].params[0].type_annotation.shape)
    assert declared == tuple(size_var(d) if isinstance(d, str) else d for d in spec)
    for index, shape in enumerate(shapes):
        x = _rand(index, shape)
        want = [np.asarray(v) for v in jax.tree_util.tree_leaves(jax.jit(function)(x))]
        for executor in ("debug", "graph") if index == 0 else ("debug",):
            got = run(mod, executor, [x])
            assert len(got) == len(want)
            for g, e in zip(got, want):
                assert g.shape == e.shape
                np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


def test_if_tuple_and_barrier_written_by_hand():
    """Operations JAX itself rarely prints: ``if``, ``tuple``/``get_tuple_element``,
    ``optimization_barrier``, ``dynamic_broadcast_in_dim`` on a constant shape, ``dot``."""
    text = """
    func.func public @main(%p: tensor<i1>, %x: tensor<2x3xf32>, %w: tensor<3x2xf32>)
        -> (tensor<2x3xf32>, tensor<2x2xf32>, tensor<4x2x3xf32>) {
      %0 = "stablehlo.if"(%p) ({
        %a = stablehlo.add %x, %x : tensor<2x3xf32>
        stablehlo.return %a : tensor<2x3xf32>
      }, {
        %b = stablehlo.negate %x : tensor<2x3xf32>
        stablehlo.return %b : tensor<2x3xf32>
      }) : (tensor<i1>) -> tensor<2x3xf32>
      %t = stablehlo.tuple %0, %w : tuple<tensor<2x3xf32>, tensor<3x2xf32>>
      %1 = stablehlo.get_tuple_element %t[1] : (tuple<tensor<2x3xf32>, tensor<3x2xf32>>) -> tensor<3x2xf32>
      %2:2 = stablehlo.optimization_barrier %0, %1 : tensor<2x3xf32>, tensor<3x2xf32>
      %3 = stablehlo.dot %2#0, %2#1 : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
      %s = stablehlo.constant dense<[4, 2, 3]> : tensor<3xi64>
      %4 = stablehlo.dynamic_broadcast_in_dim %x, %s, dims = [1, 2] : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<4x2x3xf32>
      return %0, %3, %4 : tensor<2x3xf32>, tensor<2x2xf32>, tensor<4x2x3xf32>
    }"""
    mod = from_stablehlo(text)
    x, w = _rand(0, (2, 3)), _rand(1, (3, 2))
    for flag in (True, False):
        got = run(mod, "debug", [np.array(flag), x, w])
        chosen = x + x if flag else -x
        np.testing.assert_allclose(got[0], chosen, rtol=1e-6)
        np.testing.assert_allclose(got[1], chosen @ w, rtol=1e-5)
        np.testing.assert_allclose(got[2], np.broadcast_to(x, (4, 2, 3)), rtol=1e-6)


def test_imported_module_prints_and_parses_back():
    import irlib
    x = _rand(0, (3, 4))

    def f(x):
        loop = lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2), (0, x))[1]
        return jnp.argmax(x @ x.T, 1), jnp.sort(x, 0), loop, x[np.array([2, 0])]
    mod = irlib.transform.InferType()(from_stablehlo(lower(f, x)))
    back = irlib.transform.InferType()(irlib.parse(mod.astext()))
    assert irlib.structural_equal(mod["main"], back["main"])
