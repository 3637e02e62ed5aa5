"""Built-in layers of the nn builder (Relax's ``relax.frontend.nn`` modules).

Each layer is an :class:`~irlib.frontend.nn.Module` with the reference's constructor
signature; its parameters carry PyTorch's names and shapes (``weight``, ``bias``), so
``layer.load_state_dict(torch_layer.state_dict())`` binds a PyTorch layer's weights:

=================  ===============================  ===================================
layer              parameters                       PyTorch counterpart
=================  ===============================  ===================================
Linear             weight [out, in], bias [out]     torch.nn.Linear
Conv1D / Conv2D    weight [O, I/groups, k(, k)]     torch.nn.Conv1d / Conv2d
ConvTranspose1D    weight [I, O/groups, k]          torch.nn.ConvTranspose1d
Embedding          weight [num, dim]                torch.nn.Embedding
LayerNorm          weight, bias [n]                 torch.nn.LayerNorm
RMSNorm            weight [n] (+ bias [n])          torch.nn.RMSNorm (with bias=False)
GroupNorm          weight, bias [channels]          torch.nn.GroupNorm
=================  ===============================  ===================================

The effects (:class:`IOEffect`, :class:`KVCache`) live in :mod:`.effects` and are
re-exported here, as Relax keeps them in ``modules``.
"""

from __future__ import annotations

from typing import List, Optional, Union

from ... import op as _op
from . import _op_nn as nn_op
from ._op_common import check_tensor
from ._op_nn_util import emit_op, fail, same_dtype
from .core import Module, Parameter, Tensor
from .effects import IOEffect, KVCache

__all__ = ["ReLU", "SiLU", "GELU", "Identity", "Linear", "Conv1D", "Conv2D", "ConvTranspose1D",
           "Embedding", "LayerNorm", "RMSNorm", "GroupNorm", "IOEffect", "KVCache"]


class ReLU(Module):
    """The ReLU activation as a layer (``op.relu``)."""

    def forward(self, x: Tensor) -> Tensor:
        """``max(x, 0)``.

        Args:
            x: the input.
        """
        return nn_op.relu(x)


class SiLU(Module):
    """The SiLU activation as a layer (``op.silu``)."""

    def forward(self, x: Tensor) -> Tensor:
        """``x * sigmoid(x)``.

        Args:
            x: the input.
        """
        return nn_op.silu(x)


class GELU(Module):
    """The exact GELU activation as a layer (``op.gelu``)."""

    def forward(self, x: Tensor) -> Tensor:
        """``0.5 * x * (1 + erf(x / sqrt(2)))``.

        Args:
            x: the input.
        """
        return nn_op.gelu(x)


class Identity(Module):
    """A layer that returns its input (a placeholder that keeps parameter paths)."""

    def forward(self, x: Tensor) -> Tensor:
        """``x`` unchanged.

        Args:
            x: the input.
        """
        return x


class Linear(Module):
    """``y = x @ weight.T + bias`` over the last axis of ``x``.

    Args:
        in_features: the input width (an int, or a str/size expression for a symbolic one).
        out_features: the output width.
        bias: whether there is a bias.
        dtype: the parameters' dtype (the default dtype when None).
        out_dtype: the result dtype (the input's when None); the bias then has this dtype.
    """

    def __init__(self, in_features, out_features, bias: bool = True,
                 dtype: Optional[str] = None, out_dtype: Optional[str] = None):
        self.in_features = in_features
        self.out_features = out_features
        self.out_dtype = out_dtype
        self.weight = Parameter((out_features, in_features), dtype)
        self.bias = Parameter((out_features,), dtype if out_dtype is None else out_dtype) \
            if bias else None

    def forward(self, x: Tensor) -> Tensor:
        """Apply the layer.

        Args:
            x: ``[*batch, in_features]`` of the weight's dtype.

        Returns:
            ``[*batch, out_features]``.
        """
        x = check_tensor(x, "x", "linear")
        same_dtype("linear", x, weight=self.weight)
        out_dtype = self.out_dtype or ""
        out = emit_op(lambda: _op.nn.dense(x._expr, self.weight._expr, out_dtype=out_dtype),
                      "linear")
        if self.bias is not None:
            same_dtype("linear", out, bias=self.bias)
            out = emit_op(lambda: _op.add(out._expr, self.bias._expr), "linear")
        return out

    def to(self, dtype: Optional[str] = None) -> None:
        """Convert the weight (and the bias, unless ``out_dtype`` fixes its dtype) to
        ``dtype``: with an ``out_dtype`` the bias keeps it, so ``x + bias`` still matches.

        Args:
            dtype: the new dtype; None changes nothing.
        """
        self.weight.to(dtype=dtype)
        if self.bias is not None and self.out_dtype is None:
            self.bias.to(dtype=dtype)
        if dtype is not None and isinstance(getattr(self, "dtype", None), str):
            self.dtype = dtype


def _kernel(kernel_size, count: int, layer: str) -> tuple:
    """``kernel_size`` (an int, or ``count`` ints) as a tuple."""
    if isinstance(kernel_size, int):
        return (kernel_size,) * count
    kernel = tuple(int(k) for k in kernel_size)
    if len(kernel) != count:
        raise fail(layer, f"kernel_size must be an int or {count} ints, got {kernel_size!r}")
    return kernel


def _check_groups(layer: str, in_channels: int, out_channels: int, groups: int) -> None:
    """OpError unless ``groups`` divides both channel counts."""
    if groups < 1 or in_channels % groups or out_channels % groups:
        raise fail(layer, f"groups={groups} must divide in_channels={in_channels} and "
                          f"out_channels={out_channels}")


def _init_conv(module: Module, layer: str, ndim: int, in_channels: int, out_channels: int,
               kernel_size, stride, padding, dilation, groups: int, bias: bool,
               dtype: Optional[str], transposed: bool = False) -> None:
    """Check the channel groups and set a convolution layer's hyper-parameters, weight and
    bias on ``module`` (the code every ``Conv*`` layer's ``__init__`` shares).

    Args:
        module: the layer being initialised.
        layer: its class name, for errors.
        ndim: the number of spatial dims.
        in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
            dtype: the layer's arguments (see the layer classes).
        transposed: the weight is ``[in, out/groups, *k]`` (a transposed convolution)
            instead of ``[out, in/groups, *k]``.
    """
    _check_groups(layer, in_channels, out_channels, groups)
    module.in_channels, module.out_channels = in_channels, out_channels
    module.kernel_size, module.stride, module.padding = kernel_size, stride, padding
    module.dilation, module.groups = dilation, groups
    head = (in_channels, out_channels // groups) if transposed \
        else (out_channels, in_channels // groups)
    module.weight = Parameter((*head, *_kernel(kernel_size, ndim, layer)), dtype)
    module.bias = Parameter((out_channels,), dtype) if bias else None


class Conv1D(Module):
    """1-D convolution layer: ``op.conv1d`` with weight ``[out_channels, in_channels/groups,
    kernel_size]`` and bias ``[out_channels]``.

    Args:
        in_channels: input channels.
        out_channels: output channels.
        kernel_size: the kernel width.
        stride: the stride.
        padding: the padding (an int, or ``"same"``/``"valid"``).
        dilation: the dilation.
        groups: the channel groups.
        bias: whether there is a bias.
        dtype: the parameters' dtype.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 padding: int = 0, dilation: int = 1, groups: int = 1, bias: bool = True,
                 dtype: Optional[str] = None):
        _init_conv(self, "Conv1D", 1, in_channels, out_channels, kernel_size, stride, padding,
                   dilation, groups, bias, dtype)

    def forward(self, x: Tensor) -> Tensor:
        """Apply the layer.

        Args:
            x: ``[N, in_channels, W]``.
        """
        return nn_op.conv1d(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                            self.groups)


class Conv2D(Module):
    """2-D convolution layer: ``op.conv2d`` with weight ``[out_channels, in_channels/groups,
    kH, kW]`` and bias ``[out_channels]``.

    Args:
        in_channels: input channels.
        out_channels: output channels.
        kernel_size: the kernel size (an int for a square kernel, or ``(kH, kW)``).
        stride: the stride.
        padding: the padding (an int, a tuple, or ``"same"``/``"valid"``).
        dilation: the dilation.
        groups: the channel groups.
        bias: whether there is a bias.
        dtype: the parameters' dtype.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 padding: int = 0, dilation: int = 1, groups: int = 1, bias: bool = True,
                 dtype: Optional[str] = None):
        _init_conv(self, "Conv2D", 2, in_channels, out_channels, kernel_size, stride, padding,
                   dilation, groups, bias, dtype)

    def forward(self, x: Tensor) -> Tensor:
        """Apply the layer.

        Args:
            x: ``[N, in_channels, H, W]``.
        """
        return nn_op.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                            self.groups)


class ConvTranspose1D(Module):
    """1-D transposed convolution layer: ``op.conv1d_transpose`` with weight
    ``[in_channels, out_channels/groups, kernel_size]`` and bias ``[out_channels]``.

    Args:
        in_channels: input channels.
        out_channels: output channels.
        kernel_size: the kernel width.
        stride: the stride.
        padding: the padding removed from both ends of the output.
        output_padding: extra output length at the end.
        dilation: the dilation.
        groups: the channel groups.
        bias: whether there is a bias.
        dtype: the parameters' dtype.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 padding: int = 0, output_padding: int = 0, dilation: int = 1, groups: int = 1,
                 bias: bool = True, dtype: Optional[str] = None):
        self.output_padding = output_padding
        _init_conv(self, "ConvTranspose1D", 1, in_channels, out_channels, kernel_size, stride,
                   padding, dilation, groups, bias, dtype, transposed=True)

    def forward(self, x: Tensor) -> Tensor:
        """Apply the layer.

        Args:
            x: ``[N, in_channels, W]``.
        """
        return nn_op.conv1d_transpose(x, self.weight, self.bias, self.stride, self.padding,
                                      self.output_padding, self.dilation, self.groups)


class Embedding(Module):
    """A lookup table: row ``i`` of ``weight`` ``[num, dim]`` for every index ``i``.

    Args:
        num: the number of rows (an int or a symbolic size).
        dim: the row width.
        dtype: the table's dtype.
    """

    def __init__(self, num, dim, dtype: Optional[str] = None):
        self.num = num
        self.dim = dim
        self.weight = Parameter((num, dim), dtype)

    def forward(self, x: Tensor) -> Tensor:
        """Look the indices up.

        Args:
            x: integer indices of any shape (out-of-range indices are clipped).

        Returns:
            ``[*x.shape, dim]``.
        """
        x = check_tensor(x, "x", "embedding")
        if not x.dtype.startswith(("int", "uint")):
            raise fail("embedding", f"indices must have an integer dtype, got {x.dtype}")
        return emit_op(lambda: _op.take(self.weight._expr, x._expr, axis=0), "embedding")


class LayerNorm(Module):
    """Layer normalisation over the last axis (``op.layer_norm``).

    Args:
        normalized_shape: the size of the last axis.
        eps: added to the variance.
        elementwise_affine: whether there are ``weight`` and ``bias`` ``[normalized_shape]``.
        dtype: the parameters' dtype.
    """

    def __init__(self, normalized_shape: int, eps: Optional[float] = 1e-5,
                 elementwise_affine: bool = True, dtype: Optional[str] = None):
        self.normalized_shape = normalized_shape
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter((normalized_shape,), dtype)
            self.bias = Parameter((normalized_shape,), dtype)
        else:
            self.weight = self.bias = None

    def forward(self, x: Tensor) -> Tensor:
        """Apply the layer.

        Args:
            x: ``[..., normalized_shape]``.
        """
        return nn_op.layer_norm(x, self.normalized_shape, self.weight, self.bias,
                                eps=1e-5 if self.eps is None else self.eps)


class RMSNorm(Module):
    """Root-mean-square normalisation (``op.rms_norm``), plus a bias when ``bias`` (as in
    Relax; PyTorch's ``torch.nn.RMSNorm`` has none: use ``bias=False`` to load it).

    Args:
        hidden_size: the size of the normalised axis (``weight`` and ``bias`` have it).
        axes: the normalised axis or axes.
        epsilon: added to the mean square.
        bias: whether a bias ``[hidden_size]`` is added after scaling.
        dtype: the parameters' dtype.
    """

    def __init__(self, hidden_size: int, axes: Union[int, List[int]], epsilon: float = 1e-5,
                 bias: bool = True, dtype: Optional[str] = None):
        self.epsilon = epsilon
        self.axes = axes
        self.weight = Parameter((hidden_size,), dtype)
        self.bias = Parameter((hidden_size,), dtype) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        """Apply the layer.

        Args:
            x: the input; its dims on ``axes`` must match the weight.
        """
        out = nn_op.rms_norm(x, self.weight, self.axes, self.epsilon)
        if self.bias is not None:
            out = emit_op(lambda: _op.add(out._expr, self.bias._expr), "rms_norm")
        return out


class GroupNorm(Module):
    """Group normalisation (``op.group_norm``).

    Args:
        num_groups: the channel groups.
        num_channels: the channels (``weight`` and ``bias`` have this size).
        eps: added to the variance.
        affine: whether there are ``weight`` and ``bias``.
        dtype: the parameters' dtype.
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, dtype: Optional[str] = None):
        if num_groups < 1 or num_channels % num_groups:
            raise fail("GroupNorm", f"num_groups={num_groups} must divide num_channels="
                                    f"{num_channels}")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        if affine:
            self.weight = Parameter((num_channels,), dtype)
            self.bias = Parameter((num_channels,), dtype)
        else:
            self.weight = self.bias = None

    def forward(self, x: Tensor, channel_axis: int = 1, axes: Optional[List[int]] = None):
        """Apply the layer.

        Args:
            x: the input, channels on ``channel_axis``.
            channel_axis: the channel axis.
            axes: the other axes the statistics run over (default: every axis after the
                first two).
        """
        return nn_op.group_norm(x, self.num_groups, self.weight, self.bias, self.eps,
                                channel_axis, axes)
