"""The pass manager: :class:`Pass`, :class:`ModulePass`, :class:`FunctionPass`,
:class:`Sequential` and the registry of named passes. :class:`PassInfo` and
:class:`PassContext` live in :mod:`~irlib.transform.pass_context`, the ``module_pass`` /
``function_pass`` decorators and ``PrintIR`` in :mod:`~irlib.transform.pass_decorators`;
all are importable from here.

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

from typing import Callable, ClassVar

from ..errors import IRError, PassError
from ..ir import expr as E
from ..ir.module import IRModule
from .pass_context import PassContext, PassInfo, _call_hook, build_config  # noqa: F401


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
        """The transformed function; subclasses implement this.

        Args:
            func: the function.
            mod: the module it belongs to.
            ctx: the current :class:`PassContext`.
        """
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


# The decorators and PrintIR live in pass_decorators.py (they build on the classes above).
from .pass_decorators import PrintIR, function_pass, module_pass  # noqa: E402,F401
