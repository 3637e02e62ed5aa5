"""FuseAttention: attention chains of imported transformers become one fused function, and
the results do not change.

Oracles: onnxruntime on the same ONNX file (tiny BERT / GPT-2 step / whisper models exported
from torch), the interpreter on the unfused program, and numpy written here.
"""

import pathlib
import sys

import numpy as np
import pytest

import irlib
import interp
from interp import graph_executor
from irlib.transform.fuse_attention import ATTENTION_ATTR, AttentionPlan, fuse_attention

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))


def _build(mod, params=None, opt_level=3):
    with irlib.transform.PassContext(opt_level=opt_level):
        return interp.build(mod, target="cpu", params=params)


def _attention_functions(lib):
    return {name: c for name, c in lib.lib.compiled.items()
            if isinstance(getattr(c.fn, "plan", None), AttentionPlan)}


@pytest.mark.parametrize("model, count", [("bert", 1), ("gpt2", 1), ("whisper", 3)])
def test_tiny_transformers_fuse_and_match_onnxruntime(tmp_path, model, count):
    pytest.importorskip("torch")
    ort = pytest.importorskip("onnxruntime")
    import onnx
    import transformer_models
    from irlib.frontend.onnx import from_onnx
    path = str(tmp_path / f"{model}.onnx")
    inputs = transformer_models.export(model, path, transformer_models.TINY[model])
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    expected = session.run(None, dict(zip(names, inputs)))
    mod, params = from_onnx(onnx.load(path))
    lib = _build(mod, params)
    assert len(_attention_functions(lib)) == count
    gmod = graph_executor.GraphModule(lib["default"](interp.cpu(0)))
    gmod.run(**dict(zip(names, inputs)))
    for index, want in enumerate(expected):
        got = gmod.get_output(index).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())
    # at opt_level 2 nothing is fused, and the answer is the same
    plain_lib = _build(mod, params, 2)
    assert not _attention_functions(plain_lib)
    plain = graph_executor.GraphModule(plain_lib["default"](interp.cpu(0)))
    plain.run(**dict(zip(names, inputs)))
    np.testing.assert_allclose(plain.get_output(0).numpy(), expected[0], rtol=1e-4,
                               atol=1e-5 * np.abs(expected[0]).max())


def _matmul(a, b):
    return irlib.op.registry.make_call("einsum", (irlib.Tuple([a, b]),),
                                       {"equation": "...ij,...jk->...ik"})


def _attention_program(mask_kind, scale_kind, heads=2, seq_q=3, seq_k=5, depth=4):
    """q/k/v (1, S, H, D) inputs; the chain as an importer writes it."""
    q = irlib.var("q", shape=(1, seq_q, heads, depth))
    k = irlib.var("k", shape=(1, seq_k, heads, depth))
    v = irlib.var("v", shape=(1, seq_k, heads, depth))
    params = [q, k, v]
    scores = _matmul(irlib.transpose(q, (0, 2, 1, 3)), irlib.transpose(k, (0, 2, 3, 1)))
    if scale_kind == "divide":
        scores = irlib.divide(scores, irlib.const(2.0))
    elif scale_kind == "multiply":
        scores = irlib.multiply(irlib.const(0.5), scores)        # constant first
    if mask_kind == "add":
        mask = irlib.var("mask", shape=(1, 1, 1, seq_k))
        params.append(mask)
        scores = irlib.add(mask, scores)                           # mask first
    elif mask_kind == "select":
        mask = irlib.var("mask", shape=(1, heads, seq_q, seq_k), dtype="bool")
        params.append(mask)
        scores = irlib.where(mask, scores, irlib.const(-1e9))
    elif mask_kind == "causal":
        tril = np.tril(np.ones((seq_q, seq_k), bool), k=seq_k - seq_q)
        scores = irlib.add(scores, irlib.const(np.where(tril, 0.0, -1e9)
                                               .astype("float32")[None, None]))
    probs = irlib.nn.softmax(scores, axis=-1)
    out = irlib.transpose(_matmul(probs, irlib.transpose(v, (0, 2, 1, 3))), (0, 2, 1, 3))
    out = irlib.reshape(out, (1, seq_q, heads * depth))
    return irlib.IRModule.from_expr(irlib.Function(params, out))


def _numpy_attention(q, k, v, scale, mask_kind, mask):
    s = np.einsum("bihd,bjhd->bhij", q.astype("float64"), k.astype("float64")) * scale
    if mask_kind == "add":
        s = s + mask
    elif mask_kind == "select":
        s = np.where(mask, s, -1e9)
    elif mask_kind == "causal":
        sq, sk = s.shape[-2:]
        s = np.where(np.tril(np.ones((sq, sk), bool), k=sk - sq), s, -1e9)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    out = np.einsum("bhij,bjhd->bihd", p, v)
    return out.reshape(out.shape[0], out.shape[1], -1)


@pytest.mark.parametrize("mask_kind", ["none", "add", "select", "causal"])
@pytest.mark.parametrize("scale_kind", ["none", "divide", "multiply"])
def test_pattern_variants_fuse_and_agree(mask_kind, scale_kind):
    mod = _attention_program(mask_kind, scale_kind)
    typed = irlib.transform.InferType()(mod)
    fused = fuse_attention(typed["main"])
    calls = [node for node in irlib.ir.functor.post_order(fused)
             if isinstance(node, irlib.ir.expr.Function) and node.get_attr(ATTENTION_ATTR)]
    assert len(calls) == 1
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, n, 2, 4)).astype("float32") for n in (3, 5, 5))
    inputs = [q, k, v]
    mask = None
    if mask_kind == "add":
        mask = np.array([0, 0, 0, -10000, -10000], "float32").reshape(1, 1, 1, 5)
        inputs.append(mask)
    elif mask_kind == "select":
        mask = rng.random((1, 2, 3, 5)) < 0.6
        mask[..., 0] = True
        inputs.append(mask)
    scale = {"none": 1.0, "divide": 0.5, "multiply": 0.5}[scale_kind]
    expected = _numpy_attention(q, k, v, scale, mask_kind, mask)
    lib = _build(mod)
    functions = _attention_functions(lib)
    assert len(functions) == 1
    (compiled,) = functions.values()
    assert compiled.fn.plan.causal == (mask_kind == "causal")
    gmod = graph_executor.GraphModule(lib["default"](interp.cpu(0)))
    gmod.run(**{p.name_hint: a for p, a in zip(mod["main"].params, inputs)})
    np.testing.assert_allclose(gmod.get_output(0).numpy(), expected, rtol=1e-5, atol=1e-6)
    # the fused function's body is the same ops: the interpreter agrees
    result = interp.create_executor("debug", mod=irlib.IRModule.from_expr(fused)).evaluate()(
        *inputs)
    np.testing.assert_allclose(result.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_softmax_over_another_axis_is_not_fused():
    q = irlib.var("q", shape=(1, 2, 3, 4))
    k = irlib.var("k", shape=(1, 2, 4, 3))
    v = irlib.var("v", shape=(1, 2, 3, 4))
    probs = irlib.nn.softmax(_matmul(q, k), axis=2)
    mod = irlib.IRModule.from_expr(irlib.Function([q, k, v], _matmul(probs, v)))
    lib = _build(mod)
    assert not _attention_functions(lib)
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(shape).astype("float32")
              for shape in ((1, 2, 3, 4), (1, 2, 4, 3), (1, 2, 3, 4))]
    s = arrays[0] @ arrays[1]
    e = np.exp(s - s.max(2, keepdims=True))
    expected = (e / e.sum(2, keepdims=True)) @ arrays[2]
    gmod = graph_executor.GraphModule(lib["default"](interp.cpu(0)))
    gmod.run(q=arrays[0], k=arrays[1], v=arrays[2])
    np.testing.assert_allclose(gmod.get_output(0).numpy(), expected, rtol=1e-5, atol=1e-6)
