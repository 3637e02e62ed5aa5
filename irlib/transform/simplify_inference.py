"""SimplifyInference: rewrite inference-only ops into elementwise arithmetic (Relay's
``SimplifyInference``).

* ``nn.batch_norm(x, g, b, m, v).0`` becomes ``x * s + t`` with ``s = 1 / sqrt(v + eps) * g``
  (``* g`` only if ``scale``) and ``t = -m * s + b`` (``+ b`` only if ``center``), both
  expanded to broadcast along ``axis``. Other projections of the call keep the call.
* ``nn.dropout(x).0`` becomes ``x``.
* ``nn.layer_norm``, ``nn.group_norm``, ``nn.instance_norm`` and ``nn.l2_normalize`` are
  expanded into ``mean``, ``variance``, ``sqrt``, ``divide`` and friends.

Before/after::

    %0 = nn.batch_norm(%x, %g, %b, %m, %v); %0.0
    add(multiply(%x, expand_dims(multiply(divide(1f, sqrt(add(%v, 1e-05f))), %g), axis=1,
        num_newaxis=2)), expand_dims(add(multiply(negative(%m), ...), %b), ...))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import expr as E
from ..ir.functor import ExprMutator
from ._typed import expand_to_axis, op, op_name, rewrite_typed_module, scalar, tensor_type
from .pass_infra import ModulePass


def _batch_norm(call, data_type):
    data, gamma, beta, mean, var = call.args
    attrs = call.attrs
    dtype, ndim = data_type.dtype, len(data_type.shape)
    axis = attrs["axis"] % ndim
    scale = op("divide", scalar(1.0, dtype),
               op("sqrt", op("add", var, scalar(attrs["epsilon"], dtype))))
    if attrs["scale"]:
        scale = op("multiply", scale, gamma)
    shift = op("multiply", op("negative", mean), scale)
    if attrs["center"]:
        shift = op("add", shift, beta)
    out = op("multiply", data, expand_to_axis(scale, ndim, axis))
    return op("add", out, expand_to_axis(shift, ndim, axis))


def _normalize(data, axes, epsilon, dtype):
    mean = op("mean", data, axis=list(axes), keepdims=True, exclude=False)
    var = op("variance", data, mean, axis=list(axes), keepdims=True, exclude=False,
             unbiased=False)
    return op("divide", op("subtract", data, mean),
              op("sqrt", op("add", var, scalar(epsilon, dtype))))


def _affine(out, gamma, beta, attrs, ndim, axis):
    if attrs["scale"]:
        out = op("multiply", out, expand_to_axis(gamma, ndim, axis))
    if attrs["center"]:
        out = op("add", out, expand_to_axis(beta, ndim, axis))
    return out


def _layer_norm(call, ty):
    data, gamma, beta = call.args
    ndim = len(ty.shape)
    axis = call.attrs["axis"] % ndim
    out = _normalize(data, [axis], call.attrs["epsilon"], ty.dtype)
    return _affine(out, gamma, beta, call.attrs, ndim, axis)


def _instance_norm(call, ty):
    data, gamma, beta = call.args
    ndim = len(ty.shape)
    axis = call.attrs["axis"] % ndim
    axes = [a for a in range(1, ndim) if a != axis]
    out = _normalize(data, axes, call.attrs["epsilon"], ty.dtype)
    return _affine(out, gamma, beta, call.attrs, ndim, axis)


def _group_norm(call, ty):
    data, gamma, beta = call.args
    shape = tuple(ty.shape)
    if not all(isinstance(d, int) for d in shape):
        return None     # the reshape needs a static shape
    ndim = len(shape)
    axis = call.attrs["axis"] % ndim
    groups = call.attrs["num_groups"]
    grouped_shape = shape[:axis] + (groups, shape[axis] // groups) + shape[axis + 1:]
    grouped = op("reshape", data, newshape=list(grouped_shape))
    axes = [a for a in range(1, ndim + 1) if a != axis]
    out = op("reshape", _normalize(grouped, axes, call.attrs["epsilon"], ty.dtype),
             newshape=list(shape))
    return _affine(out, gamma, beta, call.attrs, ndim, axis)


def _l2_normalize(call, ty):
    data = call.args[0]
    axis = call.attrs["axis"]
    axes = None if axis is None else [int(a) for a in (axis if isinstance(axis, (list, tuple))
                                                        else [axis])]
    total = op("sum", op("multiply", data, data), axis=axes, keepdims=True, exclude=False)
    norm = op("sqrt", op("maximum", total, scalar(call.attrs["eps"], ty.dtype)))
    return op("divide", data, norm)


_EXPANDERS = {"nn.layer_norm": _layer_norm, "nn.instance_norm": _instance_norm,
              "nn.group_norm": _group_norm, "nn.l2_normalize": _l2_normalize}


class _Simplify(ExprMutator):
    def enter_function(self, node):
        return not node.get_attr("Primitive")

    def visit_tuple_get_item(self, node, original):
        name = op_name(node.tuple_value)
        if node.index != 0 or name not in ("nn.batch_norm", "nn.dropout"):
            return node
        if name == "nn.dropout":
            return node.tuple_value.args[0]
        data_type = tensor_type(original.tuple_value.args[0])
        if data_type is None:
            return node
        return _batch_norm(node.tuple_value, data_type)

    def visit_call(self, node, original):
        expander = _EXPANDERS.get(op_name(node))
        ty = tensor_type(original)
        if expander is None or ty is None:
            return node
        replacement = expander(node, ty)
        return node if replacement is None else replacement


def simplify_inference(func: E.Function) -> E.Function:
    """``func`` (type-checked) with inference-only ops rewritten (see the module docstring)."""
    return _Simplify().visit(func)


@dataclass(frozen=True)
class SimplifyInference(ModulePass):
    """Rewrite batch_norm, dropout and the normalisation ops for inference."""

    name: ClassVar[str] = "SimplifyInference"
    opt_level: ClassVar[int] = 0
    required: ClassVar[tuple] = ("InferType",)

    def transform_module(self, mod, ctx=None):
        """The simplified, type-checked copy of ``mod``."""
        return rewrite_typed_module(mod, simplify_inference)
