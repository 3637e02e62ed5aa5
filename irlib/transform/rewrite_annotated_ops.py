"""RewriteAnnotatedOps: turn ``on_device`` annotations into device copies (Relay ≤0.8's
``RewriteAnnotatedOps(fallback_device)``).

Each op call runs on the device of the ``on_device`` annotation wrapping it, else on
``fallback_device`` (a device type number, 1 = cpu, 2 = cuda, or a name). Wherever a value
computed on one device is consumed by an op call on another, a
``device_copy(value, src_device, dst_device)`` is inserted (one per consumer); the
annotations themselves are removed. Variables and constants live anywhere and are never
copied.

irlib's operator library has no ``device_copy`` op yet: a program that needs a copy raises
an :class:`~irlib.errors.IRError` naming the edge; one that needs none is simply
un-annotated.

Before/after (fallback cpu)::

    subtract(on_device(add(%x, %y), virtual_device="cuda"), %z)
    subtract(device_copy(add(%x, %y), "cuda", "cpu"), %z)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import IRError, UnknownNameError
from ..ir import expr as E
from ..ir.functor import children, post_order, rebuild
from ..op.registry import make_call
from ._rewrite import map_functions
from ._typed import op_name
from .pass_infra import ModulePass

_DEVICE_TYPES = {1: "cpu", 2: "cuda"}


def _device_name(device) -> str:
    if isinstance(device, int):
        return _DEVICE_TYPES.get(device, str(device))
    text = str(device)
    return text.split("(")[0]          # "cuda(0)" -> "cuda"


def rewrite_annotated_ops(func: E.Function, fallback_device) -> E.Function:
    """``func`` without ``on_device`` annotations, with device copies on cross-device edges."""
    fallback = _device_name(fallback_device)
    order = post_order(func.body)
    placed = {}
    for node in order:
        if op_name(node) == "on_device":
            placed[node.args[0]] = _device_name(node.attrs["virtual_device"])
    device, memo = {}, {}
    for node in order:
        name = op_name(node)
        if name == "on_device":
            memo[node] = memo[node.args[0]]
            device[node] = device.get(node.args[0])
            continue
        if name is None:
            memo[node] = rebuild(node, tuple(memo[c] for c in children(node)))
            continue
        here = placed.get(node, fallback)
        device[node] = here
        args = []
        for arg in node.args:
            source = device.get(arg)
            new_arg = memo[arg]
            if source is not None and source != here:
                try:
                    new_arg = make_call("device_copy", (new_arg,),
                                        {"src_device": source, "dst_device": here})
                except UnknownNameError as error:
                    producer = arg
                    while op_name(producer) == "on_device":
                        producer = producer.args[0]
                    raise IRError(f"RewriteAnnotatedOps: {op_name(producer)} on {source} feeds "
                                  f"{name} on {here}, but the device_copy op is not "
                                  f"registered") from error
            args.append(new_arg)
        memo[node] = node.replace(args=tuple(args))
    return func.replace(body=memo[func.body])


@dataclass(frozen=True)
class RewriteAnnotatedOps(ModulePass):
    """Replace ``on_device`` annotations by device copies (see the module docstring).

    Args:
        fallback_device: the device type (or name) of unannotated ops.
    """

    fallback_device: object
    name: ClassVar[str] = "RewriteAnnotatedOps"
    opt_level: ClassVar[int] = 1
    required: ClassVar[tuple] = ("InferType",)

    def transform_module(self, mod, ctx=None):
        """The rewritten, type-checked copy of ``mod``."""
        from ..typeinf import infer_module
        return infer_module(map_functions(
            mod, lambda f: rewrite_annotated_ops(f, self.fallback_device)))
