"""The graph executor's core: graph JSON parsing, the storage pool, and the run loop.

:func:`parse_graph` validates a graph JSON string the way TVM's loader does
(relay_spec.md 5.1) and returns a :class:`Graph`. :class:`GraphRuntime` allocates one byte
buffer per storage id, makes every entry a typed view on its buffer, binds each op node to
its library function with its argument arrays (inputs then outputs), and runs the nodes in
order. Rebinding an entry (zero-copy inputs and outputs, shared params) rebuilds the argument
lists of the nodes that touch it.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from irlib.errors import IRError, TensorTooLargeError, UnknownNameError
from irlib.limits import max_tensor_bytes
from jitkernels.threads import run_threads

_ALIGN = 64
_NODE_KEYS = {"op", "name", "inputs", "attrs", "attr", "control_deps"}
_TOP_KEYS = ("nodes", "arg_nodes", "node_row_ptr", "heads", "attrs")


class GraphInputError(IRError, ValueError):
    """A value given to the graph executor has the wrong shape, dtype or memory layout."""


class Graph:
    """A parsed graph JSON.

    Attributes:
        nodes: the node dicts (``op``, ``name``, ``inputs`` as ``(nid, index)``, ``attrs``).
        arg_nodes, heads, node_row_ptr: as in the JSON (heads as ``(nid, index)``).
        shapes, dtypes, storage_ids: per entry (a symbolic dim is its string, ``"c + n"``).
        size_params: names of the scalar int inputs whose value binds the size variable of
            the same name (the top-level attr ``size_params``; usually empty).
        size_divisible: ``"dim|divisor"`` strings (the top-level attr ``size_divisible``):
            symbolic sizes an op needs to divide exactly (``split`` into equal sections),
            checked when the sizes are bound.
    """

    def __init__(self, nodes, arg_nodes, heads, node_row_ptr, shapes, dtypes, storage_ids):
        self.nodes, self.arg_nodes, self.heads = nodes, arg_nodes, heads
        self.node_row_ptr = node_row_ptr
        self.shapes, self.dtypes, self.storage_ids = shapes, dtypes, storage_ids
        self.size_params: list = []
        self.size_divisible: list = []

    @property
    def is_symbolic(self) -> bool:
        """True if some entry's shape has a symbolic dim (run by the symbolic runtime)."""
        return any(isinstance(d, str) for shape in self.shapes for d in shape) or any(
            node["attrs"].get("size_args") for node in self.nodes if node["op"] == "tvm_op")

    def entry_id(self, nid: int, index: int = 0) -> int:
        """The entry id of output ``index`` of node ``nid``."""
        return self.node_row_ptr[nid] + index


def _bad(message: str):
    return IRError(f"malformed graph JSON: {message}")


def _entry(raw, where: str) -> tuple:
    if not isinstance(raw, list) or len(raw) not in (2, 3) \
            or not all(isinstance(x, int) for x in raw):
        raise _bad(f"{where}: an entry must be [node_id, index(, version)], got {raw!r}")
    return raw[0], raw[1]


def parse_graph(graph_json: str) -> Graph:
    """Parse and validate a graph JSON string.

    Raises:
        IRError: naming the first problem found.
    """
    try:
        data = json.loads(graph_json) if isinstance(graph_json, (str, bytes)) else graph_json
    except ValueError as error:
        raise _bad(str(error)) from None
    if not isinstance(data, dict):
        raise _bad("the top level must be an object")
    missing = [key for key in _TOP_KEYS if key not in data]
    if missing:
        raise _bad(f"missing key(s) {missing}")
    nodes = []
    for nid, raw in enumerate(data["nodes"]):
        if not isinstance(raw, dict) or not {"op", "name"} <= set(raw):
            raise _bad(f"node {nid} must be an object with 'op' and 'name'")
        extra = set(raw) - _NODE_KEYS
        if extra:
            raise _bad(f"node {nid} ({raw['name']!r}) has unknown key(s) {sorted(extra)}")
        attrs = raw.get("attrs", raw.get("attr", {})) or {}
        node = {"op": raw["op"], "name": raw["name"], "attrs": attrs,
                "inputs": [_entry(e, f"node {nid} input") for e in raw.get("inputs", [])]}
        if node["op"] == "tvm_op":
            for key in ("func_name", "num_inputs", "num_outputs"):
                if key not in attrs:
                    raise _bad(f"op node {nid} ({raw['name']!r}) lacks attr {key!r}")
        elif node["op"] != "null":
            raise _bad(f"node {nid}: op must be 'null' or 'tvm_op', got {node['op']!r}")
        nodes.append(node)
    row_ptr = list(data["node_row_ptr"])
    if len(row_ptr) != len(nodes) + 1:
        raise _bad(f"node_row_ptr has {len(row_ptr)} items for {len(nodes)} nodes")
    attrs = data["attrs"]
    for key in ("shape", "storage_id", "dltype"):
        if key not in attrs:
            raise _bad(f"attrs lacks {key!r}")
    for key, value in attrs.items():
        if key not in ("shape", "storage_id", "dltype", "device_index", "storage_scope",
                       "size_params", "size_divisible") and value[0] not in ("list_int",
                                                                            "size_t"):
            raise _bad(f"unknown attr {key!r} of type {value[0]!r}")
    size_params = list(attrs["size_params"][1]) if "size_params" in attrs else []
    if not all(isinstance(name, str) for name in size_params):
        raise _bad(f"size_params must be a list of input names, got {size_params!r}")
    shapes = [tuple(s) for s in attrs["shape"][1]]
    dtypes = list(attrs["dltype"][1])
    storage_ids = list(attrs["storage_id"][1])
    if not len(shapes) == len(dtypes) == len(storage_ids) == row_ptr[-1]:
        raise _bad(f"attrs must have one item per entry ({row_ptr[-1]} entries)")
    heads = [_entry(e, "head") for e in data["heads"]]
    graph = Graph(nodes, list(data["arg_nodes"]), heads, row_ptr, shapes, dtypes, storage_ids)
    graph.size_params = size_params
    graph.size_divisible = list(attrs["size_divisible"][1]) if "size_divisible" in attrs else []
    if not all(isinstance(item, str) and item.count("|") == 1 for item in graph.size_divisible):
        raise _bad(f"size_divisible must be 'dim|divisor' strings, got {graph.size_divisible!r}")
    return graph


def _np_dtype(name: str) -> np.dtype:
    try:
        return np.dtype(name)
    except TypeError:
        raise _bad(f"unknown dltype {name!r}") from None


class GraphRuntime:
    """Storage, entry arrays and the run loop of one executor instance.

    Args:
        graph: the parsed :class:`Graph`.
        lookup: ``name -> callable or None``: the library.
    """

    def __init__(self, graph: Graph, lookup):
        self.graph = graph
        nbytes = [int(np.prod(s, dtype=np.int64)) * _np_dtype(d).itemsize
                  for s, d in zip(graph.shapes, graph.dtypes)]
        pool_size: dict = {}
        for sid, size in zip(graph.storage_ids, nbytes):
            pool_size[sid] = max(pool_size.get(sid, 0), size)
        _check_entry_sizes(graph, nbytes)      # before any storage is allocated
        pools = {sid: _aligned_bytes(size) for sid, size in pool_size.items()}
        self.entries = [pools[sid][:size].view(_np_dtype(dtype)).reshape(shape)
                        for sid, size, dtype, shape in zip(graph.storage_ids, nbytes,
                                                           graph.dtypes, graph.shapes)]
        self._bind_functions(lookup)
        self._build_calls()
        self._ran = False           # the first run shows the kernels it compiles

    def _bind_functions(self, lookup) -> None:
        """Look up every op node's function; note the ``__nop`` aliases and input names."""
        graph = self.graph
        self.alias_children: dict = {}
        self.functions = []
        for nid, node in enumerate(graph.nodes):
            if node["op"] != "tvm_op":
                self.functions.append(None)
                continue
            name = node["attrs"]["func_name"]
            if name == "__nop":
                source = graph.entry_id(*node["inputs"][0])
                self.alias_children.setdefault(source, []).append(graph.entry_id(nid, 0))
                self.functions.append(None)
                continue
            fn = lookup(name)
            if fn is None:
                raise IRError(f"graph node {node['name']!r} calls {name!r}, which the "
                              f"library does not have")
            self.functions.append(fn)
        self.input_names = [graph.nodes[nid]["name"] for nid in graph.arg_nodes]
        self._index_of = {}
        for position, name in enumerate(self.input_names):
            self._index_of.setdefault(name, position)

    # -- binding ------------------------------------------------------------------------------
    def _build_calls(self) -> None:
        calls = []
        graph, entries = self.graph, self.entries
        for nid, fn in enumerate(self.functions):
            if fn is None:
                continue
            node = graph.nodes[nid]
            args = [entries[graph.entry_id(i, k)] for i, k in node["inputs"]]
            args += [entries[graph.entry_id(nid, k)]
                     for k in range(int(node["attrs"]["num_outputs"]))]
            if node["attrs"].get("flatten_data", "0") == "1":
                args = [a.reshape(-1) for a in args]
            calls.append((fn, tuple(args)))
        self.calls = calls
        self._chained = None        # run()'s calls with small kernels chained, made on use
        self._fast = None           # call_arrays' input/output arrays, remade on next use

    def _rebind(self, entry: int, array: np.ndarray) -> None:
        stack = [(entry, array)]
        while stack:
            current, value = stack.pop()
            self.entries[current] = value
            for child in self.alias_children.get(current, ()):
                stack.append((child, value.reshape(self.graph.shapes[child])))
        self._build_calls()

    def _check(self, entry: int, value: np.ndarray, what: str) -> None:
        shape, dtype = tuple(self.graph.shapes[entry]), self.graph.dtypes[entry]
        if tuple(value.shape) != shape or value.dtype != _np_dtype(dtype):
            raise GraphInputError(f"{what} expects shape {shape} and dtype {dtype}, got shape "
                                  f"{tuple(value.shape)} and dtype {value.dtype}")

    # -- inputs -------------------------------------------------------------------------------
    def input_index(self, key) -> int:
        """Position of input ``key`` (a name or an index) in ``arg_nodes``, or -1."""
        if isinstance(key, (int, np.integer)):
            return int(key) if 0 <= key < len(self.input_names) else -1
        return self._index_of.get(key, -1)

    def _resolve(self, key, strict: bool) -> int:
        index = self.input_index(key)
        if index < 0 and strict:
            raise UnknownNameError(f"could not find {key!r} in the graph's inputs; the "
                                   f"inputs are {self.input_names}")
        return index

    def input_entry(self, index: int) -> int:
        """The entry id of input ``index``."""
        return self.graph.entry_id(self.graph.arg_nodes[index], 0)

    def input_array(self, index: int) -> np.ndarray:
        """The live array of input ``index``."""
        return self.entries[self.input_entry(index)]

    def set_input(self, key, value, strict: bool = True) -> None:
        """Copy ``value`` into input ``key`` (an unknown name raises only when ``strict``)."""
        index = self._resolve(key, strict)
        if index < 0:
            return
        entry = self.input_entry(index)
        name = self.input_names[index]
        array = _host_array(value)
        if not isinstance(value, np.ndarray) and not hasattr(value, "numpy") \
                and not hasattr(value, "__dlpack__"):
            array = array.astype(self.graph.dtypes[entry], copy=False)
        self._check(entry, array, f"input {name!r}")
        target = self.entries[entry]
        if not target.flags.writeable:
            target = target.copy()
            self._rebind(entry, target)
        np.copyto(target, array)

    def bind_input(self, index: int, array: np.ndarray) -> None:
        """Make input ``index`` use ``array`` itself (shared, not copied)."""
        entry = self.input_entry(index)
        self._check(entry, array, f"input {self.input_names[index]!r}")
        self._rebind(entry, array)

    def set_input_zero_copy(self, key, value, strict: bool = True) -> None:
        """Point input ``key`` at ``value``'s memory."""
        index = self._resolve(key, strict)
        if index < 0:
            return
        array = _host_array(value)
        if not array.flags.c_contiguous:
            raise GraphInputError(f"set_input_zero_copy: input {self.input_names[index]!r} "
                                  f"needs a C-contiguous array")
        self.bind_input(index, array)

    # -- outputs ------------------------------------------------------------------------------
    def output_entry(self, key, strict: bool = True) -> int:
        """The entry of output ``key`` (index, or ``"<node name>:<i>"`` / a node name)."""
        heads = self.graph.heads
        if isinstance(key, (int, np.integer)):
            if 0 <= key < len(heads):
                return self.graph.entry_id(*heads[key])
        elif isinstance(key, str):
            name, _, index = key.partition(":")
            for nid, out_index in heads:
                if self.graph.nodes[nid]["name"] == name and \
                        (not index or str(out_index) == index):
                    return self.graph.entry_id(nid, out_index)
        if not strict:
            return -1
        names = [f"{self.graph.nodes[n]['name']}:{i}" for n, i in heads]
        raise UnknownNameError(f"no output {key!r}; the graph has {len(heads)} output(s): "
                               f"{names}")

    def get_output(self, key) -> np.ndarray:
        """The live array of output ``key``."""
        return self.entries[self.output_entry(key)]

    def set_output_zero_copy(self, key, value) -> None:
        """Make the producer of output ``key`` write into ``value`` (unknown names: no-op)."""
        entry = self.output_entry(key, strict=not isinstance(key, str))
        if entry < 0:
            return
        array = _host_array(value)
        self._check(entry, array, f"output {key!r}")
        if not array.flags.c_contiguous or not array.flags.writeable:
            raise GraphInputError(f"set_output_zero_copy: output {key!r} needs a writeable "
                                  f"C-contiguous array")
        self._rebind(entry, array)

    # -- one call: inputs in, outputs out ----------------------------------------------------
    def _fast_arrays(self):
        """``(targets, outputs)``: per input the live array a value of the same shape and
        dtype is copied into (None when it is read-only: set_input must rebind it), and the
        output entries."""
        targets = []
        for index in range(len(self.input_names)):
            array = self.entries[self.input_entry(index)]
            targets.append(array if array.flags.writeable else None)
        outputs = [self.graph.entry_id(*head) for head in self.graph.heads]
        self._fast = (targets, outputs)
        return self._fast

    def call_arrays(self, values) -> list:
        """Set inputs ``0 .. len(values) - 1`` to ``values``, run, and return a copy of
        every output (the per-inference path of :class:`~interp.graph_evaluate.GraphFunction`).

        A numpy array of the input's exact shape and dtype is copied straight into the
        input's storage (the input arrays are looked up once per binding, not per call);
        anything else goes through :meth:`set_input` (conversion, checks, errors).

        Args:
            values: the input values, in input order (fewer than the inputs is fine: the
                others keep their values, e.g. bound weights).

        Returns:
            A list of new numpy arrays, one per graph output.

        Raises:
            GraphInputError: a value of the wrong shape or dtype.
        """
        if type(self).set_input is not GraphRuntime.set_input:     # symbolic runtime
            for index, value in enumerate(values):
                self.set_input(index, value)
            self.run()
            return [np.array(self.get_output(i)) for i in range(len(self.graph.heads))]
        fast = self._fast or self._fast_arrays()
        targets, outputs = fast
        for index, value in enumerate(values):
            target = targets[index]
            if target is not None and type(value) is np.ndarray \
                    and value.shape == target.shape and value.dtype == target.dtype:
                np.copyto(target, value)
            else:
                self.set_input(index, value)
        self.run()
        return self._output_copies(outputs)

    def _output_copies(self, outputs) -> list:
        """New arrays holding the outputs' values; an array this method returned last time
        is written again instead when nothing but this runtime refers to it any more (the
        caller dropped it, no view of it exists): allocating and freeing a large output per
        call costs page faults (a GPT-2 step's two 786 KB KV caches: ~0.8 ms a call)."""
        entries = self.entries
        previous = getattr(self, "_returned", None)
        if previous is None or len(previous) != len(outputs):
            previous = [None] * len(outputs)
        result = []
        for k, entry in enumerate(outputs):
            source = entries[entry]
            old = previous[k]
            previous[k] = None
            # 2 references: ``old`` and getrefcount's argument; any other holder (the
            # caller, a view's base) keeps the array out of reuse.
            if old is not None and sys.getrefcount(old) == 2 and old.shape == source.shape \
                    and old.dtype == source.dtype and old.flags.writeable \
                    and old.flags.c_contiguous:
                np.copyto(old, source)
                result.append(old)
            else:
                result.append(source.copy())
            del old
        self._returned = list(result)
        return result

    # -- running ------------------------------------------------------------------------------
    def run(self) -> None:
        """Execute every op node in order (the first time, with the anchor kernels' numba
        compiles shown as progress: :func:`interp.kernel_compile.watch_compiles`).

        From the second run on, runs of small generated kernels are called as one chain
        each (:mod:`interp.graph_chains`; made, and compiled, on that second run). The run
        uses numba's threads, or one while other processes keep the cores busy
        (:func:`jitkernels.threads.run_threads`)."""
        # the first two runs compile (kernels, then chains): not timed for stalls
        with run_threads(id(self) if self._chained is not None else None):
            self._run_calls()

    def _run_calls(self) -> None:
        calls = self._chained
        if calls is None:
            if self._ran:
                from .graph_chains import chain_calls
                from .kernel_compile import watch_compiles
                with watch_compiles():
                    self._chained = calls = chain_calls(self.calls)
            else:
                from .kernel_compile import watch_compiles
                with watch_compiles():
                    for fn, args in self.calls:
                        fn(*args)
                self._ran = True
                return
        for fn, args in calls:
            fn(*args)


def _check_entry_sizes(graph: Graph, nbytes: list) -> None:
    """Raise TensorTooLargeError, naming the node, for an entry over the size limit of
    :mod:`irlib.limits` (e.g. an input declared ``[1e6, 1e6]``)."""
    limit = max_tensor_bytes()
    for nid, node in enumerate(graph.nodes):
        for entry in range(graph.node_row_ptr[nid], graph.node_row_ptr[nid + 1]):
            if nbytes[entry] > limit:
                raise TensorTooLargeError(
                    f"graph node {node['name']!r} (output {entry - graph.node_row_ptr[nid]}) "
                    f"needs a tensor of shape {tuple(graph.shapes[entry])} and dtype "
                    f"{graph.dtypes[entry]}: {nbytes[entry]} bytes, over the limit of {limit} "
                    f"bytes of the memory plan (raise it with the PassContext option "
                    f"'irlib.max_tensor_bytes' or IRLIB_MAX_TENSOR_BYTES)",
                    size=nbytes[entry], limit=limit)


def _aligned_bytes(size: int) -> np.ndarray:
    limit = max_tensor_bytes()
    if size > limit:    # a symbolic graph's storage for the sizes just bound
        raise TensorTooLargeError(f"the graph executor needs a buffer of {size} bytes, over "
                                  f"the limit of {limit} bytes (raise it with the PassContext "
                                  f"option 'irlib.max_tensor_bytes' or IRLIB_MAX_TENSOR_BYTES)",
                                  size=size, limit=limit)
    raw = np.empty(size + _ALIGN, dtype=np.uint8)
    offset = (-raw.ctypes.data) % _ALIGN
    return raw[offset:offset + size]


def _host_array(value) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "numpy"):
        return np.asarray(value.numpy())
    if hasattr(value, "__dlpack__") and not hasattr(value, "__array__"):
        return np.from_dlpack(value)
    return np.asarray(value)
