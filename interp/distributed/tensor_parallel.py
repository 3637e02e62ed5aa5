"""A tensor-parallel example: an MLP and a self-attention block sharded Megatron-style.

Megatron-LM's pattern needs one collective per block. The first Linear is
*column-parallel*: rank ``r`` holds rows ``r`` of its weight (a slice of the output
features), so it computes its slice of the hidden activation with no communication, and the
elementwise activation (or, in attention, whole heads) stays local. The second Linear is
*row-parallel*: rank ``r`` holds the matching columns of its weight, so each rank computes a
partial sum of the full output; one ``ccl_allreduce(sum)`` adds the partial sums, and the
bias is added once, after it.

* :class:`MLP` / :class:`SelfAttention`: the ordinary (unsharded) layers;
* :class:`ShardedMLP` / :class:`ShardedSelfAttention`: the same layers over ``num_shards``
  ranks; parameter names match the unsharded ones, so the unsharded weights load into them
  with :func:`~interp.distributed.load_from_worker0` (rank 0 reads them; every rank receives
  its shard) and ``shard_plan()`` says how each one is cut.
* :class:`RowParallelLinear`: the row-parallel Linear (partial product, allreduce, bias).

With ``num_shards=1`` the sharded layers compute exactly what the unsharded ones compute
(the allreduce is the identity).
"""

from __future__ import annotations

from typing import Dict, Optional

from irlib.frontend import nn

from .comm import DistributedError

__all__ = ["MLP", "SelfAttention", "RowParallelLinear", "ShardedMLP", "ShardedSelfAttention",
           "TransformerBlock", "ShardedTransformerBlock"]


def _part(size: int, num_shards: int, what: str) -> int:
    """``size / num_shards``, or a DistributedError when it does not divide."""
    if isinstance(num_shards, bool) or not isinstance(num_shards, int) or num_shards < 1:
        raise DistributedError(f"num_shards must be a positive int, got {num_shards!r}")
    if size % num_shards:
        raise DistributedError(f"{what} = {size} does not divide into {num_shards} shards")
    return size // num_shards


class MLP(nn.Module):
    """``fc2(gelu(fc1(x)))``, the unsharded feed-forward layer.

    Args:
        hidden: the model width (input and output features).
        ffn: the inner width.
        dtype: the parameters' dtype.
    """

    def __init__(self, hidden: int, ffn: int, dtype: str = "float32"):
        self.fc1 = nn.Linear(hidden, ffn, dtype=dtype)
        self.fc2 = nn.Linear(ffn, hidden, dtype=dtype)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        """Apply the layer to ``x`` ``[..., hidden]``."""
        return self.fc2(nn.gelu(self.fc1(x)))


class RowParallelLinear(nn.Module):
    """The row-parallel half of a Megatron pair: ``allreduce(x @ weight.T) + bias``.

    Each rank holds ``in_part`` of the ``in_features`` columns of the weight (the slice
    matching its share of the input's last axis) and the whole bias.

    Args:
        in_part: this rank's number of input features.
        out_features: the output features (whole on every rank).
        bias: whether there is a bias (added once, after the allreduce).
        dtype: the parameters' dtype.
    """

    def __init__(self, in_part: int, out_features: int, bias: bool = True,
                 dtype: str = "float32"):
        self.weight = nn.Parameter((out_features, in_part), dtype)
        self.bias = nn.Parameter((out_features,), dtype) if bias else None

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        """``x`` ``[..., in_part]`` (this rank's share) -> the full ``[..., out_features]``."""
        partial = nn.matmul(x, nn.permute_dims(self.weight, [1, 0]), name="partial")
        out = nn.ccl_allreduce(partial, "sum")
        return out + self.bias if self.bias is not None else out


class ShardedMLP(nn.Module):
    """:class:`MLP` over ``num_shards`` ranks: fc1 column-parallel, fc2 row-parallel, one
    allreduce.

    Args:
        hidden: the model width.
        ffn: the inner width (divisible by ``num_shards``).
        num_shards: the number of ranks (the run's world size).
        dtype: the parameters' dtype.
    """

    def __init__(self, hidden: int, ffn: int, num_shards: int, dtype: str = "float32"):
        part = _part(ffn, num_shards, "ffn")
        self.num_shards = num_shards
        self.fc1 = nn.Linear(hidden, part, dtype=dtype)
        self.fc2 = RowParallelLinear(part, hidden, dtype=dtype)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        """Apply the layer to ``x`` ``[..., hidden]`` (the same on every rank)."""
        return self.fc2(nn.gelu(self.fc1(x)))

    def shard_plan(self, prefix: str = "") -> Dict[str, Optional[int]]:
        """Parameter name -> the axis cut across ranks (None: held whole).

        Args:
            prefix: prepended to every name (the layer's path in a bigger model).
        """
        return {f"{prefix}fc1.weight": 0, f"{prefix}fc1.bias": 0,
                f"{prefix}fc2.weight": 1, f"{prefix}fc2.bias": None}


class SelfAttention(nn.Module):
    """Causal multi-head self-attention, unsharded: q/k/v projections, scaled dot-product
    attention per head, output projection.

    Args:
        hidden: the model width.
        num_heads: the number of heads (dividing ``hidden``).
        dtype: the parameters' dtype.
    """

    def __init__(self, hidden: int, num_heads: int, dtype: str = "float32"):
        self.head_dim = _part(hidden, num_heads, "hidden")
        self.num_heads = num_heads
        self.q_proj = nn.Linear(hidden, hidden, dtype=dtype)
        self.k_proj = nn.Linear(hidden, hidden, dtype=dtype)
        self.v_proj = nn.Linear(hidden, hidden, dtype=dtype)
        self.o_proj = nn.Linear(hidden, hidden, dtype=dtype)

    def attend(self, x: nn.Tensor, heads: int) -> nn.Tensor:
        """Causal attention of ``heads`` heads: ``[b, s, hidden] -> [b, s, heads * head_dim]``.

        Args:
            x: the input.
            heads: the number of heads this module's q/k/v projections produce.
        """
        batch, seq, _ = x.shape
        shape = [batch, seq, heads, self.head_dim]
        q = nn.reshape(self.q_proj(x), shape)
        k = nn.reshape(self.k_proj(x), shape)
        v = nn.reshape(self.v_proj(x), shape)
        out = nn.scaled_dot_product_attention(q, k, v, is_causal=True)
        return nn.reshape(out, [batch, seq, heads * self.head_dim])

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        """Apply the block to ``x`` ``[batch, seq, hidden]``."""
        return self.o_proj(self.attend(x, self.num_heads))


class ShardedSelfAttention(SelfAttention):
    """:class:`SelfAttention` over ``num_shards`` ranks: each rank computes
    ``num_heads / num_shards`` whole heads (q/k/v column-parallel by head), the output
    projection is row-parallel, one allreduce.

    Args:
        hidden: the model width.
        num_heads: the number of heads (divisible by ``num_shards``).
        num_shards: the number of ranks.
        dtype: the parameters' dtype.
    """

    def __init__(self, hidden: int, num_heads: int, num_shards: int, dtype: str = "float32"):
        self.head_dim = _part(hidden, num_heads, "hidden")
        self.num_heads = num_heads
        self.local_heads = _part(num_heads, num_shards, "num_heads")
        part = self.local_heads * self.head_dim
        self.q_proj = nn.Linear(hidden, part, dtype=dtype)
        self.k_proj = nn.Linear(hidden, part, dtype=dtype)
        self.v_proj = nn.Linear(hidden, part, dtype=dtype)
        self.o_proj = RowParallelLinear(part, hidden, dtype=dtype)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        """Apply the block to ``x`` ``[batch, seq, hidden]`` (the same on every rank)."""
        return self.o_proj(self.attend(x, self.local_heads))

    def shard_plan(self, prefix: str = "") -> Dict[str, Optional[int]]:
        """Parameter name -> the axis cut across ranks (None: held whole).

        Args:
            prefix: prepended to every name.
        """
        plan = {}
        for proj in ("q_proj", "k_proj", "v_proj"):
            plan[f"{prefix}{proj}.weight"] = 0
            plan[f"{prefix}{proj}.bias"] = 0
        plan[f"{prefix}o_proj.weight"] = 1
        plan[f"{prefix}o_proj.bias"] = None
        return plan


class TransformerBlock(nn.Module):
    """``h = x + attn(x); h + mlp(h)``: attention then MLP with residuals (no norms, to keep
    the example small), unsharded.

    Args:
        hidden: the model width.
        num_heads: the number of heads.
        ffn: the MLP's inner width.
        dtype: the parameters' dtype.
    """

    def __init__(self, hidden: int, num_heads: int, ffn: int, dtype: str = "float32"):
        self.attn = SelfAttention(hidden, num_heads, dtype)
        self.mlp = MLP(hidden, ffn, dtype)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        """Apply the block to ``x`` ``[batch, seq, hidden]``."""
        h = x + self.attn(x)
        return h + self.mlp(h)


class ShardedTransformerBlock(TransformerBlock):
    """:class:`TransformerBlock` over ``num_shards`` ranks: two allreduces per block (one
    after the attention's output projection, one after the MLP's).

    Args:
        hidden: the model width.
        num_heads: the number of heads (divisible by ``num_shards``).
        ffn: the MLP's inner width (divisible by ``num_shards``).
        num_shards: the number of ranks.
        dtype: the parameters' dtype.
    """

    def __init__(self, hidden: int, num_heads: int, ffn: int, num_shards: int,
                 dtype: str = "float32"):
        self.attn = ShardedSelfAttention(hidden, num_heads, num_shards, dtype)
        self.mlp = ShardedMLP(hidden, ffn, num_shards, dtype)

    def shard_plan(self, prefix: str = "") -> Dict[str, Optional[int]]:
        """Parameter name -> the axis cut across ranks (None: held whole).

        Args:
            prefix: prepended to every name.
        """
        plan = self.attn.shard_plan(prefix + "attn.")
        plan.update(self.mlp.shard_plan(prefix + "mlp."))
        return plan
