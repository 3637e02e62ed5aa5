"""CUDA kernels of the elementwise unary ops, the broadcasting binary ops and the reductions
(``sum``/``mean``/``max``/``min``/``prod`` and the global pools).

One kernel per op is made from a device function by a small factory. Broadcasting binary
kernels take the output shape and each input's element strides (0 along broadcast axes) and
unravel the flat thread index themselves.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from .. import register_kernel
from .._geometry import as_arb, is_float, normalize_axes, reduced_shape, reference
from ._launch import run


def _unary_kernel(function):
    @cuda.jit
    def kernel(x, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = function(x[i])
    return kernel


def _binary_kernel(function):
    @cuda.jit
    def kernel(a, b, shape, strides_a, strides_b, out):
        i = cuda.grid(1)
        if i >= out.size:
            return
        rest = i
        ia = 0
        ib = 0
        for d in range(shape.size - 1, -1, -1):
            k = rest % shape[d]
            rest //= shape[d]
            ia += k * strides_a[d]
            ib += k * strides_b[d]
        out[i] = function(a[ia], b[ib])
    return kernel


def _device(function):
    return cuda.jit(device=True)(function)


def _exp(x):
    return math.exp(x)


def _log(x):
    return math.log(x)


def _sqrt(x):
    return math.sqrt(x)


def _tanh(x):
    return math.tanh(x)


def _sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


def _relu(x):
    return max(x, 0.0)


def _negative(x):
    return -x


def _abs(x):
    return abs(x)


def _add(a, b):
    return a + b


def _subtract(a, b):
    return a - b


def _multiply(a, b):
    return a * b


def _divide(a, b):
    return a / b


def _maximum(a, b):
    return max(a, b)


def _minimum(a, b):
    return min(a, b)


def _power(a, b):
    return a ** b


UNARY = {"exp": _exp, "log": _log, "sqrt": _sqrt, "tanh": _tanh, "sigmoid": _sigmoid,
         "nn.relu": _relu, "negative": _negative, "abs": _abs}
BINARY = {"add": _add, "subtract": _subtract, "multiply": _multiply, "divide": _divide,
          "maximum": _maximum, "minimum": _minimum, "power": _power}


def _register_unary(op_name, function):
    kernel = _unary_kernel(_device(function))

    @register_kernel(op_name, "cuda")
    def unary(data, **attrs):
        if not is_float(data) or data.ndim == 0:
            return reference(op_name, (data,), attrs)
        return (run(kernel, (data.size,), data.dtype, data.reshape(-1)).reshape(data.shape),)
    unary.__doc__ = f"``{op_name}`` on CUDA."


def _register_binary(op_name, function):
    kernel = _binary_kernel(_device(function))

    @register_kernel(op_name, "cuda")
    def binary(lhs, rhs, **attrs):
        if not is_float(lhs, rhs):
            return reference(op_name, (lhs, rhs), attrs)
        shape = np.broadcast_shapes(lhs.shape, rhs.shape)
        if not shape:
            return reference(op_name, (lhs, rhs), attrs)
        strides = [_broadcast_strides(a, shape) for a in (lhs, rhs)]
        out = run(kernel, (int(np.prod(shape)),), lhs.dtype, np.ascontiguousarray(lhs).reshape(-1),
                  np.ascontiguousarray(rhs).reshape(-1), np.array(shape, np.int64), *strides)
        return (out.reshape(shape),)
    binary.__doc__ = f"``{op_name}`` on CUDA (numpy broadcasting)."


def _broadcast_strides(array, shape):
    """Element strides of C-contiguous ``array`` broadcast to ``shape`` (0: broadcast)."""
    padded = (1,) * (len(shape) - array.ndim) + array.shape
    strides, step = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        strides[d] = step if padded[d] != 1 else 0
        step *= padded[d]
    return np.array(strides, np.int64)


for _name, _function in UNARY.items():
    _register_unary(_name, _function)
for _name, _function in BINARY.items():
    _register_binary(_name, _function)


@cuda.jit
def reduce_kernel(x, kind, out):
    """Reduce ``x (A, R, B)`` over ``R`` into ``out (A, B)``; kind 0 sum, 1 mean, 2 max,
    3 min, 4 prod; one thread per output."""
    index = cuda.grid(1)
    rows, extent, inner = x.shape
    if index >= rows * inner:
        return
    a = index // inner
    b = index % inner
    if kind == 2:
        acc = -math.inf
    elif kind == 3:
        acc = math.inf
    elif kind == 4:
        acc = 1.0
    else:
        acc = 0.0
    for r in range(extent):
        value = x[a, r, b]
        if kind <= 1:
            acc += value
        elif kind == 2:
            acc = max(acc, value)
        elif kind == 3:
            acc = min(acc, value)
        else:
            acc *= value
    if kind == 1:
        acc /= extent
    out[a, b] = acc


def _reduce(data, axes, kind):
    x = as_arb(data, axes)
    return run(reduce_kernel, (x.shape[0], x.shape[2]), data.dtype, x, kind)


def _register_reduce(op_name, kind):
    @register_kernel(op_name, "cuda")
    def reduce(data, axis=None, keepdims=False, exclude=False, **_):
        attrs = dict(axis=axis, keepdims=keepdims, exclude=exclude)
        if not is_float(data) or data.ndim == 0 or data.size == 0 or np.isnan(data).any():
            return reference(op_name, (data,), attrs)
        axes = normalize_axes(axis, data.ndim)
        if exclude:
            axes = tuple(a for a in range(data.ndim) if a not in axes)
        return (_reduce(data, axes, kind).reshape(reduced_shape(data.shape, axes, keepdims)),)
    reduce.__doc__ = f"``{op_name}`` on CUDA."


for _kind, _name in enumerate(("sum", "mean", "max", "min", "prod")):
    _register_reduce(_name, _kind)


def _register_global(op_name, kind):
    @register_kernel(op_name, "cuda")
    def global_pool(data, layout="NCHW", out_layout="", **_):
        if not is_float(data) or data.ndim != 4 or data.size == 0:
            return reference(op_name, (data,), dict(layout=layout, out_layout=out_layout))
        axes = (layout.index("H"), layout.index("W"))
        return (_reduce(data, tuple(sorted(axes)), kind).reshape(
            reduced_shape(data.shape, axes, True)),)
    global_pool.__doc__ = f"``{op_name}`` on CUDA: a reduction over the spatial axes."


_register_global("nn.global_avg_pool2d", 1)
_register_global("nn.global_max_pool2d", 2)
