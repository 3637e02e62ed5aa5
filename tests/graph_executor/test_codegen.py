"""The fused-group code generator (jitkernels.codegen) through build(target="cpu").

Each case builds a small program whose ops fuse into one group, checks that the group was
compiled by the generator (``factory.report``), and compares with numpy written here.
"""

import os

import numpy as np
import pytest

import irlib
import interp
from irlib import var

from graph_helpers import graph_module, outputs

pytest.importorskip("numba")
RNG = np.random.default_rng(3)


def _check(params, body, inputs, expected, how="codegen", rtol=1e-5):
    mod = irlib.IRModule.from_expr(irlib.Function(params, body))
    gmod, factory = graph_module(mod, "cpu")
    gmod.run(**inputs)
    got = outputs(gmod)[0]
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=1e-6)
    assert set(factory.report["functions"].values()) == {how}, factory.report
    return factory


def _rand(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


def test_broadcast_chain():
    x, b = var("x", shape=(2, 3, 4)), var("b", shape=(3, 1))
    xv, bv = _rand(2, 3, 4), _rand(3, 1)
    body = irlib.nn.relu(irlib.multiply(irlib.add(x, b), irlib.const(2.0)))
    _check([x, b], body, {"x": xv, "b": bv}, np.maximum((xv + bv) * 2, 0))


def test_unary_ops_and_clip_leaky_relu_where():
    x = var("x", shape=(5, 6))
    xv = _rand(5, 6)
    body = irlib.where(irlib.greater(x, irlib.const(0.0)),
                       irlib.sigmoid(irlib.exp(irlib.clip(x, -1.0, 1.0))),
                       irlib.nn.leaky_relu(irlib.tanh(x), alpha=0.1))
    t = np.tanh(xv)
    expected = np.where(xv > 0, 1 / (1 + np.exp(-np.exp(np.clip(xv, -1, 1)))),
                        np.where(t > 0, t, 0.1 * t))
    _check([x], body, {"x": xv}, expected)


def test_infinite_and_nan_constants_are_valid_source():
    x = var("x", shape=(4,))
    xv = np.array([-3.0, -0.5, 0.5, 7.0], "float32")
    body = irlib.add(irlib.clip(x, -np.inf, 1.0),
                     irlib.where(irlib.greater(x, irlib.const(np.inf)), irlib.const(np.nan),
                                 irlib.const(0.0)))
    _check([x], body, {"x": xv}, np.minimum(xv, 1.0))


def test_division_by_zero_in_a_group_gives_inf_and_nan_as_numpy_does():
    x, y = var("x", shape=(4,)), var("y", shape=(4,))
    xv = np.array([1.0, -2.0, 0.0, 3.0], "float32")
    yv = np.array([0.0, 0.0, 0.0, 2.0], "float32")
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = (xv / yv) * 2
    _check([x, y], irlib.multiply(irlib.divide(x, y), irlib.const(2.0)), {"x": xv, "y": yv},
           expected)


def test_index_ops_inline():
    x = var("x", shape=(2, 3, 4))
    xv = _rand(2, 3, 4)
    body = irlib.exp(irlib.transpose(irlib.reshape(irlib.negative(x), newshape=(6, 4)),
                                     axes=(1, 0)))
    _check([x], body, {"x": xv}, np.exp(-xv.reshape(6, 4).T))


def test_expand_dims_squeeze_and_bias_add():
    x, b = var("x", shape=(2, 3, 1)), var("b", shape=(3,))
    xv, bv = _rand(2, 3, 1), _rand(3)
    body = irlib.nn.bias_add(irlib.expand_dims(irlib.squeeze(irlib.sqrt(irlib.abs(x)),
                                                             axis=[2]), axis=2), b, axis=1)
    expected = np.sqrt(np.abs(xv)) + bv.reshape(1, 3, 1)
    _check([x, b], body, {"x": xv, "b": bv}, expected)


def test_concatenate():
    x, y = var("x", shape=(2, 3)), var("y", shape=(2, 2))
    xv, yv = _rand(2, 3), _rand(2, 2)
    body = irlib.nn.relu(irlib.concatenate([irlib.exp(x), y], axis=1))
    _check([x, y], body, {"x": xv, "y": yv},
           np.maximum(np.concatenate([np.exp(xv), yv], axis=1), 0))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concatenate_as_the_group_result_is_written_field_by_field(axis):
    x, y, z = var("x", shape=(2, 3, 4)), var("y", shape=(2, 3, 4)), var("z", shape=(2, 3, 4))
    xv, yv, zv = _rand(2, 3, 4), _rand(2, 3, 4), _rand(2, 3, 4)
    body = irlib.concatenate([irlib.nn.relu(x), irlib.exp(y), z], axis=axis)
    factory = _check([x, y, z], body, {"x": xv, "y": yv, "z": zv},
                     np.concatenate([np.maximum(xv, 0), np.exp(yv), zv], axis=axis))
    source = next(iter(factory.lib.compiled.values())).kernel.source
    # one loop over the axis per field (the loops before the axis are shared), no choice
    assert source.count(f"for i{axis % 3} in") == 3 and " if " not in source


@pytest.mark.parametrize("source, target", [("NCHW", "NHWC"), ("NHWC", "NCHW"),
                                            ("NCHW", "CHWN")])
def test_permuting_layout_transform_inlines(source, target):
    x = var("x", shape=(2, 3, 4, 5))
    xv = _rand(2, 3, 4, 5)
    body = irlib.nn.relu(irlib.layout_transform(x, source, target))
    permutation = [source.index(axis) for axis in target]
    _check([x], body, {"x": xv}, np.maximum(xv.transpose(permutation), 0))


def test_split_layout_transform_is_left_to_the_kernel():
    x = var("x", shape=(1, 8, 2, 2))
    xv = _rand(1, 8, 2, 2)
    mod = irlib.IRModule.from_expr(irlib.Function(
        [x], irlib.layout_transform(x, "NCHW", "NCHW4c")))
    gmod, factory = graph_module(mod, "cpu")
    gmod.run(x=xv)
    expected = xv.reshape(1, 2, 4, 2, 2).transpose(0, 1, 3, 4, 2)
    np.testing.assert_array_equal(outputs(gmod)[0], expected)
    assert "codegen" not in set(factory.report["functions"].values())


def test_scalar_and_float64():
    x, s = var("x", shape=(3,), dtype="float64"), var("s", shape=(), dtype="float64")
    xv, sv = _rand(3, dtype="float64"), np.array(0.5)
    _check([x, s], irlib.divide(x, irlib.add(s, irlib.const(1.0, "float64"))),
           {"x": xv, "s": sv}, xv / 1.5, rtol=1e-12)


def test_anchor_with_epilogue():
    x, w, b = var("x", shape=(2, 8)), var("w", shape=(4, 8)), var("b", shape=(4,))
    xv, wv, bv = _rand(2, 8), _rand(4, 8), _rand(4)
    body = irlib.nn.relu(irlib.nn.bias_add(irlib.nn.dense(x, w), b))
    factory = _check([x, w, b], body, {"x": xv, "w": wv, "b": bv},
                     np.maximum(xv @ wv.T + bv, 0))
    kernel = next(iter(factory.lib.compiled.values())).kernel
    assert kernel.anchor_op == "nn.dense"
    assert "np.dot(a0, a1.T)" in kernel.source          # BLAS inside the one kernel


def test_integer_groups_fall_back():
    x = var("x", shape=(4,), dtype="int32")
    xv = np.arange(4, dtype="int32") - 2
    _check([x], irlib.negative(irlib.add(x, x)), {"x": xv}, -(xv + xv), how="reference")


def test_generated_source_is_cached_on_disk(tmp_path, monkeypatch):
    from jitkernels import codegen
    monkeypatch.setenv("IRLIB_CACHE_DIR", str(tmp_path))
    x = var("x", shape=(7,))
    body = irlib.exp(irlib.add(x, irlib.const(3.25)))
    mod = irlib.IRModule.from_expr(irlib.Function([x], body))
    first = interp.build(mod, "cpu")
    second = interp.build(mod, "cpu")
    fa = next(iter(first.lib.compiled.values())).kernel
    fb = next(iter(second.lib.compiled.values())).kernel
    assert fa.jit_fn is fb.jit_fn                   # compiled once per process
    files = os.listdir(os.path.join(str(tmp_path), "codegen"))
    assert any(f.startswith("k_") and f.endswith(".py") for f in files)
    assert "3.25" in fa.source
    assert codegen.cache_dir().startswith(str(tmp_path))


def test_split_projections_and_tuple_results():
    x = var("x", shape=(2, 6))
    parts = irlib.split(x, indices_or_sections=3, axis=1)
    body = irlib.Tuple([irlib.sigmoid(parts[0]), irlib.multiply(parts[1], parts[2])])
    xv = _rand(2, 6)
    mod = irlib.IRModule.from_expr(irlib.Function([x], body))
    gmod, factory = graph_module(mod, "cpu")
    gmod.run(x=xv)
    got = outputs(gmod)
    np.testing.assert_allclose(got[0], 1 / (1 + np.exp(-xv[:, :2])), rtol=1e-5)
    np.testing.assert_allclose(got[1], xv[:, 2:4] * xv[:, 4:], rtol=1e-6)
    assert "codegen" in factory.report["functions"].values()


def test_zoo_lstm_groups_all_generated():
    import zoo
    mod, params = zoo.lstm.get_workload(3, 4, batch_size=2)
    factory = interp.build(mod, "cpu", params)
    hows = set(factory.report["functions"].values())
    assert hows <= {"codegen", "kernels"}, factory.report
    assert factory.report["reference_ops"] == []
