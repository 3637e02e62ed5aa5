"""Starting a multi-process run: find ``mpiexec`` and launch Python under it.

``mpiexec`` comes from the MPI that is installed with mpi4py: ``pip install 'irlib[mpi]'``
installs the ``mpich`` wheel, which puts ``mpiexec`` (MPICH's hydra) next to the Python
executable; a system MPI on ``PATH`` (Open MPI, MPICH, Intel MPI) works as well.
:func:`find_mpiexec` looks in that order, after the ``IRLIB_MPIEXEC`` environment variable.

Every launched Python runs under ``python -m mpi4py``, which aborts the whole job when one
rank raises (the rank's traceback is printed and the job exits non-zero) instead of leaving
the other ranks waiting in a collective.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Optional, Sequence

from .comm import DistributedError

__all__ = ["find_mpiexec", "mpiexec_command", "launch"]

_NAMES = ("mpiexec", "mpirun")


def find_mpiexec() -> str:
    """The path of the ``mpiexec`` to launch with.

    Looked up in order: the ``IRLIB_MPIEXEC`` environment variable; ``mpiexec``/``mpirun``
    in the directory of ``sys.executable`` (where pip puts the ``mpich`` wheel's one, also
    inside a virtual environment); then ``PATH``.

    Raises:
        DistributedError: none is found (the message says how to install one).
    """
    given = os.environ.get("IRLIB_MPIEXEC")
    if given:
        if not (os.path.isfile(given) and os.access(given, os.X_OK)):
            raise DistributedError(f"IRLIB_MPIEXEC={given!r} is not an executable file")
        return given
    bindir = Path(sys.executable).parent
    for name in _NAMES:
        candidate = bindir / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    for name in _NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise DistributedError("no mpiexec found next to the Python executable or on PATH; "
                           "install one with: pip install 'irlib[mpi]' (mpich and mpi4py)")


def mpiexec_command(argv: Sequence[str], np: int, hostfile: Optional[str] = None,
                    hosts: Optional[Sequence[str]] = None, python: Optional[str] = None,
                    mpiexec: Optional[str] = None) -> list:
    """The command line that runs ``python -m mpi4py ARGV...`` as ``np`` processes.

    Args:
        argv: what follows ``python -m mpi4py``: a script path and its arguments, or
            ``["-m", "module", ...]`` or ``["-c", "code"]``.
        np: the number of processes (>= 1).
        hostfile: a hostfile spreading the processes over machines (``-f`` for MPICH's
            hydra, ``--hostfile`` for Open MPI); None runs them all on this machine.
        hosts: host names to run on instead of a hostfile (``-hosts a,b`` / ``--host a,b``).
        python: the Python executable (``sys.executable`` by default; every host must have
            it at that path).
        mpiexec: the launcher (:func:`find_mpiexec` by default).

    Raises:
        DistributedError: ``np`` is not a positive int, or both ``hostfile`` and ``hosts``
            are given.
    """
    if isinstance(np, bool) or not isinstance(np, int) or np < 1:
        raise DistributedError(f"the number of processes must be a positive int, got {np!r}")
    if hostfile is not None and hosts:
        raise DistributedError("give a hostfile or a host list, not both")
    launcher = mpiexec or find_mpiexec()
    open_mpi = _is_open_mpi(launcher)
    command = [launcher, "-n", str(np)]
    if hostfile is not None:
        command += ["--hostfile" if open_mpi else "-f", str(hostfile)]
    elif hosts:
        command += ["--host" if open_mpi else "-hosts", ",".join(hosts)]
    return command + [python or sys.executable, "-m", "mpi4py", *argv]


def _is_open_mpi(launcher: str) -> bool:
    """Whether ``launcher`` is Open MPI's (its options differ from MPICH's hydra)."""
    try:
        out = subprocess.run([launcher, "--version"], capture_output=True, text=True,
                             timeout=20)
    except (OSError, subprocess.SubprocessError):
        return False
    return "Open MPI" in out.stdout + out.stderr or "OpenRTE" in out.stdout + out.stderr


def launch(argv: Sequence[str], np: int, hostfile: Optional[str] = None,
           hosts: Optional[Sequence[str]] = None, timeout: Optional[float] = None,
           capture_output: bool = False, env: Optional[dict] = None,
           cwd: Optional[str] = None) -> subprocess.CompletedProcess:
    """Run ``python -m mpi4py ARGV...`` as ``np`` MPI processes and wait for them.

    Args:
        argv: a script and its arguments, or ``["-m", "module", ...]`` (see
            :func:`mpiexec_command`).
        np: the number of processes.
        hostfile: spread the processes over the machines of this hostfile.
        hosts: or over these hosts.
        timeout: seconds before the whole job is killed (None waits).
        capture_output: capture stdout/stderr (text) instead of inheriting them.
        env: the environment (``os.environ`` by default).
        cwd: the working directory.

    Returns:
        The ``subprocess.CompletedProcess``; ``returncode`` is non-zero when a rank failed.

    Raises:
        DistributedError: no ``mpiexec``, bad arguments, or the job ran past ``timeout``
            (it is killed first).
    """
    command = mpiexec_command(argv, np, hostfile=hostfile, hosts=hosts)
    child_env = dict(os.environ if env is None else env)
    for name in ("PMI_SIZE", "PMI_RANK", "PMI_FD", "OMPI_COMM_WORLD_SIZE"):
        child_env.pop(name, None)      # a launch from inside a job starts a new job
    pipe = subprocess.PIPE if capture_output else None
    # A session of its own, so a timeout kills mpiexec's whole process group (its proxies
    # and the ranks), not just mpiexec.
    with subprocess.Popen(command, stdout=pipe, stderr=pipe, text=True, env=child_env,
                          cwd=cwd, start_new_session=True) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired as error:
            _kill_group(process)
            raise DistributedError(f"{' '.join(command)} ran past its timeout of {timeout} s "
                                   "and was killed") from error
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def _kill_group(process: subprocess.Popen) -> None:
    """Kill the process group led by ``process`` (started with ``start_new_session``)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.communicate()
