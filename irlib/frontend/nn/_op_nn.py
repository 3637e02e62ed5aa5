"""Neural-network ops of the nn builder: activations, normalisation, convolution, resizing,
timestep embedding and scaled dot-product attention.

Each op maps onto irlib's registered ops (``nn.relu``, ``erf``, ``nn.layer_norm``,
``nn.conv1d``, ``image.resize2d``, ``nn.batch_matmul``, ``nn.softmax``, ...), so the reference
interpreter and the graph executor's kernels run what they emit. See :mod:`irlib.frontend.nn.op`
for the conventions every op follows (tensors in, tensors out, ``name`` hints, OpError naming
the module path).
"""

from __future__ import annotations

import math
from typing import List, Optional, Tuple, Union

import numpy as np

from ... import op as _op
from ...ir import expr as E
from ._op_attention import scaled_dot_product_attention  # noqa: F401  (re-exported)
from ._op_common import check_tensor
from ._op_nn_util import check_float, const, emit_op, fail, ints, same_dtype
from .core import Tensor, get_default_dtype

__all__ = ["relu", "silu", "gelu", "softmax", "layer_norm", "rms_norm", "group_norm", "conv1d",
           "conv1d_transpose", "conv2d", "interpolate", "get_timestep_embedding",
           "scaled_dot_product_attention"]


# -- activations --------------------------------------------------------------------------------

def relu(x: Tensor, name: str = "relu") -> Tensor:
    """Rectified linear unit, ``max(x, 0)``.

    Args:
        x: the input.
        name: name hint.
    """
    x = check_tensor(x, "x", name)
    return emit_op(lambda: _op.nn.relu(x._expr), name)


def silu(x: Tensor, name: str = "silu") -> Tensor:
    """Sigmoid linear unit, ``x * sigmoid(x)`` (float inputs).

    Args:
        x: the input.
        name: name hint.
    """
    x = check_tensor(x, "x", name)
    check_float(x, name)
    return emit_op(lambda: _op.multiply(x._expr, _op.sigmoid(x._expr)), name)


def gelu(x: Tensor, approximate: Optional[str] = None, name: str = "gelu") -> Tensor:
    """Gaussian error linear unit, ``0.5 * x * (1 + erf(x / sqrt(2)))`` (float inputs).

    Args:
        x: the input.
        approximate: ``"tanh"`` for ``0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))``
            (PyTorch's ``approximate="tanh"``); None (or ``"none"``) for the exact form.
        name: name hint.
    """
    x = check_tensor(x, "x", name)
    check_float(x, name)
    if approximate not in (None, "none", "tanh"):
        raise fail(name, f"approximate must be None or 'tanh', got {approximate!r}")
    data, dtype = x._expr, x.dtype

    def build():
        if approximate == "tanh":
            cube = _op.multiply(_op.multiply(data, data), data)
            inner = _op.add(data, _op.multiply(const(0.044715, dtype), cube))
            cdf = _op.tanh(_op.multiply(const(math.sqrt(2.0 / math.pi), dtype), inner))
        else:
            cdf = _op.erf(_op.multiply(data, const(math.sqrt(0.5), dtype)))
        half = _op.multiply(const(0.5, dtype), data)
        return _op.multiply(half, _op.add(const(1.0, dtype), cdf))
    return emit_op(build, name)


def softmax(x: Tensor, axis: int = -1, name: str = "softmax") -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``axis`` (float inputs; negative axes count from the
    end).

    Args:
        x: the input.
        axis: the normalised axis.
        name: name hint.
    """
    x = check_tensor(x, "x", name)
    check_float(x, name)
    return emit_op(lambda: _op.nn.softmax(x._expr, axis=int(axis)), name)


# -- normalisation ------------------------------------------------------------------------------

def layer_norm(x: Tensor, normalized_shape: Union[int, List[int]], weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5,
               name: str = "layer_norm") -> Tensor:
    """Layer normalisation over the last ``len(normalized_shape)`` axes, then
    ``* weight + bias`` (as ``torch.nn.functional.layer_norm``).

    Args:
        x: the input.
        normalized_shape: the sizes of the normalised trailing axes (an int: the last axis).
        weight: the scale, of shape ``normalized_shape`` (ones when None).
        bias: the shift, of shape ``normalized_shape`` (zeros when None).
        eps: added to the variance.
        name: name hint.
    """
    x = check_tensor(x, "x", name)
    check_float(x, name)
    same_dtype(name, x, weight=weight, bias=bias)
    shape = [normalized_shape] if isinstance(normalized_shape, (int, np.integer)) \
        else list(normalized_shape)
    if not shape or len(shape) > x.ndim:
        raise fail(name, f"normalized_shape {normalized_shape} does not fit input of shape "
                          f"{x.shape}")
    trailing = x.shape[x.ndim - len(shape):]
    if any(isinstance(a, int) and isinstance(b, int) and a != b for a, b in zip(trailing, shape)):
        raise fail(name, f"normalized_shape {shape} does not match the input's trailing dims "
                          f"{trailing} (input shape {x.shape})")
    for what, param in (("weight", weight), ("bias", bias)):
        if param is not None and (len(param.shape) != len(shape) or any(
                isinstance(a, int) and isinstance(b, int) and a != b
                for a, b in zip(param.shape, shape))):
            raise fail(name, f"{what} has shape {param.shape}, expected {shape}")
    flat = len(shape) > 1

    def param_expr(param, fill):
        if param is None:
            if not all(isinstance(d, int) for d in shape):
                raise fail(name, f"a symbolic normalized_shape {shape} needs weight and bias")
            return const(np.full([int(np.prod(shape))], fill), x.dtype)
        return _op.reshape(param._expr, (-1,)) if flat else param._expr

    def build():
        data = _op.reshape(x._expr, (0,) * (x.ndim - len(shape)) + (-1,)) if flat else x._expr
        out = _op.nn.layer_norm(data, param_expr(weight, 1.0), param_expr(bias, 0.0), axis=-1,
                                epsilon=float(eps), center=bias is not None,
                                scale=weight is not None)
        return _op.reshape_like(out, x._expr) if flat else out
    return emit_op(build, name)


def rms_norm(x: Tensor, weight: Tensor, axes: Union[int, List[int]], epsilon: float = 1e-5,
             name: str = "rms_norm") -> Tensor:
    """Root-mean-square normalisation: ``x / sqrt(mean(x**2 over axes) + epsilon) * weight``.

    Args:
        x: the input.
        weight: the scale, shaped as ``x``'s dims on ``axes``.
        axes: the normalised axis or axes.
        epsilon: added to the mean square.
        name: name hint.
    """
    x = check_tensor(x, "x", name)
    weight = check_tensor(weight, "weight", name)
    check_float(x, name)
    same_dtype(name, x, weight=weight)
    return emit_op(lambda: _op.nn.rms_norm(x._expr, weight._expr, axis=axes,
                                         epsilon=float(epsilon)), name)


def group_norm(x: Tensor, num_groups: int, weight: Optional[Tensor], bias: Optional[Tensor],
               eps: float = 1e-5, channel_axis: int = 1, axes: Optional[List[int]] = None,
               name: str = "group_norm") -> Tensor:
    """Group normalisation: the channels on ``channel_axis`` split into ``num_groups``
    groups; each group is normalised over its channels and ``axes``, then scaled and shifted
    per channel (``torch.nn.functional.group_norm`` for the defaults).

    Args:
        x: the input.
        num_groups: the number of groups (must divide the channels).
        weight: the per-channel scale (None: no scale).
        bias: the per-channel shift (None: no shift).
        eps: added to the variance.
        channel_axis: the channel axis.
        axes: the other axes the statistics run over (default: every axis after the first
            two).
        name: name hint.
    """
    x = check_tensor(x, "x", name)
    check_float(x, name)
    same_dtype(name, x, weight=weight, bias=bias)
    ndim = x.ndim
    if not -ndim <= channel_axis < ndim:
        raise fail(name, f"channel_axis {channel_axis} out of range for rank {ndim}")
    channel_axis %= ndim
    axes = list(range(2, ndim)) if axes is None else [int(a) % ndim for a in axes]
    channels = x.shape[channel_axis]
    if isinstance(channels, int) and (num_groups < 1 or channels % num_groups):
        raise fail(name, f"num_groups={num_groups} must divide the {channels} channels")
    standard = sorted(axes) == [a for a in range(1, ndim) if a != channel_axis]
    if standard and isinstance(channels, int):
        def param_expr(param, fill):
            return const(np.full([channels], fill), x.dtype) if param is None else param._expr
        return emit_op(lambda: _op.nn.group_norm(
            x._expr, param_expr(weight, 1.0), param_expr(bias, 0.0), num_groups,
            axis=channel_axis, epsilon=float(eps), center=bias is not None,
            scale=weight is not None), name)
    return _group_norm_composed(x, num_groups, weight, bias, eps, channel_axis, axes, name)


def _group_norm_composed(x, num_groups, weight, bias, eps, channel_axis, axes, name):
    """group_norm over arbitrary ``axes``: split the channel axis into (groups, per_group),
    normalise over per_group and ``axes``, merge back, scale and shift."""
    if any(a == channel_axis for a in axes):
        raise fail(name, f"axes {axes} must not contain channel_axis {channel_axis}")
    ndim, dtype = x.ndim, x.dtype

    def build():
        split = (0,) * channel_axis + (-4, num_groups, -1) + (-2,)
        grouped = _op.reshape(x._expr, split)
        reduce_axes = [channel_axis + 1] + [a + 1 if a > channel_axis else a for a in axes]
        mean = _op.mean(grouped, axis=reduce_axes, keepdims=True)
        centered = _op.subtract(grouped, mean)
        variance = _op.mean(_op.multiply(centered, centered), axis=reduce_axes, keepdims=True)
        normed = _op.multiply(centered, _op.rsqrt(_op.add(variance, const(eps, dtype))))
        out = _op.reshape_like(normed, x._expr)
        shape = [1] * ndim
        shape[channel_axis] = -1
        if weight is not None:
            out = _op.multiply(out, _op.reshape(weight._expr, tuple(shape)))
        if bias is not None:
            out = _op.add(out, _op.reshape(bias._expr, tuple(shape)))
        return out
    return emit_op(build, name)


# -- convolution --------------------------------------------------------------------------------

def _conv_padding(padding, kernel, dilation, stride, n: int, name: str):
    """Relay padding (before..., after...) for an int/tuple/"same"/"valid" padding."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * (2 * n)
        if padding != "same":
            raise fail(name, f"padding must be an int, a tuple, 'same' or 'valid', got "
                              f"{padding!r}")
        if any(s != 1 for s in stride):
            raise fail(name, "padding='same' needs stride 1 (as in PyTorch)")
        if not all(isinstance(k, int) for k in kernel):
            raise fail(name, "padding='same' needs a static kernel size")
        totals = [d * (k - 1) for d, k in zip(dilation, kernel)]
        before = tuple(t // 2 for t in totals)
        return before + tuple(t - b for t, b in zip(totals, before))
    if padding is None:
        return (0,) * (2 * n)
    if isinstance(padding, (int, np.integer)):
        return (int(padding),) * (2 * n)
    values = tuple(int(p) for p in padding)
    if len(values) == n:
        return values + values
    if len(values) == 2 * n or (n == 1 and len(values) == 2):
        return values
    raise fail(name, f"padding must have {n} or {2 * n} values, got {padding!r}")


def _conv(builder, x, weight, bias, stride, padding, dilation, groups, n, name,
          output_padding=None):
    """Check the arguments of an ``n``-D (transposed) convolution, emit ``builder``'s call
    and add the bias along the channel axis."""
    x = check_tensor(x, "x", name)
    weight = check_tensor(weight, "weight", name)
    same_dtype(name, x, weight=weight, bias=bias)
    if x.ndim != n + 2 or weight.ndim != n + 2:
        raise fail(name, f"needs {n + 2}-D input and weight, got shapes {x.shape} and "
                          f"{weight.shape}")
    stride = ints(stride if stride is not None else 1, n, "stride", name)
    dilation = ints(dilation if dilation is not None else 1, n, "dilation", name)
    groups = 1 if groups is None else int(groups)
    pads = _conv_padding(padding, weight.shape[2:], dilation, stride, n, name)
    extra = {} if output_padding is None else {
        "output_padding": ints(output_padding, n, "output_padding", name)}
    if bias is not None and bias.ndim != 1:
        raise fail(name, f"bias must be 1-D, got shape {bias.shape}")

    def build():
        out = builder(x._expr, weight._expr, strides=stride, padding=pads, dilation=dilation,
                      groups=groups, **extra)
        return out if bias is None else _op.nn.bias_add(out, bias._expr, axis=1)
    return emit_op(build, name)


def conv1d(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
           stride: Optional[Union[int, Tuple]] = 1, padding: Optional[Union[int, Tuple, str]] = 0,
           dilation: Optional[Union[int, Tuple]] = 1, groups: Optional[int] = 1,
           name: str = "conv1d") -> Tensor:
    """1-D convolution of ``x`` ``(N, C, W)`` with ``weight`` ``(O, C/groups, K)``, plus
    ``bias`` ``(O,)``.

    Args:
        x: the input.
        weight: the kernel.
        bias: the optional per-output-channel bias.
        stride: an int or a 1-tuple.
        padding: an int, ``(p,)``, ``(before, after)``, ``"valid"`` or ``"same"`` (stride 1;
            the odd extra element goes after, as in PyTorch).
        dilation: an int or a 1-tuple.
        groups: the channel groups.
        name: name hint.
    """
    return _conv(_op.nn.conv1d, x, weight, bias, stride, padding, dilation, groups, 1, name)


def conv1d_transpose(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
                     stride: Optional[Union[int, Tuple[int]]] = 1,
                     padding: Optional[Union[int, Tuple[int, ...]]] = 0,
                     output_padding: Optional[Union[int, Tuple[int]]] = 0,
                     dilation: Optional[Union[int, Tuple]] = 1, groups: Optional[int] = 1,
                     name: str = "conv1d_transpose") -> Tensor:
    """1-D transposed convolution of ``x`` ``(N, C, W)`` with ``weight``
    ``(C, O/groups, K)``: out width ``(W - 1) * stride - 2 * padding + dilation * (K - 1)
    + output_padding + 1`` (``torch.nn.functional.conv_transpose1d``).

    Args:
        x: the input.
        weight: the kernel (IOW layout).
        bias: the optional per-output-channel bias.
        stride: an int or a 1-tuple.
        padding: an int or a 1-tuple (removed from both ends of the output).
        output_padding: extra length added at the end of the output.
        dilation: an int or a 1-tuple.
        groups: the channel groups.
        name: name hint.
    """
    if isinstance(padding, str):
        raise fail(name, f"padding must be an int or a tuple, got {padding!r}")
    return _conv(_op.nn.conv1d_transpose, x, weight, bias, stride, padding, dilation, groups, 1,
                 name, output_padding=output_padding if output_padding is not None else 0)


def conv2d(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
           stride: Optional[Union[int, Tuple]] = 1, padding: Optional[Union[int, Tuple, str]] = 0,
           dilation: Optional[Union[int, Tuple]] = 1, groups: Optional[int] = 1,
           name: str = "conv2d") -> Tensor:
    """2-D convolution of ``x`` ``(B, N, H, W)`` with ``weight`` ``(O, N/groups, kH, kW)``,
    plus ``bias`` ``(O,)``.

    Args:
        x: the input.
        weight: the kernel.
        bias: the optional per-output-channel bias.
        stride: an int or ``(sH, sW)``.
        padding: an int, ``(pH, pW)``, ``(top, left, bottom, right)``, ``"valid"`` or
            ``"same"`` (stride 1).
        dilation: an int or ``(dH, dW)``.
        groups: the channel groups.
        name: name hint.
    """
    return _conv(_op.nn.conv2d, x, weight, bias, stride, padding, dilation, groups, 2, name)


# -- resizing -----------------------------------------------------------------------------------

_MODES = {"nearest": ("nearest_neighbor", "asymmetric"),
          "nearest-exact": ("nearest_neighbor", "tf_half_pixel_for_nn"),
          "linear": ("linear", None), "bilinear": ("linear", None),
          "cubic": ("cubic", None), "bicubic": ("cubic", None)}


def interpolate(x: Tensor, size: Optional[Union[int, Tuple[int]]] = None,
                scale_factor: Optional[Union[float, Tuple[float]]] = None, mode: str = "nearest",
                align_corners: Optional[bool] = None,
                recompute_scale_factor: Optional[bool] = None, antialias: Optional[bool] = None,
                name: str = "interpolate") -> Tensor:
    """Resize the spatial dims of ``x`` (``(N, C, H, W)``, or ``(N, C, W)`` for the 1-D
    modes), as ``torch.nn.functional.interpolate``.

    The output size is ``size`` or ``floor(in * scale_factor)``; source coordinates are then
    computed from the input and output sizes (PyTorch's ``recompute_scale_factor=True``).
    Modes: ``nearest`` (floor of ``out * in / out``), ``nearest-exact``, ``bilinear`` /
    ``linear`` and ``bicubic`` (PyTorch's cubic kernel, a = -0.75); ``align_corners`` maps
    the corner pixels onto each other (linear and cubic only).

    Args:
        x: the input.
        size: the output spatial size (an int for every spatial dim, or one per dim).
        scale_factor: the multiplier of the spatial size (instead of ``size``).
        mode: the sampling mode.
        align_corners: see above (None is False).
        recompute_scale_factor: None or True (the only behaviour supported).
        antialias: None or False (antialiasing is not supported).
        name: name hint.
    """
    x = check_tensor(x, "x", name)
    if mode not in _MODES:
        raise fail(name, f"mode must be one of {sorted(_MODES)}, got {mode!r}")
    if recompute_scale_factor is False:
        raise fail(name, "recompute_scale_factor=False is not supported (the scale is "
                          "always recomputed from the sizes)")
    if antialias:
        raise fail(name, "antialias is not supported")
    if x.ndim not in (3, 4):
        raise fail(name, f"needs a 3-D (N, C, W) or 4-D (N, C, H, W) input, got {x.shape}")
    spatial = x.shape[2:]
    if (size is None) == (scale_factor is None):
        raise fail(name, "give exactly one of size and scale_factor")
    if size is not None:
        out = ints(size, len(spatial), "size", name)
    else:
        factors = (scale_factor,) * len(spatial) if isinstance(scale_factor, (int, float)) \
            else tuple(scale_factor)
        if len(factors) != len(spatial) or not all(isinstance(s, int) for s in spatial):
            raise fail(name, f"scale_factor {scale_factor} needs static spatial dims "
                              f"({len(spatial)} of them), input shape {x.shape}")
        out = tuple(int(math.floor(s * f)) for s, f in zip(spatial, factors))
    method, coord = _MODES[mode]
    if coord is None:
        coord = "align_corners" if align_corners else "half_pixel"
    elif align_corners:
        raise fail(name, f"align_corners applies to linear and cubic modes, not {mode!r}")
    rounding = "floor" if method == "nearest_neighbor" else ""

    def build():
        data = x._expr if x.ndim == 4 else _op.expand_dims(x._expr, axis=2)
        size2 = out if x.ndim == 4 else (1,) + out
        resized = _op.image.resize2d(data, size2, layout="NCHW", method=method,
                                     coordinate_transformation_mode=coord,
                                     rounding_method=rounding, cubic_alpha=-0.75)
        return resized if x.ndim == 4 else _op.squeeze(resized, axis=[2])
    return emit_op(build, name)


# -- timestep embedding -------------------------------------------------------------------------

def get_timestep_embedding(x: Tensor, embedding_dim: int, flip_sin_to_cos: bool = False,
                           downscale_freq_shift: float = 1, scale: float = 1,
                           max_period: int = 10000,
                           name: str = "get_timestep_embedding") -> Tensor:
    """Sinusoidal timestep embedding (DDPM; diffusers' ``get_timestep_embedding``).

    With ``half = embedding_dim // 2`` and ``freq[i] = exp(-ln(max_period) * i / (half -
    downscale_freq_shift))``, ``emb = scale * x[:, None] * freq[None, :]`` (in float32), the
    result is ``[sin(emb), cos(emb)]`` (``[cos, sin]`` when ``flip_sin_to_cos``), padded by
    one zero column when ``embedding_dim`` is odd, cast to the default dtype.

    Args:
        x: a 1-D tensor of N timesteps.
        embedding_dim: the output width.
        flip_sin_to_cos: put the cosines first.
        downscale_freq_shift: shifts the frequency denominator.
        scale: multiplies the arguments of sin/cos.
        max_period: the longest period.
        name: name hint.

    Returns:
        An ``(N, embedding_dim)`` tensor.
    """
    x = check_tensor(x, "x", name)
    if x.ndim != 1:
        raise fail(name, f"x must be 1-D, got shape {x.shape}")
    half = int(embedding_dim) // 2
    if half - downscale_freq_shift == 0:
        raise fail(name, f"embedding_dim // 2 - downscale_freq_shift is 0 (embedding_dim="
                          f"{embedding_dim}, downscale_freq_shift={downscale_freq_shift})")
    exponent = (np.float32(-math.log(max_period)) * np.arange(half, dtype="float32")
                / np.float32(half - downscale_freq_shift))
    freq = np.exp(exponent.astype("float32"))
    dtype = get_default_dtype()

    def build():
        steps = _op.cast(x._expr, "float32") if x.dtype != "float32" else x._expr
        emb = _op.multiply(_op.expand_dims(steps, axis=1), E.Constant(freq[None, :]))
        if scale != 1:
            emb = _op.multiply(const(scale, "float32"), emb)
        parts = [_op.cos(emb), _op.sin(emb)] if flip_sin_to_cos else [_op.sin(emb), _op.cos(emb)]
        emb = _op.concatenate(E.Tuple(parts), axis=-1)
        if int(embedding_dim) % 2 == 1:
            emb = _op.nn.pad(emb, ((0, 0), (0, 1)))
        return _op.cast(emb, dtype) if dtype != "float32" else emb
    return emit_op(build, name)
