"""``from_exported_program``: a ``torch.export`` program (ATen ops) to an IRModule.

Parameters, buffers and lifted constants of the program become weights (constants, or
trailing parameters of ``main`` with ``keep_params_as_input``); the user inputs become
``main``'s parameters, typed from the program's example metadata. A dim that
``torch.export.Dim`` made dynamic is a symbol of torch's shape environment (``s0``, ``s77``);
it becomes the irlib size variable of the same name (``irlib.ir.dims.size_var("s77")``), and
derived dims (``2*s0``) the matching size expression.
"""

from __future__ import annotations

from ...ir.dims import DimExpr, floordiv, size_var
from ...ir.types import TensorType
from . import dtypes, translator
from .context import Context
from .errors import TorchConversionError, TorchOpNotImplemented


def sympy_to_dim(expr, size_vars: dict):
    """The irlib dim of a torch symbolic size (a sympy expression or a ``SymInt``).

    Args:
        expr: an int, a ``torch.SymInt`` or a sympy expression over size symbols.
        size_vars: ``{symbol name: size_var}`` shared across one import (filled in).

    Raises:
        TorchOpNotImplemented: for size expressions other than sums, products and floor
            divisions of symbols and integers.
    """
    import sympy
    if isinstance(expr, int):
        return expr
    if hasattr(expr, "node") and hasattr(expr.node, "expr"):  # a SymInt
        expr = expr.node.expr
    if isinstance(expr, sympy.Integer):
        return int(expr)
    if isinstance(expr, sympy.Symbol):
        name = str(expr)
        if name not in size_vars:
            size_vars[name] = size_var(name)
        return size_vars[name]
    if isinstance(expr, sympy.Add):
        total = 0
        for term in expr.args:
            total = total + sympy_to_dim(term, size_vars)
        return total
    if isinstance(expr, sympy.Mul):
        product = 1
        for term in expr.args:
            product = product * sympy_to_dim(term, size_vars)
        return product
    if type(expr).__name__ == "FloorDiv":
        return floordiv(sympy_to_dim(expr.args[0], size_vars),
                        sympy_to_dim(expr.args[1], size_vars))
    raise TorchOpNotImplemented(f"symbolic size {expr} is not supported")


def _placeholder_type(node, size_vars: dict):
    value = node.meta.get("val")
    if value is None or not hasattr(value, "shape"):
        raise TorchOpNotImplemented(f"input {node.name} is not a tensor (got {value!r})")
    dims = tuple(sympy_to_dim(dim, size_vars) for dim in value.shape)
    return TensorType(dims, dtypes.to_irlib(value.dtype))


def from_exported_program(exported_program, *, keep_params_as_input: bool = False,
                          unwrap_unit_return_tuple: bool = False,
                          no_bind_return_tuple: bool = False):
    """Convert a ``torch.export.ExportedProgram`` to an IRModule with a function ``main``.

    Both the program ``torch.export.export`` returns and its ``run_decompositions()`` (core
    ATen) are accepted. Dynamic dims become size variables named after torch's symbols.

    Args:
        exported_program: the ``ExportedProgram`` (exported from a module in eval mode).
        keep_params_as_input: keep parameters, buffers and lifted constants as trailing
            parameters of ``main`` (attributes ``num_input`` and ``params``, see
            :func:`irlib.frontend.detach_params`) instead of binding them as constants.
        unwrap_unit_return_tuple: return the single element of a one-element result tuple.
        no_bind_return_tuple: return a result tuple directly instead of binding it to a
            variable first.

    Returns:
        The ``IRModule``; ``main`` takes the user inputs in the program's order.

    Raises:
        TorchOpNotImplemented: listing every node whose ATen op has no converter.
        TorchConversionError: a node failed to convert.
    """
    from torch.export import ExportedProgram
    from torch.export.graph_signature import InputKind
    if not isinstance(exported_program, ExportedProgram):
        raise TorchConversionError(f"from_exported_program expects a "
                                   f"torch.export.ExportedProgram, got "
                                   f"{type(exported_program).__name__}")
    graph = exported_program.graph
    translator.check_supported(graph, {})
    ctx = Context(keep_params_as_input)
    specs = {spec.arg.name: spec for spec in exported_program.graph_signature.input_specs
             if hasattr(spec.arg, "name")}
    state = exported_program.state_dict
    constants = getattr(exported_program, "constants", {}) or {}
    env, input_vars, size_vars = {}, [], {}
    for node in graph.nodes:
        if node.op != "placeholder":
            continue
        spec = specs.get(node.name)
        if spec is None or spec.kind == InputKind.USER_INPUT:
            var = ctx.new_var(node.name, _placeholder_type(node, size_vars))
            ctx.record_sizes(var)
            input_vars.append(var)
            env[node] = var
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER,
                           InputKind.CONSTANT_TENSOR):
            value = state.get(spec.target)
            if value is None:
                value = constants.get(spec.target)
            if value is None:
                raise TorchConversionError(f"input {node.name}: no value for "
                                           f"{spec.target!r} in the program")
            if hasattr(value, "detach"):
                env[node] = ctx.weight(spec.target, value)
            else:
                env[node] = value
        else:
            raise TorchOpNotImplemented(f"input {node.name} of kind {spec.kind.name} is not "
                                        f"supported", [(node.name, spec.kind.name)])
    result = translator.convert_nodes(ctx, graph, env, {}, _no_get_attr)
    outputs = _user_outputs(exported_program, result)
    body = translator.output_expr(ctx, outputs, unwrap_unit_return_tuple)
    return translator.build_main(ctx, input_vars, body, no_bind_return_tuple)


def _no_get_attr(node):
    raise TorchOpNotImplemented(f"get_attr node {node.name} ({node.target}) is not supported "
                                "in exported programs (submodule calls, control flow)")


def _user_outputs(exported_program, result):
    """The user outputs of the program's output tuple (buffer mutations dropped)."""
    from torch.export.graph_signature import OutputKind
    specs = exported_program.graph_signature.output_specs
    values = list(result) if isinstance(result, (list, tuple)) else [result]
    if len(specs) != len(values):
        return result
    return tuple(value for spec, value in zip(specs, values)
                 if spec.kind == OutputKind.USER_OUTPUT)
