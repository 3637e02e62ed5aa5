"""from_onnx on ``ai.onnx.preview.FlexAttention``: one-node models with and without
``score_mod`` / ``prob_mod`` subgraphs, run by the interpreter and the graph executor and
compared with a numpy attention written here and with onnx's ReferenceEvaluator."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import interp
from irlib.frontend import ConversionError
from irlib.frontend.onnx import from_onnx
from irlib.testing.budget import examples

RNG = np.random.default_rng(0)
_ELEM = {"float16": TensorProto.FLOAT16, "float32": TensorProto.FLOAT,
         "float64": TensorProto.DOUBLE}


def _model(q, k, v, score_mod=None, prob_mod=None, extra_inputs=(), **attrs):
    """A one-node FlexAttention model on graph inputs Q, K, V (plus ``extra_inputs``, value
    infos of outer values a modifier reads)."""
    elem = _ELEM[q.dtype.name]
    if score_mod is not None:
        attrs["score_mod"] = score_mod
    if prob_mod is not None:
        attrs["prob_mod"] = prob_mod
    node = helper.make_node("FlexAttention", ["Q", "K", "V"], ["Y"], domain="ai.onnx.preview",
                            **attrs)
    inputs = [helper.make_tensor_value_info(name, elem, value.shape)
              for name, value in (("Q", q), ("K", k), ("V", v))] + list(extra_inputs)
    out_shape = (q.shape[0], q.shape[1], q.shape[2], v.shape[3])
    graph = helper.make_graph([node], "g", inputs,
                              [helper.make_tensor_value_info("Y", elem, out_shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23),
                                                    helper.make_opsetid("ai.onnx.preview", 1)])
    model.ir_version = 10
    return model


def _mod_graph(nodes, initializers=(), elem=TensorProto.FLOAT):
    """A modifier subgraph ``x -> out`` made of ``nodes``."""
    return helper.make_graph(
        nodes, "mod", [helper.make_tensor_value_info("x", elem, None)],
        [helper.make_tensor_value_info("out", elem, None)],
        [numpy_helper.from_array(value, name) for name, value in initializers])


def _numpy_attention(q, k, v, scale=None, score_mod=None, prob_mod=None):
    """Attention in float64: softmax(q k^T * scale) v with K/V heads shared by groups."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k = np.repeat(k, group, axis=1)
    v = np.repeat(v, group, axis=1)
    scale = 1.0 / np.sqrt(q.shape[3]) if scale is None else scale
    scores = np.einsum("bhqd,bhkd->bhqk", q, k) * scale
    if score_mod is not None:
        scores = score_mod(scores)
    scores = scores - scores.max(axis=-1, keepdims=True)
    probs = np.exp(scores)
    probs /= probs.sum(axis=-1, keepdims=True)
    if prob_mod is not None:
        probs = prob_mod(probs)
    return np.einsum("bhqk,bhkv->bhqv", probs, v)


def _run_both(model, feeds):
    """The model's output from the interpreter and the graph executor."""
    mod, _ = from_onnx(model)
    results = {}
    for kind in ("debug", "graph"):
        results[kind] = interp.create_executor(kind, mod=mod).evaluate()(*feeds).numpy()
    return results


def _check(model, q, k, v, want, rtol=1e-5, atol=1e-6, reference=True):
    got = _run_both(model, [q, k, v])
    oracles = [want]
    if reference:
        oracles.append(ReferenceEvaluator(model).run(None, {"Q": q, "K": k, "V": v})[0])
    for kind, value in got.items():
        assert value.dtype == q.dtype, kind
        assert value.shape == want.shape, kind
        for oracle in oracles:
            np.testing.assert_allclose(value.astype(np.float64), oracle.astype(np.float64),
                                       rtol=rtol, atol=atol, err_msg=kind)


def _qkv(b, hq, hkv, length, src, e, ev, dtype="float32"):
    return (RNG.standard_normal((b, hq, length, e)).astype(dtype),
            RNG.standard_normal((b, hkv, src, e)).astype(dtype),
            RNG.standard_normal((b, hkv, src, ev)).astype(dtype))


def test_plain_attention_default_scale():
    q, k, v = _qkv(2, 3, 3, 4, 6, 8, 8)
    _check(_model(q, k, v), q, k, v, _numpy_attention(q, k, v))


def test_explicit_scale_gqa_and_value_head_size():
    q, k, v = _qkv(1, 6, 2, 5, 7, 4, 3)
    _check(_model(q, k, v, scale=0.3), q, k, v, _numpy_attention(q, k, v, scale=0.3))


def test_score_mod_causal_mask_with_initializers():
    # Where(q_idx >= k_idx, x, -inf) with the index vectors built inside the subgraph.
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "two"], ["rows"], axis=0),
        helper.make_node("Gather", ["shape", "three"], ["cols"], axis=0),
        helper.make_node("Range", ["zero", "rows", "one"], ["qi"]),
        helper.make_node("Range", ["zero", "cols", "one"], ["ki"]),
        helper.make_node("Unsqueeze", ["qi", "axis1"], ["qcol"]),
        helper.make_node("GreaterOrEqual", ["qcol", "ki"], ["keep"]),
        helper.make_node("Where", ["keep", "x", "ninf"], ["out"]),
    ]
    inits = [("two", np.array(2, np.int64)), ("three", np.array(3, np.int64)),
             ("zero", np.array(0, np.int64)), ("one", np.array(1, np.int64)),
             ("axis1", np.array([1], np.int64)), ("ninf", np.array(-np.inf, np.float32))]
    q, k, v = _qkv(2, 2, 2, 5, 5, 4, 4)

    def causal(scores):
        keep = np.arange(5)[:, None] >= np.arange(5)[None, :]
        return np.where(keep, scores, -np.inf)

    _check(_model(q, k, v, score_mod=_mod_graph(nodes, inits)), q, k, v,
           _numpy_attention(q, k, v, score_mod=causal))


def test_score_mod_soft_cap_and_prob_mod_scale():
    cap = np.array(2.0, np.float32)
    soft_cap = _mod_graph([helper.make_node("Div", ["x", "cap"], ["d"]),
                           helper.make_node("Tanh", ["d"], ["t"]),
                           helper.make_node("Mul", ["t", "cap"], ["out"])], [("cap", cap)])
    halve = _mod_graph([helper.make_node("Mul", ["x", "half"], ["out"])],
                       [("half", np.array(0.5, np.float32))])
    q, k, v = _qkv(1, 4, 2, 3, 6, 5, 2)
    want = _numpy_attention(q, k, v, scale=1.5, score_mod=lambda s: np.tanh(s / 2.0) * 2.0,
                            prob_mod=lambda p: p * 0.5)
    _check(_model(q, k, v, score_mod=soft_cap, prob_mod=halve, scale=1.5), q, k, v, want)


def test_score_mod_reads_an_outer_value():
    bias = RNG.standard_normal((1, 1, 3, 4)).astype(np.float32)
    add_bias = _mod_graph([helper.make_node("Add", ["x", "bias"], ["out"])])
    q, k, v = _qkv(1, 2, 2, 3, 4, 2, 2)
    model = _model(q, k, v, score_mod=add_bias, extra_inputs=[
        helper.make_tensor_value_info("bias", TensorProto.FLOAT, bias.shape)])
    got = _run_both(model, [q, k, v, bias])
    want = _numpy_attention(q, k, v, score_mod=lambda s: s + bias)
    for kind, value in got.items():
        np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6, err_msg=kind)


# The op takes sqrt(scale) in float32 even for double inputs, hence float64's 1e-6.
@pytest.mark.parametrize("dtype,rtol,atol", [("float64", 1e-6, 1e-7),
                                             ("float16", 1e-2, 5e-3)])
def test_other_float_types(dtype, rtol, atol):
    q, k, v = _qkv(1, 2, 1, 4, 3, 8, 4, dtype)
    _check(_model(q, k, v), q, k, v, _numpy_attention(q, k, v), rtol=rtol, atol=atol)


@settings(max_examples=examples(8), deadline=None)
@given(st.integers(1, 2), st.integers(1, 2), st.integers(1, 3), st.integers(1, 4),
       st.integers(1, 4), st.integers(1, 5), st.integers(1, 5),
       st.one_of(st.none(), st.floats(0.05, 2.0)))
def test_random_shapes_match_numpy(b, hkv, group, length, src, e, ev, scale):
    q, k, v = _qkv(b, hkv * group, hkv, length, src, e, ev)
    attrs = {} if scale is None else {"scale": scale}
    want = _numpy_attention(q, k, v, scale=None if scale is None else float(np.float32(scale)))
    _check(_model(q, k, v, **attrs), q, k, v, want, rtol=1e-4, atol=1e-5, reference=False)


def test_bad_inputs_raise_conversion_errors():
    q, k, v = _qkv(1, 3, 2, 2, 2, 2, 2)
    with pytest.raises(ConversionError, match="multiple"):
        from_onnx(_model(q, k, v))
    q3 = q[0]
    model = _model(q, k, v)
    model.graph.input[0].CopyFrom(helper.make_tensor_value_info("Q", TensorProto.FLOAT,
                                                                q3.shape))
    with pytest.raises(ConversionError, match="rank 4"):
        from_onnx(model)
    two_inputs = helper.make_graph(
        [helper.make_node("Add", ["x", "y"], ["out"])], "mod",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("x", "y")],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)])
    q, k, v = _qkv(1, 2, 2, 2, 2, 2, 2)
    with pytest.raises(ConversionError, match="one input"):
        from_onnx(_model(q, k, v, score_mod=two_inputs))
