"""``device_copy``: move a value from one device to another (Relay's ``relay.device_copy``).

RewriteAnnotatedOps inserts it wherever a value computed on one device is consumed on
another. The attributes follow Relay's ``DeviceCopyAttrs`` (v0.16 field names); each device
is stored as its type name (``"cpu"``, ``"cuda"``), the granularity the legacy pass worked
at (device types, not device ids)::

    device_copy(%x, src_virtual_device="cuda", dst_virtual_device="cpu")

irlib's reference implementation runs on the host only, so the copy is the identity on the
value. It is OPAQUE (FuseOps never fuses across it) and FoldConstant leaves it alone; its
gradient copies the adjoint back from ``dst`` to ``src``.
"""

from __future__ import annotations

from .registry import OpPattern, make_call, register_op

__all__ = ["device_copy"]

# DLPack device type codes, as Relay's ``tvm.device`` numbers them.
DEVICE_TYPE_NAMES = {1: "cpu", 2: "cuda", 4: "opencl", 7: "vulkan", 8: "metal", 10: "rocm"}


def device_name(device) -> str:
    """The device type name of ``device``.

    Args:
        device: a device type code (``1`` = cpu, ``2`` = cuda, ...), a name (``"cuda"``,
            ``"cuda(0)"``, ``"llvm"``, ``"gpu"``), an :class:`~irlib.ndarray.Device`, or None
            (the CPU, as Relay's default ``tvm.cpu(0)``).

    Returns:
        The type name, e.g. ``"cuda"``.
    """
    if device is None:
        return "cpu"
    if isinstance(device, bool):
        raise TypeError(f"not a device: {device!r}")
    if isinstance(device, int):
        return DEVICE_TYPE_NAMES.get(device, str(device))
    device_type = getattr(device, "device_type", None)
    text = device_type if isinstance(device_type, str) else str(device)
    text = text.split("(")[0].strip()
    if text.isdigit():
        return DEVICE_TYPE_NAMES.get(int(text), text)
    return {"llvm": "cpu", "gpu": "cuda"}.get(text, text)


def _identity_type(arg_types, attrs):
    """The argument's type (Relay's ``Identity`` relation: tensors and tuples alike)."""
    return arg_types[0]


_DEF = register_op("device_copy", ("data",),
                   attrs=("relay.attrs.DeviceCopyAttrs", [("src_virtual_device", None),
                                                          ("dst_virtual_device", None)]),
                   type_rel=_identity_type, pattern=OpPattern.OPAQUE,
                   description="identity on the host; copies data between devices",
                   support_level=10)


@_DEF.def_impl
def _device_copy_impl(data, **_):
    return (data,)


@_DEF.def_grad
def _device_copy_grad(call, out_grad):
    return [device_copy(out_grad, call.attrs["dst_virtual_device"],
                        call.attrs["src_virtual_device"])]


def device_copy(data, src_device, dst_device):
    """Copy ``data`` from ``src_device`` to ``dst_device`` (``relay.device_copy``).

    Args:
        data: the expression to copy.
        src_device: where it lives (a type code, a name or a Device; see
            :func:`device_name`).
        dst_device: where it is copied to.

    Returns:
        A Call of ``device_copy``.
    """
    return make_call("device_copy", (data,),
                     {"src_virtual_device": device_name(src_device),
                      "dst_virtual_device": device_name(dst_device)})
