"""Gradients of ops that are compositions of simpler ops.

Many ops (``nn.group_norm``, ``nn.lrn``, ``nn.attention``...) have a direct numpy reference
but are mathematically a composition of differentiable primitives. Their gradient rule
builds that composition over the call's arguments and back-propagates ``out_grad`` through
it with the primitives' own gradient rules (reverse mode over a small dataflow graph)::

    op_def.def_grad(composite_grad(lambda data, gamma, **attrs: ...forward expr...))
"""

from __future__ import annotations

from ..errors import GradientError, UntypedError

from ..ir import expr as E
from ..ir.functor import children, post_order
from ..ir.types import TupleType
from .registry import get_def, make_call


def _annotate(nodes, leaves) -> None:
    """Type the composite's nodes through the op relations when the leaves are typed (some
    gradient rules read argument types)."""
    for leaf in leaves:
        try:
            leaf.checked_type
        except UntypedError:  # the caller did not type-check
            return
    for node in nodes:
        if type(node) is E.Call:
            op_def = get_def(node.op.name)
            node.with_type(op_def.type_rel([a.checked_type for a in node.args], node.attrs))
        elif type(node) is E.Constant:
            node.with_type(node.tensor_type)
        elif type(node) is E.Tuple:
            node.with_type(TupleType([f.checked_type for f in node.fields]))


def _topological(root, leaves) -> list:
    """Nodes of ``root`` reachable without entering ``leaves``, children before parents
    (children are walked last first, the order the adjoints were always accumulated in)."""
    if root in leaves:
        return []
    return post_order(root, children_of=lambda node: tuple(
        child for child in reversed(children(node)) if child not in leaves))


def backprop(root, leaves, out_grad) -> list:
    """Adjoints of ``leaves`` for ``out_grad`` flowing into ``root``.

    Args:
        root: an expression built from op calls and constants over ``leaves``.
        leaves: the expressions the adjoints are wanted for (the original call's args).
        out_grad: the adjoint of ``root``.

    Returns:
        One adjoint expression per leaf (``zeros_like`` for a leaf that ``root`` ignores).
    """
    leaf_set = set(leaves)
    order = _topological(root, leaf_set)
    _annotate(order, leaves)
    adjoints = {root: out_grad}
    for node in reversed(order):
        grad = adjoints.get(node)
        if grad is None:
            continue
        if type(node) is E.Tuple:
            for i, field in enumerate(node.fields):
                field_grad = grad.fields[i] if type(grad) is E.Tuple else E.TupleGetItem(grad, i)
                previous = adjoints.get(field)
                adjoints[field] = field_grad if previous is None else make_call(
                    "add", (previous, field_grad))
            continue
        if type(node) is not E.Call:
            continue
        rule = get_def(node.op.name).grad
        if rule is None:
            raise GradientError(f"composite gradient: {node.op.name} has no gradient")
        for arg, arg_grad in zip(node.args, rule(node, grad)):
            previous = adjoints.get(arg)
            adjoints[arg] = arg_grad if previous is None else make_call("add",
                                                                        (previous, arg_grad))
    result, seen = [], set()
    for leaf in leaves:
        # A leaf passed twice (``f(x, x)``) gets its whole adjoint once.
        grad = None if leaf in seen else adjoints.get(leaf)
        seen.add(leaf)
        result.append(grad if grad is not None else make_call("zeros_like", (leaf,)))
    return result


def composite_grad(forward):
    """A gradient rule from ``forward(*args, **attrs) -> Expr`` (the op as a composition).

    ``forward`` may also take the keyword ``types``: the argument types (or None if the
    arguments are untyped), for compositions that depend on shapes.
    """
    def rule(call, out_grad):
        attrs = dict(call.attrs) if call.attrs is not None else {}
        root = forward(*call.args, **attrs)
        return backprop(root, list(call.args), out_grad)
    return rule


def arg_types(args, what: str):
    """The checked types of ``args`` (composites that depend on shapes need them).

    Args:
        args: the call's arguments.
        what: the op name, for the message.

    Raises:
        GradientError: if the arguments were not type-checked.
    """
    try:
        return [a.checked_type for a in args]
    except UntypedError:
        raise GradientError(f"the gradient of {what} needs the argument types; run type "
                                  f"inference first") from None


def call_op(name: str, *args, **attrs):
    """``make_call(name, args, attrs)``, for compositions written as nested calls.

    Args:
        name: the op name.
        args: the argument expressions.
        attrs: the call's attributes (none: the op's defaults).
    """
    return make_call(name, args, attrs or None)


def scalar_like(value, like):
    """The scalar ``value`` cast to the dtype of expression ``like`` (``cast_like``).

    Args:
        value: a Python number.
        like: the expression whose dtype the scalar takes.
    """
    return make_call("cast_like", (E.const(float(value)), like))
