"""The graph executor: runs a graph JSON over a library of compiled functions
(``tvm.contrib.graph_executor``).

::

    lib = interp.build(mod, target="cpu", params=params)
    gmod = graph_executor.GraphModule(lib["default"](interp.cpu(0)))
    gmod.set_input("data", x)
    gmod.run()
    y = gmod.get_output(0).numpy()

* :func:`create` ``(graph_json_str, libmod, device)`` makes a :class:`GraphExecutor` (the
  runtime module) from a graph and anything answering ``get_function(name)`` or ``[name]``
  (a dict of Python callables works);
* :class:`GraphModule` is the user-facing wrapper with every method of TVM's: ``set_input``,
  ``set_input_zero_copy``, ``set_output_zero_copy``, ``run``, ``get_num_outputs``,
  ``get_num_inputs``, ``get_input``, ``get_input_index``, ``get_input_info``,
  ``get_output``, ``debug_get_output``, ``load_params``, ``share_params`` and ``benchmark``.

Storage follows relay_spec.md section 5.2: one byte buffer per storage id (the largest entry
using it), entries are typed views on it; ``run`` calls each op node's function with its
input views then its output views. A graph with symbolic dims (built from a function whose
types mention size variables) runs on :class:`~interp.graph_symbolic.SymbolicRuntime`
instead: inputs take any size, ``run`` binds the size variables and plans storage for them
(cached per binding), and outputs come back at the bound size. Errors a user can cause raise documented irlib
exceptions: :class:`~irlib.errors.UnknownNameError` for an unknown input name (the message
lists the valid names), :class:`GraphInputError` for a wrong shape or dtype,
:class:`~irlib.errors.ParamsFormatError` for corrupt params bytes.
"""

from __future__ import annotations

import threading

import json

import numpy as np

from irlib.errors import IRError, UnknownNameError
from irlib.ndarray import Device, NDArray, cpu

from .graph_benchmark import BenchmarkResult, time_function
from .graph_lower import GraphUnsupportedError
from .graph_runtime import GraphRuntime, GraphInputError, parse_graph

__all__ = ["create", "get_device", "GraphModule", "GraphExecutor", "GraphInputError",
           "GraphUnsupportedError", "BenchmarkResult"]


def get_device(libmod, device):
    """Parse and validate the device(s) (``graph_executor.get_device``).

    Args:
        libmod: the library module (unused; kept for the reference signature).
        device: a :class:`~irlib.ndarray.Device` or a list of them (the first is primary).

    Returns:
        ``(devices, num_rpc_dev, device_type_id)``: the device list, 0, and the flat list
        ``[type code, id, ...]``.

    Raises:
        IRError: if ``device`` is not a Device or a non-empty list of Devices.
    """
    devices = list(device) if isinstance(device, (list, tuple)) else [device]
    if not devices or not all(isinstance(d, Device) for d in devices):
        raise IRError(f"device must be an interp.Device or a list of them, got {device!r}")
    type_ids = []
    for dev in devices:
        type_ids += [dev.device_type_code, dev.device_id]
    return devices, 0, type_ids


def create(graph_json_str: str, libmod, device) -> "GraphModule":
    """Create a runtime executor for a graph (``graph_executor.create``).

    Args:
        graph_json_str: the graph JSON (as ``factory.get_graph_json()`` returns it).
        libmod: the functions: a built library (``factory.lib``), or a dict from name to a
            destination-passing callable ``fn(*inputs, *outputs)``.
        device: a Device or a list of Devices (the first is used).

    Returns:
        A :class:`GraphModule`.

    Raises:
        IRError: if the graph JSON is malformed or names a function the library lacks.
    """
    devices, _, _ = get_device(libmod, device)
    return GraphModule(GraphExecutor(graph_json_str, libmod, devices[0]))


class GraphExecutor:
    """The runtime module: a graph, its storage and its functions.

    ``executor[name]`` returns one of the runtime functions (``"set_input"``, ``"run"``,
    ``"get_output"``, ``"set_input_zero_copy"``, ``"run_from_inputs"``, ...), as TVM's
    module does; :class:`GraphModule` wraps them.

    Args:
        graph_json: the graph JSON string.
        libmod: see :func:`create`.
        device: the device.
    """

    def __init__(self, graph_json: str, libmod, device: Device | None = None):
        self.graph = parse_graph(graph_json)
        self.device = device or cpu(0)
        self.libmod = libmod          # kept for the debug executor (op names, FLOPs)
        if self.graph.is_symbolic:
            from .graph_symbolic import SymbolicRuntime
            self.runtime = SymbolicRuntime(self.graph, _lookup(libmod))
        else:
            self.runtime = GraphRuntime(self.graph, _lookup(libmod))
        self.param_names: set = set()
        self.compile_stats = None     # set by factory.create (interp.kernel_compile)
        # Thread rule (docs/graph_executor.md): the thread that creates the module uses
        # ``runtime``; any other thread gets its own runtime (storage, inputs, outputs) on
        # first use, its inputs copied from ``runtime`` then (weights bound, not copied).
        self._owner = threading.get_ident()
        self._local = threading.local()
        self._clone_lock = threading.Lock()

    def thread_runtime(self):
        """The runtime of the calling thread (see the thread rule in the class docstring).

        The creating thread gets :attr:`runtime`; another thread gets its own runtime, made on
        its first call from the same graph and functions, with the creating thread's inputs
        at that moment (loaded weights shared without a copy, other inputs copied).
        """
        if threading.get_ident() == self._owner:
            return self.runtime
        runtime = getattr(self._local, "runtime", None)
        if runtime is None:
            with self._clone_lock:
                runtime = type(self.runtime)(self.graph, _lookup(self.libmod))
                for index, name in enumerate(self.runtime.input_names):
                    array = self.runtime.input_array(index)
                    if array is None:
                        continue
                    if name in self.param_names:
                        runtime.bind_input(index, array)
                    else:
                        runtime.set_input(index, array)
            self._local.runtime = runtime
        return runtime

    def __getitem__(self, key: str):
        functions = {
            "set_input": self.runtime.set_input, "get_input": self.runtime.input_array,
            "set_input_zero_copy": self.runtime.set_input_zero_copy,
            "set_output_zero_copy": self.runtime.set_output_zero_copy,
            "run": self.runtime.run, "get_output": self.runtime.get_output,
            "get_num_outputs": lambda: len(self.graph.heads),
            "get_num_inputs": lambda: len(self.graph.arg_nodes),
            "get_input_index": self.runtime.input_index,
            "load_params": self.load_params, "share_params": self.share_params,
            "run_from_inputs": self.run_from_inputs,
            "get_input_info": self.get_input_info,
        }
        if key not in functions:
            raise UnknownNameError(f"graph executor has no function {key!r}; it has "
                                   f"{sorted(functions)}")
        return functions[key]

    def load_params(self, params_bytes) -> None:
        """Copy the arrays of a params blob into the inputs of the same names."""
        from .params import load_param_dict
        for name, value in load_param_dict(params_bytes).items():
            index = self.runtime.input_index(name)
            if index >= 0:
                self.runtime.set_input(index, value.numpy())
                self.param_names.add(name)

    def share_params(self, other: "GraphExecutor", params_bytes) -> None:
        """Make the inputs named in ``params_bytes`` the same arrays as ``other``'s."""
        from .params import load_param_dict
        if not isinstance(other, GraphExecutor):
            raise IRError(f"share_params needs a GraphExecutor (or GraphModule), got "
                          f"{type(other).__name__}")
        for name in load_param_dict(params_bytes):
            index = self.runtime.input_index(name)
            other_index = other.runtime.input_index(name)
            if index >= 0 and other_index >= 0:
                self.runtime.bind_input(index, other.runtime.input_array(other_index))
                self.param_names.add(name)

    def get_input_info(self) -> tuple:
        """``(shape_dict, dtype_dict)`` of the inputs that are not loaded params."""
        shapes, dtypes = {}, {}
        for nid in self.graph.arg_nodes:
            name = self.graph.nodes[nid]["name"]
            if name in self.param_names:
                continue
            entry = self.graph.entry_id(nid, 0)
            shapes[name] = tuple(self.graph.shapes[entry])
            dtypes[name] = self.graph.dtypes[entry]
        return shapes, dtypes

    def run_from_inputs(self, *args) -> list:
        """``run_from_inputs(device_type, device_id, name1, arr1, ...)``: set, run, and
        return host copies of the outputs."""
        pairs = args[2:]
        for name, value in zip(pairs[0::2], pairs[1::2]):
            self.runtime.set_input(name, value, strict=True)
        self.runtime.run()
        return [NDArray(self.runtime.get_output(i).copy())
                for i in range(len(self.graph.heads))]


def _lookup(libmod):
    """A ``name -> callable`` function for the library, whatever its form."""
    if isinstance(libmod, dict):
        return libmod.get
    if hasattr(libmod, "get_function"):
        return libmod.get_function
    raise IRError(f"libmod must be a built library or a dict of functions, got "
                  f"{type(libmod).__name__}")


class GraphModule:
    """Wrapper of a graph executor runtime module (``graph_executor.GraphModule``).

    Threads: one GraphModule may be shared by threads. Each thread other than the creating
    one calls ``set_input``/``run``/``get_output`` on its own executor state (made on its
    first call, starting from the creating thread's inputs, weights shared), so concurrent
    runs never see each other's inputs or outputs. Load weights (``load_params``,
    ``set_input`` of params) before other threads start using the module.

    Args:
        module: a :class:`GraphExecutor` (``lib["default"](dev)``) or a GraphModule.
    """

    def __init__(self, module):
        if isinstance(module, GraphModule):
            module = module.module
        if not isinstance(module, GraphExecutor):
            raise IRError(f"GraphModule wraps a graph executor module "
                          f"(lib['default'](dev)), got {type(module).__name__}")
        self.module = module

    @property
    def _runtime(self):
        # per thread: see GraphExecutor.thread_runtime
        return self.module.thread_runtime()

    def __getitem__(self, key: str):
        return self.module[key]

    def set_input(self, key=None, value=None, **params) -> None:
        """Copy inputs in: ``key`` (index or name) with ``value``, then every ``params`` item.

        Names in ``params`` that are not graph inputs are skipped (as TVM does, so that a
        full parameter dict can be passed after some parameters were bound).

        Raises:
            UnknownNameError: if ``key`` is not an input (the message lists the inputs).
            GraphInputError: if a value's shape or dtype differs from the input's.
        """
        if key is not None:
            self._runtime.set_input(key, value, strict=True)
        for name in sorted(params, key=lambda k: -np.size(params[k])):
            self._runtime.set_input(name, params[name], strict=False)

    def set_input_zero_copy(self, key=None, value=None, **params) -> None:
        """Like :meth:`set_input`, but the graph reads ``value``'s memory directly (no copy).

        ``value`` must be a C-contiguous array (numpy, NDArray or DLPack) of exactly the
        input's shape and dtype; it must stay alive and unchanged while the graph runs.
        """
        if key is not None:
            self._runtime.set_input_zero_copy(key, value, strict=True)
        for name, item in params.items():
            self._runtime.set_input_zero_copy(name, item, strict=False)

    def set_output_zero_copy(self, key, value) -> None:
        """Make output ``key`` (index or ``"<node name>:<i>"``) be written into ``value``."""
        self._runtime.set_output_zero_copy(key, value)

    def run(self, **input_dict) -> None:
        """Set the given inputs (by name; an unknown name raises), then run the graph."""
        for name, value in input_dict.items():
            self._runtime.set_input(name, value, strict=True)
        self._runtime.run()

    def get_num_outputs(self) -> int:
        """The number of outputs (``len(heads)``)."""
        return len(self.module.graph.heads)

    def get_num_inputs(self) -> int:
        """The number of inputs, weights included (``len(arg_nodes)``)."""
        return len(self.module.graph.arg_nodes)

    def get_input(self, index, out=None):
        """The live input array (an NDArray view, not a copy); with ``out``, a copy into it.

        Returns None for an unknown name or an index out of range (as TVM does).
        """
        position = self._runtime.input_index(index)   # -1 for an unknown name or index
        if position < 0:
            return None
        array = self._runtime.input_array(position)
        if array is None:           # a symbolic-shaped input not set yet
            return None
        if out is not None:
            return out.copyfrom(array) if hasattr(out, "copyfrom") else _copy_into(out, array)
        return NDArray(array, self.module.device)

    def get_input_index(self, name: str) -> int:
        """The position of input ``name`` in ``arg_nodes``, or -1."""
        return self._runtime.input_index(name)

    def get_input_info(self) -> tuple:
        """``(shape_dict, dtype_dict)`` of the true inputs (not the loaded weights)."""
        return self.module.get_input_info()

    def get_output(self, index, out=None):
        """Output ``index`` (int, or an output node name) as a live NDArray; with ``out``,
        checks its shape and copies into it.

        Raises:
            UnknownNameError: for an unknown output name or index.
            GraphInputError: if ``out`` has another shape.
        """
        array = self._runtime.get_output(index)
        if out is not None:
            if tuple(np.shape(out)) != array.shape:
                raise GraphInputError(f"get_output: out has shape {tuple(np.shape(out))}, "
                                      f"output {index} has shape {array.shape}")
            return out.copyfrom(array) if hasattr(out, "copyfrom") else _copy_into(out, array)
        return NDArray(array, self.module.device)

    def debug_get_output(self, node, out):
        """Not available on the plain graph executor (as in TVM).

        Raises:
            NotImplementedError: always.
        """
        raise NotImplementedError("Please use debugger.debug_executor as graph_executor "
                                  "instead.")

    def load_params(self, params_bytes) -> None:
        """Load weights from a blob made by ``interp.save_param_dict``.

        Names that are not inputs are ignored; loaded names leave :meth:`get_input_info`.

        Raises:
            ParamsFormatError: if the bytes are corrupt or truncated.
        """
        self.module.load_params(params_bytes)

    def share_params(self, other, params_bytes) -> None:
        """Use ``other``'s weight arrays (no copy) for the names in ``params_bytes``.

        Args:
            other: the GraphModule (or GraphExecutor) that owns the weights.
            params_bytes: a params blob; only its names are read.

        Raises:
            ParamsFormatError: if the bytes are corrupt.
            IRError: if ``other`` is not a graph executor.
        """
        if isinstance(other, GraphModule):
            other = other.module
        self.module.share_params(other, params_bytes)

    def benchmark(self, device, func_name="run", repeat=5, number=5, min_repeat_ms=None,
                  limit_zero_time_iterations=100, end_to_end=False, cooldown_interval_ms=0,
                  repeats_to_cooldown=1, **kwargs) -> BenchmarkResult:
        """Time ``func_name`` (see relay_spec.md 5.4): one warm-up call, then ``repeat``
        measurements, each the mean of ``number`` calls.

        Args:
            device: the device (timing is host wall-clock on every device here).
            func_name: the runtime function to time (ignored with ``end_to_end``).
            repeat: number of measurements.
            number: calls per measurement.
            min_repeat_ms: if set, ``number`` grows until a measurement takes this long.
            limit_zero_time_iterations: bound on retries of a measurement that took 0 s.
            end_to_end: time setting the inputs, running and copying outputs to the host.
            cooldown_interval_ms: sleep this long after every ``repeats_to_cooldown``
                measurements.
            repeats_to_cooldown: see ``cooldown_interval_ms``.
            kwargs: inputs, set once before timing (or every call with ``end_to_end``).

        Returns:
            A :class:`BenchmarkResult` (``mean``, ``median``, ``std``, ``min``, ``max``,
            ``results``; seconds).
        """
        if end_to_end:
            args = [device.device_type_code, device.device_id]
            for name, value in kwargs.items():
                args += [name, value]
            return time_function(self.module["run_from_inputs"], args, repeat, number,
                                 min_repeat_ms, limit_zero_time_iterations,
                                 cooldown_interval_ms, repeats_to_cooldown)
        if kwargs:
            self.set_input(**kwargs)
        return time_function(self.module[func_name], [], repeat, number, min_repeat_ms,
                             limit_zero_time_iterations, cooldown_interval_ms,
                             repeats_to_cooldown)


def _copy_into(out, array):
    np.copyto(out, array)
    return out


def graph_json_dumps(graph: dict) -> str:
    """Serialize a graph dict with the reference's key order."""
    ordered = {key: graph[key] for key in ("nodes", "arg_nodes", "heads", "attrs",
                                           "node_row_ptr") if key in graph}
    return json.dumps(ordered)
