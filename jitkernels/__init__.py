"""Compiled kernels for the hot ops, found by op name: ``cpu/`` (numba) and ``cuda/`` (numba.cuda).

A kernel has exactly the calling convention of the op's numpy reference implementation
(``irlib.op.get_def(name).impl``): the op's inputs as positional numpy arrays, the call's
attributes as keywords, and a tuple of numpy arrays back. So a kernel can be compared with
``irlib.op.evaluate`` directly, and an executor can swap one in for the reference::

    kernel = jitkernels.get_kernel("nn.conv2d", "cpu")
    out, = kernel(data, weight, **dict(call.attrs))

Kernels cover float32 and float64; for anything else (integer or float16 tensors, layouts a
kernel has no code for) they call the reference implementation themselves, so a registered
kernel always gives the reference's answer. :func:`get_kernel` returns None where an op has
no kernel for the target, where numba is missing, and for ``"cuda"`` where neither a GPU nor
the CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) is present.

Adding a kernel (see docs/kernels.md)::

    @register_kernel("nn.relu", target="cpu")
    def relu(data):
        return (np.maximum(data, 0),)

This package imports only ``irlib`` and numba, and numba only when a target's kernels are
first requested.
"""

from __future__ import annotations

import importlib
from typing import Callable, Optional

__all__ = ["register_kernel", "get_kernel", "list_kernels", "available_targets",
           "register_layout_preference", "layout_preferences", "kernel_index", "TARGET_ALIASES"]

TARGET_ALIASES = {"cpu": "cpu", "llvm": "cpu", "cuda": "cuda", "gpu": "cuda"}
"""Target names accepted by the registry, mapped to the canonical ones."""

_KERNELS: dict = {"cpu": {}, "cuda": {}}
_LAYOUT_RULES: dict = {"cpu": {}, "cuda": {}}   # target -> op -> (layouts, admits)
_DEFINED: dict = {"cpu": set(), "cuda": set()}  # ops with a kernel defined, usable here or not
_LOADED: dict = {}      # target -> True once its modules were imported (or could not be)
_MODULES = {"cpu": "jitkernels.cpu", "cuda": "jitkernels.cuda"}


def _canonical_target(target: str) -> str:
    try:
        return TARGET_ALIASES[target]
    except KeyError:
        raise ValueError(f"unknown kernel target {target!r}; expected one of "
                         f"{sorted(TARGET_ALIASES)}") from None


def register_kernel(op_name: str, target: str = "cpu") -> Callable:
    """Decorator registering a kernel for ``op_name`` on ``target``.

    Args:
        op_name: the op's registered name (``"nn.conv2d"``).
        target: ``"cpu"`` or ``"cuda"`` (aliases ``"llvm"``, ``"gpu"``).

    Returns:
        A decorator that records the function and returns it unchanged. A later registration
        for the same op and target replaces the earlier one.

    Raises:
        ValueError: for an unknown target.
    """
    target = _canonical_target(target)

    def decorate(function: Callable) -> Callable:
        _KERNELS[target][op_name] = function
        _DEFINED[target].add(op_name)
        return function
    return decorate


def _load(target: str) -> None:
    if _LOADED.get(target):
        return
    _LOADED[target] = True
    try:
        module = importlib.import_module(_MODULES[target])
    except ImportError:          # numba (or numba.cuda) missing: no kernels for this target
        _KERNELS[target].clear()
        _LAYOUT_RULES[target].clear()
        return
    if target == "cuda" and not module.available():
        _KERNELS[target].clear()
        _LAYOUT_RULES[target].clear()


def get_kernel(op_name: str, target: str = "cpu") -> Optional[Callable]:
    """The kernel registered for ``op_name`` on ``target``, or None.

    The first call for a target imports its kernel modules (and numba).

    Args:
        op_name: the op name.
        target: ``"cpu"``/``"llvm"`` or ``"cuda"``/``"gpu"``.

    Raises:
        ValueError: for an unknown target.
    """
    target = _canonical_target(target)
    _load(target)
    return _KERNELS[target].get(op_name)


def list_kernels(target: str = "cpu") -> list:
    """Sorted names of the ops that have a kernel on ``target``."""
    target = _canonical_target(target)
    _load(target)
    return sorted(_KERNELS[target])


def available_targets() -> list:
    """The targets with at least one usable kernel in this process."""
    return [t for t in ("cpu", "cuda") if list_kernels(t)]


def register_layout_preference(op_name: str, layouts, target: str = "cpu") -> Callable:
    """Decorator registering where ``op_name``'s kernel on ``target`` prefers other layouts.

    The decorated ``admits(call) -> bool`` receives a typed call of ``op_name`` (in the op's
    default layouts) and says whether the kernel runs it faster with its arguments in
    ``layouts``; the build pipeline's AlterOpLayout converts exactly those calls (see
    :func:`layout_preferences`).

    Args:
        op_name: the op's registered name (``"nn.conv2d"``).
        layouts: AlterOpLayout's desired layouts for the op (``["NHWC", "HWIO"]``: data,
            kernel).
        target: ``"cpu"`` or ``"cuda"`` (aliases ``"llvm"``, ``"gpu"``).

    Returns:
        A decorator that records ``admits`` and returns it unchanged.

    Raises:
        ValueError: for an unknown target.
    """
    target = _canonical_target(target)

    def decorate(admits: Callable) -> Callable:
        _LAYOUT_RULES[target][op_name] = (list(layouts), admits)
        return admits
    return decorate


def layout_preferences(target: str = "cpu"):
    """The layouts ``target``'s kernels prefer, for the build pipeline (``interp.build`` asks
    here instead of knowing any kernel's preference itself).

    The first call for a target imports its kernel modules (and numba).

    Args:
        target: a target name; targets without kernels (``"python"``) prefer none.

    Returns:
        ``(desired_layouts, accept)`` as :func:`irlib.transform.pipeline.optimize` takes it
        (``{op: layouts}`` and ``call -> bool``), or None when the target's kernels prefer
        no other layout (or its kernels are unavailable).
    """
    if target not in TARGET_ALIASES:
        return None
    target = _canonical_target(target)
    _load(target)
    rules = dict(_LAYOUT_RULES[target])
    if not rules:
        return None

    def accept(call) -> bool:
        rule = rules.get(getattr(call.op, "name", None))
        return rule is not None and bool(rule[1](call))
    return {op: list(layouts) for op, (layouts, _) in rules.items()}, accept


def kernel_index() -> dict:
    """Which backends have compiled code for each op (the "kernels" column of docs/ops.md).

    Returns:
        ``{op name: [backend, ...]}`` with the backends in the order ``"cpu"`` (a numba
        kernel), ``"cuda"`` (a numba.cuda kernel, whether or not this machine has a GPU) and
        ``"fused"`` (the fused-group code generator inlines the op); ops with none are absent.
        Imports the kernel modules that import (numba, numba.cuda).
    """
    for target in ("cpu", "cuda"):
        try:
            importlib.import_module(_MODULES[target])
        except ImportError:     # numba (or numba.cuda) missing: no kernels for this target
            pass
    from irlib.op import list_ops
    from .codegen import scalar_ops
    index: dict = {}
    for name in list_ops():
        backends = [t for t in ("cpu", "cuda") if name in _DEFINED[t]]
        if scalar_ops.supported(name):
            backends.append("fused")
        if backends:
            index[name] = backends
    return index
