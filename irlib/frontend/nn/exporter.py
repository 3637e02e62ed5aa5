"""Export an nn.Module's methods as functions of an IRModule (``Module.export_tvm``).

For every method named by the spec, the exporter

1. makes one function parameter per spec'd input (a ``str`` dim becomes a size variable
   shared by every input and weight that names it; an ``Int`` input becomes a scalar
   ``int64`` parameter listed in the ``size_params`` attribute, and the method receives the
   size variable itself, usable in shapes),
2. asks every effect for the parameters carrying its state in (``Effect.create``),
3. makes one parameter per weight, named by its attribute path (``param_mode``),
4. runs the method with nn tensors standing for those parameters, recording each op's call
   as a let binding (:mod:`irlib.frontend.nn._builder`), and
5. returns the method's result, followed by the effects' final states when there are any:
   ``(result, (state, ...))``.

The function's ``num_input`` attribute counts the inputs and effect states, so the weights
are the trailing ``len(params) - num_input`` parameters (the convention ``detach_params`` and
``jit`` rely on). When the module has effects, ``_initialize_effect`` (no parameters) returns
their initial states.
"""

from __future__ import annotations

import threading
from typing import List, Tuple

from ...errors import IRError
from ...ir import expr as E
from ...ir.dims import DimExpr, size_var
from ...ir.module import IRModule
from ...ir.types import TensorType, TupleType
from ...transform.infer_type import infer_type
from . import spec as _spec
from ._builder import Builder, emit
from .core import Effect, Object, Parameter, Tensor, _attribute_finder, _normalize_shape
from .errors import NNError, SpecError


class Exporter:
    """The state of one export: its builder, IO effect and extern modules.

    Args:
        debug: whether methods thread an IO effect (for ``print_``/``debug_func``).
    """

    _local = threading.local()

    def __init__(self, debug: bool = False):
        self.builder = Builder()
        self.debug = debug
        self.io_effect = None
        if debug:
            from .effects import IOEffect
            self.io_effect = IOEffect()
        self.extern_mods: list = []

    @staticmethod
    def current() -> "Exporter":
        """The export running on this thread.

        Raises:
            NNError: no export is running.
        """
        stack = getattr(Exporter._local, "stack", None)
        if not stack:
            raise NNError("this nn call works only while a module is being exported "
                          "(inside export_tvm or jit)")
        return stack[-1]

    def __enter__(self) -> "Exporter":
        if not hasattr(Exporter._local, "stack"):
            Exporter._local.stack = []
        Exporter._local.stack.append(self)
        self.builder.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.builder.__exit__(*exc)
        Exporter._local.stack.pop()

    def add_external_module(self, mod) -> None:
        """Register an extern module; each symbol may be registered once per export.

        Args:
            mod: an :class:`~irlib.frontend.nn.ExternModule`.
        """
        if any(existing is mod for existing in self.extern_mods):
            return
        taken = {name for existing in self.extern_mods for name in existing.symbols}
        duplicated = sorted(taken & set(mod.symbols))
        if duplicated:
            raise NNError(f"add_extern: symbols {duplicated} are already registered by another "
                          "extern module of this export")
        self.extern_mods.append(mod)


def add_extern(mod) -> None:
    """Add an extern module to the export in progress (call it from ``forward``).

    Args:
        mod: the :class:`~irlib.frontend.nn.ExternModule`.

    Raises:
        NNError: called outside an export, or a symbol registered twice.
    """
    Exporter.current().add_external_module(mod)


def _effects(module, exporter) -> List[Tuple[str, Effect]]:
    found = [("", exporter.io_effect)] if exporter.io_effect is not None else []
    found += list(_attribute_finder(module, "", lambda item: isinstance(item, Effect)))
    return found


def _unwrap(value, where: str):
    if isinstance(value, (Tensor, Object)):
        return value._expr
    if isinstance(value, (tuple, list)):
        return E.Tuple([_unwrap(item, where) for item in value])
    raise NNError(f"{where} returned a {type(value).__name__}; methods return nn Tensors, "
                  "Objects, or (nested) tuples/lists of them")


class _InputMaker:
    """Function parameters and method arguments for the spec'd inputs of one method."""

    def __init__(self, where: str):
        self.where = where
        self.size_params: list = []

    def make(self, name: str, arg_spec):
        """``(parameter Var, argument for the method)`` for one input."""
        if isinstance(arg_spec, _spec.Int):
            self.size_params.append(name)
            return E.Var(name, TensorType((), "int64")), size_var(name)
        if isinstance(arg_spec, _spec.Tensor):
            try:
                shape = _normalize_shape(arg_spec.shape)
            except IRError as error:
                raise SpecError(f"{self.where}: argument {name!r}: {error}") from error
            var = E.Var(name, TensorType(shape, arg_spec.dtype))
            return var, Tensor(_expr=var)
        if isinstance(arg_spec, _spec.Tuple):
            types = [self._type_of(f"{name}_{i}", item) for i, item in enumerate(arg_spec.elements)]
            var = E.Var(name, TupleType(types))
            return var, self._detuple(var, arg_spec, name)
        raise SpecError(f"{self.where}: argument {name!r}: inputs of spec {arg_spec!r} are not "
                        "supported (tensors, ints and tuples of tensors are)")

    def _type_of(self, name: str, arg_spec):
        if isinstance(arg_spec, _spec.Tensor):
            return TensorType(_normalize_shape(arg_spec.shape), arg_spec.dtype)
        if isinstance(arg_spec, _spec.Tuple):
            return TupleType([self._type_of(f"{name}_{i}", item)
                              for i, item in enumerate(arg_spec.elements)])
        raise SpecError(f"{self.where}: element {name!r} of a tuple input must be a tensor or "
                        f"a tuple, got {arg_spec!r}")

    def _detuple(self, expr, arg_spec, name: str):
        if isinstance(arg_spec, _spec.Tensor):
            return Tensor(_expr=expr)
        items = []
        for index, item in enumerate(arg_spec.elements):
            field = emit(E.TupleGetItem(expr, index), f"{name}_{index}")
            items.append(self._detuple(field, item, f"{name}_{index}"))
        return type(arg_spec.elements)(items)


def _with_mode(mode: str, owned: list, packed_name: str, rebind) -> list:
    """The function parameters for the variables of weights or effect states.

    ``"plain"``: the variables themselves. ``"packed"``: one tuple parameter, and each owner
    is rebound (``rebind(owner, fields)``) to field accesses of it. ``"none"``: nothing.

    Args:
        mode: ``"plain"``, ``"packed"`` or ``"none"``.
        owned: ``[(owner, [var, ...]), ...]`` (a Parameter or an Effect and its variables).
        packed_name: the tuple parameter's name.
        rebind: makes an owner use the given field expressions.
    """
    flat = [var for _, variables in owned for var in variables]
    if mode == "plain":
        return flat
    if mode != "packed" or not flat:
        return []
    packed = E.Var(packed_name, TupleType([v.type_annotation for v in flat]))
    fields = [emit(E.TupleGetItem(packed, index), v.name_hint) for index, v in enumerate(flat)]
    start = 0
    for owner, variables in owned:
        rebind(owner, fields[start:start + len(variables)])
        start += len(variables)
    return [packed]


def _emit_method(exporter, name: str, method_spec, params, effects) -> E.Function:
    builder = exporter.builder
    builder.begin_scope()
    maker = _InputMaker(f"spec of {name}")
    inputs, args = [], []
    for arg_name, arg_spec in zip(method_spec.arg_names, method_spec.arg_specs):
        var, arg = maker.make(arg_name, arg_spec)
        inputs.append(var)
        args.append(arg)

    created = []
    for effect_name, effect in effects:
        state = list(effect.create(effect_name))
        effect.set_state(state)
        created.append((effect, state))
    inputs += _with_mode(method_spec.effect_mode, created, "packed_effects",
                         lambda effect, fields: effect.set_state(fields))
    num_input = len(inputs)

    weights = []
    for param_name, param in params:
        var = E.Var(param_name, TensorType(param._type.shape, param.dtype))
        param._rebind(var)
        weights.append((param, [var]))
    inputs += _with_mode(method_spec.param_mode, weights, "packed_params",
                         lambda param, fields: param._rebind(fields[0]))

    result = _unwrap(method_spec.method(*args), f"method {name}")
    effect_outputs = [out for _, effect in effects for out in effect.finalize()]
    if effect_outputs and method_spec.effect_mode != "none":
        result = E.Tuple([result, E.Tuple(effect_outputs)])
    body = builder.end_scope(result)
    _check_closed(name, inputs, body, method_spec)
    attrs = {"num_input": num_input}
    if maker.size_params:
        attrs["size_params"] = list(maker.size_params)
    return E.Function(inputs, body, attrs=attrs)


def _check_closed(name: str, inputs, body, method_spec) -> None:
    """Raise NNError when the method's body uses a value that is not one of its inputs: an
    effect state or weight left out by ``effect_mode``/``param_mode`` ``"none"``, or a tensor
    made while exporting another method."""
    from ...analysis import free_vars
    bound = set(map(id, inputs))
    stray = [v.name_hint for v in free_vars(E.Function(inputs, body)) if id(v) not in bound]
    if stray:
        raise NNError(f"method {name} uses {', '.join('%' + n for n in stray)}, which is not "
                      f"an input of the exported function (param_mode="
                      f"{method_spec.param_mode!r}, effect_mode={method_spec.effect_mode!r}; "
                      "a weight or effect state needs its mode to be 'plain' or 'packed', and "
                      "a tensor cannot be carried from one method into another)")


def _emit_effect_init(exporter, effects) -> E.Function:
    builder = exporter.builder
    builder.begin_scope()
    outputs = []
    for effect_name, effect in effects:
        outputs.extend(effect.emit_init(effect_name, builder))
    return E.Function([], builder.end_scope(E.Tuple(outputs)))


def export(module, spec, debug: bool = False):
    """Export ``module``'s spec'd methods (see the module docstring).

    Args:
        module: the nn.Module.
        spec: a module spec (dict or :class:`~irlib.frontend.nn.spec.ModuleSpec`).
        debug: thread an IO effect through the methods.

    Returns:
        ``(IRModule, [(name, Parameter)], [ExternModule])``.

    Raises:
        SpecError: the spec does not fit the module's methods.
        OpError: an op in a method got tensors it cannot take (names the module path).
    """
    module_spec = _spec.ModuleSpec.from_raw(spec, module)
    exporter = Exporter(debug)
    functions = {}
    params = list(module.named_parameters())
    with exporter:
        exporter.builder.register_modules(module)
        effects = _effects(module, exporter)
        if effects:
            functions["_initialize_effect"] = _emit_effect_init(exporter, effects)
        for name, method_spec in zip(module_spec.method_names, module_spec.method_specs):
            functions[name] = _emit_method(exporter, name, method_spec, params, effects)
        functions.update(exporter.builder.subroutines)
    mod = IRModule(functions)
    try:
        from ...transform import InferType
        mod = InferType()(mod)
    except IRError as error:
        raise NNError(f"the exported module is ill-typed: {error}") from error
    return mod, params, list(exporter.extern_mods)
