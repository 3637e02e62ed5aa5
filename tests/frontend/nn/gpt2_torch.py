"""A PyTorch GPT-2-style decoder with the same structure and parameter names as
``zoo.gpt2.GPT2LMHeadModel``: the independent oracle of the nn builder's GPT-2 test, and the
PyTorch side of ``benchmarks/nn_decode.py``. Written here with plain torch ops."""

import math

import torch


class Attention(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        self.heads, self.head_dim = config.num_heads, config.head_dim
        self.c_attn = torch.nn.Linear(config.hidden_size, 3 * config.hidden_size)
        self.c_proj = torch.nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, x, mask, cache=None):
        batch, seq_len, hidden = x.shape
        q, k, v = self.c_attn(x).split(hidden, dim=2)
        q, k, v = (t.view(batch, seq_len, self.heads, self.head_dim).transpose(1, 2)
                   for t in (q, k, v))
        if cache is not None:
            if cache.get("k") is not None:
                k = torch.cat([cache["k"], k], dim=2)
                v = torch.cat([cache["v"], v], dim=2)
            cache["k"], cache["v"] = k, v
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim) + mask
        out = torch.softmax(scores, dim=-1) @ v
        return self.c_proj(out.transpose(1, 2).reshape(batch, seq_len, hidden))


class MLP(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = torch.nn.Linear(config.hidden_size, 4 * config.hidden_size)
        self.c_proj = torch.nn.Linear(4 * config.hidden_size, config.hidden_size)

    def forward(self, x):
        return self.c_proj(torch.nn.functional.gelu(self.c_fc(x), approximate="tanh"))


class Block(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = torch.nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.attn = Attention(config)
        self.ln_2 = torch.nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.mlp = MLP(config)

    def forward(self, x, mask, cache=None):
        x = x + self.attn(self.ln_1(x), mask, cache)
        return x + self.mlp(self.ln_2(x))


class TorchGPT2(torch.nn.Module):
    """``forward(ids, positions, mask, caches=None)``; with ``caches`` (a list of dicts, one
    per layer) the keys/values are appended to them, as the nn model's KV caches do."""

    def __init__(self, config):
        super().__init__()
        self.wte = torch.nn.Embedding(config.vocab_size, config.hidden_size)
        self.wpe = torch.nn.Embedding(config.max_positions, config.hidden_size)
        self.h = torch.nn.ModuleList([Block(config) for _ in range(config.num_layers)])
        self.ln_f = torch.nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, ids, positions, mask, caches=None):
        x = self.wte(ids) + self.wpe(positions)
        for index, block in enumerate(self.h):
            x = block(x, mask, None if caches is None else caches[index])
        return self.ln_f(x) @ self.wte.weight.T


def randomize(model, seed=0):
    """Give every parameter random values of a realistic scale (layer norms near 1)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "ln_" in name:
                param.copy_(1.0 + 0.1 * torch.randn(param.shape, generator=generator)
                            if name.endswith("weight") else
                            0.1 * torch.randn(param.shape, generator=generator))
            else:
                param.copy_(0.2 * torch.randn(param.shape, generator=generator))
    return model
