"""Specs: what the inputs of an exported method look like.

A module spec maps method names to method specs; a method spec maps the method's argument
names to argument specs::

    {"forward": {"x": spec.Tensor([1, "seq_len"], "int32"), "total_seq_len": int,
                 "$": {"param_mode": "plain", "effect_mode": "plain"}}}

* :class:`Tensor` -- a tensor input; a ``str`` dim names a symbolic size variable shared by
  every tensor (and ``Int``) of the method that names it;
* :class:`Int` (or ``int``, or ``"int"``) -- an integer input: the method receives the size
  variable of that name (usable in shapes), and the exported function takes it as a scalar
  ``int64`` tensor listed in its ``size_params`` attribute;
* :class:`Tuple` (or a Python list/tuple of specs) -- a tuple input;
* :class:`Object` -- an opaque input of a given nn ``Object`` subclass.

The ``"$"`` entry sets the method's options: ``param_mode`` (``"plain"``: one function
parameter per weight, after the inputs; ``"packed"``: one tuple parameter holding them all;
``"none"``: no weights) and ``effect_mode`` (``"plain"``, ``"packed"`` or ``"none"``, the same
for effect states).
"""

from __future__ import annotations

import inspect
from typing import Callable, Dict, List, Sequence, Union

from .errors import SpecError

_MODES = ("plain", "packed", "none")


class Int:
    """An integer input (a symbolic size known at run time)."""

    def __repr__(self) -> str:
        return "int"


class Tensor:
    """A tensor input of static rank and dtype; a ``str`` dim is a symbolic size.

    Args:
        shape: dims as ints or strs.
        dtype: the element dtype.
    """

    def __init__(self, shape: Sequence[Union[int, str]], dtype: str):
        self.shape = list(shape)
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"Tensor([{', '.join(str(d) for d in self.shape)}], '{self.dtype}')"


class Tuple:
    """A tuple (or list) input.

    Args:
        name: the argument name.
        elements: the element specs (a list or tuple).
    """

    def __init__(self, name: str, elements):
        if not isinstance(elements, (list, tuple)):
            raise SpecError(f"spec.Tuple {name!r}: elements must be a list or tuple, got "
                            f"{type(elements).__name__}")
        self.name = name
        self.elements = elements

    def __repr__(self) -> str:
        return repr(self.elements)


class Object:
    """An opaque input wrapped in an nn ``Object`` subclass.

    Args:
        object_type: the :class:`~irlib.frontend.nn.Object` subclass the method receives.
    """

    def __init__(self, object_type):
        self.object_type = object_type

    def __repr__(self) -> str:
        return f"Object({self.object_type.__name__})"


def _convert_arg(arg_spec, arg_name: str, where: str):
    if arg_spec is Int or arg_spec is int or arg_spec == "int":
        return Int()
    if isinstance(arg_spec, (Int, Tensor, Object)):
        return arg_spec
    if isinstance(arg_spec, Tuple):
        return arg_spec
    if isinstance(arg_spec, (list, tuple)):
        return Tuple(arg_name, type(arg_spec)(
            _convert_arg(item, f"{arg_name}_{index}", where)
            for index, item in enumerate(arg_spec)))
    raise SpecError(f"{where}: argument {arg_name!r} has an invalid spec {arg_spec!r} (use "
                    "nn.spec.Tensor(shape, dtype), int, a list of specs or nn.spec.Object)")


class MethodSpec:
    """The spec of one exported method.

    Args:
        method: the bound method.
        arg_names: the argument names described, in the method's order.
        arg_specs: their specs.
        param_mode: ``"plain"``, ``"packed"`` or ``"none"``.
        effect_mode: ``"plain"``, ``"packed"`` or ``"none"``.
    """

    def __init__(self, method: Callable, arg_names: List[str], arg_specs: List,
                 param_mode: str = "plain", effect_mode: str = "plain"):
        for what, mode in (("param_mode", param_mode), ("effect_mode", effect_mode)):
            if mode not in _MODES:
                raise SpecError(f"invalid {what} {mode!r}; expected one of {list(_MODES)}")
        self.method = method
        self.arg_names = list(arg_names)
        self.arg_specs = list(arg_specs)
        self.param_mode = param_mode
        self.effect_mode = effect_mode

    def __repr__(self) -> str:
        args = ", ".join(f"{n}: {s}" for n, s in zip(self.arg_names, self.arg_specs))
        return f"MethodSpec({args})"

    @staticmethod
    def from_raw(spec, method: Callable, method_name: str = "method") -> "MethodSpec":
        """A MethodSpec from a dict ``{arg_name: spec, "$": options}``.

        Args:
            spec: the dict (not modified), or a MethodSpec (returned as is).
            method: the bound method it describes.
            method_name: the method's name, for error messages.

        Raises:
            SpecError: the spec names an argument the method does not take, leaves out one
                that has no default, or has an invalid entry.
        """
        if isinstance(spec, MethodSpec):
            return spec
        if not isinstance(spec, dict):
            raise SpecError(f"spec of {method_name}: expected a dict of argument specs, got "
                            f"{type(spec).__name__}")
        spec = dict(spec)
        options = spec.pop("$", {})
        unknown_options = set(options) - {"param_mode", "effect_mode"}
        if unknown_options:
            raise SpecError(f"spec of {method_name}: unknown '$' options {sorted(unknown_options)}"
                            " (known: param_mode, effect_mode)")
        parameters = inspect.signature(method).parameters
        where = f"spec of {method_name}"
        unknown = [name for name in spec if name not in parameters]
        if unknown:
            raise SpecError(f"{where}: {method_name} takes no argument named "
                            f"{', '.join(repr(n) for n in unknown)} (its arguments: "
                            f"{list(parameters)})")
        names, specs = [], []
        for name, parameter in parameters.items():
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                continue
            if name in spec:
                names.append(name)
                specs.append(_convert_arg(spec[name], name, where))
            elif parameter.default is inspect.Parameter.empty:
                raise SpecError(f"{where}: argument {name!r} of {method_name} has no spec and "
                                "no default value")
        return MethodSpec(method, names, specs, options.get("param_mode", "plain"),
                          options.get("effect_mode", "plain"))


class ModuleSpec:
    """The specs of every exported method of a module.

    Args:
        module: the module.
        method_names: the methods to export, in order.
        method_specs: their MethodSpecs.
    """

    def __init__(self, module, method_names: List[str], method_specs: List[MethodSpec]):
        self.module = module
        self.method_names = list(method_names)
        self.method_specs = list(method_specs)

    @staticmethod
    def from_raw(spec, module) -> "ModuleSpec":
        """A ModuleSpec from ``{method_name: method spec}``.

        Args:
            spec: the dict, or a ModuleSpec (returned as is).
            module: the module whose methods it describes.

        Raises:
            SpecError: a method the module does not have, or a bad method spec.
        """
        if isinstance(spec, ModuleSpec):
            return spec
        if not isinstance(spec, dict) or not spec:
            raise SpecError("a module spec is a non-empty dict {method_name: {arg: spec}}, got "
                            f"{spec!r}")
        names, specs = [], []
        for name, method_spec in spec.items():
            method = getattr(module, name, None)
            if method is None or not callable(method):
                raise SpecError(f"spec names method {name!r}, which {type(module).__name__} "
                                "does not have")
            names.append(name)
            specs.append(MethodSpec.from_raw(method_spec, method, name))
        return ModuleSpec(module, names, specs)

    def __repr__(self) -> str:
        return "ModuleSpec:\n" + "\n".join(f"  {n}: {s}" for n, s in
                                           zip(self.method_names, self.method_specs))


ArgSpecType = Union[Int, Tensor, Tuple, Object]
MethodSpecType = Union[MethodSpec, Dict[str, ArgSpecType]]
ModuleSpecType = Union[ModuleSpec, Dict[str, MethodSpecType]]
