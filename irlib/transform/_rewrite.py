"""Module-level helpers of the passes (map a rewrite over a module's functions, primitive
and type queries).

The rewriting machinery itself is IR: :class:`irlib.ir.functor.ExprMutator` (the one
mutator, let-aware) and :mod:`irlib.ir.rewrite` (``substitute``, ``fresh_copy``,
``binders``, ``let_chain``/``make_lets``); the names re-exported here from
:mod:`irlib.ir.rewrite` are kept for code written before the move.
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir.module import IRModule
from ..ir.rewrite import binders, fresh_copy, fresh_var, substitute  # noqa: F401  (re-export)


def map_functions(mod: IRModule, transform, skip_marked: bool = True) -> IRModule:
    """A copy of ``mod`` with ``transform(func)`` applied to each function.

    Args:
        mod: the module (not mutated).
        transform: a function Function -> Function.
        skip_marked: leave ``Compiler``/``Extern``/``SkipOptimization`` functions alone.
    """
    from .pass_infra import is_skipped_function
    new_mod = mod.copy()
    for gvar, func in mod.items():
        if skip_marked and is_skipped_function(func):
            continue
        new_func = transform(func)
        if new_func is not func:
            new_mod[gvar] = new_func
    return new_mod


def is_primitive(func: E.Function) -> bool:
    """Whether ``func`` is a fused ``Primitive=1`` function."""
    return bool(func.get_attr("Primitive"))


def known_type(node):
    """The node's inferred type, else its annotation (for vars), else None."""
    ty = node._checked_type
    if ty is None and isinstance(node, E.Var):
        ty = node.type_annotation
    return ty
