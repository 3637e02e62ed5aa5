"""``interp.build``: compile a module for the graph executor (``relay.build``).

::

    lib = interp.build(mod, target="cpu", params=params)
    gmod = interp.graph_executor.GraphModule(lib["default"](interp.cpu(0)))
    gmod.run(data=x)
    lib.export_library("model.irlib")          # later, in another process:
    lib = interp.load_module("model.irlib")

Steps: the optimisation pipeline (:func:`irlib.transform.optimize`, under the current
PassContext: binds ``params`` as constants, simplifies, folds, fuses), lowering of ``main``
to graph nodes (:mod:`interp.graph_lower`), the static memory plan
(:mod:`interp.memory_plan`), and compilation of every primitive function
(:mod:`interp.graph_functions`: the fused-group code generator on ``"cpu"``, else registry
kernels or the numpy references). ``factory.report`` says how each function was compiled and
which ops run on the numpy reference.

Targets: ``"cpu"`` (alias ``"llvm"``), ``"cuda"`` (kernels from ``jitkernels.cuda`` where
registered, host arrays) and ``"python"`` (numpy references only).
"""

from __future__ import annotations

import json
import logging
import os
import zipfile

import numpy as np

from irlib.errors import IRError
from irlib.ir import expr as E
from irlib.ir.module import IRModule
from irlib.ndarray import cpu

from irlib.ir.dims import substitute_dim

from .graph_dims import dim_text, dims_free_vars
from .graph_executor import GraphExecutor, GraphModule, graph_json_dumps
from .graph_functions import compile_function
from .graph_lower import lower_function
from .graph_symbolic import check_symbolic_graph
from .memory_plan import PlanNode, plan_memory, unplanned_bytes

__all__ = ["build", "load_module", "GraphExecutorFactoryModule", "Library", "run_model"]

logger = logging.getLogger("irlib.build")
TARGETS = {"cpu": "cpu", "llvm": "cpu", "cuda": "cuda", "gpu": "cuda", "python": "python"}
"""Accepted target names and what they mean."""
_FORMAT = "irlib-graph-library-1"


def canonical_target(target) -> str:
    """The canonical name (``"cpu"``, ``"cuda"``, ``"python"``) of a target.

    Raises:
        IRError: for an unsupported target (the message lists the supported ones).
    """
    name = "cpu" if target is None else str(getattr(target, "kind", target)).split()[0]
    if name not in TARGETS:
        raise IRError(f"unsupported target {target!r}; supported targets: {sorted(TARGETS)}")
    return TARGETS[name]


class Library:
    """The compiled functions of a build: ``lib.get_function(name)`` / ``lib[name]``.

    Attributes:
        functions: func_name -> the primitive IR function.
        compiled: func_name -> :class:`~interp.graph_functions.CompiledFunction`.
        target: the canonical target.
    """

    def __init__(self, functions: dict, target: str):
        self.functions = dict(functions)
        self.target = target
        self.compiled = {name: compile_function(func, target)
                         for name, func in self.functions.items()}

    def get_function(self, name: str):
        """The destination-passing callable ``name``, or None."""
        compiled = self.compiled.get(name)
        return compiled.fn if compiled is not None else None

    def __getitem__(self, name: str):
        fn = self.get_function(name)
        if fn is None:
            raise IRError(f"library has no function {name!r}")
        return fn

    def report(self) -> dict:
        """``{"functions": {name: how}, "reference_ops": sorted op names on numpy}``."""
        reference = sorted({op for c in self.compiled.values() for op in c.reference_ops})
        return {"functions": {n: c.how for n, c in self.compiled.items()},
                "reference_ops": reference}


def _freeze_params(executor) -> None:
    """Make the weights' storage of a static graph read-only.

    Kernels may then keep what they derive from a weight for as long as the array lives
    (the int8 kernel's packed copy, :mod:`jitkernels.cpu.int8_vnni`): a later ``set_input``
    or ``load_params`` of a weight copies into a new array (``GraphRuntime.set_input``
    rebinds a read-only input), so nothing derived from the old array is used again.
    """
    from .graph_runtime import GraphRuntime
    runtime = executor.runtime
    if type(runtime) is not GraphRuntime:
        return
    for name in executor.param_names:
        index = runtime.input_index(name)
        array = runtime.input_array(index)
        if array.flags.writeable:             # weights own their storage (memory_plan)
            array.flags.writeable = False
            runtime.bind_input(index, array)


class GraphExecutorFactoryModule:
    """What :func:`build` returns (``GraphExecutorFactoryModule``).

    ``factory["default"](dev)`` makes a graph executor module with the params loaded; wrap it
    in :class:`~interp.graph_executor.GraphModule`.

    Attributes:
        graph_json: the graph JSON string.
        lib: the :class:`Library`.
        params: ``{name: numpy array}`` of the lifted constants.
        target: the canonical target.
        memory: ``{"planned_bytes", "unplanned_bytes"}``, the storage footprint with and
            without the memory plan (inputs and weights included), and
            ``planned_activation_bytes`` / ``unplanned_activation_bytes``, the same for the
            op outputs only. For a graph with symbolic dims, the figures at the sizes in
            ``memory["at_sizes"]`` (every size variable 1).
    """

    def __init__(self, graph_json: str, lib: Library, params: dict, target: str,
                 memory: dict | None = None):
        self.graph_json = graph_json
        self.lib = lib
        self.params = params
        self.target = target
        self.memory = memory or {}
        self.libmod_name = "default"

    def __getitem__(self, key: str):
        if key != "default":
            raise IRError(f"factory module has only 'default', not {key!r}")
        return self.create

    def create(self, device=None) -> GraphExecutor:
        """A new graph executor runtime module on ``device`` with the params set and its
        generated kernels compiled (:func:`interp.kernel_compile.precompile`: loaded from
        numba's cache when warm, with a progress bar when really compiling); what that did
        is in the executor's ``compile_stats``."""
        if isinstance(device, (list, tuple)):
            device = device[0]
        executor = GraphExecutor(self.graph_json, self.lib, device or cpu(0))
        for name, value in self.params.items():
            index = executor.runtime.input_index(name)
            if index >= 0:
                executor.runtime.set_input(index, value)
                executor.param_names.add(name)
        _freeze_params(executor)
        from .kernel_compile import precompile
        executor.compile_stats = precompile(executor.runtime)
        return executor

    def get_graph_json(self) -> str:
        """The graph JSON string."""
        return self.graph_json

    get_executor_config = get_graph_json

    def get_params(self) -> dict:
        """``{name: NDArray}`` of the weights the graph takes as inputs."""
        from irlib.ndarray import NDArray
        return {name: NDArray(value) for name, value in self.params.items()}

    def get_lib(self) -> Library:
        """The compiled function library."""
        return self.lib

    @property
    def report(self) -> dict:
        """How each function was compiled and which ops run on the numpy reference."""
        return self.lib.report()

    def export_library(self, path) -> None:
        """Write graph, params and functions (in the text format) to one file.

        :func:`load_module` reads it back, in any process; functions are recompiled there
        (numba's on-disk cache makes that fast). The ``__if``/``__loop`` nodes' sub-graphs
        are stored as their kernels describe them (``control.json``).
        """
        from irlib.text.printer import astext
        from .params import save_param_dict
        control = {name: compiled.fn.describe() for name, compiled in self.lib.compiled.items()
                   if compiled.how == "control"}
        functions = {name: astext(func) for name, func in self.lib.functions.items()}
        meta = {"format": _FORMAT, "target": self.target, "memory": self.memory}
        with zipfile.ZipFile(os.fspath(path), "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("meta.json", json.dumps(meta))
            archive.writestr("graph.json", self.graph_json)
            archive.writestr("params.bin", save_param_dict(self.params))
            archive.writestr("functions.json", json.dumps(functions))
            archive.writestr("control.json", json.dumps(control))


def load_module(path) -> GraphExecutorFactoryModule:
    """Load a library written by ``export_library`` (``tvm.runtime.load_module``).

    Raises:
        IRError: if the file is not such a library.
        ParamsFormatError: if its params are corrupt.
    """
    from irlib.text.parser import parse_expr
    from .params import load_param_dict
    try:
        with zipfile.ZipFile(os.fspath(path)) as archive:
            meta = json.loads(archive.read("meta.json"))
            graph_json = archive.read("graph.json").decode()
            params_blob = archive.read("params.bin")
            texts = json.loads(archive.read("functions.json"))
            control = json.loads(archive.read("control.json")) \
                if "control.json" in archive.namelist() else {}
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as error:
        raise IRError(f"{path}: not a library written by export_library ({error})") from None
    if meta.get("format") != _FORMAT:
        raise IRError(f"{path}: unknown library format {meta.get('format')!r}")
    from irlib.transform import infer_type
    functions = {name: infer_type(parse_expr(text)) for name, text in texts.items()}
    params = {name: value.numpy() for name, value in load_param_dict(params_blob).items()}
    lib = Library(functions, meta["target"])
    if control:
        from .graph_control import control_kernel
        from .graph_functions import CompiledFunction
        for name, description in control.items():
            lib.compiled[name] = CompiledFunction(
                control_kernel(name, description, lib.get_function), "control", ())
    return GraphExecutorFactoryModule(graph_json, lib, params, meta["target"],
                                      meta.get("memory"))


def _target_layouts(target: str):
    """The layout preference of ``target``'s kernels, asked of the kernel registry
    (:func:`jitkernels.layout_preferences`): ``(desired_layouts, accept)`` or None."""
    import jitkernels
    return jitkernels.layout_preferences(target)


def _optimize(mod: IRModule, params, target: str) -> IRModule:
    """The build pipeline under the current PassContext, with the target's layouts.

    On the cpu target (``opt_level >= 3``), before FuseOps, the 3x3 convolutions with
    constant weights where Winograd pays are rewritten to it, their weight transform folded
    here (:mod:`interp.winograd_rewrite`; off with ``IRLIB_WINOGRAD=0``,
    ``config={"cpu.winograd": False}`` or ``disabled_pass=["Winograd"]``)."""
    from irlib.transform import PassContext
    from irlib.transform.pipeline import optimize
    layouts = _target_layouts(target)
    ctx = PassContext.current()
    if target != "cpu" or not _winograd_enabled(ctx):
        return optimize(mod, params, layouts=layouts)
    from irlib.transform.pass_infra import get_pass
    from .winograd_rewrite import rewrite_winograd
    mod = optimize(mod, params, fuse=False, layouts=layouts)
    gvar = mod.get_global_var("main")
    func, count = rewrite_winograd(mod[gvar])
    if count:
        mod = mod.copy()
        mod[gvar] = func
        mod = get_pass("InferType")(mod, ctx)
    return get_pass("InferType")(get_pass("FuseOps")(mod, ctx), ctx)


def _winograd_enabled(ctx) -> bool:
    try:
        from .winograd_rewrite import winograd_enabled
        return winograd_enabled(ctx)
    except ImportError:             # no numba: the kernels (and their cost model) are absent
        return False


def build(mod, target="cpu", params: dict | None = None, target_host=None,
          mod_name: str = "default") -> GraphExecutorFactoryModule:
    """Compile ``mod["main"]`` for the graph executor (``relay.build``).

    Args:
        mod: an :class:`~irlib.ir.module.IRModule` (or a Function, used as ``main``).
        target: ``"cpu"``/``"llvm"``, ``"cuda"`` or ``"python"``.
        params: ``{name: array}`` values of ``main``'s parameters, bound as constants.
        target_host: ignored (kept for the reference signature).
        mod_name: ignored (the factory's module is always ``"default"``).

    Returns:
        A :class:`GraphExecutorFactoryModule`.

    Raises:
        IRError: for an unsupported target, or a program the graph executor cannot run
            (control flow, closures, ADTs, dynamic shapes).
        PassError, TypeInferenceError: if optimisation fails.
    """
    target = canonical_target(target)
    if isinstance(mod, E.Function):
        mod = IRModule.from_expr(mod)
    if not isinstance(mod, IRModule):
        raise IRError(f"build expects an IRModule or a Function, got {type(mod).__name__}")
    params = {k: (v.numpy() if hasattr(v, "numpy") else np.asarray(v))
              for k, v in (params or {}).items()}
    optimized = _optimize(mod, params, target)
    lowered = lower_function(optimized["main"])
    lib = Library(lowered.functions, target)
    if lowered.branches:
        from .graph_control import add_if_kernels
        add_if_kernels(lowered, lib, _graph_json)
    graph, memory = _graph_json(lowered, lib)
    reference = lib.report()["reference_ops"]
    if reference and target != "python":
        logger.info("build(target=%r): ops on the numpy reference: %s", target,
                    ", ".join(reference))
    return GraphExecutorFactoryModule(graph, lib, lowered.params, target, memory)


def _graph_json(lowered, lib: Library) -> tuple:
    """The graph JSON string and the memory figures of a lowered graph.

    Symbolic dims are written as their text-format strings (``"c + n"``), a node whose
    function takes size values gets the attribute ``size_args`` (the variables' names,
    comma-separated, in the order the function takes them), and main's ``size_params``
    become the top-level attribute ``size_params``. The storage ids and memory figures of
    a symbolic graph are those of the binding where every size variable is 1 (the
    executor plans again for each binding it runs).
    """
    row_ptr = [0]
    for node in lowered.nodes:
        row_ptr.append(row_ptr[-1] + node.num_outputs)
    symbolic_dims = set()
    for node in lowered.nodes:
        for ty in node.types:
            symbolic_dims |= dims_free_vars(ty.shape)
    unit = {name: 1 for name in symbolic_dims}
    shapes, dtypes, nbytes = [], [], []
    for node in lowered.nodes:
        for ty in node.types:
            shapes.append([dim_text(d) for d in ty.shape])
            concrete = [int(substitute_dim(d, unit)) for d in ty.shape]
            dtypes.append(ty.dtype)
            nbytes.append(int(np.prod(concrete, dtype=np.int64)) * np.dtype(ty.dtype).itemsize)
    plan_nodes, aliases = [], []
    for nid, node in enumerate(lowered.nodes):
        outputs = tuple(row_ptr[nid] + i for i in range(node.num_outputs))
        alias = node.func_name == "__nop"
        if alias:
            aliases.extend(outputs)
        plan_nodes.append(PlanNode(node.func_name is not None,
                                   tuple(row_ptr[n] + i for n, i in node.inputs), outputs,
                                   alias))
    heads = [row_ptr[n] + i for n, i in lowered.heads]
    storage_ids, storage_bytes = plan_memory(plan_nodes, nbytes, heads)
    json_nodes = []
    for node in lowered.nodes:
        if node.func_name is None:
            json_nodes.append({"op": "null", "name": node.name, "inputs": []})
            continue
        attrs = {"func_name": node.func_name, "num_inputs": str(len(node.inputs)),
                 "num_outputs": str(node.num_outputs), "flatten_data": "0"}
        compiled = lib.compiled.get(node.func_name)
        if compiled is not None and compiled.size_names:
            attrs["size_args"] = ",".join(compiled.size_names)
        json_nodes.append({"op": "tvm_op", "name": node.name, "attrs": attrs,
                           "inputs": [[n, i, 0] for n, i in node.inputs]})
    graph = {
        "nodes": json_nodes,
        "arg_nodes": [i for i, n in enumerate(lowered.nodes) if n.func_name is None],
        "heads": [[n, i, 0] for n, i in lowered.heads],
        "attrs": {"dltype": ["list_str", dtypes], "storage_id": ["list_int", storage_ids],
                  "shape": ["list_shape", shapes]},
        "node_row_ptr": row_ptr,
    }
    if lowered.size_params:
        graph["attrs"]["size_params"] = ["list_str", list(lowered.size_params)]
    if lowered.size_divisible:
        graph["attrs"]["size_divisible"] = ["list_str", [
            f"{dim_text(dim)}|{divisor}" for dim, divisor in lowered.size_divisible]]
    input_entries = {row_ptr[nid] for nid, node in enumerate(lowered.nodes)
                     if node.func_name is None}
    input_storages = {storage_ids[e] for e in input_entries}
    memory = {"planned_bytes": int(sum(storage_bytes)),
              "unplanned_bytes": int(unplanned_bytes(nbytes, aliases)),
              "planned_activation_bytes": int(sum(
                  size for sid, size in enumerate(storage_bytes) if sid not in input_storages)),
              "unplanned_activation_bytes": int(unplanned_bytes(
                  nbytes, set(aliases) | input_entries))}
    if unit:
        memory["at_sizes"] = dict(sorted(unit.items()))
    text = graph_json_dumps(graph)
    check_symbolic_graph(text)
    return text, memory


def run_model(mod, params=None, inputs=None, target="cpu", device=None):
    """Build ``mod`` and run it once on the graph executor (what ``irlib run`` calls).

    Args:
        mod: the module.
        params: weights to bind.
        inputs: ``{name: array}`` of the remaining inputs.
        target: the target.
        device: the device (CPU 0 by default).

    Returns:
        ``(outputs, factory)``: the list of output arrays (copies) and the factory module.
    """
    factory = build(mod, target=target, params=params)
    gmod = GraphModule(factory["default"](device or cpu(0)))
    gmod.run(**(inputs or {}))
    outputs = [gmod.get_output(i).numpy().copy() for i in range(gmod.get_num_outputs())]
    return outputs, factory
