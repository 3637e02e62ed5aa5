"""Collective communication ops (Relax's ``relax.ccl``): allreduce, allgather, broadcast and
scatter between the workers of a multi-process run.

::

    %1 = ccl.allreduce(%0, op_type="sum");                      # same type as %0
    %2 = ccl.allgather(%1, num_workers=2);                      # axis 0 multiplied by 2
    %3 = ccl.broadcast_from_worker0(%2);                        # same type
    %4 = ccl.scatter_from_worker0(%3, num_workers=2, axis=1);   # axis 1 divided by 2

Every worker runs the same program on its own data; each call is a collective: all workers
make it, in the same order, with tensors of the same type.

**Semantics** (``N`` workers, ``x_r`` the input on worker ``r``):

* ``ccl.allreduce(x, op_type)``: every worker gets ``reduce(x_0, ..., x_{N-1})``
  elementwise; ``op_type`` is ``"sum"``, ``"prod"``, ``"min"``, ``"max"`` or ``"avg"`` (the
  sum divided by ``N``; for integer dtypes the quotient is truncated toward zero). Bool
  tensors are rejected (cast them to an integer dtype).
* ``ccl.allgather(x, num_workers)``: every worker gets ``concatenate([x_0, ..., x_{N-1}],
  axis=0)``; ``num_workers`` must equal ``N``.
* ``ccl.broadcast_from_worker0(x)``: every worker gets ``x_0``.
* ``ccl.scatter_from_worker0(x, num_workers, axis)``: ``x_0`` is cut into ``num_workers``
  equal parts along ``axis``; worker ``r`` gets part ``r`` (the other workers' inputs are
  ignored, but must have the same type). ``num_workers`` must equal ``N`` and divide the
  axis.

**One process** (world size 1, the reference semantics): allreduce and broadcast are the
identity (``avg`` of one value is the value); allgather and scatter with ``num_workers=1``
are the identity; a ``num_workers`` other than the world size raises
:class:`~irlib.errors.OpImplError` when the call runs.

**Where the data moves.** The numpy implementations below ask the *collectives provider*
(:func:`set_collectives_provider`) for the backend of the current run. irlib installs none
(it depends on numpy only): with no provider, or when the provider returns None, the run has
one worker and the reference semantics apply. ``interp.distributed`` installs a provider that
returns an MPI backend (mpi4py, imported lazily) when the process was started by ``mpiexec``
with more than one process, or when a communicator was set
(``interp.distributed.set_communicator``); see docs/distributed.md. Any object with the
methods of :class:`Collectives` can serve as a backend.

The ops are ``OPAQUE`` (FuseOps never fuses them) and ``TOpIsStateful`` (FoldConstant,
PartialEvaluate and EliminateCommonSubexpr never evaluate, fold or merge them: two
allreduces of one value are two collectives every worker must make). They have no
gradient.
"""

from __future__ import annotations

from typing import Callable, Optional, Protocol

import numpy as np

from ..errors import OpImplError, TypeInferenceError
from ..ir.dims import AnyDim, floordiv
from ..ir.types import TensorType
from .registry import OpPattern, make_call, register_op
from .type_relations import dims_differ, expect_tensor, normalize_axis

__all__ = []   # builders stay under irlib.op.ccl (``irlib.op.ccl.allreduce``)

REDUCE_OPS = ("sum", "prod", "min", "max", "avg")
"""The ``op_type`` values of ``ccl.allreduce``."""


class Collectives(Protocol):
    """What a backend gives the ccl ops: the run's size and this worker's rank, and the four
    collectives on contiguous numpy arrays. Each method returns a new array (its input is
    not written) and is called by every worker in the same order.

    Attributes:
        world_size: the number of workers.
        rank: this worker's index in ``[0, world_size)``.
    """

    world_size: int
    rank: int

    def allreduce(self, array: np.ndarray, op_type: str) -> np.ndarray:
        """The elementwise reduction of every worker's ``array`` (``op_type`` in
        :data:`REDUCE_OPS`), same shape and dtype."""

    def allgather(self, array: np.ndarray) -> np.ndarray:
        """Every worker's ``array`` concatenated along axis 0, in rank order."""

    def broadcast_from_worker0(self, array: np.ndarray) -> np.ndarray:
        """Worker 0's ``array``."""

    def scatter_from_worker0(self, array: np.ndarray, axis: int) -> np.ndarray:
        """Part ``rank`` of worker 0's ``array`` cut into ``world_size`` equal parts along
        ``axis``."""


_PROVIDER: dict = {"fn": None}


def set_collectives_provider(provider: Optional[Callable[[], Optional[Collectives]]]) -> None:
    """Install the function the ccl ops ask for the current backend (None removes it).

    The provider is called on every collective; it returns a :class:`Collectives` backend,
    or None for a one-worker run (the reference semantics). ``interp.distributed`` installs
    the MPI provider when it is imported.

    Args:
        provider: a callable without arguments, or None.

    Raises:
        ValueError: ``provider`` is neither callable nor None.
    """
    if provider is not None and not callable(provider):
        raise ValueError(f"set_collectives_provider: {provider!r} is not callable")
    _PROVIDER["fn"] = provider


def get_collectives_provider() -> Optional[Callable[[], Optional[Collectives]]]:
    """The installed provider, or None."""
    return _PROVIDER["fn"]


def current_collectives() -> Optional[Collectives]:
    """The backend of the current run, or None when it has one worker (no provider, the
    provider returned None, or the backend's world size is 1)."""
    provider = _PROVIDER["fn"]
    backend = provider() if provider is not None else None
    if backend is None or int(backend.world_size) <= 1:
        return None
    return backend


# -- type relations ---------------------------------------------------------------------------

def _check_num_workers(num_workers, op: str) -> int:
    if isinstance(num_workers, bool) or not isinstance(num_workers, (int, np.integer)) \
            or num_workers < 1:
        raise TypeInferenceError(f"{op}: num_workers must be a positive int, got "
                                 f"{num_workers!r}")
    return int(num_workers)


def _allreduce_rel(arg_types, attrs) -> TensorType:
    data = expect_tensor(arg_types[0], "x")
    op_type = attrs["op_type"]
    if op_type not in REDUCE_OPS:
        raise TypeInferenceError(f"ccl.allreduce: op_type must be one of {list(REDUCE_OPS)}, "
                                 f"got {op_type!r}")
    if data.dtype == "bool":
        raise TypeInferenceError("ccl.allreduce: bool tensors cannot be reduced (cast x to an "
                                 "integer dtype first)")
    return data


def _allgather_rel(arg_types, attrs) -> TensorType:
    data = expect_tensor(arg_types[0], "x")
    workers = _check_num_workers(attrs["num_workers"], "ccl.allgather")
    if data.ndim == 0:
        raise TypeInferenceError("ccl.allgather: x must have at least one axis (the gathered "
                                 "axis 0), got a scalar")
    first = data.shape[0]
    gathered = first if isinstance(first, AnyDim) else first * workers
    return TensorType((gathered,) + tuple(data.shape[1:]), data.dtype)


def _broadcast_rel(arg_types, attrs) -> TensorType:
    return expect_tensor(arg_types[0], "x")


def _scatter_rel(arg_types, attrs) -> TensorType:
    data = expect_tensor(arg_types[0], "x")
    workers = _check_num_workers(attrs["num_workers"], "ccl.scatter_from_worker0")
    if data.ndim == 0:
        raise TypeInferenceError("ccl.scatter_from_worker0: x must have at least one axis, got "
                                 "a scalar")
    axis = normalize_axis(attrs["axis"], data.ndim, "ccl.scatter_from_worker0: axis")
    size = data.shape[axis]
    if isinstance(size, AnyDim):
        part = size
    else:
        part = floordiv(size, workers)
        if dims_differ(part * workers, size):
            raise TypeInferenceError(
                f"ccl.scatter_from_worker0: axis {axis} of x has size {size}, which "
                f"num_workers={workers} does not divide")
    shape = list(data.shape)
    shape[axis] = part
    return TensorType(tuple(shape), data.dtype)


_ALLREDUCE = register_op("ccl.allreduce", ("x",),
                         attrs=("irlib.attrs.AllReduceAttrs", [("op_type", "sum")]),
                         type_rel=_allreduce_rel, pattern=OpPattern.OPAQUE,
                         description="reduce x elementwise over every worker (sum, prod, min, "
                                     "max, avg); every worker gets the result",
                         support_level=10)
_ALLGATHER = register_op("ccl.allgather", ("x",),
                         attrs=("irlib.attrs.AllGatherAttrs", [("num_workers", 1)]),
                         type_rel=_allgather_rel, pattern=OpPattern.OPAQUE,
                         description="concatenate every worker's x along axis 0; every worker "
                                     "gets the result",
                         support_level=10)
_BROADCAST = register_op("ccl.broadcast_from_worker0", ("x",), attrs=None,
                         type_rel=_broadcast_rel, pattern=OpPattern.OPAQUE,
                         description="every worker gets worker 0's x",
                         support_level=10)
_SCATTER = register_op("ccl.scatter_from_worker0", ("x",),
                       attrs=("irlib.attrs.ScatterCollectiveAttrs", [("num_workers", 1),
                                                                     ("axis", 0)]),
                       type_rel=_scatter_rel, pattern=OpPattern.OPAQUE,
                       description="cut worker 0's x into num_workers parts along axis; worker "
                                   "r gets part r",
                       support_level=10)
for _def in (_ALLREDUCE, _ALLGATHER, _BROADCAST, _SCATTER):
    _def.set_attr("TOpIsStateful", True)


# -- implementations --------------------------------------------------------------------------

def _world(op: str, num_workers: Optional[int] = None) -> Optional[Collectives]:
    """The backend (None for one worker), after checking ``num_workers`` against the size."""
    backend = current_collectives()
    size = 1 if backend is None else int(backend.world_size)
    if num_workers is not None and int(num_workers) != size:
        raise OpImplError(f"{op}: num_workers={num_workers} but the run has {size} worker(s) "
                          f"(start it with `mpiexec -n {num_workers}` or set num_workers="
                          f"{size})", op=op)
    return backend


def _result(value: np.ndarray, like: np.ndarray, op: str) -> tuple:
    """``(value,)`` after checking the backend kept the dtype."""
    value = np.asarray(value)
    if value.dtype != like.dtype:
        raise OpImplError(f"{op}: the collectives backend returned dtype {value.dtype} for an "
                          f"input of dtype {like.dtype}", op=op)
    return (value,)


@_ALLREDUCE.def_impl
def _allreduce_impl(x, op_type="sum"):
    if op_type not in REDUCE_OPS:
        raise OpImplError(f"ccl.allreduce: op_type must be one of {list(REDUCE_OPS)}, got "
                          f"{op_type!r}", op="ccl.allreduce")
    x = np.asarray(x)
    backend = _world("ccl.allreduce")
    if backend is None:
        return (np.array(x, copy=True),)
    return _result(backend.allreduce(np.ascontiguousarray(x), op_type), x, "ccl.allreduce")


@_ALLGATHER.def_impl
def _allgather_impl(x, num_workers=1):
    x = np.asarray(x)
    backend = _world("ccl.allgather", num_workers)
    if backend is None:
        return (np.array(x, copy=True),)
    return _result(backend.allgather(np.ascontiguousarray(x)), x, "ccl.allgather")


@_BROADCAST.def_impl
def _broadcast_impl(x):
    x = np.asarray(x)
    backend = _world("ccl.broadcast_from_worker0")
    if backend is None:
        return (np.array(x, copy=True),)
    return _result(backend.broadcast_from_worker0(np.ascontiguousarray(x)), x,
                   "ccl.broadcast_from_worker0")


@_SCATTER.def_impl
def _scatter_impl(x, num_workers=1, axis=0):
    x = np.asarray(x)
    backend = _world("ccl.scatter_from_worker0", num_workers)
    if x.ndim == 0 or not -x.ndim <= int(axis) < x.ndim:
        raise OpImplError(f"ccl.scatter_from_worker0: axis {axis} is out of range for an input "
                          f"of shape {x.shape}", op="ccl.scatter_from_worker0")
    axis = int(axis) % x.ndim
    if x.shape[axis] % int(num_workers):
        raise OpImplError(f"ccl.scatter_from_worker0: axis {axis} of the input has size "
                          f"{x.shape[axis]}, which num_workers={num_workers} does not divide",
                          op="ccl.scatter_from_worker0")
    if backend is None:
        return (np.array(x, copy=True),)
    return _result(backend.scatter_from_worker0(np.ascontiguousarray(x), axis), x,
                   "ccl.scatter_from_worker0")


# -- builders ---------------------------------------------------------------------------------

def allreduce(x, op_type: str = "sum"):
    """A call of ``ccl.allreduce``: every worker gets the elementwise reduction of all
    workers' ``x``.

    Args:
        x: a tensor expression (not bool).
        op_type: ``"sum"``, ``"prod"``, ``"min"``, ``"max"`` or ``"avg"``.
    """
    return make_call("ccl.allreduce", (x,), {"op_type": op_type})


def allgather(x, num_workers: int = 1):
    """A call of ``ccl.allgather``: every worker gets all workers' ``x`` concatenated along
    axis 0.

    Args:
        x: a tensor expression with at least one axis.
        num_workers: the number of workers (must equal the run's world size).
    """
    return make_call("ccl.allgather", (x,), {"num_workers": num_workers})


def broadcast_from_worker0(x):
    """A call of ``ccl.broadcast_from_worker0``: every worker gets worker 0's ``x``.

    Args:
        x: a tensor expression.
    """
    return make_call("ccl.broadcast_from_worker0", (x,))


def scatter_from_worker0(x, num_workers: int = 1, axis: int = 0):
    """A call of ``ccl.scatter_from_worker0``: worker ``r`` gets part ``r`` of worker 0's
    ``x`` cut into ``num_workers`` equal parts along ``axis``.

    Args:
        x: a tensor expression.
        num_workers: the number of workers (must equal the run's world size and divide the
            axis).
        axis: the axis to cut.
    """
    return make_call("ccl.scatter_from_worker0", (x,), {"num_workers": num_workers,
                                                        "axis": axis})
