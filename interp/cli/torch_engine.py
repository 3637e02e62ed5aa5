"""Running a typed irlib function as PyTorch ops, for ``irlib bench --vs torch``.

The function's dataflow is listed once in topological order; each call runs the matching
``torch`` / ``torch.nn.functional`` op (eager mode, no autograd), so the timing is PyTorch's
own kernels on the same graph and the same weights. The table covers the ops of the zoo's
convolutional and dense models in NCHW layout; anything else raises
:class:`TorchEngineError` naming the op.
"""

from __future__ import annotations

import numpy as np

from irlib.errors import IRError
from irlib.ir import expr as E
from irlib.ir.functor import post_order


class TorchEngineError(IRError):
    """The function holds an op or attribute the torch engine has no translation for."""


def _pad2d(padding) -> tuple:
    """Relay (top, left, bottom, right) padding -> F.pad's (left, right, top, bottom)."""
    top, left, bottom, right = (tuple(padding) * 4)[:4] if len(padding) == 1 else (
        (padding[0], padding[1], padding[0], padding[1]) if len(padding) == 2 else padding)
    return (int(left), int(right), int(top), int(bottom))


def _nchw(attrs, name):
    if (attrs.get("data_layout") or attrs.get("layout") or "NCHW") != "NCHW":
        raise TorchEngineError(f"torch engine: {name} runs in NCHW layout only")


def _conv2d(F, args, attrs, call):
    _nchw(attrs, "nn.conv2d")
    if (attrs.get("kernel_layout") or "OIHW") != "OIHW":
        raise TorchEngineError("torch engine: nn.conv2d needs the OIHW kernel layout")
    x = F.pad(args[0], _pad2d(attrs["padding"]))
    return F.conv2d(x, args[1], stride=tuple(attrs["strides"]),
                    dilation=tuple(attrs["dilation"]), groups=int(attrs["groups"]))


def _conv2d_transpose(F, args, attrs, call):
    _nchw(attrs, "nn.conv2d_transpose")
    left, right, top, bottom = _pad2d(attrs["padding"])
    if left != right or top != bottom:
        raise TorchEngineError("torch engine: nn.conv2d_transpose needs symmetric padding")
    weight = args[1]
    if (attrs.get("kernel_layout") or "IOHW") == "OIHW":
        weight = weight.transpose(0, 1)
    return F.conv_transpose2d(args[0], weight, stride=tuple(attrs["strides"]),
                              padding=(top, left),
                              output_padding=tuple(attrs.get("output_padding") or (0, 0)),
                              dilation=tuple(attrs["dilation"]), groups=int(attrs["groups"]))


def _pool(kind):
    def run(F, args, attrs, call):
        _nchw(attrs, f"nn.{kind}_pool2d")
        import torch
        fill = float("-inf") if kind == "max" else 0.0
        pads = _pad2d(attrs["padding"])
        x = args[0]
        if any(pads):
            x = F.pad(x, pads, value=fill)
        window, strides = tuple(attrs["pool_size"]), tuple(attrs["strides"])
        ceil = bool(attrs.get("ceil_mode", False))
        if kind == "max":
            return F.max_pool2d(x, window, strides, dilation=tuple(attrs.get("dilation",
                                                                                 (1, 1))),
                                ceil_mode=ceil)
        if any(pads) and not attrs.get("count_include_pad", False):
            ones = F.pad(torch.ones_like(args[0][:1, :1]), pads)
            counts = F.avg_pool2d(ones, window, strides, ceil_mode=ceil)
            return F.avg_pool2d(x, window, strides, ceil_mode=ceil) / counts
        return F.avg_pool2d(x, window, strides, ceil_mode=ceil)
    return run


def _batch_norm(F, args, attrs, call):
    x, gamma, beta, mean, var = args
    if int(attrs.get("axis", 1)) != 1:
        raise TorchEngineError("torch engine: nn.batch_norm runs on axis 1 only")
    out = F.batch_norm(x, mean, var, gamma if attrs.get("scale", True) else None,
                       beta if attrs.get("center", True) else None, False, 0.0,
                       float(attrs["epsilon"]))
    return (out, mean, var)


def _static_shape(call):
    return tuple(int(d) for d in call.checked_type.shape)


def _filled(value):
    def run(F, args, attrs, call):
        import torch
        ty = call.checked_type
        return torch.full(_static_shape(call), value, dtype=getattr(torch, ty.dtype))
    return run


def _split(F, args, attrs, call):
    import torch
    sections = attrs["indices_or_sections"]
    sections = int(sections) if isinstance(sections, (int, np.integer)) else \
        [int(i) for i in sections]
    return tuple(torch.tensor_split(args[0], sections, dim=int(attrs.get("axis", 0))))


OPS = {
    "add": lambda F, a, at, c: a[0] + a[1],
    "subtract": lambda F, a, at, c: a[0] - a[1],
    "multiply": lambda F, a, at, c: a[0] * a[1],
    "divide": lambda F, a, at, c: a[0] / a[1],
    "tanh": lambda F, a, at, c: a[0].tanh(),
    "sigmoid": lambda F, a, at, c: a[0].sigmoid(),
    "nn.relu": lambda F, a, at, c: F.relu(a[0]),
    "nn.softmax": lambda F, a, at, c: F.softmax(a[0], dim=int(at.get("axis", -1))),
    "nn.dense": lambda F, a, at, c: F.linear(a[0], a[1]),
    "nn.bias_add": lambda F, a, at, c: a[0] + a[1].reshape(
        [-1 if axis == int(at.get("axis", 1)) % a[0].dim() else 1
         for axis in range(a[0].dim())]),
    "nn.batch_flatten": lambda F, a, at, c: a[0].flatten(1),
    "nn.global_avg_pool2d": lambda F, a, at, c: a[0].mean(dim=(2, 3), keepdim=True),
    "nn.global_max_pool2d": lambda F, a, at, c: a[0].amax(dim=(2, 3), keepdim=True),
    "nn.dropout": lambda F, a, at, c: (a[0], a[0]),
    "reshape": lambda F, a, at, c: a[0].reshape(_static_shape(c)),
    "concatenate": lambda F, a, at, c: __import__("torch").cat(list(a[0]),
                                                               dim=int(at.get("axis", 0))),
    "zeros": _filled(0),
    "ones": _filled(1),
    "split": _split,
    "nn.conv2d": _conv2d,
    "nn.conv2d_transpose": _conv2d_transpose,
    "nn.max_pool2d": _pool("max"),
    "nn.avg_pool2d": _pool("avg"),
    "nn.batch_norm": _batch_norm,
}
"""irlib op name -> ``run(F, args, attrs, call)`` returning a tensor (or a tuple)."""


def check_supported(func) -> list:
    """The nodes of ``func``'s body in evaluation order, once each, after checking that the
    torch engine can run every one (torch itself is not imported).

    Raises:
        TorchEngineError: naming the first op or node kind without a translation.
    """
    steps = []
    for node in post_order(func.body):
        kind = type(node)
        if kind is E.Call:
            if not isinstance(node.op, E.Op):
                raise TorchEngineError("torch engine: only op calls are supported, not calls "
                                       f"of {type(node.op).__name__}")
            if node.op.name not in OPS:
                raise TorchEngineError(f"torch engine: no translation for op {node.op.name!r}")
            steps.append(node)
        elif kind in (E.Tuple, E.TupleGetItem, E.Let, E.Var, E.Constant, E.Op):
            steps.append(node)
        else:
            raise TorchEngineError(f"torch engine: cannot run a {kind.__name__} node")
    return steps


def torch_function(func, params: dict):
    """A Python callable computing the typed ``func`` with PyTorch.

    Args:
        func: a type-checked ``irlib.Function`` of dataflow form (vars, constants, op calls,
            tuples, projections, lets).
        params: parameter name -> array; these parameters are bound once as tensors.

    Returns:
        ``call(**inputs)`` taking the other parameters (torch tensors) by name.

    Raises:
        TorchEngineError: an op, node kind or layout without a translation (named).
    """
    import torch
    import torch.nn.functional as F
    steps = check_supported(func)
    let_values = {n.var: n.value for n in steps if type(n) is E.Let}
    fixed = {}
    for param in func.params:
        if param.name_hint in params:
            fixed[param] = torch.from_numpy(np.ascontiguousarray(params[param.name_hint]))
    for node in steps:
        if type(node) is E.Constant:
            data = node.data.numpy() if hasattr(node.data, "numpy") else np.asarray(node.data)
            fixed[node] = torch.from_numpy(np.ascontiguousarray(data))

    def call(**inputs):
        values = dict(fixed)
        for param in func.params:
            if param not in values:
                values[param] = inputs[param.name_hint]

        def value(expr):
            while expr not in values:          # a let-bound variable: its bound value
                if expr not in let_values:
                    raise TorchEngineError(f"torch engine: unbound variable {expr}")
                expr = let_values[expr]
            return values[expr]

        for node in steps:
            kind = type(node)
            if kind is E.Call:
                values[node] = OPS[node.op.name](F, [value(a) for a in node.args],
                                                 node.attrs, node)
            elif kind is E.Tuple:
                values[node] = tuple(value(f) for f in node.fields)
            elif kind is E.TupleGetItem:
                values[node] = value(node.tuple_value)[node.index]
            elif kind is E.Let:
                values[node] = value(node.body)
        return value(func.body)
    return call
