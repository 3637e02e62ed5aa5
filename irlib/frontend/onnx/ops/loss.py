"""Loss ONNX ops: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, composed from
gather, masks and reductions."""

from __future__ import annotations

from ..registry import converter
from .common import scalar


def _nll(ctx, log_prob, target, weight, attrs):
    """Per-element loss ``-log_prob[n, t, ...] * w[t]`` (0 where ``t == ignore_index``), reduced
    as ``reduction`` says (mean divides by the total weight)."""
    dtype = ctx.dtype(log_prob)
    ignore = attrs.get("ignore_index")
    safe_target = target
    keep = None
    if ignore is not None:
        keep = ctx.emit("not_equal", target, scalar(ctx, ignore, ctx.dtype(target)))
        safe_target = ctx.emit("where", keep, target, scalar(ctx, 0, ctx.dtype(target)))
    picked = ctx.emit("gather", log_prob, ctx.emit("expand_dims", safe_target, axis=1), axis=1)
    loss = ctx.emit("negative", ctx.emit("squeeze", picked, axis=[1]))
    if weight is not None:
        w = ctx.emit("take", weight, safe_target, axis=0, mode="clip")
    else:
        w = ctx.emit("ones_like", loss)
    if keep is not None:
        w = ctx.emit("where", keep, w, scalar(ctx, 0, dtype))
    if weight is not None or keep is not None:
        loss = ctx.emit("multiply", loss, w)
    reduction = attrs.get("reduction", "mean")
    if reduction == "none":
        return loss
    total = ctx.emit("sum", loss, axis=None, keepdims=False)
    if reduction == "sum":
        return total
    return ctx.emit("divide", total, ctx.emit("sum", w, axis=None, keepdims=False))


@converter("NegativeLogLikelihoodLoss")
def _negative_log_likelihood_loss(ctx, inputs, attrs):
    weight = inputs[2] if len(inputs) > 2 else None
    return _nll(ctx, inputs[0], inputs[1], weight, attrs)


@converter("SoftmaxCrossEntropyLoss")
def _softmax_cross_entropy_loss(ctx, inputs, attrs):
    log_prob = ctx.emit("nn.log_softmax", inputs[0], axis=1)
    weight = inputs[2] if len(inputs) > 2 else None
    return [_nll(ctx, log_prob, inputs[1], weight, attrs), log_prob]
