"""Layer helpers that create their own weight variables (``relay.testing.layers``).

Each helper takes the base name as the ``name=`` keyword and names its variables
``<name>_weight``, ``<name>_bias``, ``<name>_gamma``, ``<name>_beta``, ``<name>_moving_mean``
and ``<name>_moving_var``, which is what :func:`zoo.create_workload`'s initializer keys on.
The variables are created without types, as in the reference: type inference derives them
from the data type and the attributes (the argument-type rules of ``irlib.op``).
"""

from __future__ import annotations

import irlib
from irlib import nn


def _pop_name(kwargs: dict) -> str:
    if "name" not in kwargs:
        raise TypeError("a layer helper needs the name= keyword (the weight names' prefix)")
    return kwargs.pop("name")


def batch_norm_infer(data, gamma=None, beta=None, moving_mean=None, moving_var=None, **kwargs):
    """Batch normalisation that creates its four parameters and returns output 0.

    Args:
        data: the input expression.
        gamma, beta, moving_mean, moving_var: the parameters; created as
            ``<name>_gamma`` and so on when not given (gamma even with ``scale=False``).
        **kwargs: ``name=`` (required) and the attributes of ``irlib.nn.batch_norm``.

    Returns:
        The normalised tensor (field 0 of batch_norm's tuple).

    Raises:
        TypeError: if ``name`` is missing.
    """
    name = _pop_name(kwargs)
    gamma = gamma if gamma is not None else irlib.var(name + "_gamma")
    beta = beta if beta is not None else irlib.var(name + "_beta")
    moving_mean = moving_mean if moving_mean is not None else irlib.var(name + "_moving_mean")
    moving_var = moving_var if moving_var is not None else irlib.var(name + "_moving_var")
    return nn.batch_norm(data, gamma=gamma, beta=beta, moving_mean=moving_mean,
                         moving_var=moving_var, **kwargs)[0]


def conv2d(data, weight=None, **kwargs):
    """``irlib.nn.conv2d`` that creates ``<name>_weight`` when no weight is given.

    Args:
        data: the input expression.
        weight: the kernel, or None to create it.
        **kwargs: ``name=`` (required) and the attributes of ``irlib.nn.conv2d``.

    Returns:
        The convolution call.

    Raises:
        TypeError: if ``name`` is missing.
    """
    name = _pop_name(kwargs)
    weight = weight if weight is not None else irlib.var(name + "_weight")
    return nn.conv2d(data, weight, **kwargs)


def conv2d_transpose(data, weight=None, **kwargs):
    """``irlib.nn.conv2d_transpose`` that creates ``<name>_weight`` when no weight is given.

    Args:
        data: the input expression.
        weight: the kernel, or None to create it.
        **kwargs: ``name=`` (required) and the attributes of ``irlib.nn.conv2d_transpose``.

    Returns:
        The transposed-convolution call.

    Raises:
        TypeError: if ``name`` is missing.
    """
    name = _pop_name(kwargs)
    weight = weight if weight is not None else irlib.var(name + "_weight")
    return nn.conv2d_transpose(data, weight, **kwargs)


def dense_add_bias(data, weight=None, bias=None, units=None, **kwargs):
    """``dense`` followed by ``bias_add(axis=-1)``, creating ``<name>_weight`` and ``<name>_bias``.

    Args:
        data: the input expression.
        weight: the (units, in) matrix, or None to create it.
        bias: the (units,) vector, or None to create it.
        units: the number of output units.
        **kwargs: ``name=`` (required) and the other attributes of ``irlib.nn.dense``.

    Returns:
        The biased dense output.

    Raises:
        TypeError: if ``name`` is missing.
    """
    name = _pop_name(kwargs)
    weight = weight if weight is not None else irlib.var(name + "_weight")
    bias = bias if bias is not None else irlib.var(name + "_bias")
    return nn.bias_add(nn.dense(data, weight, units, **kwargs), bias, axis=-1)


_KERNEL_LAYOUTS = {"NCHW": "OIHW", "NHWC": "HWIO"}
_DEPTHWISE_KERNEL_LAYOUTS = {"NCHW": "OIHW", "NHWC": "HWOI"}


def conv_kernel_layout(data_layout, is_depthwise=False):
    """The kernel layout that goes with a data layout.

    Args:
        data_layout: ``"NCHW"`` or ``"NHWC"``.
        is_depthwise: whether the convolution is depthwise (NHWC then uses HWOI).

    Returns:
        ``"OIHW"`` for NCHW; ``"HWIO"`` (``"HWOI"`` if depthwise) for NHWC.

    Raises:
        ValueError: for another data layout.
    """
    table = _DEPTHWISE_KERNEL_LAYOUTS if is_depthwise else _KERNEL_LAYOUTS
    if data_layout not in table:
        raise ValueError(f"unknown data layout {data_layout!r}; expected one of {sorted(table)}")
    return table[data_layout]


def make_function(output):
    """The network function over ``output``'s free variables.

    Args:
        output: the network's output expression.

    Returns:
        ``Function(free_vars(output), output)``; weights stay unannotated (type inference
        gives them their types).
    """
    return irlib.Function(tuple(irlib.analysis.free_vars(output)), output)
