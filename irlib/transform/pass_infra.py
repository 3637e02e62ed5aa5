"""The pass manager: :class:`PassInfo`, :class:`Pass`, :class:`ModulePass`,
:class:`FunctionPass`, :class:`Sequential`, :class:`PassContext` and the decorators.

A pass is a small frozen dataclass: its name, opt level and required passes are class
variables, its options are fields, and ``transform_module(mod, ctx)`` returns a *new*
module (the input is never mutated)::

    @dataclass(frozen=True)
    class InferType(ModulePass):
        name: ClassVar[str] = "InferType"
        opt_level: ClassVar[int] = 0

        def transform_module(self, mod, ctx=None):
            return infer_module(mod)

Calling a pass runs it regardless of opt level, as in Relay. It accepts an
:class:`~irlib.ir.module.IRModule`, or an expression, which is wrapped in a module as
``main`` and unwrapped afterwards. :class:`Sequential` is the manager: it skips passes the
current :class:`PassContext` does not enable, runs each pass's ``required`` passes first
(looked up by name among the registered passes), and re-raises a failure as
:class:`~irlib.errors.PassError` naming the pass and the passes that ran before it.

Verify mode (``PassContext(config={"irlib.verify": True})``) checks well-formedness and
type-checks the module after every pass, so the pass that breaks an invariant is named.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Callable, ClassVar

from ..errors import IRError, PassError
from ..ir import expr as E
from ..ir.module import IRModule


@dataclass(frozen=True)
class PassInfo:
    """A pass's metadata (Relay's ``PassInfo(opt_level, name, required)``).

    Args:
        opt_level: the lowest ``PassContext`` opt level at which the pass is enabled.
        name: the pass name (what ``required_pass`` / ``disabled_pass`` match).
        required: names of passes that must run before this one.
    """

    opt_level: int
    name: str
    required: tuple | None = None  # normalised to a tuple by __post_init__

    def __post_init__(self):
        required = self.required
        if required is None:
            required = ()
        if isinstance(required, str) or not isinstance(required, (list, tuple)):
            raise TypeError(f"PassInfo.required must be a list or tuple of pass names, "
                            f"got {required!r}")
        object.__setattr__(self, "required", tuple(required))
        object.__setattr__(self, "opt_level", int(self.opt_level))


# -- the pass context ------------------------------------------------------------------------------

_context_stack = threading.local()


class PassContext:
    """The settings passes run under; use it as a context manager.

    Args:
        opt_level: passes whose opt level is above this are skipped by :class:`Sequential`.
        fallback_device: the default device for unannotated code (kept for Relay
            compatibility; no pass here reads it).
        required_pass: names of passes enabled whatever their opt level (any iterable).
        disabled_pass: names of passes never run by :class:`Sequential` (any iterable).
        trace: ``trace(mod, pass_info, is_before)``, called before and after each module or
            function pass (not around a Sequential itself).
        config: option dict; ``{"irlib.verify": True}`` turns on verify mode.
        instruments: objects with any of ``enter_pass_ctx()``, ``exit_pass_ctx()``,
            ``should_run(mod, info)``, ``run_before_pass(mod, info)``,
            ``run_after_pass(mod, info)``.

    Raises:
        TypeError: if ``required_pass`` or ``disabled_pass`` is not iterable.
    """

    def __init__(self, opt_level=2, fallback_device=None, required_pass=None,
                 disabled_pass=None, trace=None, config=None, instruments=None):
        self.opt_level = int(opt_level)
        self.fallback_device = fallback_device
        # NOTE: list() as in Relay, so a bare string becomes its characters (a known quirk).
        self.required_pass = list(required_pass) if required_pass is not None else []
        self.disabled_pass = list(disabled_pass) if disabled_pass is not None else []
        self.trace = trace
        self.config = dict(config or {})
        self.instruments = list(instruments or [])

    @staticmethod
    def current() -> "PassContext":
        """The innermost active context, or a default one (opt level 2)."""
        stack = getattr(_context_stack, "stack", None)
        if stack:
            return stack[-1]
        return PassContext()

    @property
    def verify(self) -> bool:
        """Whether verify mode is on."""
        return bool(self.config.get("irlib.verify", False))

    def pass_enabled(self, info: PassInfo) -> bool:
        """Relay's ``PassEnabled``: disabled wins, then required, then the opt level."""
        if info.name in self.disabled_pass:
            return False
        if info.name in self.required_pass:
            return True
        return self.opt_level >= info.opt_level

    def __enter__(self) -> "PassContext":
        if not hasattr(_context_stack, "stack"):
            _context_stack.stack = []
        _context_stack.stack.append(self)
        for instrument in self.instruments:
            _call_hook(instrument, "enter_pass_ctx")
        return self

    def __exit__(self, *exc_info):
        for instrument in self.instruments:
            _call_hook(instrument, "exit_pass_ctx")
        _context_stack.stack.pop()
        return False

    def __repr__(self):
        return (f"PassContext(opt_level={self.opt_level}, required_pass={self.required_pass}, "
                f"disabled_pass={self.disabled_pass})")


def build_config(opt_level=2, fallback_device=None, required_pass=None, disabled_pass=None,
                 trace=None) -> PassContext:
    """A :class:`PassContext` (Relay's deprecated alias ``build_config``).

    Args:
        opt_level: the optimisation level.
        fallback_device: the fallback device.
        required_pass: pass names enabled regardless of level.
        disabled_pass: pass names never run.
        trace: the tracing callback ``trace(mod, info, is_before)``.

    Returns:
        The new context (use it with ``with``).
    """
    return PassContext(opt_level, fallback_device, required_pass, disabled_pass, trace)


def _call_hook(instrument, name, *args):
    hook = getattr(instrument, name, None)
    return hook(*args) if hook is not None else None


# -- the registry of named passes (for ``required``) -----------------------------------------------

_PASS_FACTORIES: dict = {}


def register_pass(name: str, factory: Callable) -> None:
    """Make ``factory()`` the pass that ``required=[name]`` refers to.

    Args:
        name: the pass name.
        factory: a zero-argument callable returning the pass.
    """
    _PASS_FACTORIES[name] = factory


def get_pass(name: str) -> "Pass":
    """A new instance of the registered pass ``name``.

    Raises:
        PassError: if no pass of that name is registered.
    """
    factory = _PASS_FACTORIES.get(name)
    if factory is None:
        known = ", ".join(sorted(_PASS_FACTORIES)) or "none"
        raise PassError(f"required pass {name!r} is not registered (registered: {known})")
    return factory()


# -- passes --------------------------------------------------------------------------------------

class Pass:
    """Base class of every pass.

    Subclasses set the class variables ``name``, ``opt_level`` and ``required`` and
    implement :meth:`transform_module`.
    """

    name: ClassVar[str] = ""
    opt_level: ClassVar[int] = 0
    required: ClassVar[tuple] = ()

    @property
    def info(self) -> PassInfo:
        """The pass's :class:`PassInfo`."""
        own = self.__dict__.get("_info") if hasattr(self, "__dict__") else None
        if own is not None:
            return own
        return PassInfo(self.opt_level, self.name or type(self).__name__, tuple(self.required))

    def transform_module(self, mod: IRModule, ctx=None) -> IRModule:
        """Return the transformed copy of ``mod``; subclasses implement this.

        Args:
            mod: the input module (must not be mutated).
            ctx: the pass context, or None.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement transform_module")

    def __call__(self, mod_or_expr, ctx=None):
        """Run the pass on a module (returns a new module) or an expression.

        An expression is wrapped as the ``main`` of a new module; the result is the
        transformed ``main`` if the input was a function, otherwise its body.

        Args:
            mod_or_expr: an IRModule or an expression.
            ctx: the PassContext (default: the current one).

        Raises:
            TypeError: if the argument is neither an IRModule nor an expression.
        """
        ctx = ctx if ctx is not None else PassContext.current()
        if isinstance(mod_or_expr, IRModule):
            return self._execute(mod_or_expr, ctx)
        if isinstance(mod_or_expr, E.Expr):
            result = self._execute(IRModule.from_expr(mod_or_expr), ctx)
            main = result["main"]
            return main if isinstance(mod_or_expr, E.Function) else main.body
        raise TypeError(f"{self.info.name} expects an IRModule or an expression, got "
                        f"{type(mod_or_expr).__name__}")

    def _execute(self, mod: IRModule, ctx: PassContext) -> IRModule:
        """Run with instruments, trace and (in verify mode) checks."""
        info = self.info
        for instrument in ctx.instruments:
            if _call_hook(instrument, "should_run", mod, info) is False \
                    and info.name not in ctx.required_pass:
                return mod
        if ctx.trace is not None:
            ctx.trace(mod, info, True)
        for instrument in ctx.instruments:
            _call_hook(instrument, "run_before_pass", mod, info)
        result = self.transform_module(mod, ctx)
        if not isinstance(result, IRModule):
            raise TypeError(f"pass {info.name} returned {type(result).__name__}, "
                            f"not an IRModule")
        if ctx.verify:
            verify_module(result, info.name)
        for instrument in ctx.instruments:
            _call_hook(instrument, "run_after_pass", result, info)
        if ctx.trace is not None:
            ctx.trace(result, info, False)
        return result

    def _run(self, mod: IRModule) -> IRModule:
        return self._execute(mod, PassContext.current())


def verify_module(mod: IRModule, pass_name: str) -> None:
    """Check that ``mod`` is well formed and type-checks (verify mode).

    Args:
        mod: the module a pass produced.
        pass_name: the pass, named in the error.

    Raises:
        PassError: naming the pass and the broken invariant.
    """
    from ..analysis.well_formed import check_well_formed
    from ..typeinf import infer_module
    for gvar, func in mod.items():
        try:
            check_well_formed(func)
        except IRError as error:
            raise PassError(f"pass {pass_name!r} produced an ill-formed @{gvar.name_hint}: "
                            f"{error}") from error
    try:
        infer_module(mod)
    except IRError as error:
        raise PassError(f"pass {pass_name!r} produced a module that does not type-check: "
                        f"{error}") from error


class ModulePass(Pass):
    """A pass that transforms a whole module (``IRModule -> IRModule``)."""


_SKIP_ATTRS = ("Compiler", "Extern", "SkipOptimization")


def is_skipped_function(func: E.Function) -> bool:
    """Whether function passes leave ``func`` alone (``Compiler``/``Extern``/``SkipOptimization``)."""
    return any(func.get_attr(key) for key in _SKIP_ATTRS)


def module_is_typed(mod: IRModule) -> bool:
    """Whether every function of ``mod`` carries an inferred type."""
    return all(func._checked_type is not None for func in mod.functions.values())


class FunctionPass(Pass):
    """A pass applied to every function of a module (``(Function, IRModule, ctx) -> Function``).

    Functions marked ``Compiler``, ``Extern`` or ``SkipOptimization`` are left alone. When
    the input module was type-checked, InferType runs on the result so types stay current.
    """

    def transform_function(self, func: E.Function, mod: IRModule, ctx) -> E.Function:
        """The transformed function; subclasses implement this."""
        raise NotImplementedError(f"{type(self).__name__} does not implement "
                                  f"transform_function")

    def transform_module(self, mod: IRModule, ctx=None) -> IRModule:
        """Apply :meth:`transform_function` to each function of a copy of ``mod``."""
        new_mod = mod.copy()
        changed = False
        for gvar, func in mod.items():
            if is_skipped_function(func):
                continue
            new_func = self.transform_function(func, mod, ctx)
            if new_func is not func:
                new_mod[gvar] = new_func
                changed = True
        if changed and module_is_typed(mod):
            from ..typeinf import infer_module
            new_mod = infer_module(new_mod)
        return new_mod


class Sequential(Pass):
    """Runs passes in order, filtered by the current :class:`PassContext`.

    Args:
        passes: a list or tuple of passes.
        opt_level: this Sequential's own opt level (checked when it is nested).
        name: its name.
        required: names of passes it depends on.

    Raises:
        TypeError: if ``passes`` is not a list or tuple.
    """

    def __init__(self, passes=None, opt_level=2, name="sequential", required=None):
        passes = [] if passes is None else passes
        if not isinstance(passes, (list, tuple)):
            raise TypeError(f"Sequential expects a list or tuple of passes, got "
                            f"{type(passes).__name__}")
        for item in passes:
            if not isinstance(item, Pass):
                raise TypeError(f"Sequential got a non-pass {item!r}")
        self.passes = tuple(passes)
        self._info = PassInfo(opt_level, name, tuple(required or ()))

    def transform_module(self, mod: IRModule, ctx=None) -> IRModule:
        """Run every enabled pass, its required passes first."""
        ctx = ctx if ctx is not None else PassContext.current()
        ran: list = []
        for item in self.passes:
            info = item.info
            if not ctx.pass_enabled(info):
                continue
            for required_name in info.required:
                mod = self._guarded(get_pass(required_name), mod, ctx, ran)
            mod = self._guarded(item, mod, ctx, ran)
        return mod

    @staticmethod
    def _guarded(item: Pass, mod: IRModule, ctx, ran: list) -> IRModule:
        name = item.info.name
        try:
            result = item._execute(mod, ctx)
        except PassError:
            raise
        except Exception as error:  # noqa: BLE001 - re-raised with the pass named, chained
            before = ", ".join(ran) if ran else "none"
            raise PassError(f"pass {name!r} failed (ran before it: {before}): "
                            f"{type(error).__name__}: {error}") from error
        ran.append(name)
        return result

    def _execute(self, mod: IRModule, ctx: PassContext) -> IRModule:
        # A Sequential is not traced or verified itself: its passes are.
        return self.transform_module(mod, ctx)

    def __repr__(self):
        return f"Sequential({[p.info.name for p in self.passes]}, name={self.info.name!r})"


# -- decorators -------------------------------------------------------------------------------

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
