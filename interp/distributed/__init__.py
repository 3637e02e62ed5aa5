"""Distributed runs: the ccl ops on MPI, launch helpers and a tensor-parallel example.

A distributed irlib run is N copies of one program, one per process, started by ``mpiexec``
(SPMD). The collective ops of :mod:`irlib.op.ccl` (``nn.ccl_allreduce``,
``nn.ccl_broadcast_from_worker0``, ``ccl.allgather``, ``ccl.scatter_from_worker0``) move
data between the copies; every executor (interpreter, ``to_python``, graph executor) runs
them through the provider this package installs into the op registry when it is imported
(``interp`` imports it):

* communicator: :func:`set_communicator` (any mpi4py communicator) or, by default,
  ``COMM_WORLD`` of the job ``mpiexec`` started; :func:`rank` and :func:`world_size` ask it.
  A process not started by an MPI launcher is a one-worker run (the ops are the identity)
  and never imports mpi4py (:mod:`interp.distributed.comm`);
* the collectives themselves (:class:`~interp.distributed.mpi_backend.MPICollectives`):
  ``Allreduce``/``Allgather``/``Bcast``/``Scatter`` on numpy buffers, no pickling;
* launching: :func:`launch` (``mpiexec -n N python -m mpi4py ...``), :func:`find_mpiexec`,
  :func:`mpiexec_command`; ``irlib run MODEL --np N`` uses them
  (:mod:`interp.distributed.launch`);
* weights from rank 0: :func:`load_from_worker0`, :func:`broadcast_array`,
  :func:`scatter_array`, :func:`shard` (:mod:`interp.distributed.sharding`);
* the tensor-parallel example: :mod:`interp.distributed.tensor_parallel` (import it by
  name; it needs the nn builder).

Guide: docs/distributed.md.
"""

from irlib.op.ccl import set_collectives_provider

from .comm import (DistributedError, collectives, get_communicator, install_abort_on_error,
                   launched_size, rank, set_communicator, world_size)
from .launch import find_mpiexec, launch, mpiexec_command
from .sharding import broadcast_array, load_from_worker0, scatter_array, shard

__all__ = ["DistributedError", "set_communicator", "get_communicator", "rank", "world_size",
           "launched_size", "install_abort_on_error", "collectives", "find_mpiexec",
           "mpiexec_command", "launch", "broadcast_array", "scatter_array", "shard",
           "load_from_worker0"]

set_collectives_provider(collectives)
if launched_size() > 1:
    install_abort_on_error()      # a failing rank ends the job instead of hanging the others
