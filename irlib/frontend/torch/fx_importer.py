"""``from_fx``: a ``torch.fx.GraphModule`` (from ``fx.symbolic_trace``) to an IRModule."""

from __future__ import annotations

from ...ir.dims import Any, size_var
from ...ir.types import TensorType
from . import dtypes, translator
from .context import Context
from .errors import TorchConversionError


def _input_type(entry, index: int, size_vars: dict):
    try:
        shape, dtype = entry
        dims = []
        for dim in shape:
            if isinstance(dim, str):
                dims.append(size_vars.setdefault(dim, size_var(dim)))
            elif dim is None or dim == -1:
                dims.append(Any)
            else:
                dims.append(int(dim))
    except (TypeError, ValueError) as error:
        raise TorchConversionError(f"input_info[{index}] must be (shape, dtype), got "
                                   f"{entry!r}") from error
    return TensorType(tuple(dims), dtypes.to_irlib(dtype))


def from_fx(model, input_info, *, keep_params_as_input: bool = False,
            unwrap_unit_return_tuple: bool = False, no_bind_return_tuple: bool = False):
    """Convert a ``torch.fx.GraphModule`` to an IRModule with a function ``main``
    (Relax's ``relax.frontend.torch.from_fx``).

    Args:
        model: the ``fx.GraphModule`` (``torch.fx.symbolic_trace(module)``); eval-mode
            semantics are used (dropout is the identity, batch norm uses running stats).
        input_info: ``[(shape, dtype), ...]``, one entry per placeholder in order; a dim may
            be an int, a string (a size variable of that name) or None (``Any``); the dtype a
            string (``"float32"``) or a ``torch.dtype``.
        keep_params_as_input: keep the weights as trailing parameters of ``main``, which then
            has the attributes ``num_input`` (the number of real inputs) and ``params`` (the
            weight values, for :func:`irlib.frontend.detach_params`). By default the weights
            are bound as constants.
        unwrap_unit_return_tuple: return the single element of a one-element result tuple.
        no_bind_return_tuple: return a result tuple directly instead of binding it to a
            variable first.

    Returns:
        The ``IRModule``.

    Raises:
        TorchOpNotImplemented: listing every node whose target has no converter.
        TorchConversionError: a node failed to convert, or ``input_info`` does not fit.
    """
    from torch import fx
    if not isinstance(model, fx.GraphModule):
        raise TorchConversionError(f"from_fx expects a torch.fx.GraphModule, got "
                                   f"{type(model).__name__} (use torch.fx.symbolic_trace)")
    graph = model.graph
    modules = dict(model.named_modules())
    translator.check_supported(graph, modules)
    placeholders = [node for node in graph.nodes if node.op == "placeholder"]
    info = list(input_info)
    if len(info) != len(placeholders):
        raise TorchConversionError(f"input_info has {len(info)} entries but the graph has "
                                   f"{len(placeholders)} inputs "
                                   f"({', '.join(p.name for p in placeholders)})")
    ctx = Context(keep_params_as_input)
    env, input_vars, size_vars = {}, [], {}
    for index, (node, entry) in enumerate(zip(placeholders, info)):
        var = ctx.new_var(node.name, _input_type(entry, index, size_vars))
        ctx.record_sizes(var)
        input_vars.append(var)
        env[node] = var

    def get_attr(node):
        value = model
        for part in node.target.split("."):
            value = getattr(value, part)
        if hasattr(value, "detach"):
            return ctx.weight(node.target, value)
        return value

    result = translator.convert_nodes(ctx, graph, env, modules, get_attr)
    body = translator.output_expr(ctx, result, unwrap_unit_return_tuple)
    return translator.build_main(ctx, input_vars, body, no_bind_return_tuple)
