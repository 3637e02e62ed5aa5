"""The debug executor: a graph executor that times every node
(``tvm.contrib.debugger.debug_executor``).

::

    factory = interp.build(mod, target="cpu", params=params)
    m = debug_executor.GraphModuleDebug(factory["default"](interp.cpu(0)))   # params set
    # or: m = debug_executor.create(factory.get_graph_json(), factory.lib, interp.cpu(0))
    m.run(data=x)                     # one pass; m.node_times() has each node's wall time
    print(m.profile(repeat=10))       # a ProfileReport: node, ops, shape, ms, %, GFLOP/s
    y = m.debug_get_output("tvmgen_default_fused_nn_dense", np.empty((1, 10), "float32"))

:class:`GraphModuleDebug` is a :class:`~interp.graph_executor.GraphModule` (every method of
the plain one works) whose :meth:`~GraphModuleDebug.run` executes the graph node by node
with a clock read around each node. Nodes are indexed as in the graph JSON's ``nodes``
(inputs and weights included) and named by their ``name``; only ``tvm_op`` nodes that call
a function are executed and timed (a ``__nop`` reshape aliases its input and runs nothing).
Because the memory plan reuses buffers, an early node's output may be overwritten by the
end of a run: :meth:`~GraphModuleDebug.debug_get_output` therefore runs the graph up to and
including the node and copies its output then. Graphs with symbolic dims work the same way:
sizes are bound from the inputs first, shapes in the profile are the bound ones.

:func:`profile_model` builds a module as ``irlib run`` does and returns its profile (what a
``--profile`` option of the command line prints). Bad node names or indices raise
:class:`~irlib.errors.UnknownNameError` (listing some node names).
"""

from __future__ import annotations

import json
import os
import shutil
import time

import numpy as np

from irlib.errors import IRError, UnknownNameError
from irlib.ndarray import NDArray, cpu
from jitkernels.threads import run_threads

from .graph_benchmark import BenchmarkResult, time_function
from .graph_executor import GraphExecutor, GraphModule, get_device
from .graph_runtime import GraphInputError
from .profile_report import NodeProfile, ProfileReport, group_flops, group_ops

__all__ = ["create", "GraphModuleDebug", "profile_model", "NodeProfile", "ProfileReport"]

TRACE_FILE = "_tvmdbg_execution_trace.json"
"""Name of the Chrome trace that ``run`` writes under the dump folder (with ``dump_root``)."""


def create(graph_json_str: str, libmod, device, dump_root=None) -> "GraphModuleDebug":
    """Create a debug graph executor (``debug_executor.create``).

    Args:
        graph_json_str: the graph JSON (``factory.get_graph_json()``).
        libmod: the functions: a built library (``factory.lib``, which also gives the op
            kinds and FLOPs of each node), or a dict from name to a destination-passing
            callable.
        device: a Device or a list of Devices (the first is used).
        dump_root: a folder for the Chrome trace of each run (see :class:`GraphModuleDebug`);
            None writes nothing.

    Returns:
        A :class:`GraphModuleDebug`. Weights are not set: pass them with ``set_input`` or
        ``load_params`` (``factory["default"](dev)`` sets them, see the module docstring).

    Raises:
        IRError: if the graph JSON is malformed or names a function the library lacks.
    """
    if not isinstance(graph_json_str, (str, bytes)):
        raise IRError(f"debug_executor.create needs the graph JSON string, got "
                      f"{type(graph_json_str).__name__}")
    devices, _, _ = get_device(libmod, device)
    executor = GraphExecutor(graph_json_str, libmod, devices[0])
    return GraphModuleDebug(executor, devices, graph_json_str, dump_root)


class GraphModuleDebug(GraphModule):
    """A graph module that records per-node wall times (``GraphModuleDebug``).

    Args:
        module: a :class:`~interp.graph_executor.GraphExecutor` (``lib["default"](dev)``)
            or a :class:`~interp.graph_executor.GraphModule`.
        device: the device(s) (unused: the module's device is used; kept for the
            reference signature).
        graph_json_str: the graph JSON (unused: the module's graph is used).
        dump_root: if set, every :meth:`run` writes a Chrome trace of its nodes
            (:data:`TRACE_FILE`, open it in chrome://tracing or Perfetto) under
            ``dump_root/_tvmdbg_device_CPU_0/``; :meth:`exit` removes ``dump_root``.

    Raises:
        IRError: if ``module`` is not a graph executor module.
    """

    def __init__(self, module, device=None, graph_json_str=None, dump_root=None):
        super().__init__(module)
        self._dump_root = None if dump_root is None else os.fspath(dump_root)
        graph = self.module.graph
        self._op_nids = [nid for nid, fn in enumerate(self._runtime.functions)
                         if fn is not None]
        self._names = [node["name"] for node in graph.nodes]
        self._functions = getattr(self.module.libmod, "functions", None)
        if not isinstance(self._functions, dict):
            self._functions = {}
        self._ops = {nid: group_ops(self._ir_function(nid)) for nid in self._op_nids}
        self._last_times = None
        self._last_starts = None
        self._last_total = None

    # -- nodes --------------------------------------------------------------------------------
    def _ir_function(self, nid: int):
        """The primitive IR function of op node ``nid`` (None if the library has no IR)."""
        return self._functions.get(self.module.graph.nodes[nid]["attrs"]["func_name"])

    def get_graph_nodes(self) -> list:
        """The graph's node dicts (``op``, ``name``, ``inputs``, ``attrs``), in order."""
        return list(self.module.graph.nodes)

    def get_node_index(self, node) -> int:
        """The index in the graph's ``nodes`` of ``node`` (a name or an index).

        Raises:
            UnknownNameError: for a name no node has or an index out of range (the message
                gives the number of nodes and some names).
            IRError: if ``node`` is neither a str nor an int.
        """
        count = len(self._names)
        if isinstance(node, str):
            try:
                return self._names.index(node)
            except ValueError:
                shown = ", ".join(repr(self._names[n]) for n in self._op_nids[:8])
                more = ", ..." if len(self._op_nids) > 8 else ""
                raise UnknownNameError(
                    f"the graph has no node named {node!r}; it has {count} node(s), the "
                    f"executed ones are named {shown}{more}") from None
        if isinstance(node, (int, np.integer)) and not isinstance(node, bool):
            if 0 <= node < count:
                return int(node)
            raise UnknownNameError(f"node index {node} is out of range: the graph has "
                                   f"{count} node(s), indices 0 to {count - 1}")
        raise IRError(f"a graph node is given by its index (int) or name (str), got "
                      f"{type(node).__name__} {node!r}")

    # -- running ------------------------------------------------------------------------------
    def _calls(self) -> list:
        """The ``(fn, args)`` of every executed node for the current inputs (a symbolic
        graph binds its sizes and prepares that binding's storage here)."""
        runtime = self._runtime
        if hasattr(runtime, "prepare") and hasattr(runtime, "bind"):
            runtime.state = runtime.prepare(runtime.bind())
        return runtime.calls

    def _timed_pass(self) -> tuple:
        """Run every node once; ``(times, starts, total)`` in seconds."""
        calls = self._calls()
        times = np.empty(len(calls))
        starts = np.empty(len(calls))
        clock = time.perf_counter
        with run_threads(id(self._runtime)):      # the thread policy of a plain run
            begin = clock()
            for k, (fn, args) in enumerate(calls):
                start = clock()
                fn(*args)
                end = clock()
                times[k] = end - start
                starts[k] = start - begin
            total = clock() - begin
        return times, starts, total

    def run(self, **input_dict) -> None:
        """Set the given inputs, then run the graph node by node, timing each node.

        The times are kept (:meth:`node_times`, :meth:`last_run_ms`); with ``dump_root``
        a Chrome trace of the run is written.

        Raises:
            UnknownNameError: for an input name the graph does not have.
            GraphInputError: for an input of the wrong shape or dtype.
        """
        for name, value in input_dict.items():
            self._runtime.set_input(name, value, strict=True)
        self._last_times, self._last_starts, self._last_total = self._timed_pass()
        if self._dump_root is not None:
            self._dump_trace()

    def node_times(self) -> list:
        """``(node index, node name, seconds)`` of every executed node in the last run.

        Raises:
            IRError: before the first :meth:`run`.
        """
        if self._last_times is None:
            raise IRError("node_times: run the debug module first")
        return [(nid, self._names[nid], float(t))
                for nid, t in zip(self._op_nids, self._last_times)]

    def last_run_ms(self) -> float:
        """Wall time of the last :meth:`run`'s node loop, in ms (IRError before a run)."""
        if self._last_total is None:
            raise IRError("last_run_ms: run the debug module first")
        return 1e3 * self._last_total

    def execute_node(self, node) -> None:
        """Execute one node only (its inputs must be computed already; an input node does
        nothing)."""
        nid = self.get_node_index(node)
        if nid in self._ops:
            fn, args = self._calls()[self._op_nids.index(nid)]
            fn(*args)

    def get_node_output(self, node, output_index: int = 0) -> NDArray:
        """A copy of output ``output_index`` of ``node`` as it is in memory now (no node is
        run; use :meth:`debug_get_output` for a value that no later node overwrote).

        Raises:
            UnknownNameError: for an unknown node or an output index it does not have.
        """
        nid = self.get_node_index(node)
        graph = self.module.graph
        outputs = graph.node_row_ptr[nid + 1] - graph.node_row_ptr[nid]
        if not isinstance(output_index, (int, np.integer)) or not 0 <= output_index < outputs:
            raise UnknownNameError(f"node {self._names[nid]!r} has {outputs} output(s); no "
                                   f"output {output_index!r}")
        self._calls()
        array = self._runtime.entries[graph.entry_id(nid, int(output_index))]
        if array is None:
            raise GraphInputError(f"node {self._names[nid]!r} has no value yet: set the "
                                  f"graph's inputs first")
        return NDArray(np.array(array, copy=True), self.module.device)

    def debug_get_output(self, node, out=None):
        """Run the graph up to ``node`` (included) and copy its (first) output into ``out``.

        Args:
            node: the node index (as in the graph JSON's ``nodes``) or name.
            out: an NDArray or numpy array of the output's shape, or None for a new
                NDArray.

        Returns:
            ``out`` (or the new NDArray).

        Raises:
            UnknownNameError: for an unknown node name or an index out of range.
            GraphInputError: if ``out`` has another shape than the node's output, or (on
                a graph with symbolic dims) an input that gives a size is not set.
        """
        nid = self.get_node_index(node)
        calls = self._calls()
        for k, call_nid in enumerate(self._op_nids):
            if call_nid > nid:
                break
            fn, args = calls[k]
            fn(*args)
        value = self.get_node_output(nid, 0)
        if out is None:
            return value
        array = value.numpy()
        if tuple(np.shape(out)) != array.shape:
            raise GraphInputError(f"debug_get_output: out has shape {tuple(np.shape(out))}, "
                                  f"node {self._names[nid]!r} has output shape {array.shape}")
        if hasattr(out, "copyfrom"):
            return out.copyfrom(array)
        np.copyto(out, array)
        return out

    def run_individual(self, number: int, repeat: int = 1, min_repeat_ms: int = 0) -> list:
        """Mean seconds per call of every node, each node timed on its own.

        Args:
            number: calls per measurement.
            repeat: measurements per node (the mean over them is returned).
            min_repeat_ms: grow ``number`` until a measurement lasts this long.

        Returns:
            One float per graph node, in seconds (0.0 for input nodes and ``__nop``s).
        """
        self._timed_pass()
        calls = self._calls()
        result = [0.0] * len(self._names)
        for k, nid in enumerate(self._op_nids):
            fn, args = calls[k]
            timing = time_function(fn, args, repeat, number, min_repeat_ms or None)
            result[nid] = timing.mean
        return result

    def run_individual_node(self, index, number: int = 10, repeat: int = 1,
                            min_repeat_ms: int = 0) -> BenchmarkResult:
        """Time one node on its own (the graph runs up to it first).

        Args:
            index: the node index or name.
            number, repeat, min_repeat_ms: as in ``GraphModule.benchmark``.

        Returns:
            A :class:`~interp.graph_benchmark.BenchmarkResult` (seconds).

        Raises:
            UnknownNameError: for an unknown node.
            IRError: for a node that runs nothing (an input or a ``__nop``).
        """
        nid = self.get_node_index(index)
        if nid not in self._ops:
            raise IRError(f"node {self._names[nid]!r} runs no function (an input or an "
                          f"alias); nothing to time")
        self.debug_get_output(nid)
        fn, args = self._calls()[self._op_nids.index(nid)]
        return time_function(fn, args, repeat, number, min_repeat_ms or None)

    # -- profile ------------------------------------------------------------------------------
    def _bindings(self) -> dict:
        """``{size variable: value}`` of the last binding (empty for a static graph)."""
        runtime = self._runtime
        state = getattr(runtime, "state", None)
        if state is None or not hasattr(runtime, "layout"):
            return {}
        return dict(zip(runtime.layout.names, state.values))

    def profile(self, repeat: int = 10, warmup: int = 1, **input_dict) -> ProfileReport:
        """Run the graph ``warmup`` + ``repeat`` times; the per-node profile of the timed runs.

        Args:
            repeat: profiled runs (each node's time is its median over them).
            warmup: untimed runs first (the first run of a process compiles kernels).
            input_dict: inputs to set first (by name).

        Returns:
            A :class:`~interp.profile_report.ProfileReport`: one row per executed node
            (index, name, op kinds, output shapes, median ms, % of the summed time,
            GFLOP/s of conv / dense / matmul groups); ``print`` it for the table.
        """
        repeat = max(int(repeat), 1)
        for name, value in input_dict.items():
            self._runtime.set_input(name, value, strict=True)
        for _ in range(max(int(warmup), 0)):
            self._timed_pass()
        samples, totals = np.empty((repeat, len(self._op_nids))), []
        for r in range(repeat):
            samples[r], self._last_starts, total = self._timed_pass()
            totals.append(total)
        self._last_times, self._last_total = samples[-1], totals[-1]
        medians = np.median(samples, axis=0) * 1e3
        whole = float(medians.sum()) or 1.0
        bindings = self._bindings()
        graph, entries = self.module.graph, self._runtime.entries
        rows = []
        for k, nid in enumerate(self._op_nids):
            node = graph.nodes[nid]
            shapes = tuple(tuple(entries[graph.entry_id(nid, i)].shape)
                           for i in range(int(node["attrs"]["num_outputs"])))
            rows.append(NodeProfile(
                index=nid, name=node["name"], func_name=node["attrs"]["func_name"],
                ops=self._ops[nid], shapes=shapes, time_ms=float(medians[k]),
                percent=100.0 * float(medians[k]) / whole,
                flops=group_flops(self._ir_function(nid), bindings),
                times_ms=[float(t) * 1e3 for t in samples[:, k]]))
        return ProfileReport(rows, repeat, float(np.median(totals)) * 1e3)

    # -- dumping ------------------------------------------------------------------------------
    def _dump_path(self) -> str:
        device = self.module.device
        name = f"_tvmdbg_device_{str(device).upper().replace('(', '_').replace(')', '')}"
        path = os.path.join(self._dump_root, "".join(c if c.isalnum() or c in "_-" else "_"
                                                     for c in name))
        os.makedirs(path, mode=0o700, exist_ok=True)
        return path

    def _dump_trace(self) -> None:
        """Write the last run as Chrome trace events (one complete event per node)."""
        events = []
        for k, nid in enumerate(self._op_nids):
            events.append({"name": self._names[nid], "cat": ",".join(self._ops[nid]) or "op",
                           "ph": "X", "pid": 0, "tid": 0,
                           "ts": float(self._last_starts[k]) * 1e6,
                           "dur": float(self._last_times[k]) * 1e6})
        with open(os.path.join(self._dump_path(), TRACE_FILE), "w", encoding="utf-8") as handle:
            json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, handle)

    def exit(self) -> None:
        """Remove the dump folder (``dump_root``) and everything in it."""
        if self._dump_root is not None and os.path.isdir(self._dump_root):
            shutil.rmtree(self._dump_root)


def profile_model(mod, params=None, inputs=None, repeat: int = 10, opt_level: int = 3,
                  target: str = "cpu", device=None) -> ProfileReport:
    """Build a model as ``irlib run`` does and profile it node by node.

    Args:
        mod: the IRModule (or Function) to build.
        params: ``{name: array}`` weights, bound as constants by the build.
        inputs: ``{name: array}`` values of the remaining inputs; a name several inputs
            share (the zoo lstm's per-step ``data``) sets all of them.
        repeat: profiled runs after one warm-up run (which compiles the kernels).
        opt_level: the PassContext opt level of the build (``irlib run``'s default, 3).
        target: the build target (``"cpu"`` or ``"python"``).
        device: the device (CPU 0 by default).

    Returns:
        The :class:`~interp.profile_report.ProfileReport` (``print`` it for the table).

    Raises:
        UnknownNameError: if ``inputs`` names something that is not an input of the graph.
        IRError: if the module cannot be built for the graph executor.
    """
    from irlib.transform import PassContext
    from .build import build
    with PassContext(opt_level=opt_level):
        factory = build(mod, target=target, params=params)
    gmod = GraphModuleDebug(factory["default"](device or cpu(0)))
    runtime = gmod._runtime
    unknown = sorted(set(inputs or {}) - set(runtime.input_names))
    if unknown:
        raise UnknownNameError(f"profile_model: {unknown} are not inputs of the graph; its "
                               f"inputs are {sorted(set(runtime.input_names))}")
    for index, name in enumerate(runtime.input_names):
        if inputs and name in inputs:
            runtime.set_input(index, inputs[name])
    return gmod.profile(repeat=repeat, warmup=1)
