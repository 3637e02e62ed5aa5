"""com.microsoft ops that exported (onnxruntime-optimized) models commonly contain, composed
from core ops: FusedMatMul, Gelu, FastGelu, BiasGelu, QuickGelu, LayerNormalization,
SimplifiedLayerNormalization, SkipLayerNormalization, SkipSimplifiedLayerNormalization, and
com.microsoft's DynamicQuantizeLinear/QuantizeLinear/DequantizeLinear (as the default
domain's)."""

from __future__ import annotations


from ..registry import converter
from . import elementwise, normalization, quantize
from .common import scalar
from .nn import _matmul_of

MS = "com.microsoft"


def _swap_last(ctx, value):
    rank = ctx.ndim(value)
    return ctx.emit("transpose", value,
                    axes=list(range(rank - 2)) + [rank - 1, rank - 2])


@converter("FusedMatMul", domain=MS)
def _fused_matmul(ctx, inputs, attrs):
    a, b = inputs
    if attrs.get("transBatchA", 0) or attrs.get("transBatchB", 0):
        from .common import unsupported
        unsupported("FusedMatMul transBatchA/transBatchB are not supported")
    if attrs.get("transA", 0):
        a = _swap_last(ctx, a)
    if attrs.get("transB", 0):
        b = _swap_last(ctx, b)
    result = _matmul_of(ctx, a, b)
    alpha = float(attrs.get("alpha", 1.0))
    if alpha != 1.0:
        result = ctx.emit("multiply", result, scalar(ctx, alpha, ctx.dtype(result)))
    return result


def _with_bias(ctx, inputs):
    data = inputs[0]
    if len(inputs) > 1 and inputs[1] is not None:
        data = ctx.emit("add", data, inputs[1])
    return data


@converter("Gelu", domain=MS)
def _gelu(ctx, inputs, attrs):
    return elementwise._gelu(ctx, [inputs[0]], {})


@converter("BiasGelu", domain=MS)
def _bias_gelu(ctx, inputs, attrs):
    return elementwise._gelu(ctx, [_with_bias(ctx, inputs)], {})


@converter("FastGelu", domain=MS)
def _fast_gelu(ctx, inputs, attrs):
    return elementwise._gelu(ctx, [_with_bias(ctx, inputs)], {"approximate": "tanh"})


@converter("QuickGelu", domain=MS)
def _quick_gelu(ctx, inputs, attrs):
    data = inputs[0]
    alpha = scalar(ctx, float(attrs.get("alpha", 1.702)), ctx.dtype(data))
    return ctx.emit("multiply", data, ctx.emit("sigmoid", ctx.emit("multiply", data, alpha)))


@converter("LayerNormalization", domain=MS)
def _layer_norm(ctx, inputs, attrs):
    return normalization._layer_norm(ctx, inputs, attrs)[:ctx.num_outputs]


@converter("SimplifiedLayerNormalization", domain=MS)
def _simplified_layer_norm(ctx, inputs, attrs):
    return normalization._rms_norm(ctx, inputs[:2], attrs)


def _skip_norm(simplified: bool):
    def convert(ctx, inputs, attrs):
        padded = list(inputs) + [None] * (5 - len(inputs))
        data, skip, gamma = padded[:3]
        beta = None if simplified else padded[3]
        bias = padded[3] if simplified else padded[4]
        total = ctx.emit("add", data, skip)
        if bias is not None:
            total = ctx.emit("add", total, bias)
        norm_attrs = {"epsilon": attrs.get("epsilon", 1e-12), "axis": -1}
        if simplified:
            out = normalization._rms_norm(ctx, [total, gamma], norm_attrs)
        else:
            args = [total, gamma] + ([beta] if beta is not None else [])
            out = normalization._layer_norm(ctx, args, norm_attrs)[0]
        # outputs: (output, mean, inv_std_var, input_skip_bias_sum); the statistics are
        # rarely consumed and are not produced here
        results = [out, None, None, total]
        return results[:ctx.num_outputs]
    return convert


converter("SkipLayerNormalization", domain=MS)(_skip_norm(False))
converter("SkipSimplifiedLayerNormalization", domain=MS)(_skip_norm(True))


@converter("DynamicQuantizeLinear", domain=MS)
def _dynamic_quantize_linear(ctx, inputs, attrs):
    return quantize._dynamic_quantize_linear(ctx, inputs, attrs)


@converter("QuantizeLinear", domain=MS)
def _quantize_linear(ctx, inputs, attrs):
    return quantize._quantize_linear(ctx, inputs, attrs)


@converter("DequantizeLinear", domain=MS)
def _dequantize_linear(ctx, inputs, attrs):
    return quantize._dequantize_linear(ctx, inputs, attrs)


