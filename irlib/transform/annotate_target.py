"""AnnotateTarget: mark which external compiler runs each op call (Relay's
``AnnotateTarget(targets, include_non_call_ops=True)``; the first parameter is named
``target`` as in the documented API).

Each op call gets the first target ``t`` of ``targets`` whose predicate
``get_def(op).get_attr("target.<t>")`` (True, or a function of the call returning True)
accepts it, else ``"default"``; a call of a ``Composite`` function named ``"<t>.<...>"``
gets ``t`` when ``t`` is listed. Every argument of a call is wrapped as
``compiler_begin(compiler_end(arg, <arg's target>), <call's target>)``; variables, constants
and other unannotated values get only ``compiler_begin``. With ``include_non_call_ops``
tuples and projections are annotated too: a tuple takes its fields' target when they all
agree, else ``"default"``; a projection takes its tuple's. Other nodes (let, if, ...) close
the regions of their operands with ``compiler_end``. The function body gets a final
``compiler_end``. A call whose first argument already is a ``compiler_begin`` is left
alone (Relay skips only non-default ones), so running the pass twice changes nothing.

:func:`register_target_op` installs a predicate (Relay's ``tvm.ir.register_op_attr(op,
"target.<t>")``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import expr as E
from ..ir.functor import children, post_order, rebuild
from ..op.registry import get_def, make_call
from ._rewrite import map_functions
from .pass_infra import ModulePass

BEGIN, END, DEFAULT = "annotation.compiler_begin", "annotation.compiler_end", "default"


def register_target_op(op_name: str, target: str, predicate=True) -> None:
    """Declare that ``target`` supports ``op_name`` (``predicate``: True/False or a function
    of the call; None removes the declaration)."""
    get_def(op_name).set_attr(f"target.{target}", predicate)


def begin(expr, target):
    """``annotation.compiler_begin(expr, compiler=target)``."""
    return make_call(BEGIN, (expr,), {"compiler": target})


def end(expr, target):
    """``annotation.compiler_end(expr, compiler=target)``."""
    return make_call(END, (expr,), {"compiler": target})


def annotation_target(node, name):
    """The compiler of a ``compiler_begin``/``compiler_end`` call ``name``, else None.

    Args:
        node: an expression.
        name: ``"compiler_begin"`` or ``"compiler_end"``.
    """
    if type(node) is E.Call and isinstance(node.op, E.Op) and node.op.name == name:
        return node.attrs["compiler"]
    return None


def _call_target(call, targets) -> str:
    callee = call.op
    if isinstance(callee, E.Op):
        for target in targets:
            predicate = get_def(callee.name).get_attr(f"target.{target}")
            if predicate is True or (callable(predicate) and predicate(call)):
                return target
        return DEFAULT
    if isinstance(callee, E.Function):
        composite = callee.get_attr("Composite")
        if isinstance(composite, str) and composite.split(".")[0] in targets:
            return composite.split(".")[0]
    return DEFAULT


class _Annotator:
    def __init__(self, targets, include_non_call_ops):
        self.targets = targets
        self.include = include_non_call_ops
        self.memo: dict = {}
        self.target: dict = {}

    def wrap(self, arg, target):
        new_arg, arg_target = self.memo[arg], self.target.get(arg)
        if arg_target is None:
            return begin(new_arg, target)
        return begin(end(new_arg, arg_target), target)

    def close(self, node):
        new, target = self.memo[node], self.target.get(node)
        return new if target is None else end(new, target)

    def run(self, func):
        """``func`` annotated: nodes are handled children first, not descending into
        functions or into arguments that already carry a ``compiler_begin``."""
        def children_of(node):
            if type(node) is E.Function or annotation_target(node, BEGIN) is not None:
                return ()
            return children(node)
        for node in post_order(func.body, children_of=children_of):
            self.visit(node)
        return func.replace(body=self.close(func.body))

    def visit(self, node):
        kind = type(node)
        memo = self.memo
        if kind is E.Call and isinstance(node.op, E.Op) and node.op.name in (BEGIN, END):
            memo[node] = node if node.op.name == BEGIN else \
                rebuild(node, tuple(memo.get(c, c) for c in children(node)))
            return
        if kind is E.Call and not isinstance(node.op, (E.GlobalVar, E.Var)):
            first = node.args[0] if node.args else None
            existing = annotation_target(first, BEGIN) if first is not None else None
            if existing is not None:
                memo[node] = rebuild(node, tuple(memo.get(c, c) for c in children(node)))
                self.target[node] = existing
                return
            target = _call_target(node, self.targets)
            memo[node] = node.replace(args=tuple(self.wrap(a, target) for a in node.args))
            self.target[node] = target
            return
        if self.include and kind is E.Tuple:
            field_targets = {self.target.get(f) for f in node.fields}
            target = field_targets.pop() if len(field_targets) == 1 else DEFAULT
            target = target if target is not None else DEFAULT
            memo[node] = node.replace(fields=tuple(self.wrap(f, target) for f in node.fields))
            self.target[node] = target
            return
        if self.include and kind is E.TupleGetItem:
            target = self.target.get(node.tuple_value) or DEFAULT
            memo[node] = node.replace(tuple_value=self.wrap(node.tuple_value, target))
            self.target[node] = target
            return
        if kind in (E.Var, E.Constant, E.Op, E.GlobalVar, E.Constructor, E.Function):
            memo[node] = node
            return
        memo[node] = rebuild(node, tuple(self.close(c) if c in memo else c
                                         for c in children(node)))


def annotate_target(func, targets, include_non_call_ops=True):
    """``func`` with compiler annotations (see the module docstring)."""
    return _Annotator(targets, include_non_call_ops).run(func)


@dataclass(frozen=True)
class AnnotateTarget(ModulePass):
    """Annotate op calls with the external compiler that supports them.

    Args:
        target: a target name or a list of them, in priority order (Relay ≥0.7 calls it
            ``targets``).
        include_non_call_ops: annotate tuples and projections too.
    """

    target: object
    include_non_call_ops: bool = True
    name: ClassVar[str] = "AnnotateTarget"
    opt_level: ClassVar[int] = 0

    def transform_module(self, mod, ctx=None):
        """The annotated, type-checked copy of ``mod``."""
        from ..typeinf import infer_module
        targets = [self.target] if isinstance(self.target, str) else list(self.target)
        new_mod = map_functions(mod, lambda f: annotate_target(f, targets,
                                                              self.include_non_call_ops))
        return infer_module(new_mod)
