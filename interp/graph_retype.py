"""Typed copies of lowered expressions under more precise input types (for the graph lowering).

The ONNX importer types a loop's growing state (a scan output built by concatenation) as
``Tensor[(?, 3), float32]``, and every fused function that touches it keeps the ``?`` in
its parameter and result annotations. The graph lowering needs sizes it can compute:

* inside the loop, each ``?`` of a state variable becomes a size variable
  (``Tensor[(s3_0, 3), float32]``), and the step then has the type
  ``Tensor[(s3_0 + 1, 3), float32]`` (:mod:`interp.graph_growing`);
* after the loop, whose outputs have static shapes, a fused function whose parameter was
  typed ``?`` is specialised to the static types of its arguments.

:func:`retyped_copy` makes both: a fresh copy of an expression (new variables, new calls,
new primitive functions with their parameter and result annotations dropped so that
inference takes them from the arguments) that is type-inferred with the given variable
types. The original nodes are not touched (their ``checked_type`` stays as it was).
"""

from __future__ import annotations

from irlib.errors import IRError
from irlib.ir import expr as E
from irlib.ir.dims import AnyDim
from irlib.ir.functor import free_vars, post_order
from irlib.ir.types import TensorType, TupleType

__all__ = ["has_any", "retyped_copy", "specialise_primitive"]


def has_any(ty) -> bool:
    """Whether a (nested tuple of) tensor type has an ``Any`` (``?``) dim.

    Args:
        ty: a type (other kinds of types count as having none).
    """
    stack = [ty]
    while stack:
        current = stack.pop()
        if isinstance(current, TupleType):
            stack.extend(current.fields)
        elif isinstance(current, TensorType):
            if any(isinstance(d, AnyDim) for d in current.shape):
                return True
    return False


def _copy(expr, var_types: dict) -> tuple:
    """An untyped copy of ``expr`` (every node new) and the map old node -> new node.

    Variables in ``var_types`` get that type as annotation; the parameters of primitive
    functions and their result type lose their annotations; other variables keep theirs.
    """
    new: dict = {}
    order = post_order(expr)
    unannotated = {param for node in order if type(node) is E.Function
                   and (node.attrs or {}).get("Primitive", 0) for param in node.params}
    for node in order:
        kind = type(node)
        if kind is E.Var:
            if node not in new:
                ty = None if node in unannotated else var_types.get(node, node.type_annotation)
                new[node] = E.Var(node.name_hint, ty)
            continue
        if kind is E.Function:
            primitive = bool((node.attrs or {}).get("Primitive", 0))
            params = [new.get(p) or E.Var(p.name_hint, None if primitive else p.type_annotation)
                      for p in node.params]
            new.update(zip(node.params, params))
            new[node] = E.Function(tuple(params), new[node.body],
                                   None if primitive else node.ret_type, node.type_params,
                                   node.attrs)
        elif kind is E.Call:
            new[node] = E.Call(new[node.op], tuple(new[a] for a in node.args), node.attrs,
                               node.type_args)
        elif kind is E.Tuple:
            new[node] = E.Tuple(tuple(new[f] for f in node.fields))
        elif kind is E.TupleGetItem:
            new[node] = E.TupleGetItem(new[node.tuple_value], node.index)
        elif kind is E.Let:
            new[node] = E.Let(new[node.var], new[node.value], new[node.body])
        elif kind is E.If:
            new[node] = E.If(new[node.cond], new[node.true_branch], new[node.false_branch])
        elif kind in (E.Constant, E.Op, E.GlobalVar):
            new[node] = node
        else:
            raise IRError(f"retyped_copy: cannot copy a {kind.__name__}")
    return new[expr], new


def retyped_copy(expr, var_types: dict) -> tuple:
    """A type-inferred copy of ``expr`` in which the free variables have the given types.

    Args:
        expr: the expression (a loop's condition/step/exit tuple, a call's body...).
        var_types: ``{Var: Type}`` for every free variable of ``expr`` (those missing keep
            their annotation).

    Returns:
        ``(typed expression, {old free Var: new Var})``.

    Raises:
        TypeInferenceError: if the copy does not type-check with those types.
    """
    from irlib.transform import infer_type
    copied, new = _copy(expr, var_types)
    olds = free_vars(expr)
    params = tuple(new[v] for v in olds)
    typed = infer_type(E.Function(params, copied))
    return typed.body, dict(zip(olds, typed.params))


def specialise_primitive(func: E.Function, arg_types: list) -> E.Function:
    """A typed copy of the primitive ``func`` whose parameters have ``arg_types``.

    Args:
        func: a ``Primitive=1`` function (parameters possibly typed with ``?`` dims).
        arg_types: the type of each argument at the call being lowered.

    Returns:
        The new, type-inferred function (its ``checked_type`` gives the result type).
    """
    from irlib.transform import infer_type
    types = dict(zip(func.params, arg_types))
    copied, new = _copy(func.body, types)
    params = tuple(new[p] if p in new else E.Var(p.name_hint, types[p]) for p in func.params)
    return infer_type(E.Function(params, copied, None, (), func.attrs))
