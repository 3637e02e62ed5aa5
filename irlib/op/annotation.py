"""Annotation ops: identities that carry information for passes (``relay.annotation``).

``on_device`` (a device constraint), ``annotation.stop_fusion`` (a fusion boundary),
``annotation.compiler_begin`` / ``annotation.compiler_end`` (the borders of a region offloaded
to an external compiler) and ``annotation.checkpoint`` (recompute instead of store in AD).
Each returns its argument unchanged; all are OPAQUE so FuseOps never fuses across them::

    annotation.compiler_begin(%x, compiler="ccompiler")    /* Tensor[(2), float32] */
    -> Tensor[(2), float32]
"""

from __future__ import annotations

from .registry import OpPattern, make_call, register_op

__all__ = ["on_device", "stop_fusion", "compiler_begin", "compiler_end", "checkpoint"]


def _any_type_identity(arg_types, attrs):
    """The argument's type, whatever it is (checkpoint wraps tuples too)."""
    return arg_types[0]


def _register(name: str, attrs, doc: str):
    op_def = register_op(name, ("data",), attrs=attrs, type_rel=_any_type_identity,
                         pattern=OpPattern.OPAQUE, description=doc)
    op_def.def_impl(lambda data, **_: (data,))
    op_def.def_grad(lambda call, out_grad: [out_grad])
    return op_def


_register("on_device", ("relay.attrs.OnDeviceAttrs",
                        [("virtual_device", None), ("constrain_result", False),
                         ("constrain_body", True)]),
          "identity; constrains where data (and/or its result) lives")
_register("annotation.stop_fusion", None, "identity; a boundary FuseOps does not fuse across")
_register("annotation.compiler_begin", ("relay.attrs.CompilerAttrs", [("compiler", "")]),
          "identity; start of a region for an external compiler")
_register("annotation.compiler_end", ("relay.attrs.CompilerAttrs", [("compiler", "")]),
          "identity; end of a region for an external compiler")
_register("annotation.checkpoint", None,
          "identity; marks a value for recomputation in automatic differentiation")


def on_device(body, device, constrain_result=False, constrain_body=True):
    """Annotate ``body`` with a device (``relay.annotation.on_device``).

    Args:
        body: the expression.
        device: the device, e.g. ``"cpu"``, ``"cuda"`` or an :class:`~irlib.ndarray.Device`
            (stored as its string form).
        constrain_result: the result must live on the device.
        constrain_body: the body is computed on the device.

    Returns:
        A Call of ``on_device``.
    """
    return make_call("on_device", (body,), {"virtual_device": str(device),
                                            "constrain_result": bool(constrain_result),
                                            "constrain_body": bool(constrain_body)})


def stop_fusion(data):
    """Mark a fusion boundary (``relay.annotation.stop_fusion``).

    Args:
        data: the expression at the boundary.

    Returns:
        A Call of ``annotation.stop_fusion``.
    """
    return make_call("annotation.stop_fusion", (data,))


def compiler_begin(data, compiler):
    """Start a region for external compiler ``compiler``.

    Args:
        data: the expression entering the region.
        compiler: the external compiler's name.

    Returns:
        A Call of ``annotation.compiler_begin``.
    """
    return make_call("annotation.compiler_begin", (data,), {"compiler": compiler})


def compiler_end(data, compiler):
    """End a region for external compiler ``compiler``.

    Arguments as :func:`compiler_begin` (``data`` leaves the region).

    Returns:
        A Call of ``annotation.compiler_end``.
    """
    return make_call("annotation.compiler_end", (data,), {"compiler": compiler})


def checkpoint(data):
    """Mark ``data`` (a tensor or tuple) for recomputation in AD
    (``relay.annotation.checkpoint``).

    Returns:
        A Call of ``annotation.checkpoint``.
    """
    return make_call("annotation.checkpoint", (data,))
