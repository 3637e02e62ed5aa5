"""The MPI backend of the ccl ops: collectives on numpy buffers through mpi4py.

Buffers go to MPI through the buffer protocol (``comm.Allreduce(send, recv, op)`` and the
other upper-case methods), never pickled. Data that is only moved (allgather, broadcast,
scatter) is sent as raw bytes (``MPI.BYTE``), so every dtype works, ml_dtypes' bfloat16
included. Reductions need an MPI datatype: int8..int64, uint8..uint64, float32 and float64
reduce natively; float16, bfloat16 and the float8 types are reduced in float32 and rounded
back once (more accurate than reducing in the narrow type, and the same on every rank).

Every method returns a new array and leaves its input alone. The backend counts what it
moves (:attr:`MPICollectives.stats`: calls and payload bytes per collective), which the
benchmarks report as the bytes moved per step.
"""

from __future__ import annotations

import time

import numpy as np

from irlib.errors import OpImplError

__all__ = ["MPICollectives"]

_NATIVE_KINDS = "iu"
_NATIVE_FLOATS = ("float32", "float64")


def _as_bytes(array: np.ndarray) -> np.ndarray:
    """A flat uint8 view of a C-contiguous array (no copy)."""
    return array.reshape(-1).view(np.uint8)


def _reduction_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype MPI reduces ``dtype`` in (itself, or float32 for narrow floats)."""
    if dtype.kind in _NATIVE_KINDS or dtype.name in _NATIVE_FLOATS:
        return dtype
    # narrow floats: numpy's float16, and ml_dtypes' bfloat16/float8 (kind "V" in numpy)
    if dtype.kind == "f" or dtype.name.startswith(("bfloat", "float")):
        return np.dtype("float32")
    raise OpImplError(f"ccl.allreduce: MPI cannot reduce dtype {dtype}", op="ccl.allreduce")


class MPICollectives:
    """The collectives of :mod:`irlib.op.ccl` on an mpi4py communicator.

    Args:
        comm: the mpi4py communicator (every rank of it must make the same calls).

    Attributes:
        stats: ``{collective name: {"calls": int, "bytes": int, "seconds": float}}``: payload
            bytes this rank handed to MPI (the input's size for allreduce, allgather and
            broadcast; the part received for scatter) and the time spent in the calls
            (waiting for the slowest rank included).
    """

    def __init__(self, comm):
        from mpi4py import MPI
        self._mpi = MPI
        self.comm = comm
        self.stats: dict = {}
        self._ops = {"sum": MPI.SUM, "avg": MPI.SUM, "prod": MPI.PROD, "min": MPI.MIN,
                     "max": MPI.MAX}

    @property
    def world_size(self) -> int:
        """The number of ranks of the communicator."""
        return int(self.comm.Get_size())

    @property
    def rank(self) -> int:
        """This process's rank in the communicator."""
        return int(self.comm.Get_rank())

    def _count(self, name: str, nbytes: int, started: float) -> None:
        entry = self.stats.setdefault(name, {"calls": 0, "bytes": 0, "seconds": 0.0})
        entry["calls"] += 1
        entry["bytes"] += int(nbytes)
        entry["seconds"] += time.perf_counter() - started

    def reset_stats(self) -> None:
        """Forget the counts in :attr:`stats`."""
        self.stats.clear()

    def allreduce(self, array: np.ndarray, op_type: str) -> np.ndarray:
        """The elementwise ``op_type`` reduction of every rank's ``array``.

        Args:
            array: a C-contiguous array (the same shape and dtype on every rank).
            op_type: ``"sum"``, ``"prod"``, ``"min"``, ``"max"`` or ``"avg"``.
        """
        started = time.perf_counter()
        op = self._ops.get(op_type)
        if op is None:
            raise OpImplError(f"ccl.allreduce: unknown op_type {op_type!r}", op="ccl.allreduce")
        work_dtype = _reduction_dtype(array.dtype)
        send = np.ascontiguousarray(array, dtype=work_dtype)
        out = np.empty_like(send)
        self.comm.Allreduce(send, out, op=op)
        self._count("allreduce", array.nbytes, started)
        if op_type == "avg":
            size = self.world_size
            if out.dtype.kind in "iu":
                quotient = np.abs(out) // size
                out = np.where(out < 0, -quotient, quotient).astype(out.dtype)
            else:
                out = out / out.dtype.type(size)
        return out.astype(array.dtype, copy=False)

    def allgather(self, array: np.ndarray) -> np.ndarray:
        """Every rank's ``array`` concatenated along axis 0, in rank order.

        Args:
            array: a C-contiguous array with at least one axis (one shape on every rank).
        """
        started = time.perf_counter()
        array = np.ascontiguousarray(array)
        size = self.world_size
        out = np.empty((size,) + array.shape, dtype=array.dtype)
        self.comm.Allgather([_as_bytes(array), self._mpi.BYTE], [_as_bytes(out), self._mpi.BYTE])
        self._count("allgather", array.nbytes, started)
        return out.reshape((size * array.shape[0],) + array.shape[1:])

    def broadcast_from_worker0(self, array: np.ndarray) -> np.ndarray:
        """Rank 0's ``array`` on every rank (the others' values only give shape and dtype,
        so a zero-stride ``np.broadcast_to`` placeholder serves there).

        Args:
            array: the data on rank 0; an array of the same shape and dtype elsewhere.
        """
        started = time.perf_counter()
        if self.rank == 0:
            out = np.array(array, copy=True, order="C")
        else:
            out = np.empty(array.shape, dtype=array.dtype)
        self.comm.Bcast([_as_bytes(out), self._mpi.BYTE], root=0)
        self._count("broadcast_from_worker0", out.nbytes, started)
        return out

    def scatter_from_worker0(self, array: np.ndarray, axis: int) -> np.ndarray:
        """Part ``rank`` of rank 0's ``array`` cut into ``world_size`` equal parts along
        ``axis`` (other ranks' ``array`` only gives shape and dtype).

        Args:
            array: the full tensor on rank 0; same shape and dtype elsewhere.
            axis: the axis to cut (its size divisible by the world size).
        """
        started = time.perf_counter()
        size = self.world_size
        shape = tuple(array.shape)
        if shape[axis] % size:
            raise OpImplError(f"ccl.scatter_from_worker0: axis {axis} of size {shape[axis]} "
                              f"does not divide into {size} parts",
                              op="ccl.scatter_from_worker0")
        part_shape = shape[:axis] + (shape[axis] // size,) + shape[axis + 1:]
        out = np.empty(part_shape, dtype=array.dtype)
        send = None
        if self.rank == 0:
            # (.., size, part, ..) with the worker axis moved first: part r is contiguous.
            split = np.asarray(array).reshape(shape[:axis] + (size, shape[axis] // size)
                                              + shape[axis + 1:])
            send = [_as_bytes(np.ascontiguousarray(np.moveaxis(split, axis, 0))),
                    self._mpi.BYTE]
        self.comm.Scatter(send, [_as_bytes(out), self._mpi.BYTE], root=0)
        self._count("scatter_from_worker0", out.nbytes, started)
        return out
