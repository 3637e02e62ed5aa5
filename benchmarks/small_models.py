"""Small models of issue #24 item 3 for ``benchmarks/vs_onnxruntime.py`` (and the tests).

* ``kws``: a keyword-spotting CNN on 40x100 log-mel features (two 3x3 conv2d, a conv1d over
  time, mean pooling, a classifier, softmax), written in torch and exported to ONNX;
* ``bert_int8``: ``benchmarks/transformer_models.py``'s MiniLM-sized BERT (or its tiny test
  size) quantized by onnxruntime's ``quantize_dynamic`` (int8 weights: MatMulInteger and
  DynamicQuantizeLinear on every Linear);
* ``vad``: a voice-activity detector shaped like silero-vad: an ``If`` on the sample rate
  picks the front end (16 kHz: one projection of the 512-sample chunk, else another of the
  256-sample half), then an LSTM over the frames with its state as inputs and outputs and a
  sigmoid speech probability. Built with ``onnx.helper`` (the If is an ONNX node).

:func:`export` writes one to an ``.onnx`` file and returns seeded inputs in the model's
input order; both engines of the benchmark run that same file.
"""

from __future__ import annotations

import io
import warnings

import numpy as np

SMALL = ("kws", "vad", "bert_int8")
"""The models of this module, by name."""

VAD_SIZES = {"chunk": 512, "frames": 8, "features": 32, "hidden": 64}
"""vad's sizes: samples per chunk, LSTM steps, features per step, hidden size."""


def vad_model(seed: int = 0, sizes: dict | None = None):
    """The ``vad`` ONNX model (see the module docstring).

    Args:
        seed: seed of the weights.
        sizes: :data:`VAD_SIZES` overrides (tests use smaller ones).

    Returns:
        An ``onnx.ModelProto`` with inputs ``audio`` (1, chunk) float32, ``sr`` (1,) int64,
        ``h``/``c`` (1, 1, hidden) float32 and outputs ``prob`` (1, 1), ``hn``, ``cn``.
    """
    from onnx import TensorProto, helper, numpy_helper
    s = dict(VAD_SIZES, **(sizes or {}))
    chunk, frames, feat, hidden = s["chunk"], s["frames"], s["features"], s["hidden"]
    rng = np.random.default_rng(seed)

    def weight(name, *shape):
        scale = 1.0 / np.sqrt(shape[-2] if len(shape) > 1 else shape[0])
        return numpy_helper.from_array((rng.standard_normal(shape) * scale)
                                       .astype("float32"), name)

    def value(name, shape, dtype=TensorProto.FLOAT):
        return helper.make_tensor_value_info(name, dtype, shape)

    frame_shape = numpy_helper.from_array(np.array([frames, 1, feat], "int64"), "frame_shape")
    # 16 kHz: project the whole chunk; 8 kHz: its first half, through another projection.
    then = helper.make_graph(
        [helper.make_node("MatMul", ["audio", "w16"], ["m16"]),
         helper.make_node("Abs", ["m16"], ["a16"]),
         helper.make_node("Softplus", ["a16"], ["f16"])],
        "sr16k", [], [value("f16", [1, frames * feat])],
        initializer=[weight("w16", chunk, frames * feat)])
    half = numpy_helper.from_array(np.array([chunk // 2], "int64"), "half")
    zero = numpy_helper.from_array(np.array([0], "int64"), "zero")
    axis1 = numpy_helper.from_array(np.array([1], "int64"), "axis1")
    other = helper.make_graph(
        [helper.make_node("Slice", ["audio", "zero", "half", "axis1"], ["first"]),
         helper.make_node("MatMul", ["first", "w8"], ["m8"]),
         helper.make_node("Abs", ["m8"], ["a8"]),
         helper.make_node("Softplus", ["a8"], ["f8"])],
        "sr8k", [], [value("f8", [1, frames * feat])],
        initializer=[weight("w8", chunk // 2, frames * feat), half, zero, axis1])
    nodes = [
        helper.make_node("Equal", ["sr", "sr16"], ["is16"]),
        helper.make_node("Squeeze", ["is16"], ["cond"]),
        helper.make_node("If", ["cond"], ["features"], then_branch=then, else_branch=other),
        helper.make_node("Reshape", ["features", "frame_shape"], ["seq"]),
        helper.make_node("LSTM", ["seq", "W", "R", "B", "", "h", "c"], ["Y", "hn", "cn"],
                         hidden_size=hidden),
        helper.make_node("Squeeze", ["hn", "axis0"], ["last"]),
        helper.make_node("Relu", ["last"], ["r"]),
        helper.make_node("MatMul", ["r", "wo"], ["logit"]),
        helper.make_node("Sigmoid", ["logit"], ["prob"]),
    ]
    inits = [frame_shape, weight("W", 1, 4 * hidden, feat), weight("R", 1, 4 * hidden, hidden),
             numpy_helper.from_array(np.zeros((1, 8 * hidden), "float32"), "B"),
             weight("wo", hidden, 1), numpy_helper.from_array(np.array([16000], "int64"), "sr16"),
             numpy_helper.from_array(np.array([0], "int64"), "axis0")]
    graph = helper.make_graph(
        nodes, "vad", [value("audio", [1, chunk]), value("sr", [1], TensorProto.INT64),
                       value("h", [1, 1, hidden]), value("c", [1, 1, hidden])],
        [value("prob", [1, 1]), value("hn", [1, 1, hidden]), value("cn", [1, 1, hidden])],
        initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def vad_inputs(seed: int = 0, sizes: dict | None = None, sr: int = 16000) -> list:
    """Seeded inputs of :func:`vad_model`: audio, sample rate, h, c."""
    s = dict(VAD_SIZES, **(sizes or {}))
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((1, s["chunk"])).astype("float32"),
            np.array([sr], "int64"),
            (rng.standard_normal((1, 1, s["hidden"])) * 0.1).astype("float32"),
            (rng.standard_normal((1, 1, s["hidden"])) * 0.1).astype("float32")]


def kws_model(seed: int = 0):
    """The ``kws`` CNN as an ONNX model (input ``features`` (1, 1, 40, 100))."""
    import onnx
    import torch

    class KWS(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = torch.nn.Conv2d(1, 8, 3, padding=1)
            self.c2 = torch.nn.Conv2d(8, 8, 3, stride=2, padding=1)
            self.c3 = torch.nn.Conv1d(8 * 20, 16, 3, padding=1)
            self.fc = torch.nn.Linear(16, 12)

        def forward(self, x):
            y = torch.relu(self.c2(torch.relu(self.c1(x))))
            y = torch.relu(self.c3(y.reshape(1, 8 * 20, 50)))
            return torch.softmax(self.fc(y.mean(dim=2)), dim=-1)

    torch.manual_seed(seed)
    buffer = io.BytesIO()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(KWS().eval(), (torch.zeros(1, 1, 40, 100),), buffer,
                          input_names=["features"], opset_version=17, dynamo=False)
    return onnx.load_from_string(buffer.getvalue())


def export_bert_int8(path: str, seed: int = 0, tiny: bool = False) -> list:
    """Write the dynamically quantized BERT to ``path``; return its seeded inputs.

    Args:
        path: the ``.onnx`` file to write.
        seed: seed of the weights and inputs.
        tiny: the tests' size (``transformer_models.TINY``) instead of MiniLM's.
    """
    import os
    import tempfile
    import logging
    import transformer_models
    from onnxruntime.quantization import QuantType, quantize_dynamic
    config = transformer_models.TINY["bert"] if tiny else None
    with tempfile.TemporaryDirectory(prefix="irlib-bert-int8-") as workdir:
        float_path = os.path.join(workdir, "bert.onnx")
        inputs = transformer_models.export("bert", float_path, config, seed=seed)
        logging.getLogger().setLevel(logging.ERROR)      # quantize_dynamic's pre-process hint
        quantize_dynamic(float_path, path, weight_type=QuantType.QInt8)
    return inputs


def export(name: str, path: str, seed: int = 0) -> list:
    """Write model ``name`` (one of :data:`SMALL`) to ``path``; return seeded inputs."""
    if name == "bert_int8":
        return export_bert_int8(path, seed)
    if name == "vad":
        model, inputs = vad_model(seed), vad_inputs(seed)
    else:
        model = kws_model(seed)
        inputs = [np.random.default_rng(seed).standard_normal((1, 1, 40, 100))
                  .astype("float32")]
    with open(path, "wb") as handle:
        handle.write(model.SerializeToString())
    return inputs
