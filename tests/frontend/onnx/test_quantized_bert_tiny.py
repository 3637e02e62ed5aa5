"""A tiny BERT encoder (benchmarks/transformer_models.py) quantized by onnxruntime's
quantize_dynamic: MatMulInteger + DynamicQuantizeLinear on every Linear. irlib's graph
executor (integer products on the exact float GEMM) against onnxruntime on the same file."""

import os
import sys

import numpy as np
import pytest

import interp
import irlib

onnx = pytest.importorskip("onnx")
onnxruntime = pytest.importorskip("onnxruntime")
pytest.importorskip("onnxruntime.quantization")
pytest.importorskip("torch")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks"))
from small_models import export_bert_int8  # noqa: E402


def test_quantized_tiny_bert_matches_onnxruntime(tmp_path):
    from irlib.frontend.onnx import from_onnx
    path = str(tmp_path / "bert_int8.onnx")
    inputs = export_bert_int8(path, seed=2, tiny=True)
    model = onnx.load(path)
    ops = {node.op_type for node in model.graph.node}
    assert {"MatMulInteger", "DynamicQuantizeLinear"} <= ops
    mod, params = from_onnx(model)
    with irlib.transform.PassContext(opt_level=3):
        executor = interp.create_executor("graph", mod=irlib.transform.InferType()(mod),
                                          device=interp.cpu(0), target="cpu", params=params)
        func = executor.evaluate()
    assert executor.fallback is None
    got = func(*inputs)
    got = got[0] if isinstance(got, tuple) else got
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    want = session.run(None, dict(zip([i.name for i in session.get_inputs()], inputs)))[0]
    # Dynamic quantization rounds activations to one scale per tensor: a float32 ulp of
    # difference upstream can move one activation by a quantization step (see
    # test_real_quantized_encoder.py), so compare at a few steps of the output's scale.
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got.numpy(), want, atol=0.02 * scale)
    assert np.median(np.abs(got.numpy() - want)) < 1e-3 * scale
