"""Transformer models written in torch and exported to ONNX, for benchmarks and tests.

Three families, each built from seeded random weights (no download) and exported with
``torch.onnx.export`` (the TorchScript exporter, ``dynamo=False``, opset 17) at fixed shapes:

* ``bert``: a BERT/MiniLM-style encoder (post-norm layers, GELU MLP, an additive padding
  mask built from ``attention_mask`` as HuggingFace does);
* ``gpt2``: a GPT-2-style pre-norm decoder step: ``new`` tokens attend causally to
  themselves and to a key/value cache of ``past`` positions (inputs), the new cache is an
  output;
* ``whisper``: a whisper-tiny-sized encoder-decoder: a conv front end (two Conv1d + GELU,
  the second with stride 2) and a transformer encoder over the audio frames, and a decoder
  whose causal self-attention is followed by cross-attention to the encoder's output.

:func:`export` writes the ``.onnx`` file and returns seeded inputs; :data:`CONFIGS` holds the
benchmark sizes, :data:`TINY` sizes small enough for tests (seconds).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

__all__ = ["CONFIGS", "TINY", "build", "export", "make_inputs"]

CONFIGS = {
    "bert": dict(layers=3, hidden=384, heads=12, ffn=1536, seq=128, vocab=1000),
    "gpt2": dict(layers=4, hidden=384, heads=6, ffn=1536, new=16, past=112, vocab=1000),
    "whisper": dict(layers=4, hidden=384, heads=6, ffn=1536, mels=80, frames=300, tokens=16,
                    vocab=1000),
}
"""Benchmark sizes: a 3-layer MiniLM (384 wide, 12 heads, 128 tokens), a 4-layer GPT-2-style
step (16 new tokens over a 112-token cache), a whisper-tiny-wide encoder-decoder (4 + 4 layers,
300 mel frames -> 150 positions, 16 decoder tokens)."""

TINY = {
    "bert": dict(layers=1, hidden=32, heads=4, ffn=64, seq=8, vocab=50),
    "gpt2": dict(layers=1, hidden=32, heads=4, ffn=64, new=3, past=5, vocab=50),
    "whisper": dict(layers=1, hidden=32, heads=4, ffn=64, mels=8, frames=12, tokens=4,
                    vocab=50),
}
"""Sizes for tests: one layer, 32 wide."""


def _torch():
    import torch
    return torch


def _modules():
    """The torch module classes (defined on first use so importing this file needs no
    torch)."""
    torch = _torch()
    nn = torch.nn
    functional = torch.nn.functional

    class Attention(nn.Module):
        """Multi-head attention as HuggingFace writes it: per-head views, ``q @ k^T``
        scaled, additive mask, softmax, ``@ v``."""

        def __init__(self, hidden, heads):
            super().__init__()
            self.heads, self.dim = heads, hidden // heads
            self.q = nn.Linear(hidden, hidden)
            self.k = nn.Linear(hidden, hidden)
            self.v = nn.Linear(hidden, hidden)
            self.o = nn.Linear(hidden, hidden)

        def split(self, x):
            b, s, _ = x.shape
            return x.view(b, s, self.heads, self.dim).transpose(1, 2)

        def forward(self, x, mask=None, memory=None, past=None):
            source = x if memory is None else memory
            q = self.split(self.q(x))
            k = self.split(self.k(source))
            v = self.split(self.v(source))
            present = None
            if past is not None:
                k = torch.cat([past[0], k], dim=2)
                v = torch.cat([past[1], v], dim=2)
                present = (k, v)
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.dim)
            if mask is not None:
                scores = scores + mask
            probs = functional.softmax(scores, dim=-1)
            ctx = torch.matmul(probs, v).transpose(1, 2)
            b, s = ctx.shape[0], ctx.shape[1]
            out = self.o(ctx.reshape(b, s, self.heads * self.dim))
            return out if past is None else (out, present)

    class MLP(nn.Module):
        def __init__(self, hidden, ffn):
            super().__init__()
            self.up = nn.Linear(hidden, ffn)
            self.down = nn.Linear(ffn, hidden)

        def forward(self, x):
            return self.down(functional.gelu(self.up(x)))

    class BertLayer(nn.Module):
        def __init__(self, hidden, heads, ffn):
            super().__init__()
            self.attn = Attention(hidden, heads)
            self.norm1 = nn.LayerNorm(hidden, eps=1e-12)
            self.mlp = MLP(hidden, ffn)
            self.norm2 = nn.LayerNorm(hidden, eps=1e-12)

        def forward(self, x, mask):
            x = self.norm1(x + self.attn(x, mask))
            return self.norm2(x + self.mlp(x))

    class Bert(nn.Module):
        """A MiniLM-style encoder: embeddings (token + position), post-norm layers."""

        def __init__(self, layers, hidden, heads, ffn, seq, vocab):
            super().__init__()
            self.tokens = nn.Embedding(vocab, hidden)
            self.positions = nn.Parameter(torch.randn(1, seq, hidden) * 0.02)
            self.norm = nn.LayerNorm(hidden, eps=1e-12)
            self.layers = nn.ModuleList(BertLayer(hidden, heads, ffn) for _ in range(layers))

        def forward(self, input_ids, attention_mask):
            x = self.norm(self.tokens(input_ids) + self.positions)
            mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
            for layer in self.layers:
                x = layer(x, mask)
            return x

    class GptLayer(nn.Module):
        def __init__(self, hidden, heads, ffn):
            super().__init__()
            self.norm1 = nn.LayerNorm(hidden)
            self.attn = Attention(hidden, heads)
            self.norm2 = nn.LayerNorm(hidden)
            self.mlp = MLP(hidden, ffn)

        def forward(self, x, mask, past):
            out, present = self.attn(self.norm1(x), mask, past=past)
            x = x + out
            return x + self.mlp(self.norm2(x)), present

    class Gpt(nn.Module):
        """A GPT-2-style decoder step: ``new`` tokens, a cache of ``past`` positions per
        layer (inputs ``past_k``/``past_v`` of shape (layers, 1, heads, past, dim))."""

        def __init__(self, layers, hidden, heads, ffn, new, past, vocab):
            super().__init__()
            self.tokens = nn.Embedding(vocab, hidden)
            self.positions = nn.Parameter(torch.randn(1, new, hidden) * 0.02)
            self.layers = nn.ModuleList(GptLayer(hidden, heads, ffn) for _ in range(layers))
            self.norm = nn.LayerNorm(hidden)
            self.head = nn.Linear(hidden, vocab, bias=False)
            total = past + new
            allowed = torch.arange(total)[None, :] <= (past + torch.arange(new))[:, None]
            self.register_buffer("mask", torch.where(allowed, 0.0, -1e9)[None, None])

        def forward(self, input_ids, past_k, past_v):
            x = self.tokens(input_ids) + self.positions
            keys, values = [], []
            for i, layer in enumerate(self.layers):
                x, (k, v) = layer(x, self.mask, (past_k[i], past_v[i]))
                keys.append(k)
                values.append(v)
            return self.head(self.norm(x)), torch.stack(keys), torch.stack(values)

    class WhisperEncoderLayer(nn.Module):
        def __init__(self, hidden, heads, ffn):
            super().__init__()
            self.norm1 = nn.LayerNorm(hidden)
            self.attn = Attention(hidden, heads)
            self.norm2 = nn.LayerNorm(hidden)
            self.mlp = MLP(hidden, ffn)

        def forward(self, x):
            x = x + self.attn(self.norm1(x))
            return x + self.mlp(self.norm2(x))

    class WhisperDecoderLayer(nn.Module):
        def __init__(self, hidden, heads, ffn):
            super().__init__()
            self.norm1 = nn.LayerNorm(hidden)
            self.self_attn = Attention(hidden, heads)
            self.norm2 = nn.LayerNorm(hidden)
            self.cross = Attention(hidden, heads)
            self.norm3 = nn.LayerNorm(hidden)
            self.mlp = MLP(hidden, ffn)

        def forward(self, x, mask, memory):
            x = x + self.self_attn(self.norm1(x), mask)
            x = x + self.cross(self.norm2(x), memory=memory)
            return x + self.mlp(self.norm3(x))

    class Whisper(nn.Module):
        """A whisper-tiny-sized encoder-decoder over log-mel frames and decoder tokens."""

        def __init__(self, layers, hidden, heads, ffn, mels, frames, tokens, vocab):
            super().__init__()
            self.conv1 = nn.Conv1d(mels, hidden, 3, padding=1)
            self.conv2 = nn.Conv1d(hidden, hidden, 3, stride=2, padding=1)
            self.audio_positions = nn.Parameter(torch.randn(1, (frames + 1) // 2, hidden) * 0.02)
            self.encoder = nn.ModuleList(WhisperEncoderLayer(hidden, heads, ffn)
                                         for _ in range(layers))
            self.encoder_norm = nn.LayerNorm(hidden)
            self.tokens = nn.Embedding(vocab, hidden)
            self.text_positions = nn.Parameter(torch.randn(1, tokens, hidden) * 0.02)
            self.decoder = nn.ModuleList(WhisperDecoderLayer(hidden, heads, ffn)
                                         for _ in range(layers))
            self.decoder_norm = nn.LayerNorm(hidden)
            causal = torch.triu(torch.full((tokens, tokens), -1e9), diagonal=1)
            self.register_buffer("mask", causal[None, None])

        def forward(self, mel, input_ids):
            x = functional.gelu(self.conv1(mel))
            x = functional.gelu(self.conv2(x)).transpose(1, 2) + self.audio_positions
            for layer in self.encoder:
                x = layer(x)
            memory = self.encoder_norm(x)
            y = self.tokens(input_ids) + self.text_positions
            for layer in self.decoder:
                y = layer(y, self.mask, memory)
            y = self.decoder_norm(y)
            return torch.matmul(y, self.tokens.weight.T)

    return {"bert": Bert, "gpt2": Gpt, "whisper": Whisper}


def build(name: str, config: dict | None = None, seed: int = 0):
    """The torch module ``name`` (``"bert"``, ``"gpt2"``, ``"whisper"``) in eval mode.

    Args:
        name: the model family.
        config: its sizes (default :data:`CONFIGS` ``[name]``).
        seed: torch's seed for the random weights.
    """
    torch = _torch()
    config = dict(CONFIGS[name] if config is None else config)
    torch.manual_seed(seed)
    model = _modules()[name](**config).eval()
    return model


def make_inputs(name: str, config: dict | None = None, seed: int = 0) -> list:
    """Seeded numpy inputs of model ``name`` in the ONNX graph's input order.

    ``bert``: token ids (1, seq) int64 and an attention mask whose last quarter is padding;
    ``gpt2``: ids (1, new), past keys and values (layers, 1, heads, past, dim) float32;
    ``whisper``: log-mel frames (1, mels, frames) float32 and ids (1, tokens) int64.
    """
    config = dict(CONFIGS[name] if config is None else config)
    rng = np.random.default_rng(seed)
    vocab = config["vocab"]
    if name == "bert":
        seq = config["seq"]
        mask = np.ones((1, seq), np.int64)
        mask[:, seq - max(seq // 4, 1):] = 0
        return [rng.integers(0, vocab, (1, seq)).astype(np.int64), mask]
    if name == "gpt2":
        dim = config["hidden"] // config["heads"]
        shape = (config["layers"], 1, config["heads"], config["past"], dim)
        return [rng.integers(0, vocab, (1, config["new"])).astype(np.int64),
                rng.standard_normal(shape).astype(np.float32),
                rng.standard_normal(shape).astype(np.float32)]
    if name == "whisper":
        return [rng.standard_normal((1, config["mels"], config["frames"])).astype(np.float32),
                rng.integers(0, vocab, (1, config["tokens"])).astype(np.int64)]
    raise ValueError(f"unknown transformer model {name!r}; known: {sorted(CONFIGS)}")


_INPUT_NAMES = {"bert": ["input_ids", "attention_mask"],
                "gpt2": ["input_ids", "past_k", "past_v"],
                "whisper": ["mel", "input_ids"]}
_OUTPUT_NAMES = {"bert": ["hidden"], "gpt2": ["logits", "present_k", "present_v"],
                 "whisper": ["logits"]}


def export(name: str, path: str, config: dict | None = None, seed: int = 0) -> list:
    """Export model ``name`` to the ONNX file ``path``; return its seeded numpy inputs.

    Args:
        name: ``"bert"``, ``"gpt2"`` or ``"whisper"``.
        path: where to write the ``.onnx`` file.
        config: the sizes (default :data:`CONFIGS` ``[name]``; tests pass :data:`TINY`).
        seed: seed of the weights and of the inputs.
    """
    torch = _torch()
    model = build(name, config, seed)
    inputs = make_inputs(name, config, seed)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)   # the TorchScript exporter's
        torch.onnx.export(model, tuple(torch.from_numpy(a) for a in inputs), path,
                          input_names=_INPUT_NAMES[name], output_names=_OUTPUT_NAMES[name],
                          opset_version=17, dynamo=False)
    return inputs
