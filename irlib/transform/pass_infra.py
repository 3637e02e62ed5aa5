"""The pass base classes: :class:`PassInfo`, :class:`Pass` and :class:`ModulePass`.

A pass is a small frozen dataclass: its name, opt level and required passes are class
variables, its options are fields, and ``transform_module(mod, ctx)`` returns a *new*
module (the input is never mutated)::

    @dataclass(frozen=True)
    class InferType(ModulePass):
        name: ClassVar[str] = "InferType"
        opt_level: ClassVar[int] = 0

        def transform_module(self, mod, ctx=None):
            return infer_module(mod)

Calling a pass runs it (regardless of opt level, as in Relay). It accepts an
:class:`~irlib.ir.module.IRModule`, or an expression, which is wrapped in a module as
``main`` and unwrapped afterwards. The pass manager (``Sequential``, ``PassContext``, the
``module_pass``/``function_pass`` decorators) is built on these classes elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

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
    required: tuple = ()

    def __post_init__(self):
        required = self.required
        if required is None:
            required = ()
        if isinstance(required, str) or not isinstance(required, (list, tuple)):
            raise TypeError(f"PassInfo.required must be a list or tuple of pass names, "
                            f"got {required!r}")
        object.__setattr__(self, "required", tuple(required))
        object.__setattr__(self, "opt_level", int(self.opt_level))


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
        return PassInfo(self.opt_level, self.name or type(self).__name__, tuple(self.required))

    def transform_module(self, mod: IRModule, ctx=None) -> IRModule:
        """Return the transformed copy of ``mod``; subclasses implement this.

        Args:
            mod: the input module (must not be mutated).
            ctx: the pass context, or None.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement transform_module")

    def __call__(self, mod_or_expr):
        """Run the pass on a module (returns a new module) or an expression.

        An expression is wrapped as the ``main`` of a new module; the result is the
        transformed ``main`` if the input was a function, otherwise its body.

        Raises:
            TypeError: if the argument is neither an IRModule nor an expression.
        """
        if isinstance(mod_or_expr, IRModule):
            return self._run(mod_or_expr)
        if isinstance(mod_or_expr, E.Expr):
            result = self._run(IRModule.from_expr(mod_or_expr))
            main = result["main"]
            return main if isinstance(mod_or_expr, E.Function) else main.body
        raise TypeError(f"{self.info.name} expects an IRModule or an expression, got "
                        f"{type(mod_or_expr).__name__}")

    def _run(self, mod: IRModule) -> IRModule:
        result = self.transform_module(mod, None)
        if not isinstance(result, IRModule):
            raise TypeError(f"pass {self.info.name} returned {type(result).__name__}, "
                            f"not an IRModule")
        return result


class ModulePass(Pass):
    """A pass that transforms a whole module (``IRModule -> IRModule``)."""
