"""The graph walk shared by :func:`from_fx` and :func:`from_exported_program`.

:func:`check_supported` refuses a graph up front when any node has no converter, listing all
of them; :func:`convert_nodes` then converts the ``call_*`` nodes in graph order, each
through its registered converter, and :func:`build_main` assembles ``main``.

In-place ops (``x.add_(y)``, ``aten.relu_``, ``operator.iadd``) produce a new value; later
uses of the mutated tensor's node see that value (values are never shared through views).
"""

from __future__ import annotations

import operator

from ...errors import IRError
from ...ir import expr as E
from ...ir.module import IRModule
from . import registry
from .errors import TorchConversionError, TorchOpNotImplemented

_INPLACE_OPERATORS = {operator.iadd, operator.isub, operator.imul, operator.itruediv,
                      operator.ifloordiv, operator.iand, operator.ior, operator.ixor}

# nodes whose value is never used and that do nothing to compute (shape assertions)
_SKIPPED = ("aten._assert_tensor_metadata", "aten._assert_scalar", "aten.sym_constrain_range",
            "aten._assert_async", "aten.sym_constrain_range_for_size")


def node_target(node, modules=None):
    """The registry target of an FX node: the module class for ``call_module`` (looked up in
    ``modules``), ``"Tensor.<name>"`` for ``call_method``, the callable otherwise."""
    if node.op == "call_module":
        return type(modules[node.target])
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    return node.target


def is_skipped(node) -> bool:
    """True for assertion nodes that produce no value (``aten._assert_tensor_metadata``).

    Args:
        node: the FX node.
    """
    return node.op == "call_function" and any(str(node.target).startswith(name)
                                              for name in _SKIPPED)


def check_supported(graph, modules=None) -> None:
    """Raise :class:`TorchOpNotImplemented` listing every node without a converter.

    Args:
        graph: a ``torch.fx.Graph``.
        modules: ``{qualified name: module}`` for ``call_module`` targets.
    """
    missing = []
    for node in graph.nodes:
        if node.op not in ("call_function", "call_method", "call_module") or is_skipped(node):
            continue
        if node.op == "call_module" and node.target not in modules:
            missing.append((node.name, f"module {node.target!r} (not found)"))
            continue
        target = node_target(node, modules)
        if registry.lookup(target) is None:
            missing.append((node.name, registry.target_name(target)))
    if missing:
        listing = "\n".join(f"  node {name}: {target}" for name, target in missing)
        raise TorchOpNotImplemented(
            f"the torch graph uses {len(missing)} node(s) with unsupported targets:\n{listing}",
            missing)


def _is_inplace(node) -> bool:
    target = node.target
    if node.op == "call_method":
        return target.endswith("_") and not target.endswith("__")
    if node.op != "call_function":
        return False
    if target in _INPLACE_OPERATORS:
        return True
    if type(target).__name__ == "OpOverload":
        base = target._schema.name.split("::")[-1]
        return base.endswith("_") and not base.endswith("__") and \
            bool(target._schema.arguments) and target._schema.arguments[0].alias_info is not None
    return False


def convert_nodes(ctx, graph, env: dict, modules=None, get_attr=None) -> object:
    """Convert every node of ``graph`` in order; returns the value of the output node.

    Args:
        ctx: the :class:`~irlib.frontend.torch.context.Context`.
        graph: the ``torch.fx.Graph``.
        env: ``{node: value}`` with the placeholders already bound; filled in.
        modules: ``{qualified name: module}`` for ``call_module`` nodes.
        get_attr: ``fn(node) -> value`` for ``get_attr`` nodes.

    Raises:
        TorchOpNotImplemented: for an unsupported variant of an op (names the node).
        TorchConversionError: when a node fails to convert (names the node).
    """
    from torch import fx

    def resolve(value):
        return fx.node.map_aggregate(value, lambda v: env[v] if isinstance(v, fx.Node) else v)

    aliases: dict = {}  # node -> the nodes holding the same (mutated) tensor
    for node in graph.nodes:
        if node.op == "placeholder":
            continue
        if node.op == "output":
            return resolve(node.args[0])
        if node.op == "get_attr":
            env[node] = get_attr(node)
            continue
        if is_skipped(node):
            env[node] = None
            continue
        target = node_target(node, modules)
        function = registry.lookup(target)
        where = f"node {node.name} ({registry.target_name(target)})"
        args, kwargs = resolve(tuple(node.args)), resolve(dict(node.kwargs))
        ctx.node_name = node.name
        try:
            if node.op == "call_module":
                ctx.module_path = node.target
                result = function(ctx, modules[node.target], args, kwargs)
            else:
                result = function(ctx, args, kwargs)
        except TorchOpNotImplemented as error:
            raise TorchOpNotImplemented(f"{where}: {error}",
                                        [(node.name, registry.target_name(target))]) from error
        except TorchConversionError as error:
            raise TorchConversionError(f"{where}: {error}") from error
        except (IRError, ValueError, TypeError, IndexError, KeyError, ArithmeticError,
                AttributeError) as error:
            raise TorchConversionError(f"{where}: {type(error).__name__}: {error}") from error
        env[node] = result
        if _is_inplace(node) and node.args and isinstance(node.args[0], fx.Node):
            # every node naming the mutated tensor (x, and y = x.add_(1)) sees the new value
            group = aliases.setdefault(node.args[0], [node.args[0]])
            group.append(node)
            aliases[node] = group
            for member in group:
                env[member] = result
    raise TorchConversionError("the torch graph has no output node")


def output_expr(ctx, value, unwrap_unit_return_tuple: bool):
    """The body expression of an output value (nested tuples/lists become tuples).

    Args:
        value: the converted output value.
        unwrap_unit_return_tuple: a one-element tuple result becomes its element.
    """
    stack_value = value
    if isinstance(stack_value, (list, tuple)) and len(stack_value) == 1 and \
            unwrap_unit_return_tuple:
        stack_value = stack_value[0]
    return _as_expr(ctx, stack_value)


def _as_expr(ctx, value):
    # output structures are shallow (a tuple of tensors, at most nested once or twice)
    if isinstance(value, (list, tuple)):
        return ctx.make_tuple([_as_expr(ctx, item) for item in value])
    if isinstance(value, dict):
        return ctx.make_tuple([_as_expr(ctx, item) for item in value.values()])
    if isinstance(value, E.Expr):
        return value
    if value is None:
        return ctx.make_tuple([])
    return ctx.tensor(value)


def build_main(ctx, input_vars, body, no_bind_return_tuple: bool) -> IRModule:
    """``main(inputs..., weights...)`` in a new module, with the keep-params attributes
    (``num_input``, ``params``) when weights are kept as inputs.

    A tuple result is bound to a variable (``let %ret = (...); %ret``) unless
    ``no_bind_return_tuple``.

    Args:
        input_vars: the graph inputs' variables.
        body: the result expression.
        no_bind_return_tuple: leave a tuple result unbound.
    """
    if isinstance(body, E.Tuple) and not no_bind_return_tuple:
        var = E.Var("ret", ctx.type_of(body))
        body = E.Let(var, body, var)
    attrs = None
    if ctx.keep_params_as_input:
        attrs = {"num_input": len(input_vars), "params": list(ctx.weight_values)}
    main = E.Function(tuple(input_vars) + tuple(ctx.weight_vars), body, attrs=attrs)
    module = IRModule()
    module[E.GlobalVar("main")] = main
    return module
