"""ToBasicBlockNormalForm: bind only what is shared between scopes (Relay's pass).

*Scopes* are function bodies, ``if`` branches and ``match`` clauses. An expression used from
two different scopes (say, from both branches of an ``if``) is let-bound once, in the
innermost scope that contains all its uses, so it is evaluated at one place. Everything
else stays as it is: graph sharing inside one scope is kept, and nothing else is let-bound
(ToANormalForm, by contrast, binds every intermediate result). ``Primitive`` functions are
not entered; functions marked ``Compiler`` are skipped. Afterwards
:func:`irlib.analysis.check_basic_block_normal_form` holds.

Before/after::

    fn (%x, %c) { %0 = exp(%x); if (%c) { %0 } else { log(%0) } }
    fn (%x, %c) { let %x_0 = exp(%x); if (%c) { %x_0 } else { log(%x_0) } }
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import ClassVar

from ..ir import expr as E
from ..ir.functor import post_order
from ..ir.module import IRModule
from ._rewrite import is_primitive, map_functions
from .pass_infra import ModulePass
from .to_a_normal_form import _ATOMS, _child_scopes, _Converter, _run


def _shared_between_scopes(converter: _Converter, body: E.Expr) -> set:
    """The non-atomic nodes under ``body`` referenced from more than one scope."""
    use_scopes: dict = {}
    for node in post_order(body):
        if isinstance(node, _ATOMS) or node not in converter.scope_of:
            continue
        scope = converter.scope_of[node]
        for child, child_scope in _child_scopes(node, scope, converter.branch_scopes):
            if not isinstance(child, _ATOMS):
                use_scopes.setdefault(child, set()).add(id(child_scope))
    return {node for node, scopes in use_scopes.items() if len(scopes) > 1}


def to_basic_block_normal_form(expr: E.Expr) -> E.Expr:
    """``expr`` in basic block normal form (see the module docstring).

    Args:
        expr: an expression; a Function is converted inside, anything else as a whole.

    Returns:
        The converted expression (structurally ``expr`` if nothing is shared across scopes).
    """
    counter = itertools.count()
    if isinstance(expr, E.Function):
        if is_primitive(expr):
            return expr
        return expr.replace(body=_run(_Converter(counter), expr.body, _shared_between_scopes))
    return _run(_Converter(counter), expr, _shared_between_scopes)


@dataclass(frozen=True)
class ToBasicBlockNormalForm(ModulePass):
    """Convert every function of the module to basic block normal form."""

    name: ClassVar[str] = "ToBasicBlockNormalForm"
    opt_level: ClassVar[int] = 1

    def transform_module(self, mod: IRModule, ctx=None) -> IRModule:
        """The module in basic block normal form."""
        return map_functions(mod, to_basic_block_normal_form)
