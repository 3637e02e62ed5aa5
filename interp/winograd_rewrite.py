"""Build-time choice of the Winograd algorithm for the CPU target's 3x3 convolutions.

:func:`rewrite_winograd` replaces each ``nn.conv2d`` call whose weight is a constant (the
build's bound params) and whose geometry has a Winograd form (3x3, stride 1, dilation 1,
one group, float32/float64, static shapes) by
``nn.contrib_conv2d_winograd_without_weight_transform`` on the transformed weight, computed
here once (the value of ``nn.contrib_conv2d_winograd_weight_transform`` on the constant:
the weight transform is folded at build time, as Relay's x86 strategy does), when the
kernels' cost model (:func:`jitkernels.cpu.winograd.choose_tile`) expects it to beat the
GEMM path, with the tile size it picks (F(4x4, 3x3) or F(2x2, 3x3)).

The transformed weight is stored ``(a, a, I, O)`` (``kernel_layout="HWIO"``) so that each of
the ``a*a`` GEMMs reads its matrix as stored. The graph's params then hold the transformed
weights (``get_params()`` returns them), as in TVM.

Turned off by ``IRLIB_WINOGRAD=0`` in the environment, by
``PassContext(config={"cpu.winograd": False})``, or by ``disabled_pass=["Winograd"]``;
it runs at ``opt_level >= 3`` only (with AlterOpLayout). Error: float32 F(4x4) loses about
one to two digits against a direct convolution (see ``jitkernels/cpu/winograd.py``).
"""

from __future__ import annotations

import numpy as np

from irlib.ir import expr as E
from irlib.ir.functor import ExprMutator
from irlib.ir.types import TensorType
from irlib.op import evaluate, get_def
from irlib.op.registry import make_call

__all__ = ["rewrite_winograd", "winograd_enabled", "CONFIG_KEY", "PASS_NAME"]

CONFIG_KEY = "cpu.winograd"
"""PassContext config key: False disables the rewrite (default True)."""

PASS_NAME = "Winograd"
"""Name to put in ``PassContext(disabled_pass=[...])`` to disable the rewrite."""

MIN_OPT_LEVEL = 3


def winograd_enabled(ctx) -> bool:
    """Whether the build under PassContext ``ctx`` may rewrite convolutions to Winograd:
    ``opt_level >= 3``, not disabled by ``ctx.config["cpu.winograd"]``,
    ``disabled_pass=["Winograd"]`` or ``IRLIB_WINOGRAD=0``."""
    from jitkernels.cpu import winograd
    if ctx is None or ctx.opt_level < MIN_OPT_LEVEL or not winograd.enabled():
        return False
    config = getattr(ctx, "config", None) or {}
    if not config.get(CONFIG_KEY, True):
        return False
    return PASS_NAME not in (getattr(ctx, "disabled_pass", None) or ())


def _static(ty) -> tuple | None:
    if not isinstance(ty, TensorType):
        return None
    try:
        return tuple(int(d) for d in ty.shape)
    except (TypeError, ValueError):
        return None


def _as_oihw(weight: np.ndarray, layout: str) -> np.ndarray:
    return np.ascontiguousarray(np.transpose(weight, [layout.index(c) for c in "OIHW"]))


class _Rewriter(ExprMutator):
    def __init__(self, choose):
        super().__init__()
        self.choose = choose
        self.count = 0

    def visit_call(self, node, original):
        if not (isinstance(original.op, E.Op) and original.op.name == "nn.conv2d"):
            return node
        weight = node.args[1]
        if not isinstance(weight, E.Constant):
            return node
        attrs = original.attrs
        data_layout = attrs["data_layout"]
        kernel_layout = attrs["kernel_layout"]
        out_layout = attrs["out_layout"] or data_layout
        if sorted(data_layout) != sorted("NCHW") or sorted(kernel_layout) != sorted("OIHW") \
                or sorted(out_layout) != sorted("NCHW"):
            return node
        data_shape = _static(original.args[0]._checked_type)
        out_type = original._checked_type
        out_shape = _static(out_type)
        value = weight.data.numpy()
        if data_shape is None or out_shape is None or value.dtype not in (
                np.dtype(np.float32), np.dtype(np.float64)):
            return node
        if str(out_type.dtype) != value.dtype.name or \
                str(original.args[0]._checked_type.dtype) != value.dtype.name:
            return node
        oihw = _as_oihw(value, kernel_layout)
        from jitkernels.cpu import winograd
        if not winograd.eligible(oihw.shape[2:], attrs["strides"], attrs["dilation"],
                                 attrs["groups"]):
            return node
        batch = data_shape[data_layout.index("N")]
        out_h, out_w = out_shape[out_layout.index("H")], out_shape[out_layout.index("W")]
        tile = self.choose(oihw.shape[1], oihw.shape[0], out_h, out_w, batch)
        if not tile:
            return node
        transformed = evaluate("nn.contrib_conv2d_winograd_weight_transform", (oihw,),
                               get_def("nn.contrib_conv2d_winograd_weight_transform")
                               .make_attrs({"tile_size": tile}))
        u = np.ascontiguousarray(np.swapaxes(transformed, 2, 3))        # (a, a, I, O)
        self.count += 1
        return make_call("nn.contrib_conv2d_winograd_without_weight_transform",
                         (node.args[0], E.Constant(u)),
                         {"tile_size": tile, "padding": attrs["padding"],
                          "channels": oihw.shape[0], "kernel_size": (3, 3),
                          "data_layout": data_layout, "kernel_layout": "HWIO",
                          "out_layout": attrs["out_layout"], "out_dtype": attrs["out_dtype"]})


def rewrite_winograd(func: E.Function, choose=None) -> tuple:
    """``func`` (type-checked) with its eligible constant-weight 3x3 convolutions on
    Winograd (module docstring).

    Args:
        func: a type-checked function (unfused: the calls are not yet in primitive
            functions).
        choose: ``(channels, out_channels, out_h, out_w, batch) -> tile`` (0: keep the
            conv); default :func:`jitkernels.cpu.winograd.choose_tile`.

    Returns:
        ``(new function, number of convolutions rewritten)``; the function is ``func``
        itself when none was.
    """
    if choose is None:
        from jitkernels.cpu.winograd import choose_tile as choose
    rewriter = _Rewriter(choose)
    body = rewriter.visit(func.body)
    if rewriter.count == 0:
        return func, 0
    return func.replace(body=body), rewriter.count
