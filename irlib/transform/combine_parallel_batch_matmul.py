"""CombineParallelBatchMatmul: merge sibling ``nn.batch_matmul`` calls of one input (Relay's
``CombineParallelBatchMatmul(min_num_branches=3)``).

At least ``min_num_branches`` ``nn.batch_matmul`` calls on the *same* first input, each in
Relay's supported form (``transpose_a=False, transpose_b=True``: ``(B, M, K) x (B', N_i,
K)``), with 3-D second inputs of one dtype and one batch size ``B'``, equal ``out_dtype``
and equal result dtype, become one ``nn.batch_matmul`` over the second inputs concatenated
along their output axis 1, plus one ``strided_slice(..., slice_mode="size")`` of the last
axis per branch (widths ``N_i`` must be static). As for CombineParallelDense, ops that follow
the branches are not merged.

Before/after::

    (nn.batch_matmul(%x, %y1), nn.batch_matmul(%x, %y2), nn.batch_matmul(%x, %y3))
    %0 = nn.batch_matmul(%x, concatenate((%y1, %y2, %y3), axis=1));
    (strided_slice(%0, begin=[0, 0, 0], end=[-1, -1, N1], strides=[1, 1, 1],
                   slice_mode="size"), ...)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import expr as E
from ._combine import combine_rounds, sibling_groups
from ._typed import op, rewrite_typed_module, tensor_type
from .pass_infra import ModulePass


def _key(call):
    """The compatibility key of a batch_matmul call, or None when it cannot be combined."""
    attrs = call.attrs
    data, other = tensor_type(call.args[0]), tensor_type(call.args[1])
    result = tensor_type(call)
    if attrs["transpose_a"] or not attrs["transpose_b"]:
        return None
    if data is None or other is None or result is None or len(other.shape) != 3:
        return None
    if not isinstance(other.shape[1], int):
        return None
    return (attrs["out_dtype"], str(other.dtype), other.shape[0], str(result.dtype))


def _combine(calls, func=None):
    first = calls[0]
    combined = op("nn.batch_matmul", first.args[0],
                  op("concatenate", E.Tuple(tuple(c.args[1] for c in calls)), axis=1),
                  out_dtype=first.attrs["out_dtype"], transpose_a=False, transpose_b=True)
    replacements, offset = {}, 0
    for call in calls:
        width = tensor_type(call.args[1]).shape[1]
        replacements[call] = op("strided_slice", combined, begin=[0, 0, offset],
                                end=[-1, -1, width], strides=[1, 1, 1], slice_mode="size")
        offset += width
    return replacements


def combine_parallel_batch_matmul(func, min_num_branches=3, mod=None):
    """``func`` (type-checked) with sibling batch_matmul calls combined.

    Args:
        func: the function.
        min_num_branches: the least number of siblings worth combining.
        mod: the module ``func``'s globals live in (for type inference).

    Returns:
        The rewritten, type-checked function.
    """
    return combine_rounds(func, lambda f: sibling_groups(f, "nn.batch_matmul", _key,
                                                         min_num_branches), _combine, mod)


@dataclass(frozen=True)
class CombineParallelBatchMatmul(ModulePass):
    """Combine parallel batch_matmul calls (see the module docstring).

    Args:
        min_num_branches: the least number of siblings worth combining.
    """

    min_num_branches: int = 3
    name: ClassVar[str] = "CombineParallelBatchMatmul"
    opt_level: ClassVar[int] = 4
    required: ClassVar[tuple] = ("InferType",)

    def transform_module(self, mod, ctx=None):
        """The combined, type-checked copy of ``mod``."""
        return rewrite_typed_module(mod, lambda f: combine_parallel_batch_matmul(
            f, self.min_num_branches, mod))
