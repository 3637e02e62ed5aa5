"""A GPT-2-style decoder written with the nn builder (:mod:`irlib.frontend.nn`).

Token and position embeddings, ``num_layers`` pre-norm blocks (causal self-attention reading
and writing a :class:`~irlib.frontend.nn.KVCache` per layer, an MLP with tanh-approximated
GELU), a final layer norm and an LM head tied to the token embedding. Parameter names follow
PyTorch's conventions (``wte.weight``, ``h.0.attn.c_attn.weight``, ...), with ``nn.Linear``
weights as ``[out, in]``, so a PyTorch model with the same structure loads with
``load_state_dict``.

``forward(input_ids, positions, mask)`` takes ``[1, seq_len]`` token ids and positions and an
additive attention mask ``[1, 1, seq_len, total_seq_len]`` (0 where a query may attend, a large
negative number where it may not), appends the new keys and values to the caches and returns
``[1, seq_len, vocab_size]`` logits. The same exported function serves the prompt (prefill,
``seq_len`` = prompt length, causal mask) and every decode step (``seq_len`` = 1, zero mask):
:func:`causal_mask` and :func:`greedy_generate` build the masks and run the loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from irlib.frontend import nn
from irlib.frontend.nn import op


@dataclass
class GPT2Config:
    """Sizes of the decoder.

    Args:
        vocab_size: tokens in the vocabulary.
        max_positions: length of the position table (the longest sequence).
        hidden_size: width of the residual stream.
        num_heads: attention heads (``hidden_size`` must be a multiple).
        num_layers: decoder blocks.
        layer_norm_eps: epsilon of every layer norm.
    """

    vocab_size: int = 256
    max_positions: int = 64
    hidden_size: int = 64
    num_heads: int = 4
    num_layers: int = 2
    layer_norm_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        """Width of one attention head."""
        return self.hidden_size // self.num_heads


class GPT2Attention(nn.Module):
    """Causal self-attention with per-layer key/value caches.

    Args:
        config: the model sizes.
    """

    def __init__(self, config: GPT2Config):
        self.config = config
        self.c_attn = nn.Linear(config.hidden_size, 3 * config.hidden_size)
        self.c_proj = nn.Linear(config.hidden_size, config.hidden_size)
        unit = [config.num_heads, config.head_dim]
        self.k_cache = nn.KVCache(config.max_positions, unit)
        self.v_cache = nn.KVCache(config.max_positions, unit)

    def forward(self, x: nn.Tensor, mask: nn.Tensor) -> nn.Tensor:
        """Attend from the ``seq_len`` new positions to every cached one.

        Args:
            x: ``[1, seq_len, hidden]``.
            mask: additive ``[1, 1, seq_len, total_seq_len]``.
        """
        heads, head_dim = self.config.num_heads, self.config.head_dim
        batch, seq_len, hidden = x.shape
        total_seq_len = mask.shape[3]
        q, k, v = op.split(self.c_attn(x), 3, axis=2)
        q = op.reshape(q, (batch, seq_len, heads, head_dim))
        self.k_cache.append(op.reshape(k, (seq_len, heads, head_dim)))
        self.v_cache.append(op.reshape(v, (seq_len, heads, head_dim)))
        keys = op.unsqueeze(self.k_cache.view(total_seq_len), 0)
        values = op.unsqueeze(self.v_cache.view(total_seq_len), 0)
        attended = op.scaled_dot_product_attention(q, keys, values, attn_mask=mask)
        return self.c_proj(op.reshape(attended, (batch, seq_len, hidden)))


class GPT2MLP(nn.Module):
    """The block's feed-forward part: Linear, GELU (tanh), Linear.

    Args:
        config: the model sizes.
    """

    def __init__(self, config: GPT2Config):
        self.c_fc = nn.Linear(config.hidden_size, 4 * config.hidden_size)
        self.c_proj = nn.Linear(4 * config.hidden_size, config.hidden_size)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        """``c_proj(gelu(c_fc(x)))``."""
        return self.c_proj(op.gelu(self.c_fc(x), approximate="tanh"))


class GPT2Block(nn.Module):
    """A pre-norm decoder block: ``x + attn(ln_1(x))``, then ``x + mlp(ln_2(x))``.

    Args:
        config: the model sizes.
    """

    def __init__(self, config: GPT2Config):
        self.ln_1 = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.attn = GPT2Attention(config)
        self.ln_2 = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.mlp = GPT2MLP(config)

    def forward(self, x: nn.Tensor, mask: nn.Tensor) -> nn.Tensor:
        """One block over ``[1, seq_len, hidden]``."""
        x = x + self.attn(self.ln_1(x), mask)
        return x + self.mlp(self.ln_2(x))


class GPT2LMHeadModel(nn.Module):
    """The decoder with a tied LM head.

    Args:
        config: the model sizes.
    """

    def __init__(self, config: GPT2Config):
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.hidden_size)
        self.wpe = nn.Embedding(config.max_positions, config.hidden_size)
        self.h = nn.ModuleList([GPT2Block(config) for _ in range(config.num_layers)])
        self.ln_f = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, input_ids: nn.Tensor, positions: nn.Tensor, mask: nn.Tensor) -> nn.Tensor:
        """Logits ``[1, seq_len, vocab]`` of the new positions (see the module docstring)."""
        x = self.wte(input_ids) + self.wpe(positions)
        for block in self.h:
            x = block(x, mask)
        x = self.ln_f(x)
        return op.matmul(x, op.permute_dims(self.wte.weight))

    def get_default_spec(self) -> dict:
        """The spec of ``forward`` with symbolic ``seq_len`` and ``total_seq_len``."""
        return {"forward": {
            "input_ids": nn.spec.Tensor([1, "seq_len"], "int32"),
            "positions": nn.spec.Tensor([1, "seq_len"], "int32"),
            "mask": nn.spec.Tensor([1, 1, "seq_len", "total_seq_len"], "float32"),
        }}


def causal_mask(seq_len: int, past_len: int) -> np.ndarray:
    """The additive mask letting new position ``i`` attend to cached positions ``<= past + i``.

    Args:
        seq_len: new positions in this call.
        past_len: positions already in the caches.
    """
    total = past_len + seq_len
    allowed = np.arange(total)[None, :] <= past_len + np.arange(seq_len)[:, None]
    return np.where(allowed, 0.0, -1e9).astype("float32")[None, None]


def greedy_generate(forward, prompt, steps: int) -> list:
    """Greedy decoding: run the prompt (prefill), then ``steps`` single-token decode steps.

    Args:
        forward: a callable ``(input_ids, positions, mask) -> logits`` that keeps its own KV
            caches (a jitted GPT2LMHeadModel's ``forward``); logits may be numpy or torch.
        prompt: the prompt's token ids.
        steps: decode steps after the prefill.

    Returns:
        ``steps + 1`` token ids: the prefill's prediction, then one per decode step.
    """
    ids = np.array([[int(t) for t in prompt]], "int32")
    past, generated = 0, []
    for _ in range(steps + 1):
        seq_len = ids.shape[1]
        positions = np.arange(past, past + seq_len, dtype="int32")[None]
        logits = np.asarray(forward(ids, positions, causal_mask(seq_len, past)))
        past += seq_len
        generated.append(int(np.argmax(logits[0, -1])))
        ids = np.array([[generated[-1]]], "int32")
    return generated
