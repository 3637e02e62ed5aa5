"""DLPack's ``DLTensor`` as a ctypes structure, for calling C symbols on numpy arrays.

A C kernel called by :mod:`irlib.op.extern_call` receives one ``DLTensor*`` per tensor
argument. The structure follows the layout DLPack (v0.8) documents, field by field:

==============  =========================================================================
``data``        ``void*``: the first element (numpy's buffer; never offset here)
``device``      ``{int32 device_type, int32 device_id}``: always ``{kDLCPU = 1, 0}``
``ndim``        ``int32``
``dtype``       ``{uint8 code, uint8 bits, uint16 lanes}``: code ``kDLInt = 0``,
                ``kDLUInt = 1``, ``kDLFloat = 2``, ``kDLBfloat = 4``, ``kDLComplex = 5``,
                ``kDLBool = 6``; ``lanes`` is 1
``shape``       ``int64*``: ``ndim`` sizes
``strides``     ``int64*``: NULL, meaning compact row-major (arrays are made contiguous)
``byte_offset`` ``uint64``: 0
==============  =========================================================================

The matching C declaration ships as ``irlib/frontend/nn/include/dlpack/dlpack.h``.
:func:`to_dltensor` builds one for a numpy array; the caller keeps the returned holder alive
for the duration of the call (it owns the shape buffer).
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..errors import OpImplError

__all__ = ["DLDevice", "DLDataType", "DLTensor", "dl_dtype", "to_dltensor", "KDL_CPU"]

KDL_CPU = 1

_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}


class DLDevice(ctypes.Structure):
    """``DLDevice``: where the data lives (``device_type``, ``device_id``)."""

    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    """``DLDataType``: type code, bits per lane, lanes."""

    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    """``DLTensor``: a borrowed view of an array (see the module docstring for the fields)."""

    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


def dl_dtype(dtype) -> DLDataType:
    """The ``DLDataType`` of a numpy dtype (bfloat16 from ml_dtypes included).

    Args:
        dtype: a numpy dtype or dtype name.

    Raises:
        OpImplError: a dtype DLPack cannot describe (strings, objects).
    """
    dtype = np.dtype(dtype)
    if dtype.name == "bfloat16":
        return DLDataType(4, 16, 1)
    code = _CODES.get(dtype.kind)
    if code is None:
        raise OpImplError(f"call_dps_packed: arrays of dtype {dtype} cannot be passed to C as "
                          "DLTensors", op="call_dps_packed")
    return DLDataType(code, dtype.itemsize * 8, 1)


class _Holder:
    """Keeps a DLTensor and the buffers it points to alive."""

    __slots__ = ("tensor", "shape", "array")

    def __init__(self, tensor, shape, array):
        self.tensor, self.shape, self.array = tensor, shape, array


_DTYPE_CACHE: dict = {}


def to_dltensor(array: np.ndarray) -> _Holder:
    """A ``DLTensor`` viewing ``array`` (which must be C-contiguous).

    Args:
        array: a C-contiguous numpy array (an output written by the callee, or an input).

    Returns:
        A holder whose ``tensor`` field is the structure; pass ``ctypes.byref(h.tensor)``.
    """
    if not array.flags.c_contiguous:
        raise OpImplError("call_dps_packed: a DLTensor needs a C-contiguous array",
                          op="call_dps_packed")
    code_bits = _DTYPE_CACHE.get(array.dtype)
    if code_bits is None:
        described = dl_dtype(array.dtype)
        code_bits = _DTYPE_CACHE[array.dtype] = (described.code, described.bits)
    tensor = DLTensor()            # fields set one by one: cheaper than the constructor
    tensor.data = array.__array_interface__["data"][0]
    tensor.device.device_type = KDL_CPU
    tensor.ndim = array.ndim
    tensor.dtype.code, tensor.dtype.bits = code_bits
    tensor.dtype.lanes = 1
    shape = (ctypes.c_int64 * max(array.ndim, 1))(*array.shape)
    tensor.shape = shape           # strides stay NULL, byte_offset 0
    return _Holder(tensor, shape, array)
