"""The graph executor's runtime for graphs with symbolic dims (build once, run at any size).

A graph built from ``fn (%x: Tensor[(1, n), int32], %cache: Tensor[(c, 12, 64), float32])``
keeps its symbolic dims (``"n"``, ``"c + n"`` in the JSON). :class:`SymbolicRuntime` has
the interface of :class:`~interp.graph_runtime.GraphRuntime`; what differs:

* ``set_input`` accepts any size for a symbolic dim (static dims, rank and dtype are
  checked at once); the input gets its own buffer, reused while the size stays put;
* ``run`` binds the size variables from the inputs (:class:`~interp.graph_dims.SizeBinder`:
  first occurrence binds, the others are checked, a mismatch raises GraphInputError), then
  takes the *prepared state* of that binding from a small LRU cache (:data:`LRU_SIZE`), or
  makes it: every entry's shape (:class:`~interp.graph_dims.ShapeEvaluator`), the memory
  plan for those sizes (:func:`~interp.memory_plan.plan_memory`), entry views on storage
  buffers that only grow (reused across bindings, so a decoder whose cache grows by one
  row per step allocates rarely), and the argument tuple of every node: its inputs, its
  outputs, then the values of the size variables its function takes (``size_args``);
* ``get_output`` returns the output of the last run, at its bound size.

Kernels take their extents from the arrays or from those size arguments, so no binding
compiles anything.
"""

from __future__ import annotations

from collections import OrderedDict
from operator import itemgetter

import numpy as np

from irlib.errors import IRError
from irlib.ir.dims import substitute_dim
from jitkernels.threads import run_threads

from .graph_dims import ShapeEvaluator, SizeBinder, dims_free_vars, parse_dim
from .graph_lower import GraphUnsupportedError
from .graph_runtime import (Graph, GraphInputError, GraphRuntime, _aligned_bytes, _host_array,
                            _np_dtype, parse_graph)
from .memory_plan import PlanNode, PlanTemplate

__all__ = ["SymbolicRuntime", "check_symbolic_graph", "LRU_SIZE"]

LRU_SIZE = 8
"""Prepared states (plan, views, argument tuples) kept per runtime, most recent bindings."""

_GROWTH = 1.25
"""A storage buffer that must grow is allocated this much larger than asked, so a size
that creeps up (a KV cache, one row per decode step) reallocates only now and then."""


def _getter(indices: tuple):
    """A function returning the tuple of ``sequence[i]`` for ``indices`` (C-speed)."""
    if not indices:
        return lambda sequence: ()
    if len(indices) == 1:
        index = indices[0]
        return lambda sequence: (sequence[index],)
    return itemgetter(*indices)


class _State:
    """What one binding needs to run: entry arrays and the argument tuple of every node."""

    __slots__ = ("values", "shapes", "entries", "calls", "version")

    def __init__(self, values, shapes, entries):
        self.values, self.shapes, self.entries = values, shapes, entries
        self.calls, self.version = None, -1


class _Layout:
    """The size-independent description of a symbolic graph: entry dims, the size
    variables, how inputs bind them, each node's size arguments."""

    def __init__(self, graph: Graph):
        self.entry_dims = [tuple(parse_dim(d, f"shape of entry {e}") for d in shape)
                           for e, shape in enumerate(graph.shapes)]
        self.itemsizes = [_np_dtype(d).itemsize for d in graph.dtypes]
        input_names = [graph.nodes[nid]["name"] for nid in graph.arg_nodes]
        names = set()
        for dims in self.entry_dims:
            names |= dims_free_vars(dims)
        self.node_sizes: dict = {}
        for nid, node in enumerate(graph.nodes):
            text = node["attrs"].get("size_args", "") if node["op"] == "tvm_op" else ""
            if text:
                args = tuple(text.split(",")) if isinstance(text, str) else tuple(text)
                self.node_sizes[nid] = args
                names |= set(args)
        size_params = {}
        for name in graph.size_params:
            if name not in input_names:
                raise IRError(f"graph size_params names {name!r}, which is not an input "
                              f"(inputs: {input_names})")
            index = input_names.index(name)
            entry = graph.entry_id(graph.arg_nodes[index], 0)
            if self.entry_dims[entry] != () or graph.dtypes[entry] not in ("int64", "int32"):
                raise IRError(f"size parameter {name!r} must be a scalar int64/int32 input, "
                              f"not shape {graph.shapes[entry]} {graph.dtypes[entry]}")
            size_params[index] = name
            names.add(name)
        self.names = tuple(sorted(names))
        input_dims = [self.entry_dims[graph.entry_id(nid, 0)] for nid in graph.arg_nodes]
        self.binder = SizeBinder(input_names, input_dims, size_params, self.names)


def check_symbolic_graph(graph_json: str) -> None:
    """Check at build time that a symbolic graph can run: every size variable is bound by
    an input (a plain dim of an input's shape, or a ``size_params`` input).

    Args:
        graph_json: the graph JSON.

    Raises:
        GraphUnsupportedError: naming the variables no input binds (``create_executor``
            then falls back to the interpreter).
    """
    graph = parse_graph(graph_json)
    if not graph.is_symbolic:
        return
    try:
        _Layout(graph)
    except IRError as error:
        raise GraphUnsupportedError(f"graph executor: {error}") from None


class SymbolicRuntime(GraphRuntime):
    """Storage, entry arrays and the run loop of a graph with symbolic dims.

    Args:
        graph: the parsed :class:`~interp.graph_runtime.Graph` (``graph.is_symbolic``).
        lookup: ``name -> callable or None``: the library.

    Raises:
        IRError: if a dim string is malformed, a size variable is bound by no input, or a
            size parameter is not a scalar int input.
    """

    def __init__(self, graph: Graph, lookup):
        self.graph = graph
        layout = self.layout = _Layout(graph)
        self._bind_functions(lookup)
        self.shapes_of = ShapeEvaluator(layout.entry_dims, layout.itemsizes, layout.names)
        self._divisible = []
        for item in graph.size_divisible:
            text, divisor = item.split("|")
            self._divisible.append((text, parse_dim(text, "size_divisible"), int(divisor)))
        self.dtypes = [_np_dtype(d) for d in graph.dtypes]
        self._static_axes = [[(axis, d) for axis, d in enumerate(dims) if isinstance(d, int)]
                             for dims in layout.entry_dims]
        self.input_entries = [graph.entry_id(nid, 0) for nid in graph.arg_nodes]
        self.heads = [graph.entry_id(*head) for head in graph.heads]
        position = {name: k for k, name in enumerate(layout.names)}
        self._node_args = []          # (fn, input entries, output entries, size positions)
        self._aliases = []            # (alias entry, source entry) in node order
        self._plan_nodes = []
        self._flatten = set()
        for nid, node in enumerate(graph.nodes):
            outputs = tuple(graph.entry_id(nid, k) for k in
                            range(int(node["attrs"].get("num_outputs", 1))
                                  if node["op"] == "tvm_op" else 1))
            inputs = tuple(graph.entry_id(i, k) for i, k in node["inputs"])
            alias = node["op"] == "tvm_op" and node["attrs"]["func_name"] == "__nop"
            self._plan_nodes.append(PlanNode(node["op"] == "tvm_op", inputs, outputs, alias))
            if alias:
                self._aliases.append((outputs[0], inputs[0]))
            elif self.functions[nid] is not None:
                sizes = tuple(position[n] for n in layout.node_sizes.get(nid, ()))
                self._node_args.append((self.functions[nid], inputs, outputs, sizes))
                if node["attrs"].get("flatten_data", "0") == "1":
                    self._flatten.add(len(self._node_args) - 1)
        self._alias_entries = {entry for entry, _ in self._aliases}
        self._input_set = set(self.input_entries)
        self._planner = PlanTemplate(self._plan_nodes, len(graph.shapes), self.heads)
        self._storage_owner = None
        self._storage_count = 0
        self._pooled = [e for e in range(len(graph.shapes))
                        if e not in self._input_set and e not in self._alias_entries]
        self._getters = [(fn, _getter(inputs + outputs), _getter(sizes),
                          k in self._flatten)
                         for k, (fn, inputs, outputs, sizes) in enumerate(self._node_args)]
        self.inputs: list = []
        self._owned: list = []
        for index, entry in enumerate(self.input_entries):
            dims = layout.entry_dims[entry]
            if any(not isinstance(d, int) for d in dims):
                self.inputs.append(None)          # set_input gives it its size
                self._owned.append(False)
            else:
                size = int(np.prod(dims, dtype=np.int64)) * layout.itemsizes[entry]
                self.inputs.append(_aligned_bytes(size).view(self.dtypes[entry]).reshape(dims))
                self._owned.append(True)
        self._input_buffers: dict = {}
        self._buffers: dict = {}
        self._states: OrderedDict = OrderedDict()
        self._version = 0
        self._output_overrides: dict = {}
        self.state = None

    # -- inputs -------------------------------------------------------------------------------
    def _check_against_type(self, entry: int, value: np.ndarray, what: str) -> None:
        dims, dtype = self.layout.entry_dims[entry], self.dtypes[entry]
        shape = value.shape
        if value.dtype == dtype and len(shape) == len(dims) and all(
                shape[axis] == size for axis, size in self._static_axes[entry]):
            return
        text = "(" + ", ".join(str(d) for d in dims) + ")"
        if value.dtype != dtype:
            raise GraphInputError(f"{what} expects dtype {dtype} (shape {text}), got dtype "
                                  f"{value.dtype}")
        if value.ndim != len(dims):
            raise GraphInputError(f"{what} expects shape {text} (rank {len(dims)}), got shape "
                                  f"{tuple(value.shape)}")
        for axis, (dim, size) in enumerate(zip(dims, value.shape)):
            if isinstance(dim, int) and dim != size:
                raise GraphInputError(f"{what} expects shape {text}: dim {axis} is {dim}, got "
                                      f"{size} (shape {tuple(value.shape)})")

    _check = _check_against_type

    def input_array(self, index: int):
        """The live array of input ``index`` (None for a symbolic input not yet set)."""
        return self.inputs[index]

    def _input_view(self, index: int, shape: tuple) -> np.ndarray:
        entry = self.input_entries[index]
        nbytes = int(np.prod(shape, dtype=np.int64)) * self.layout.itemsizes[entry]
        buffer = self._input_buffers.get(index)
        if buffer is None or buffer.size < nbytes:
            buffer = self._input_buffers[index] = _aligned_bytes(int(nbytes * _GROWTH) + 64)
        return buffer[:nbytes].view(self.dtypes[entry]).reshape(shape)

    def _replace_input(self, index: int, array: np.ndarray, owned: bool) -> None:
        self.inputs[index] = array
        self._owned[index] = owned
        self._version += 1

    def set_input(self, key, value, strict: bool = True) -> None:
        """Copy ``value`` into input ``key`` (any size where the input's dim is symbolic)."""
        index = self._resolve(key, strict)
        if index < 0:
            return
        entry = self.input_entries[index]
        array = _host_array(value)
        if not isinstance(value, np.ndarray) and not hasattr(value, "numpy") \
                and not hasattr(value, "__dlpack__"):
            array = array.astype(self.dtypes[entry], copy=False)
        self._check(entry, array, f"input {self.input_names[index]!r}")
        target = self.inputs[index]
        if target is None or not self._owned[index] or target.shape != array.shape:
            self._replace_input(index, self._input_view(index, array.shape), True)
            target = self.inputs[index]
        np.copyto(target, array)

    def bind_input(self, index: int, array: np.ndarray) -> None:
        """Make input ``index`` use ``array`` itself (shared, not copied)."""
        self._check(self.input_entries[index], array, f"input {self.input_names[index]!r}")
        if array is not self.inputs[index]:
            self._replace_input(index, array, False)

    # -- outputs ------------------------------------------------------------------------------
    def get_output(self, key) -> np.ndarray:
        """The array of output ``key`` from the last run, at its bound size.

        Raises:
            GraphInputError: before the first run (the output's size is not known yet).
        """
        entry = self.output_entry(key)
        if self.state is None:
            raise GraphInputError(f"output {key!r} has a symbolic shape: run the graph "
                                  f"before reading it")
        return self.state.entries[entry]

    @property
    def entries(self) -> list:
        """The entry arrays of the last run's binding (empty before the first run)."""
        return self.state.entries if self.state is not None else []

    @property
    def calls(self) -> list:
        """``(fn, args)`` of every node for the last run's binding."""
        return self.state.calls if self.state is not None else []

    def set_output_zero_copy(self, key, value) -> None:
        """Make the producer of output ``key`` write into ``value``; its shape is checked
        against the output's shape at every run (GraphInputError if they differ)."""
        entry = self.output_entry(key, strict=not isinstance(key, str))
        if entry < 0:
            return
        array = _host_array(value)
        self._check(entry, array, f"output {key!r}")
        if not array.flags.c_contiguous or not array.flags.writeable:
            raise GraphInputError(f"set_output_zero_copy: output {key!r} needs a writeable "
                                  f"C-contiguous array")
        self._output_overrides[entry] = array
        self._version += 1

    # -- running ------------------------------------------------------------------------------
    def bind(self) -> tuple:
        """The size variables' values for the current inputs (``layout.names`` order)."""
        return self.layout.binder.bind(self.inputs)

    def prepare(self, values: tuple) -> _State:
        """The prepared state of a binding (from the LRU cache, or made now)."""
        state = self._states.get(values)
        if state is None:
            state = self._make_state(values)
            self._states[values] = state
            if len(self._states) > LRU_SIZE:
                self._states.popitem(last=False)
        else:
            self._states.move_to_end(values)
        if state.version != self._version:
            self._attach(state)
        return state

    def run(self) -> None:
        """Bind the sizes from the inputs, then execute every op node in order (the first
        run, which compiles the kernels on a cold cache, shows them as progress:
        :func:`interp.kernel_compile.watch_compiles`), on numba's threads or one while
        other processes keep the cores busy (:func:`jitkernels.threads.run_threads`)."""
        values = self.layout.binder.bind(self.inputs)
        state = self.prepare(values)
        self.state = state
        ran = getattr(self, "_ran", False)      # the first run compiles: not timed
        with run_threads((id(self), tuple(values)) if ran else None):
            if not ran:
                from .kernel_compile import watch_compiles
                with watch_compiles():
                    for fn, args in state.calls:
                        fn(*args)
                self._ran = True
                return
            for fn, args in state.calls:
                fn(*args)

    def _check_divisible(self, values: tuple) -> None:
        """Sizes that an op needs to divide exactly (``split`` into equal sections)."""
        bindings = dict(zip(self.layout.names, values))
        for text, dim, divisor in self._divisible:
            size = substitute_dim(dim, bindings)
            if size % divisor:
                raise GraphInputError(f"a split into {divisor} equal sections needs a size "
                                      f"divisible by {divisor}, but {text} = {size} for these "
                                      f"inputs")

    def _plan(self, nbytes) -> tuple:
        """Storage ids and sizes for these entry sizes. Which entries may share a storage
        depends on their lifetimes only, not on their sizes, so the first binding's
        assignment is kept and later bindings only resize the storages (a decode step, whose
        cache length is new at every call, then costs no planning)."""
        if self._storage_owner is None:
            owner, size = self._planner.plan(nbytes)
            self._storage_owner = np.asarray(owner, dtype=np.int64)
            self._storage_count = len(size)
            return owner, size
        size = np.zeros(self._storage_count, dtype=np.int64)
        np.maximum.at(size, self._storage_owner, np.asarray(nbytes, dtype=np.int64))
        return self._storage_owner, size

    def _make_state(self, values: tuple) -> _State:
        self._check_divisible(values)
        shapes, nbytes = self.shapes_of(*values)
        storage_ids, storage_bytes = self._plan(nbytes)
        buffers, dtypes = self._buffers, self.dtypes
        entries = [None] * len(shapes)
        ndarray = np.ndarray
        for entry in self._pooled:         # op outputs (inputs keep their own arrays)
            sid = storage_ids[entry]
            buffer = buffers.get(sid)
            if buffer is None or buffer.size < storage_bytes[sid]:
                buffer = buffers[sid] = _aligned_bytes(int(storage_bytes[sid] * _GROWTH) + 64)
            entries[entry] = ndarray(shapes[entry], dtypes[entry], buffer)
        return _State(values, shapes, entries)

    def _attach(self, state: _State) -> None:
        """Put the current inputs, output overrides and aliases into ``state``'s entries and
        rebuild its argument tuples."""
        entries, shapes = state.entries, state.shapes
        for index, entry in enumerate(self.input_entries):
            entries[entry] = self.inputs[index]
        for entry, array in self._output_overrides.items():
            if array.shape != shapes[entry]:
                raise GraphInputError(f"set_output_zero_copy: the array for output entry "
                                      f"{entry} has shape {array.shape}, but this run's "
                                      f"output has shape {shapes[entry]}")
            entries[entry] = array
        for entry, source in self._aliases:
            entries[entry] = entries[source].reshape(shapes[entry])
        values = state.values
        calls = []
        for fn, arrays, sizes, flatten in self._getters:
            args = arrays(entries)
            if flatten:
                args = tuple(a.reshape(-1) for a in args)
            calls.append((fn, args + sizes(values)))
        state.calls = calls
        state.version = self._version
