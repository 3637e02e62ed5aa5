"""A small numpy-backed n-dimensional array and the device handle it lives on.

This is the array type that constants hold (``Constant.data``) and that the runtime in
``interp`` passes around; ``interp.nd`` re-exports it. It mirrors ``tvm.nd.NDArray`` where
users touch it: ``.numpy()``, ``.shape``, ``.dtype``, ``.device``, ``copyfrom``/``copyto``,
``np.asarray(arr)`` and the DLPack protocol.
"""

from __future__ import annotations

import numpy as np


class Device:
    """A device handle: ``Device("cpu", 0)`` or ``Device("cuda", 0)``.

    Args:
        device_type: ``"cpu"`` or ``"cuda"`` (``"llvm"`` is an alias of ``"cpu"``).
        device_id: index of the device of that type.
    """

    __slots__ = ("device_type", "device_id")
    _CODES = {"cpu": 1, "cuda": 2}

    def __init__(self, device_type: str = "cpu", device_id: int = 0):
        device_type = {"llvm": "cpu", "gpu": "cuda"}.get(device_type, device_type)
        if device_type not in self._CODES:
            raise ValueError(f"unknown device type {device_type!r}; expected 'cpu' or 'cuda'")
        self.device_type = device_type
        self.device_id = int(device_id)

    @property
    def device_type_code(self) -> int:
        """DLPack device code (1 = CPU, 2 = CUDA)."""
        return self._CODES[self.device_type]

    def __eq__(self, other):
        return (isinstance(other, Device) and self.device_type == other.device_type
                and self.device_id == other.device_id)

    def __hash__(self):
        return hash((self.device_type, self.device_id))

    def __repr__(self):
        return f"{self.device_type}({self.device_id})"


def cpu(device_id: int = 0) -> Device:
    """The CPU device (``tvm.cpu``)."""
    return Device("cpu", device_id)


def cuda(device_id: int = 0) -> Device:
    """A CUDA device (``tvm.cuda``)."""
    return Device("cuda", device_id)


class NDArray:
    """A tensor value: a numpy array plus the device it belongs to.

    Args:
        data: anything ``np.asarray`` accepts.
        device: where the array lives (default CPU 0).
    """

    __slots__ = ("_array", "device")

    def __init__(self, data, device: Device | None = None):
        if isinstance(data, NDArray):
            data = data._array
        self._array = np.asarray(data)
        self.device = device or cpu(0)

    def numpy(self) -> np.ndarray:
        """The contents as a numpy array (a view; do not mutate constants through it)."""
        return self._array

    asnumpy = numpy

    @property
    def shape(self) -> tuple:
        """The shape as a tuple of ints."""
        return self._array.shape

    @property
    def dtype(self) -> str:
        """The dtype name (``"float32"``, ...; ``"string"`` for arrays of str/bytes)."""
        if self._array.dtype.kind in "USO":
            return "string"
        return self._array.dtype.name

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return self._array.ndim

    def copyfrom(self, source) -> "NDArray":
        """Copy ``source`` (array-like of the same shape) into this array; returns self."""
        source = np.asarray(source)
        if source.shape != self._array.shape:
            raise ValueError(f"copyfrom: shape {source.shape} does not match {self._array.shape}")
        if not self._array.flags.writeable:
            self._array = self._array.copy()
        np.copyto(self._array, source, casting="unsafe")
        return self

    def copyto(self, target):
        """Copy into ``target`` (an NDArray or a Device, giving a new array there)."""
        if isinstance(target, Device):
            return NDArray(self._array.copy(), target)
        target.copyfrom(self._array)
        return target

    def __array__(self, dtype=None, copy=None):
        if dtype is not None:
            return self._array.astype(dtype)
        return self._array

    def __dlpack__(self, stream=None, **kwargs):
        return self._array.__dlpack__(**({"stream": stream} if stream is not None else {}))

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()

    def __repr__(self):
        return f"<irlib.NDArray shape={self.shape}, {self.device}>\n{self._array!r}"

    def __str__(self):
        return str(self._array)
