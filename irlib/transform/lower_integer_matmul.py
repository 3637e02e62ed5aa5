"""LowerIntegerMatMul: run an integer matrix product whose result is cast to float as a float
product, exactly.

A dynamically quantized Linear layer (ONNX ``DynamicQuantizeLinear`` -> ``MatMulInteger`` ->
``Cast`` -> ``Mul``, what ``onnxruntime.quantization.quantize_dynamic`` writes) imports as ::

    %q = cast(clip(add(round(divide(%x, %s)), %zp), 0f, 255f), dtype="uint8")
    %a = subtract(cast(%q, dtype="int32"), cast(%zpu8, dtype="int32"))
    %y = cast(nn.matmul(%a, %W /* int32 constant */), dtype="float32")

The integer product has no BLAS, and the integer casts keep the quantize arithmetic out of the
generated (float-only) kernels. Integers and their sums are exact in float32 up to ``2**24``,
so when every partial sum of the product stays below that bound the float GEMM computes the
same integers. :class:`~irlib.transform._value_range.ValueRanges` gives ``|%a| <= 255`` here;
for a constant ``%W`` the bound used is ``max|a| * max_j sum_k |W[k, j]|`` (no order of
summation can exceed it), else ``K * max|a| * max|W|``. When it holds, the cast becomes ::

    %y = nn.matmul(subtract(clip(...), clip(...zero point...)), %W_float32)

with the casts pushed down to where the values already are floats (a float -> int cast of an
integral value in range, an int -> int cast that cannot wrap and exact integer arithmetic
change no value: see :func:`float_form`).

When it does not hold (the 1536-deep FFN products) but the activation is ``p - c`` with
``p`` of one sign (the uint8 ``q``) and ``c`` constant along the depth (the zero point), the
positive and the negative terms of a column bound the partial sums of ``p @ W`` separately
(about half the absolute sum); if ``p @ W`` and ``c * colsum(W)`` are both exact, the cast
becomes ``subtract(nn.matmul(p, W), multiply(c, colsum(W)))``, one rounding of the exact
integer. Otherwise, when the first bound holds for pieces of the depth, the depth is split
into the fewest equal chunks that each hold it: two chunks add in the target float type
(one rounding of the exact sum: the value ``cast`` gives), more add in float64 and cast
once. A product whose integer result could wrap around (beyond its dtype) is left alone, as
is every other case.

The result is bit-for-bit the integer path's, NaN aside: a float -> integer cast of NaN has no
defined value (see :mod:`irlib.transform._value_range`). Runs at ``opt_level`` 3, after
FoldConstant (weights are constants by then) and before FuseOps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..ir import expr as E
from ..ir.functor import ExprMutator, post_order, use_counts
from ._typed import op, op_name, rewrite_typed_module, tensor_type
from ._exact_product import MAX_CHUNKS, PRODUCT_DTYPE, chunk_bounds, one_signed_bound
from ._value_range import ValueRanges, dtype_range, exact_integer_limit
from .pass_infra import ModulePass, register_pass

__all__ = ["LowerIntegerMatMul", "lower_integer_matmul", "float_form", "chunk_bounds",
           "PRODUCT_DTYPE", "MAX_CHUNKS"]

_ARITH = ("add", "subtract", "multiply", "negative")


def _is_int(node) -> bool:
    ty = tensor_type(node)
    return ty is not None and np.dtype(ty.dtype).kind in "iu"


def _static_shape(node):
    ty = tensor_type(node)
    if ty is None:
        return None
    try:
        return tuple(int(d) for d in ty.shape)
    except (TypeError, ValueError):
        return None


def _transparent(node, ranges: ValueRanges, dtype: str) -> bool:
    """Whether ``float_form`` looks through ``node`` (it changes no value on the way)."""
    name = op_name(node)
    if not _is_int(node):
        return False
    here = ranges[node]
    if name == "cast":
        source = node.args[0]
        inner = ranges[source]
        if inner is None or not inner.integral:
            return False
        full = dtype_range(tensor_type(node).dtype)
        return inner.within(full.lo, full.hi) and (
            _is_int(source) or tensor_type(source).dtype in ("float32", "float64", "float16"))
    if name in _ARITH:
        limit = exact_integer_limit(dtype)
        parts = [ranges[a] for a in node.args]
        return here is not None and not ranges.may_wrap(node) and \
            here.magnitude <= limit and all(
            p is not None and p.integral and p.magnitude <= limit for p in parts)
    return False


def float_form(root, ranges: ValueRanges, dtype: str, rewritten=None, cache=None):
    """An expression of float ``dtype`` equal, element for element, to ``cast(root, dtype)``.

    Casts are pushed below integer arithmetic that is exact in ``dtype`` and through casts
    that change no value, down to float values (returned as they are) or to the integer
    leaves (cast there). Iterative; shared sub-expressions stay shared.

    Args:
        root: a type-checked integer expression.
        ranges: the :class:`ValueRanges` of the expression.
        dtype: the float dtype wanted.
        rewritten: ``{original node: its replacement}`` for leaves (a mutator's memo).
        cache: a dict kept across calls so forms of shared nodes are built once.
    """
    rewritten = {} if rewritten is None else rewritten
    cache = {} if cache is None else cache
    nodes = post_order(root, children_of=lambda n: n.args if (n, dtype) not in cache
                       and _transparent(n, ranges, dtype) else ())
    for node in nodes:
        key = (node, dtype)
        if key in cache:
            continue
        new = rewritten.get(node, node)
        ty = tensor_type(node)
        if ty is not None and ty.dtype == dtype:
            cache[key] = new
        elif isinstance(node, E.Constant) and _is_int(node):
            cache[key] = E.Constant(node.data.numpy().astype(dtype))
        elif not _transparent(node, ranges, dtype):
            cache[key] = op("cast", new, dtype=dtype)
        elif op_name(node) == "cast":
            source = node.args[0]
            cache[key] = cache[(source, dtype)] if _is_int(source) else \
                op("cast", rewritten.get(source, source), dtype=dtype) \
                if tensor_type(source).dtype != dtype else rewritten.get(source, source)
        else:
            cache[key] = op(op_name(node), *[cache[(a, dtype)] for a in node.args])
    return cache[(root, dtype)]


class _Lower(ExprMutator):
    def __init__(self, ranges: ValueRanges, uses: dict):
        super().__init__()
        self.ranges, self.uses, self.forms = ranges, uses, {}

    def enter_function(self, node):
        return not node.get_attr("Primitive")

    def visit_call(self, node, original):
        target = tensor_type(original)
        if op_name(original) != "cast" or target is None or \
                target.dtype not in ("float32", "float64"):
            return node
        source = original.args[0]
        if op_name(source) in ("nn.matmul", "nn.dense") and self.uses.get(source) == 1:
            lowered = self._lower(source, target.dtype)
            if lowered is not None:
                return lowered
        if _transparent(source, self.ranges, target.dtype):
            # a zero point's cast(cast(clip(round(..)), "uint8"), "float32"): the float value
            return float_form(source, self.ranges, target.dtype, self.memo, self.forms)
        return node

    def _lower(self, product, target: str):
        tensor_a, tensor_b = product.args
        attrs = product.attrs
        dense = op_name(product) == "nn.dense"
        trans_a = bool(attrs.get("transpose_a", False)) if not dense else False
        trans_b = True if dense else bool(attrs.get("transpose_b", False))
        if not (_is_int(tensor_a) and _is_int(tensor_b) and _is_int(product)):
            return None
        shape_a, shape_b = _static_shape(tensor_a), _static_shape(tensor_b)
        range_a, range_b = self.ranges[tensor_a], self.ranges[tensor_b]
        if shape_a is None or shape_b is None or len(shape_b) != 2 or \
                range_a is None or range_b is None:
            return None
        depth = shape_a[0] if trans_a else shape_a[-1]
        constant = isinstance(tensor_b, E.Constant)
        weight_abs = None
        if constant:
            weight = tensor_b.data.numpy()
            weight_abs = np.abs(weight.astype(np.int64))
            weight_abs = weight_abs.T if trans_b else weight_abs
        chunks = chunk_bounds(depth, range_a.magnitude, weight_abs, range_b.magnitude)
        if chunks is None or (len(chunks) > 1 and (trans_a or not constant)):
            return None
        if dtype_range(tensor_type(product).dtype).hi < dtype_range("int32").hi:
            return None                     # an int8/int16 product wraps far earlier
        if len(chunks) > 1 and not trans_a:
            split = self._offset_form(tensor_a, shape_a, weight.T if trans_b else weight)
            if split is not None:
                return self._offset_product(product, split, weight, dense, trans_b, target)
        data = float_form(tensor_a, self.ranges, PRODUCT_DTYPE, self.memo, self.forms)
        parts = []
        for k0, k1 in chunks:
            if constant:
                piece = weight[:, k0:k1] if trans_b else weight[k0:k1]
                right = E.Constant(np.ascontiguousarray(piece, dtype=PRODUCT_DTYPE))
            else:
                right = float_form(tensor_b, self.ranges, PRODUCT_DTYPE, self.memo, self.forms)
            left = data if len(chunks) == 1 else op(
                "strided_slice", data, begin=[k0], end=[k1], axes=[len(shape_a) - 1])
            if dense:
                parts.append(op("nn.dense", left, right, units=attrs.get("units")))
            else:
                parts.append(op("nn.matmul", left, right, units=attrs.get("units"),
                                transpose_a=trans_a, transpose_b=trans_b))
        if len(parts) == 1:
            result, dtype = parts[0], PRODUCT_DTYPE
        elif len(parts) == 2 and target == PRODUCT_DTYPE:
            result, dtype = op("add", parts[0], parts[1]), PRODUCT_DTYPE  # one rounding
        else:
            result, dtype = op("cast", parts[0], dtype="float64"), "float64"
            for part in parts[1:]:
                result = op("add", result, op("cast", part, dtype="float64"))
        return result if dtype == target else op("cast", result, dtype=target)


    def _offset_form(self, tensor_a, shape_a, weight_kn):
        """``(p, c)`` when ``tensor_a`` is ``p - c`` with ``p`` of one sign, ``c`` constant
        along the depth, and both ``p @ W`` and ``c * colsum(W)`` exact in float32."""
        if op_name(tensor_a) != "subtract":
            return None
        p, c = tensor_a.args
        range_p, range_c, shape_c = self.ranges[p], self.ranges[c], _static_shape(c)
        if not (_is_int(p) and _is_int(c) and _static_shape(p) == shape_a) or \
                shape_c is None or (shape_c and shape_c[-1] != 1) or \
                range_p is None or range_c is None or self.ranges.may_wrap(tensor_a) or \
                not (range_p.lo >= 0 or range_p.hi <= 0):
            return None
        limit = exact_integer_limit(PRODUCT_DTYPE)
        colsum = np.abs(weight_kn.astype(np.int64).sum(axis=0)).max(initial=0)
        if one_signed_bound(weight_kn, range_p.magnitude) > limit or \
                range_c.magnitude * float(colsum) > limit:
            return None
        return p, c

    def _offset_product(self, product, split, weight, dense, trans_b, target):
        """``p @ W - c * colsum(W)``: two exact float32 integers, one rounding apart."""
        p, c = split
        forms = [float_form(x, self.ranges, PRODUCT_DTYPE, self.memo, self.forms)
                 for x in (p, c)]
        right = E.Constant(np.ascontiguousarray(weight, dtype=PRODUCT_DTYPE))
        units = product.attrs.get("units")
        main = op("nn.dense", forms[0], right, units=units) if dense else \
            op("nn.matmul", forms[0], right, units=units, transpose_b=trans_b)
        colsum = (weight.T if trans_b else weight).astype(np.int64).sum(axis=0)
        correction = op("multiply", forms[1], E.Constant(colsum.astype(PRODUCT_DTYPE)))
        if target != PRODUCT_DTYPE:
            main, correction = (op("cast", x, dtype=target) for x in (main, correction))
        return op("subtract", main, correction)


def lower_integer_matmul(func: E.Function) -> E.Function:
    """``func`` (type-checked) with its exact integer products cast to float run as float
    products (module docstring)."""
    return _Lower(ValueRanges(func.body), use_counts(func)).visit(func)


@dataclass(frozen=True)
class LowerIntegerMatMul(ModulePass):
    """Run integer matrix products cast to float on the float GEMM when that is exact."""

    name: ClassVar[str] = "LowerIntegerMatMul"
    opt_level: ClassVar[int] = 3
    required: ClassVar[tuple] = ("InferType",)

    def transform_module(self, mod, ctx=None):
        """The rewritten, type-checked copy of ``mod``."""
        return rewrite_typed_module(mod, lower_integer_matmul)


register_pass("LowerIntegerMatMul", LowerIntegerMatMul)
