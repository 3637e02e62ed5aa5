"""TfIdfVectorizer and ImageDecoder (onto the ``onnx.*`` ops of
:mod:`irlib.op.frontend.text` and
:mod:`irlib.op.frontend.image_decoder`), and the ``ai.onnx.preview.training`` optimizers Adagrad,
Adam and Momentum, composed from elementwise ops.

The optimizers take ``R`` (learning rate) and ``T`` (update count) scalars, then ``n`` tensors
to optimize, their ``n`` gradients and the ``n`` (Adagrad, Momentum) or ``2n`` (Adam) state
tensors; they return the new tensors then the new states, in the same order.
"""

from __future__ import annotations

from ....op.frontend import image_decoder
from ..registry import converter
from .common import scalar, unsupported

TRAINING_DOMAIN = "ai.onnx.preview.training"


@converter("TfIdfVectorizer", since=9)
def _tfidf_vectorizer(ctx, inputs, attrs):
    strings = attrs.get("pool_strings")
    ints = attrs.get("pool_int64s")
    if strings and ints:
        unsupported("TfIdfVectorizer takes pool_int64s or pool_strings, not both")
    pool = [s.decode() if isinstance(s, bytes) else str(s) for s in strings] if strings \
        else [int(v) for v in ints or ()]
    mode = attrs.get("mode", "TF")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    return ctx.emit("onnx.tfidf_vectorizer", inputs[0], mode=mode,
                    min_gram_length=int(attrs["min_gram_length"]),
                    max_gram_length=int(attrs["max_gram_length"]),
                    max_skip_count=int(attrs["max_skip_count"]),
                    ngram_counts=tuple(int(v) for v in attrs["ngram_counts"]),
                    ngram_indexes=tuple(int(v) for v in attrs["ngram_indexes"]),
                    pool=tuple(pool),
                    weights=tuple(float(v) for v in attrs.get("weights", ()) or ()))


@converter("ImageDecoder", since=20)
def _image_decoder(ctx, inputs, attrs):
    if not image_decoder.pillow_available():
        unsupported("ImageDecoder needs Pillow (pip install pillow) to decode images")
    pixel_format = attrs.get("pixel_format", "RGB")
    if pixel_format not in image_decoder.PIXEL_FORMATS:
        unsupported(f"ImageDecoder pixel_format {pixel_format!r} is not supported")
    return ctx.emit("onnx.image_decoder", inputs[0], pixel_format=pixel_format)


# -- ai.onnx.preview.training ------------------------------------------------------------------

def _split_groups(inputs, groups: int, op: str):
    """``(R, T, [[X...], [G...], ...])``: the variadic inputs cut into ``groups`` lists."""
    count, extra = divmod(len(inputs) - 2, groups)
    if len(inputs) < 2 + groups or extra:
        unsupported(f"{op} takes R, T and {groups} groups of equally many tensors, got "
                    f"{len(inputs)} inputs")
    rest = inputs[2:]
    return inputs[0], inputs[1], [rest[k * count:(k + 1) * count] for k in range(groups)]


def _like(ctx, value, dtype):
    return value if ctx.dtype(value) == dtype else ctx.emit("cast", value, dtype=dtype)


def _scaled(ctx, factor: float, value):
    """``factor * value`` (``factor`` a constant of ``value``'s dtype)."""
    return ctx.emit("multiply", scalar(ctx, factor, ctx.dtype(value)), value)


def _regularized(ctx, x, g, coefficient, dtype):
    """``coefficient * x + g`` (the gradient of the L2 term added)."""
    if coefficient == 0.0:
        return _like(ctx, g, dtype)
    return ctx.emit("add", _scaled(ctx, coefficient, x), _like(ctx, g, dtype))


def _started(ctx, t):
    """The boolean scalar ``T > 0``."""
    return ctx.emit("greater", t, scalar(ctx, 0, ctx.dtype(t)))


@converter("Adagrad", since=1, domain=TRAINING_DOMAIN)
def _adagrad(ctx, inputs, attrs):
    r, t, (xs, gs, hs) = _split_groups(inputs, 3, "Adagrad")
    decay = float(attrs.get("decay_factor", 0.0))
    epsilon = float(attrs.get("epsilon", 1e-6))
    norm = float(attrs.get("norm_coefficient", 0.0))
    new_xs, new_hs = [], []
    for x, g, h in zip(xs, gs, hs):
        dtype = ctx.dtype(x)
        # r / (1 + t * decay_factor): the learning rate decayed by the update count
        steps = ctx.emit("multiply", _like(ctx, t, dtype), scalar(ctx, decay, dtype))
        rate = ctx.emit("divide", _like(ctx, r, dtype),
                        ctx.emit("add", scalar(ctx, 1.0, dtype), steps))
        grad = _regularized(ctx, x, g, norm, dtype)
        h_new = ctx.emit("add", _like(ctx, h, dtype), ctx.emit("multiply", grad, grad))
        denom = ctx.emit("add", ctx.emit("sqrt", h_new), scalar(ctx, epsilon, dtype))
        step = ctx.emit("divide", ctx.emit("multiply", rate, grad), denom)
        new_xs.append(ctx.emit("subtract", x, step))
        new_hs.append(_like(ctx, h_new, ctx.dtype(h)))
    return new_xs + new_hs


@converter("Adam", since=1, domain=TRAINING_DOMAIN)
def _adam(ctx, inputs, attrs):
    r, t, (xs, gs, vs, hs) = _split_groups(inputs, 4, "Adam")
    alpha = float(attrs.get("alpha", 0.9))
    beta = float(attrs.get("beta", 0.999))
    epsilon = float(attrs.get("epsilon", 1e-6))
    norm = float(attrs.get("norm_coefficient", 0.0))
    norm_post = float(attrs.get("norm_coefficient_post", 0.0))
    started = _started(ctx, t)
    new_xs, new_vs, new_hs = [], [], []
    for x, g, v, h in zip(xs, gs, vs, hs):
        dtype = ctx.dtype(x)
        one = scalar(ctx, 1.0, dtype)
        grad = _regularized(ctx, x, g, norm, dtype)
        v_new = ctx.emit("add", _scaled(ctx, alpha, _like(ctx, v, dtype)),
                         _scaled(ctx, 1.0 - alpha, grad))
        h_new = ctx.emit("add", _scaled(ctx, beta, _like(ctx, h, dtype)),
                         _scaled(ctx, 1.0 - beta, ctx.emit("multiply", grad, grad)))
        # bias correction r * sqrt(1 - beta^t) / (1 - alpha^t), only once t > 0 (at t = 0
        # both factors are 0; the where keeps the division away from them)
        steps = _like(ctx, t, dtype)
        top = ctx.emit("sqrt", ctx.emit("subtract", one, ctx.emit(
            "power", scalar(ctx, beta, dtype), steps)))
        bottom = ctx.emit("where", started, ctx.emit("subtract", one, ctx.emit(
            "power", scalar(ctx, alpha, dtype), steps)), one)
        rate = _like(ctx, r, dtype)
        rate = ctx.emit("where", started,
                        ctx.emit("divide", ctx.emit("multiply", rate, top), bottom), rate)
        denom = ctx.emit("add", ctx.emit("sqrt", h_new), scalar(ctx, epsilon, dtype))
        x_new = ctx.emit("subtract", x, ctx.emit("multiply", rate,
                                                 ctx.emit("divide", v_new, denom)))
        if norm_post != 0.0:
            x_new = _scaled(ctx, 1.0 - norm_post, x_new)
        new_xs.append(x_new)
        new_vs.append(_like(ctx, v_new, ctx.dtype(v)))
        new_hs.append(_like(ctx, h_new, ctx.dtype(h)))
    return new_xs + new_vs + new_hs


@converter("Momentum", since=1, domain=TRAINING_DOMAIN)
def _momentum(ctx, inputs, attrs):
    r, t, (xs, gs, vs) = _split_groups(inputs, 3, "Momentum")
    for name in ("alpha", "beta", "mode", "norm_coefficient"):
        if name not in attrs:
            unsupported(f"Momentum needs the attribute {name!r}")
    mode = attrs["mode"]
    if mode not in ("standard", "nesterov"):
        unsupported(f"Momentum mode {mode!r} is not 'standard' or 'nesterov'")
    alpha, beta = float(attrs["alpha"]), float(attrs["beta"])
    norm = float(attrs["norm_coefficient"])
    started = _started(ctx, t)
    new_xs, new_vs = [], []
    for x, g, v in zip(xs, gs, vs):
        dtype = ctx.dtype(x)
        grad = _regularized(ctx, x, g, norm, dtype)
        # the gradient's coefficient is 1 on the first update (t == 0)
        coefficient = ctx.emit("where", started, scalar(ctx, beta, dtype),
                               scalar(ctx, 1.0, dtype))
        v_new = ctx.emit("add", _scaled(ctx, alpha, _like(ctx, v, dtype)),
                         ctx.emit("multiply", coefficient, grad))
        direction = v_new if mode == "standard" else \
            ctx.emit("add", grad, _scaled(ctx, alpha, v_new))
        new_xs.append(ctx.emit("subtract", x, ctx.emit("multiply", _like(ctx, r, dtype),
                                                       direction)))
        new_vs.append(_like(ctx, v_new, ctx.dtype(v)))
    return new_xs + new_vs
