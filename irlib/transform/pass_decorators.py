"""The ``module_pass`` / ``function_pass`` decorators (a function or a class becomes a
pass) and :class:`PrintIR`, built on the classes of :mod:`irlib.transform.pass_infra`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import ClassVar

from ..ir.module import IRModule
from .pass_infra import FunctionPass, ModulePass
from .pass_context import PassInfo


class _FunctionBackedModulePass(ModulePass):
    def __init__(self, pass_func, info):
        self._pass_func = pass_func
        self._info = info
        functools.update_wrapper(self, pass_func, updated=())

    def transform_module(self, mod, ctx=None):
        return self._pass_func(mod, ctx)


class _FunctionBackedFunctionPass(FunctionPass):
    def __init__(self, pass_func, info):
        self._pass_func = pass_func
        self._info = info
        functools.update_wrapper(self, pass_func, updated=())

    def transform_function(self, func, mod, ctx):
        return self._pass_func(func, mod, ctx)


def _wrap_class(pass_class, info: PassInfo, base, method: str):
    """A subclass of ``base`` whose instances wrap a ``pass_class`` instance."""

    def __init__(self, *args, **kwargs):
        self._instance = pass_class(*args, **kwargs)
        self._info = info

    def __getattr__(self, name):
        instance = self.__dict__.get("_instance")
        if instance is None:
            raise AttributeError(name)
        return getattr(instance, name)

    def run(self, *args):
        return getattr(self._instance, method)(*args)

    functools.update_wrapper(__init__, pass_class.__init__)
    namespace = {"__init__": __init__, "__getattr__": __getattr__, method: run,
                 "__doc__": pass_class.__doc__, "__module__": pass_class.__module__,
                 "__qualname__": pass_class.__qualname__}
    return type(pass_class.__name__, (base,), namespace)


def _make_decorator(kind: str, base, method: str, backed, pass_func, opt_level, name, required):
    if required is not None and not isinstance(required, (list, tuple)):
        raise TypeError(f"required must be a list or tuple of pass names, got {required!r}")
    if opt_level is None:
        if pass_func is None:
            raise ValueError(f"Please provide opt_level for the {kind} pass.")
        # NOTE: a bare ``@module_pass`` on a class (the reference's CustomPipeline example)
        # has no level; it gets 0, the level of a pass that always runs.
        opt_level = 0

    def create(target):
        info = PassInfo(opt_level, name or getattr(target, "__name__", kind), required or ())
        if isinstance(target, type):
            return _wrap_class(target, info, base, method)
        if callable(target):
            return backed(target, info)
        raise TypeError(f"pass_func must be a callable for {kind.capitalize()} pass")

    if pass_func is not None:
        return create(pass_func)
    return create


def module_pass(pass_func=None, opt_level=None, name=None, required=None):
    """Make a :class:`ModulePass` from a function ``(mod, ctx) -> mod`` or a class with
    ``transform_module(self, mod, ctx)``.

    Args:
        pass_func: the function or class; if None a decorator is returned.
        opt_level: the pass's opt level (0 when the decorator is applied bare).
        name: the pass name (default: the function's or class's ``__name__``).
        required: names of passes it depends on (a list or tuple).

    Returns:
        A pass instance (for a function), a ModulePass subclass (for a class), or the
        decorator.

    Raises:
        ValueError: if used with arguments but without ``opt_level``.
        TypeError: if ``required`` is not a list/tuple or the target is not callable.
    """
    return _make_decorator("module", ModulePass, "transform_module", _FunctionBackedModulePass,
                           pass_func, opt_level, name, required)


def function_pass(pass_func=None, opt_level=None, name=None, required=None):
    """Make a :class:`FunctionPass` from a function ``(func, mod, ctx) -> func`` or a class
    with ``transform_function(self, func, mod, ctx)``.

    Args:
        pass_func: the function or class; if None a decorator is returned.
        opt_level: the pass's opt level (0 when the decorator is applied bare).
        name: the pass name (default: the function's or class's ``__name__``).
        required: names of passes it depends on (a list or tuple).

    Returns:
        A pass instance (for a function), a FunctionPass subclass (for a class), or the
        decorator.

    Raises:
        ValueError: if used with arguments but without ``opt_level``.
        TypeError: if ``required`` is not a list/tuple or the target is not callable.
    """
    return _make_decorator("function", FunctionPass, "transform_function",
                           _FunctionBackedFunctionPass, pass_func, opt_level, name, required)


@dataclass(frozen=True)
class PrintIR(ModulePass):
    """Print the module in the text format and return it unchanged (for debugging).

    Args:
        show_meta_data: whether to print the metadata section.
        header: a label printed as ``PrintIR(<header>):``.
    """

    show_meta_data: bool = True
    header: str = ""
    name: ClassVar[str] = "PrintIR"
    opt_level: ClassVar[int] = 0

    def transform_module(self, mod: IRModule, ctx=None) -> IRModule:
        """Print ``mod``; returns it."""
        print(f"PrintIR({self.header}):\n{mod.astext(show_meta_data=self.show_meta_data)}")
        return mod
