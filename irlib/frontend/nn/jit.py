"""``Module.jit``: export a module, bind its weights and compile each method once.

::

    runner = model.jit({"forward": {"x": nn.spec.Tensor([1, "n"], "int32"),
                                    "total_seq_len": int}})
    logits = runner.forward(tokens, 16)        # a torch tensor (out_format="torch")
    runner.reset_effects()                     # start over: empty KV caches

What happens once, in :func:`jit_module`:

1. the module is exported (:meth:`~irlib.frontend.nn.Module.export_tvm`, with ``debug``);
2. every parameter must hold data (:class:`~irlib.frontend.nn.errors.ParameterError` names
   the ones that do not); the weights become constants of each method's function;
3. ``pipeline`` is applied: ``"default_build"`` (or None) optimises at opt-level 3,
   ``"zero"`` at opt-level 0; a pass object (anything called as ``pass(mod) -> mod``, such
   as an :mod:`irlib.transform` pass or ``Sequential``) runs over the exported module
   first, and the build then uses opt-level 3;
4. each method is compiled once. On ``device="cpu"`` it is built for the graph executor
   (``interp.build``, numba kernels) when the graph executor can run it; methods it cannot
   run (control flow, global calls such as ``SubroutineMixin`` subroutines, tuple or
   object inputs, ``Any`` dims, packed effects, weights with symbolic dims) run on the
   reference interpreter instead, and ``runner.backends[name]`` says which (the reason is
   logged on the ``irlib.nn.jit`` logger). ``device="python"`` (or ``"debug"``) runs every
   method on the interpreter. Any other device raises :class:`JitError`;
5. when the module has effects (KV caches, the IO effect of ``debug=True``),
   ``_initialize_effect`` runs once and its states are kept.

Each call then converts the arguments (numpy arrays, torch tensors, NDArrays or anything
DLPack/``np.asarray`` takes; Python ints for ``spec.Int`` arguments), checks their rank,
static dims and dtype against the spec (:class:`JitError` naming the method and argument),
passes the current effect states after them, runs, keeps the returned states for the next
call and returns the method's result, nested as the method returns it: torch tensors for
``out_format="torch"`` (made from the output arrays with ``torch.from_numpy``, no copy) or
numpy arrays for ``"numpy"``. Results are fresh arrays that later calls do not overwrite.
"""

from __future__ import annotations

import logging
from typing import Dict, List, Optional

import numpy as np

from ...errors import IRError
from ...ir import expr as E
from ...ir.bind import bind
from ...ir.dim_binding import is_symbolic_type
from ...ir.module import IRModule
from ...ir.types import TensorType, TupleType
from ...ndarray import Device, NDArray
from . import spec as _spec
from .errors import NNError, ParameterError

__all__ = ["jit_module", "JitModule", "JitError", "DEVICES", "PIPELINES", "OUT_FORMATS"]

logger = logging.getLogger("irlib.nn.jit")

DEVICES = {"cpu": "graph", "llvm": "graph", "python": "interpreter", "debug": "interpreter"}
"""Accepted ``device`` names and the executor each prefers."""

PIPELINES = {"default_build": 3, "zero": 0, None: 3}
"""Named pipelines and the opt-level each builds at."""

OUT_FORMATS = ("torch", "numpy")
"""Accepted ``out_format`` values."""

_RESERVED = ("reset_effects", "backends", "mod", "params", "effect_states", "method_names")


class JitError(NNError):
    """``jit`` was given an unsupported device, pipeline or out_format, or a jitted method
    was called with arguments that do not fit its spec (wrong count, rank, dims or dtype)."""


# -- argument conversion ------------------------------------------------------------------------

def _host_array(value) -> np.ndarray:
    """``value`` (numpy, NDArray, torch tensor, DLPack object, list, scalar) as numpy."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, NDArray):
        return value.numpy()
    if hasattr(value, "detach") and hasattr(value, "numpy"):          # torch.Tensor
        return value.detach().cpu().numpy()
    if hasattr(value, "__dlpack__"):
        return np.from_dlpack(value)
    return np.asarray(value)


class _TensorArg:
    """Converts and checks one ``spec.Tensor`` argument."""

    __slots__ = ("where", "dtype", "rank", "static", "shape")

    def __init__(self, where: str, arg_spec: _spec.Tensor):
        self.where = where
        self.dtype = np.dtype(arg_spec.dtype)
        self.shape = tuple(arg_spec.shape)
        self.rank = len(self.shape)
        self.static = [(axis, int(dim)) for axis, dim in enumerate(self.shape)
                       if isinstance(dim, (int, np.integer))]

    def __call__(self, value) -> np.ndarray:
        array = _host_array(value)
        if array.dtype != self.dtype:
            if isinstance(value, (list, tuple, int, float)):
                array = array.astype(self.dtype)
            else:
                raise JitError(f"{self.where}: expected dtype {self.dtype}, got {array.dtype}")
        if array.ndim != self.rank or any(array.shape[a] != d for a, d in self.static):
            raise JitError(f"{self.where}: expected shape {list(self.shape)}, got "
                           f"{list(array.shape)}")
        return array


class _IntArg:
    """Converts one ``spec.Int`` argument to a scalar int64 array."""

    __slots__ = ("where",)

    def __init__(self, where: str):
        self.where = where

    def __call__(self, value) -> np.ndarray:
        if isinstance(value, (bool, np.bool_)):
            raise JitError(f"{self.where}: expected an int, got a bool")
        if isinstance(value, (int, np.integer)):
            return np.array(value, dtype=np.int64)
        array = _host_array(value)
        if array.ndim != 0 or array.dtype.kind not in "iu":
            raise JitError(f"{self.where}: expected an int, got {type(value).__name__} "
                           f"of shape {array.shape}")
        return array.astype(np.int64)


class _TupleArg:
    """Converts a ``spec.Tuple`` argument (a tuple/list of values) element by element."""

    __slots__ = ("where", "items")

    def __init__(self, where: str, items: list):
        self.where, self.items = where, items

    def __call__(self, value):
        if not isinstance(value, (tuple, list)) or len(value) != len(self.items):
            raise JitError(f"{self.where}: expected a tuple of {len(self.items)} values, got "
                           f"{type(value).__name__}")
        return tuple(convert(item) for convert, item in zip(self.items, value))


def _converter(where: str, arg_spec):
    if isinstance(arg_spec, _spec.Int):
        return _IntArg(where)
    if isinstance(arg_spec, _spec.Tensor):
        return _TensorArg(where, arg_spec)
    if isinstance(arg_spec, _spec.Tuple):
        return _TupleArg(where, [_converter(f"{where}[{i}]", item)
                                 for i, item in enumerate(arg_spec.elements)])
    raise JitError(f"{where}: jit cannot pass arguments of spec {arg_spec!r} (tensors, ints "
                   "and tuples of them are supported)")


# -- results ----------------------------------------------------------------------------------

def _leaf_count(ty) -> int:
    count, stack = 0, [ty]
    while stack:
        current = stack.pop()
        if isinstance(current, TupleType):
            stack.extend(current.fields)
        else:
            count += 1
    return count


def _template(ty, start: int = 0):
    """The nesting of ``ty`` with each tensor leaf replaced by its flat output index."""
    if isinstance(ty, TupleType):
        items, index = [], start
        for field in ty.fields:
            items.append(_template(field, index))
            index += _leaf_count(field)
        return tuple(items)
    return start


def _fill(template, leaves):
    if isinstance(template, tuple):
        return tuple(_fill(item, leaves) for item in template)
    return leaves[template]


def _flatten(value) -> list:
    out, stack = [], [value]
    while stack:
        current = stack.pop()
        if isinstance(current, (tuple, list)):
            stack.extend(reversed(current))
        else:
            out.append(current)
    return out


def _to_torch(array: np.ndarray):
    import torch
    return torch.from_numpy(array)


def _owned_copy(array) -> np.ndarray:
    return np.array(array.numpy() if isinstance(array, NDArray) else array, copy=True)


# -- one compiled method ----------------------------------------------------------------------

class _GraphMethod:
    """A method built for the graph executor: inputs set by index, outputs copied out."""

    def __init__(self, func: E.Function, opt_level: int, num_outputs: int):
        import interp
        from ...transform import PassContext
        with PassContext(opt_level=opt_level):
            factory = interp.build(IRModule.from_expr(func), target="cpu")
        module = factory["default"](interp.cpu(0))
        self.runtime = interp.graph_executor.GraphModule(module)._runtime
        names = [p.name_hint for p in func.params]
        self.indices = [self.runtime.input_index(name) for name in names]
        if len(set(names)) != len(names) or min(self.indices, default=0) < 0:
            raise IRError(f"the function's parameter names {names} are not distinct graph "
                          "inputs")
        self.num_outputs = num_outputs

    def __call__(self, args: list) -> list:
        runtime = self.runtime
        for index, value in zip(self.indices, args):
            runtime.set_input(index, value)
        runtime.run()
        return [np.array(runtime.get_output(i), copy=True) for i in range(self.num_outputs)]


class _InterpreterMethod:
    """A method run by the reference interpreter (weights bound or passed after the
    inputs)."""

    def __init__(self, mod: IRModule, name: str, extra_args: list):
        import interp
        self.function = interp.create_executor("debug", mod).evaluate(mod.get_global_var(name))
        self.extra_args = extra_args

    def __call__(self, args: list) -> list:
        value = self.function(*args, *self.extra_args)
        return [_owned_copy(leaf) for leaf in _flatten(value)]


def _graph_obstacle(func: E.Function) -> Optional[str]:
    """Why the graph executor cannot run ``func`` (None when it may)."""
    from ...ir.functor import post_order
    for param in func.params:
        if not isinstance(param.type_annotation, TensorType):
            return f"parameter %{param.name_hint} is not a tensor"
    for node in post_order(func.body):
        if isinstance(node, (E.If, E.Match, E.GlobalVar, E.RefCreate, E.RefRead, E.RefWrite,
                             E.Constructor)):
            return f"it uses {type(node).__name__} (control flow, global calls or references)"
        if isinstance(node, E.Function):
            return "it builds closures"
    return None


class JitModule:
    """The result of ``Module.jit``: one Python method per exported method.

    ``runner.<method>(*args)`` runs that method (see :mod:`irlib.frontend.nn.jit` for the
    argument and result conventions); effect states (KV caches, the IO token) are kept
    between calls and shared by all methods.

    Args:
        mod: the exported IRModule.
        params: the parameters, as ``export_tvm`` returned them.
        backends: method name -> engine.
        methods: method name -> ``(argument converters, runner, effect mode, number of effect
            states, result template)``.
        init_function: a callable returning the effect states' initial values
            (``_initialize_effect`` run), or None when there are none.
        out_format: ``"torch"`` for torch tensor results, else numpy arrays.

    Attributes:
        mod: the exported IRModule (weights as parameters, before binding).
        params: ``[(name, Parameter)]`` as ``export_tvm`` returned them.
        backends: method name -> ``"graph"`` or ``"interpreter"``.
        method_names: the exported methods, in spec order.
    """

    def __init__(self, mod, params, backends: Dict[str, str], methods: dict,
                 init_function, out_format: str):
        self.mod = mod
        self.params = params
        self.backends = backends
        self.method_names = list(methods)
        self._init_function = init_function
        self._to_output = _to_torch if out_format == "torch" else (lambda array: array)
        self._states: List[np.ndarray] = []
        self.reset_effects()
        for name, method in methods.items():
            setattr(self, name, _BoundMethod(self, name, *method))

    def reset_effects(self) -> None:
        """Start over: set every effect state to its initial value (runs
        ``_initialize_effect``; empty KV caches, IO token 0)."""
        if self._init_function is None:
            self._states = []
            return
        self._states = [_owned_copy(leaf) for leaf in _flatten(self._init_function())]

    @property
    def effect_states(self) -> List[np.ndarray]:
        """The current effect states, flattened in export order (copies)."""
        return [state.copy() for state in self._states]

    def __repr__(self) -> str:
        methods = ", ".join(f"{n} ({self.backends[n]})" for n in self.method_names)
        return f"JitModule({methods})"


class _BoundMethod:
    """``runner.<name>``: converts the arguments, runs, keeps the states, returns the result.
    """

    __slots__ = ("owner", "name", "converters", "runner", "pack_states", "num_states",
                 "result_template", "has_states")

    def __init__(self, owner: JitModule, name: str, converters, runner, effect_mode: str,
                 num_states: int, result_template):
        self.owner, self.name, self.converters, self.runner = owner, name, converters, runner
        self.has_states = effect_mode != "none" and num_states > 0
        self.pack_states = effect_mode == "packed"
        self.num_states = num_states
        self.result_template = result_template

    def __call__(self, *args):
        if len(args) != len(self.converters):
            raise JitError(f"{self.name} takes {len(self.converters)} argument(s), got "
                           f"{len(args)}")
        owner = self.owner
        inputs = [convert(arg) for convert, arg in zip(self.converters, args)]
        if self.has_states:
            if self.pack_states:
                inputs.append(tuple(owner._states))
            else:
                inputs.extend(owner._states)
        leaves = self.runner(inputs)
        if self.has_states:
            owner._states = leaves[len(leaves) - self.num_states:]
            leaves = leaves[:len(leaves) - self.num_states]
        to_output = owner._to_output
        return _fill(self.result_template, [to_output(leaf) for leaf in leaves])

    def __repr__(self) -> str:
        return f"<jitted method {self.name} on the {self.owner.backends[self.name]}>"


# -- jit_module ---------------------------------------------------------------------------------

def _device_kind(device) -> str:
    if isinstance(device, Device):
        device = device.device_type
    key = str(device).split("(")[0].strip() if device is not None else "cpu"
    if key not in DEVICES:
        raise JitError(f"jit: unsupported device {device!r}; use one of {sorted(DEVICES)} "
                       "('cpu': graph executor with numba kernels, 'python'/'debug': the "
                       "reference interpreter)")
    return DEVICES[key]


def _opt_level(pipeline):
    if isinstance(pipeline, str) or pipeline is None:
        if pipeline not in PIPELINES:
            raise JitError(f"jit: unknown pipeline {pipeline!r}; use 'default_build', 'zero' "
                           "or a pass object")
        return PIPELINES[pipeline], None
    if not callable(pipeline):
        raise JitError(f"jit: pipeline must be 'default_build', 'zero' or a pass (callable "
                       f"on an IRModule), got {type(pipeline).__name__}")
    return 3, pipeline


def _check_data(params) -> None:
    missing = [name for name, param in params if param.data is None]
    if missing:
        raise ParameterError(f"jit: parameters without data: {', '.join(missing)} (set "
                             "param.data or call load_state_dict before jit)")


def _bind_weights(func: E.Function, method_spec, params, num_input: int):
    """``func`` with its weight parameters replaced by constants, or ``(func, weights)``
    with the weights left as trailing arguments when their types are symbolic."""
    weight_params = list(func.params[num_input:])
    if method_spec.param_mode == "none" or not weight_params:
        return func, []
    arrays = [param.data.numpy() for _, param in params]
    if any(is_symbolic_type(param._type) for _, param in params):
        if method_spec.param_mode == "packed":
            return func, [tuple(arrays)]
        return func, arrays
    if method_spec.param_mode == "packed":
        (packed,) = weight_params
        value = E.Tuple([E.Constant(NDArray(a)) for a in arrays])
        return bind(func, {packed: value}), []
    return bind(func, {var: E.Constant(NDArray(a)) for var, a in zip(weight_params, arrays)}), []


def jit_module(module, spec, device="cpu", pipeline="default_build", out_format: str = "torch",
               debug: bool = False) -> JitModule:
    """Export, bind and compile ``module``'s spec'd methods (``Module.jit``).

    Args:
        module: the nn.Module (every parameter must hold data).
        spec: the module spec, as for ``export_tvm``.
        device: ``"cpu"`` (graph executor where possible, else the interpreter),
            ``"python"``/``"debug"`` (interpreter), or an ``interp.cpu(0)`` Device.
        pipeline: ``"default_build"`` (opt-level 3), ``"zero"`` (opt-level 0), None (as
            ``"default_build"``) or a pass run over the exported module before building.
        out_format: ``"torch"`` or ``"numpy"``.
        debug: export with the IO effect (``print_``/``debug_func`` work).

    Returns:
        A :class:`JitModule`.

    Raises:
        JitError: an unsupported device, pipeline or out_format.
        ParameterError: parameters without data (all of them named).
        SpecError, OpError: as ``export_tvm``.
    """
    kind = _device_kind(device)
    opt_level, custom_pass = _opt_level(pipeline)
    if out_format not in OUT_FORMATS:
        raise JitError(f"jit: unknown out_format {out_format!r}; use one of {list(OUT_FORMATS)}")
    module_spec = _spec.ModuleSpec.from_raw(spec, module)
    clash = [name for name in module_spec.method_names if name in _RESERVED]
    if clash:
        raise JitError(f"jit: method name(s) {clash} clash with the jitted object's own "
                       f"attributes {list(_RESERVED)}")
    mod, params, extern_mods = module.export_tvm(module_spec, debug=debug, allow_extern=True)
    for extern_mod in extern_mods:     # compile and load C extern modules now, not mid-run
        extern_mod.load()
    _check_data(params)
    if custom_pass is not None:
        from ...transform import InferType
        mod = InferType()(custom_pass(mod))

    import interp
    init_function = None
    if "_initialize_effect" in [gv.name_hint for gv in mod.get_global_vars()]:
        init_function = interp.create_executor("debug", mod).evaluate(
            mod.get_global_var("_initialize_effect"))

    backends, methods = {}, {}
    for name, method_spec in zip(module_spec.method_names, module_spec.method_specs):
        func = mod[name]
        num_input = int(func.attrs["num_input"]) if func.attrs and "num_input" in func.attrs \
            else len(func.params)
        num_spec_inputs = len(method_spec.arg_names)
        num_states = _leaf_count(func.params[num_spec_inputs].type_annotation) \
            if method_spec.effect_mode == "packed" and num_input > num_spec_inputs \
            else num_input - num_spec_inputs
        bound, extra_args = _bind_weights(func, method_spec, params, num_input)
        runner, backend = None, "interpreter"
        if kind == "graph":
            reason = "weights with symbolic dims" if extra_args else _graph_obstacle(bound)
            if reason is None:
                try:
                    runner = _GraphMethod(bound, opt_level,
                                          _leaf_count(func.body.checked_type))
                    backend = "graph"
                except IRError as error:
                    reason = str(error)
            if runner is None:
                logger.info("jit: %s runs on the interpreter: %s", name, reason)
        if runner is None:
            local = mod.copy()
            local[name] = bound
            from ...transform import InferType
            local = InferType()(local)
            runner = _InterpreterMethod(local, name, extra_args)
        ret_type = func.body.checked_type
        if num_states and method_spec.effect_mode != "none":
            ret_type = ret_type.fields[0]
        converters = [_converter(f"{name}: argument {arg_name!r}", arg_spec)
                      for arg_name, arg_spec in zip(method_spec.arg_names, method_spec.arg_specs)]
        backends[name] = backend
        methods[name] = (converters, runner, method_spec.effect_mode, num_states,
                         _template(ret_type))
    return JitModule(mod, params, backends, methods, init_function, out_format)
