"""com.microsoft ops that exported (onnxruntime-optimized) models commonly contain, composed
from core ops: FusedMatMul, Gelu, FastGelu, BiasGelu, QuickGelu, LayerNormalization,
SimplifiedLayerNormalization, SkipLayerNormalization, SkipSimplifiedLayerNormalization, and
com.microsoft's DynamicQuantizeLinear/QuantizeLinear/DequantizeLinear (as the default
domain's), and DynamicQuantizeLSTM (dequantized weights, a float LSTM)."""

from __future__ import annotations


from ..registry import converter
from . import elementwise, normalization, quantize
from .common import scalar, unsupported
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




def _dequantized_weight(ctx, quantized, scale, zero_point):
    """A DynamicQuantizeLSTM weight ``[directions, rows, 4*hidden]`` as float32 in LSTM's
    layout ``[directions, 4*hidden, rows]``; ``scale``/``zero_point`` are per direction
    (``[directions]``) or per column (``[directions, 4*hidden]``)."""
    def shaped(param):
        newshape = [-1, 1, 1] if ctx.ndim(param) <= 1 else [ctx.shape(param)[0], 1, -1]
        return ctx.emit("reshape", ctx.emit("cast", param, dtype="float32"), newshape=newshape)
    work = ctx.emit("cast", quantized, dtype="float32")
    if zero_point is not None:
        work = ctx.emit("subtract", work, shaped(zero_point))
    work = ctx.emit("multiply", work, shaped(scale))
    return ctx.emit("transpose", work, axes=[0, 2, 1])


@converter("DynamicQuantizeLSTM", domain=MS)
def _dynamic_quantize_lstm(ctx, inputs, attrs):
    """com.microsoft DynamicQuantizeLSTM (what ``quantize_dynamic`` makes of an LSTM): an
    LSTM whose W ``[directions, input, 4*hidden]`` and R ``[directions, hidden, 4*hidden]``
    are int8/uint8 with scales and zero points (inputs 8-11). The weights are dequantized
    (folded to constants at build) and the cell runs in float32; onnxruntime instead
    quantizes the activations per step, so results differ by that rounding."""
    from .rnn import _lstm
    if len(inputs) < 11 or inputs[8] is None or inputs[10] is None:
        unsupported("DynamicQuantizeLSTM needs W_scale (input 8) and R_scale (input 10)")
    w = _dequantized_weight(ctx, inputs[1], inputs[8], inputs[9])
    r = _dequantized_weight(ctx, inputs[2], inputs[10], inputs[11] if len(inputs) > 11 else None)
    return _lstm(ctx, [inputs[0], w, r] + list(inputs[3:8]), attrs)
