"""``un_cps``: wrap a function that :func:`~irlib.transform.to_cps.to_cps` produced back into
its direct-style interface (Relay's ``UnCPS``).
"""

from __future__ import annotations

from ..errors import IRError
from ..ir import expr as E
from ..ir.module import IRModule
from ..ir.type_functor import substitute_type
from ..ir.types import FuncType


def un_cps(func: E.Function, mod: IRModule | None = None) -> E.Function:
    """Wrap a CPS function back into its direct-style interface.

    ``un_cps(f)`` is ``fn (%a...) { f(%a..., fn (%x) { %x }) }``, with ``answer``
    instantiated to the result type; higher-order parameters and results stay in CPS.

    Args:
        func: a function as :func:`to_cps` returns (its last type parameter is the answer
            type and its last parameter the continuation).
        mod: the module for type inference, needed only when ``func``'s parameters are
            not all annotated (:func:`to_cps` annotates them).

    Returns:
        The wrapper function.

    Raises:
        IRError: if ``func`` does not look like a CPS function.
    """
    if not func.type_params or not func.params:
        raise IRError("un_cps expects a function produced by to_cps ([..., answer] type "
                      "parameters and a continuation parameter)")
    types = [p.type_annotation for p in func.params]
    if any(t is None for t in types):
        from ..typeinf import infer_expr
        types = list(infer_expr(func, mod).checked_type.arg_types)
    answer = func.type_params[-1]
    *arg_types, cont_type = types
    if not isinstance(cont_type, FuncType) or len(cont_type.arg_types) != 1 \
            or cont_type.ret_type != answer:
        raise IRError("un_cps: the last parameter of a CPS function must be a continuation "
                      "returning its answer type")
    result_type = cont_type.arg_types[0]
    subst = {answer: result_type}
    params = tuple(E.Var(p.name_hint, substitute_type(t, subst))
                   for p, t in zip(func.params, arg_types))
    x = E.Var("x", result_type)
    body = E.Call(func, params + (E.Function((x,), x),))
    return E.Function(params, body, result_type, tuple(func.type_params[:-1]))
