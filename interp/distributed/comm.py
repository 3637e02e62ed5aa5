"""The communicator of a distributed run and the provider the ccl ops consult.

Which MPI communicator the ccl ops use, in order:

1. the one given to :func:`set_communicator` (any mpi4py ``Comm``, e.g. a
   ``COMM_WORLD.Split`` of a bigger job);
2. ``mpi4py.MPI.COMM_WORLD`` when this process was started by ``mpiexec``/``mpirun``/``srun``
   with more than one process (seen from the launcher's environment variables), or when
   ``mpi4py.MPI`` is already imported;
3. none: the run has one worker and the ccl ops are the identity (mpi4py is not imported).

mpi4py is imported only in case 2 (and by :func:`set_communicator`'s caller in case 1), so
irlib runs without it. When MPI is engaged with more than one process, an unhandled
exception on any rank prints the rank's traceback and aborts the whole job
(``MPI_Abort``) instead of leaving the other ranks waiting in a collective
(:func:`install_abort_on_error`).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Optional

from irlib.errors import IRError

__all__ = ["DistributedError", "set_communicator", "get_communicator", "rank", "world_size",
           "launched_size", "install_abort_on_error", "collectives"]

_LAUNCHER_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")
"""Environment variables through which MPICH/hydra, Open MPI, PMIx and MVAPICH launchers
tell a process the job's size (the first one set is used); ``srun`` with PMI sets
``PMI_SIZE`` too."""

_STATE = {"comm": None, "backend": None, "backend_comm": None, "abort_hook": False}


class DistributedError(IRError):
    """A distributed run cannot proceed: mpi4py or ``mpiexec`` is missing, a communicator
    is not an mpi4py communicator, or an argument of a launch or sharding helper is wrong."""


def launched_size() -> int:
    """The number of processes the MPI launcher started (1 when not started by one).

    Read from the launcher's environment (``PMI_SIZE`` for MPICH's hydra, ``OMPI_COMM_WORLD_SIZE``
    for Open MPI, ...), so it costs nothing and never imports mpi4py.
    """
    for name in _LAUNCHER_SIZE_VARS:
        value = os.environ.get(name)
        if value and value.isdigit():
            return int(value)
    return 1


def _import_mpi():
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise DistributedError(
            f"this process is part of a {launched_size()}-process MPI job (or was given a "
            "communicator) but mpi4py cannot be imported: pip install 'irlib[mpi]' "
            f"({error})") from error
    return MPI


def set_communicator(comm) -> None:
    """Make ``comm`` the communicator of the ccl ops (None returns to the default).

    Args:
        comm: an mpi4py communicator (``MPI.COMM_WORLD``, a split of it, ...), or None.

    Raises:
        DistributedError: ``comm`` is not an mpi4py communicator.
    """
    if comm is not None and not (hasattr(comm, "Get_size") and hasattr(comm, "Allreduce")):
        raise DistributedError(f"set_communicator: expected an mpi4py communicator, got "
                               f"{type(comm).__name__}")
    _STATE["comm"] = comm
    _STATE["backend"] = _STATE["backend_comm"] = None


def get_communicator():
    """The communicator the ccl ops use now, or None for a one-process run (see the module
    docstring for the order of choice)."""
    if _STATE["comm"] is not None:
        return _STATE["comm"]
    if launched_size() > 1 or "mpi4py.MPI" in sys.modules:
        return _import_mpi().COMM_WORLD
    return None


def world_size() -> int:
    """The number of workers of the run (the communicator's size; 1 without one)."""
    comm = get_communicator()
    return 1 if comm is None else int(comm.Get_size())


def rank() -> int:
    """This worker's rank in the run's communicator (0 without one)."""
    comm = get_communicator()
    return 0 if comm is None else int(comm.Get_rank())


def install_abort_on_error() -> None:
    """Make an unhandled exception on this rank print ``[rank r]`` and its traceback, then
    abort the whole MPI job (exit status 1), so the other ranks do not wait for it forever.

    Installed when ``interp.distributed`` is imported in a process an MPI launcher started
    as one of several, and the first time a ccl op runs with more than one worker (a
    communicator set by hand). An error raised before MPI started still aborts the job: the
    hook starts MPI (imports mpi4py) to do it. Launching with ``python -m mpi4py``, as
    :func:`~interp.distributed.launch` does, covers errors raised before ``interp`` is
    imported too. Idempotent.
    """
    if _STATE["abort_hook"]:
        return
    previous = sys.excepthook

    def abort_job(kind, value, tb):
        mpi = sys.modules.get("mpi4py.MPI")
        if mpi is None and launched_size() > 1:
            try:                    # MPI not started yet: start it, only to abort the job
                from mpi4py import MPI as mpi
            except ImportError:
                mpi = None
        world = mpi.COMM_WORLD if mpi is not None and mpi.Is_initialized() \
            and not mpi.Is_finalized() else None
        where = f"[rank {world.Get_rank()}] " if world is not None else ""
        sys.stderr.write(f"{where}unhandled {kind.__name__}; aborting the MPI job\n")
        previous(kind, value, tb)
        sys.stderr.flush()
        if world is not None and world.Get_size() > 1:
            # the launcher forwards each rank's output through pipes and stops forwarding
            # once the abort kills the job: give it a moment to pass the traceback on
            time.sleep(0.25)
            world.Abort(1)     # the whole job, also when the run's communicator is a split

    sys.excepthook = abort_job
    _STATE["abort_hook"] = True


def collectives():
    """The MPI backend for the current communicator, or None for one worker.

    This is the provider :mod:`irlib.op.ccl` calls on every collective
    (``irlib.op.ccl.set_collectives_provider``); the backend is made once per communicator.
    """
    comm = get_communicator()
    if comm is None or comm.Get_size() <= 1:
        return None
    if _STATE["backend_comm"] is not comm:
        from .mpi_backend import MPICollectives
        _STATE["backend"] = MPICollectives(comm)
        _STATE["backend_comm"] = comm
        install_abort_on_error()
    return _STATE["backend"]
