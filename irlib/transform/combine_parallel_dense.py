"""CombineParallelDense: merge sibling ``nn.dense`` calls of one input (Relay's
``CombineParallelDense(min_num_branches=3, to_batch=True)``).

At least ``min_num_branches`` ``nn.dense`` calls on the *same* 2-D input with equal
``out_dtype`` are combined:

* ``to_batch=True`` (weights of one shape): one ``nn.batch_matmul(stack((x, x, ...), 0),
  stack((w1, w2, ...), 0))``, ``split`` into the branches along axis 0, and
  ``squeeze(..., axis=[0])`` per branch;
* ``to_batch=False`` (any output sizes): one ``nn.dense`` over the weights concatenated
  along axis 0, and a ``strided_slice`` of the last axis per branch.

Before/after (``to_batch``)::

    (nn.dense(%x, %w1), nn.dense(%x, %w2), nn.dense(%x, %w3))
    %0 = split(nn.batch_matmul(stack((%x, %x, %x)), stack((%w1, %w2, %w3))), 3);
    (squeeze(%0.0, axis=[0]), squeeze(%0.1, axis=[0]), squeeze(%0.2, axis=[0]))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import expr as E
from ._combine import combine_rounds, sibling_groups
from ._typed import op, rewrite_typed_module, tensor_type
from .pass_infra import ModulePass


def _key(to_batch):
    def key(call):
        data, weight = tensor_type(call.args[0]), tensor_type(call.args[1])
        if data is None or weight is None or len(data.shape) != 2:
            return None
        shape = tuple(weight.shape) if to_batch else tuple(weight.shape[1:])
        return (call.attrs["out_dtype"], shape, str(weight.dtype))
    return key


def _to_batch(calls, func=None):
    data = calls[0].args[0]
    count = len(calls)
    stacked = op("nn.batch_matmul", op("stack", E.Tuple((data,) * count), axis=0),
                 op("stack", E.Tuple(tuple(c.args[1] for c in calls)), axis=0),
                 out_dtype=calls[0].attrs["out_dtype"], transpose_a=False, transpose_b=True)
    parts = op("split", stacked, indices_or_sections=count, axis=0)
    return {call: op("squeeze", E.TupleGetItem(parts, i), axis=[0])
            for i, call in enumerate(calls)}


def _concat(calls, func=None):
    data = calls[0].args[0]
    widths = [tensor_type(c.args[1]).shape[0] for c in calls]
    combined = op("nn.dense", data, op("concatenate", E.Tuple(tuple(c.args[1] for c in calls)),
                                       axis=0),
                  units=sum(widths), out_dtype=calls[0].attrs["out_dtype"])
    replacements, offset = {}, 0
    for call, width in zip(calls, widths):
        replacements[call] = op("strided_slice", combined, begin=[0, offset], end=[-1, width],
                                strides=[1, 1], slice_mode="size")
        offset += width
    return replacements


def combine_parallel_dense(func, min_num_branches=3, to_batch=True, mod=None):
    """``func`` (type-checked) with sibling dense calls combined.

    Args:
        func: the function.
        min_num_branches: the least number of siblings worth combining.
        to_batch: combine into one ``batch_matmul`` (True) or one wider ``dense`` whose output is
            split (False).
        mod: the module ``func``'s globals live in (for type inference).
    """
    return combine_rounds(func, lambda f: sibling_groups(f, "nn.dense", _key(to_batch),
                                                         min_num_branches),
                          _to_batch if to_batch else _concat, mod)


@dataclass(frozen=True)
class CombineParallelDense(ModulePass):
    """Combine parallel dense calls (see the module docstring).

    Args:
        min_num_branches: the least number of siblings worth combining.
        to_batch: combine into one batch_matmul (same-shaped weights) rather than one dense.
    """

    min_num_branches: int = 3
    to_batch: bool = True
    name: ClassVar[str] = "CombineParallelDense"
    opt_level: ClassVar[int] = 4
    required: ClassVar[tuple] = ("InferType",)

    def transform_module(self, mod, ctx=None):
        """The combined, type-checked copy of ``mod``."""
        return rewrite_typed_module(mod, lambda f: combine_parallel_dense(
            f, self.min_num_branches, self.to_batch, mod))
