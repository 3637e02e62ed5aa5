"""``torch.compile`` integration: :func:`dynamo_capture_subgraphs` and :func:`relax_dynamo`.

TorchDynamo hands a backend one ``torch.fx.GraphModule`` per graph it captures (a graph
break, e.g. Python control flow on a tensor value, ends one graph and starts the next) with
example inputs. The module's parameters and buffers arrive as extra placeholders
(``L_self_modules_fc_parameters_weight_``); :func:`graph_to_function` treats those as
weights: constants, or trailing parameters with ``keep_params_as_input``.
"""

from __future__ import annotations

import re

from ...ir import expr as E
from ...ir.module import IRModule
from ...ir.types import TensorType
from . import dtypes, translator
from .context import Context
from .errors import TorchConversionError, TorchOpNotImplemented

_WEIGHT_NAME = re.compile(r"_(parameters|buffers)_")


def _is_weight(node, example) -> bool:
    import torch
    return isinstance(example, torch.nn.Parameter) or bool(_WEIGHT_NAME.search(str(node.target)))


def _weight_name(node) -> str:
    """``L_self_modules_fc_parameters_weight_`` -> ``fc.weight`` (best effort)."""
    name = str(node.target)
    name = re.sub(r"^L_(self|s)_", "", name).strip("_")
    name = name.replace("modules_", "").replace("_parameters_", ".").replace("_buffers_", ".")
    return name


def graph_to_function(graph_module, example_inputs, keep_params_as_input=False,
                      weights_as_constants=True):
    """Convert one Dynamo-captured graph to an irlib function.

    Args:
        graph_module: the ``torch.fx.GraphModule`` Dynamo captured.
        example_inputs: its example inputs (tensors), one per placeholder.
        keep_params_as_input: with ``weights_as_constants``, keep the weight placeholders as
            trailing parameters (``num_input``/``params`` attributes) instead of constants.
        weights_as_constants: False to keep every placeholder an ordinary input in order
            (what a ``torch.compile`` backend needs: Dynamo passes the weights each call).

    Returns:
        The :class:`~irlib.ir.expr.Function`; its result is always a tuple (Dynamo graphs
        return tuples).

    Raises:
        TorchOpNotImplemented: listing every unsupported node, or for non-tensor inputs
            (symbolic sizes passed as ints).
    """
    import torch
    graph = graph_module.graph
    modules = dict(graph_module.named_modules())
    translator.check_supported(graph, modules)
    placeholders = [node for node in graph.nodes if node.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        raise TorchConversionError(f"the graph has {len(placeholders)} inputs but "
                                   f"{len(example_inputs)} example inputs were given")
    ctx = Context(keep_params_as_input and weights_as_constants)
    env, input_vars = {}, []
    for node, example in zip(placeholders, example_inputs):
        if not isinstance(example, torch.Tensor) or \
                any(not isinstance(d, int) for d in example.shape):
            raise TorchOpNotImplemented(f"input {node.name} is {type(example).__name__} with "
                                        "symbolic sizes; compile with dynamic=False",
                                        [(node.name, "symbolic input")])
        if weights_as_constants and _is_weight(node, example):
            env[node] = ctx.weight(_weight_name(node), example)
            continue
        var = ctx.new_var(node.name, TensorType(tuple(example.shape),
                                                dtypes.to_irlib(example.dtype)))
        input_vars.append(var)
        env[node] = var

    def get_attr(node):
        value = graph_module
        for part in node.target.split("."):
            value = getattr(value, part)
        return ctx.weight(node.target, value) if hasattr(value, "detach") else value

    result = translator.convert_nodes(ctx, graph, env, modules, get_attr)
    if not isinstance(result, (list, tuple)):
        result = (result,)
    body = translator.output_expr(ctx, tuple(result), False)
    return translator.build_main(ctx, input_vars, body, True)["main"]


def dynamo_capture_subgraphs(model, *params, **kwargs) -> IRModule:
    """Capture the graphs TorchDynamo extracts from ``model(*params, **kwargs)`` as global
    functions ``subgraph_0``, ``subgraph_1``, ... of one IRModule (Relax's
    ``relax.frontend.torch.dynamo_capture_subgraphs``).

    The model runs once (under ``torch.no_grad``) through ``torch.compile`` with a capturing
    backend; every graph break starts a new subgraph. Each subgraph returns a tuple (Dynamo's
    graphs do).

    Args:
        model: the ``torch.nn.Module`` (or function) to capture, in eval mode.
        params: its positional inputs (torch tensors).
        kwargs: its keyword inputs; ``keep_params_as_input=True`` (taken out of them) keeps
            the weights as trailing parameters of each subgraph with ``num_input`` and
            ``params`` attributes (see :func:`irlib.frontend.detach_params`).

    Returns:
        The IRModule.

    Raises:
        TorchOpNotImplemented, TorchConversionError: as :func:`from_fx` (taken out of the
            ``BackendCompilerFailed`` torch wraps them in).
    """
    import torch
    keep = bool(kwargs.pop("keep_params_as_input", False))
    module = IRModule()
    count = [0]

    def capture(graph_module, example_inputs):
        function = graph_to_function(graph_module, example_inputs, keep)
        module[E.GlobalVar(f"subgraph_{count[0]}")] = function
        count[0] += 1
        return graph_module.forward

    torch._dynamo.reset()
    compiled = torch.compile(model, backend=capture, dynamic=False)
    try:
        with torch.no_grad():
            compiled(*params, **kwargs)
    except Exception as error:  # BackendCompilerFailed wraps our error
        inner = _irlib_cause(error)
        if inner is not None:
            raise inner from error
        raise
    finally:
        torch._dynamo.reset()
    return module


def _irlib_cause(error):
    from ...errors import IRError
    seen = error
    while seen is not None:
        if isinstance(seen, IRError):
            return seen
        inner = getattr(seen, "inner_exception", None)
        seen = inner if inner is not None else seen.__cause__
    return None


def relax_dynamo(pipeline=None):
    """A ``torch.compile`` backend running the captured graphs on irlib's graph executor
    (Relax's ``relax.frontend.torch.relax_dynamo``)::

        compiled = torch.compile(model, backend=relax_dynamo(), dynamic=False)

    Each graph is converted with the model's weights bound as constants (so the build folds
    batch norms and pre-transforms weight layouts), passed through ``pipeline`` when one is
    given, and built once for the CPU target at opt level 3 (as ``irlib run`` builds). A
    call binds the argument tensors' memory as the graph's inputs and has the graph write
    its results straight into new torch tensors: nothing is copied for contiguous CPU
    tensors. A weight changed since the build (in place or replaced) triggers a rebuild.

    Args:
        pipeline: an irlib pass (``mod -> mod``) applied before building, or None.

    Returns:
        The backend: ``backend(graph_module, example_inputs) -> callable``.
    """

    def backend(graph_module, example_inputs):
        return _GraphRunner(graph_module, list(example_inputs), pipeline)

    return backend


def _version(tensor):
    return (tensor.data_ptr(), tensor._version)


class _GraphRunner:
    """A captured graph built for the graph executor, called with torch tensors (the
    callable :func:`relax_dynamo` returns)."""

    def __init__(self, graph_module, example_inputs, pipeline):
        self.graph_module = graph_module
        self.pipeline = pipeline
        placeholders = [n for n in graph_module.graph.nodes if n.op == "placeholder"]
        self.weight_positions = [i for i, (node, value) in
                                 enumerate(zip(placeholders, example_inputs))
                                 if _is_weight(node, value)]
        self.input_positions = [i for i in range(len(example_inputs))
                                if i not in set(self.weight_positions)]
        self._build(example_inputs)

    def _build(self, args):
        import interp  # the runtime: only when a graph is compiled (layer rule)
        from interp import graph_executor

        from ...transform import InferType, PassContext
        function = graph_to_function(self.graph_module, args)
        mod = IRModule()
        mod[E.GlobalVar("main")] = function
        if self.pipeline is not None:
            mod = self.pipeline(mod)
        typed = InferType()(mod)
        ret = typed["main"].checked_type.ret_type
        fields = list(ret.fields) if hasattr(ret, "fields") else [ret]
        self.out_types = [(tuple(int(d) for d in t.shape), t.dtype) for t in fields]
        with PassContext(opt_level=3):
            factory = interp.build(mod, target="cpu")
        self.graph = graph_executor.GraphModule(factory["default"](interp.cpu(0)))
        runtime = self.graph._runtime
        heads = [runtime.output_entry(i) for i in range(len(self.out_types))]
        inputs = {runtime.input_entry(i) for i in range(len(typed["main"].params))}
        # results written in place need outputs of their own, not inputs or shared entries
        self.zero_copy_out = len(set(heads)) == len(heads) and not set(heads) & inputs
        self.weight_versions = [_version(args[i]) for i in self.weight_positions]

    def __call__(self, *args):
        import numpy as np
        import torch
        if [_version(args[i]) for i in self.weight_positions] != self.weight_versions:
            self._build(list(args))
        for slot, position in enumerate(self.input_positions):
            value = args[position]
            if isinstance(value, torch.Tensor):
                self.graph.set_input_zero_copy(slot, value.detach().contiguous().numpy())
            else:
                self.graph.set_input(slot, np.asarray(value))
        if self.zero_copy_out:
            outputs = [torch.empty(shape, dtype=getattr(torch, dtype))
                       for shape, dtype in self.out_types]
            for index, out in enumerate(outputs):
                self.graph.set_output_zero_copy(index, out.numpy())
            self.graph.run()
        else:
            self.graph.run()
            outputs = [torch.from_numpy(self.graph.get_output(i).numpy().copy())
                       for i in range(len(self.out_types))]
        return outputs
