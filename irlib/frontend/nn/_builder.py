"""The emission context of the nn builder: where the calls made by ``forward`` are recorded.

While a module is exported (``Module.export_tvm``), every nn op emits its call through the
current :class:`Builder`: :meth:`Builder.emit` infers the call's type at once (so
``Tensor.shape`` is known eagerly, as in Relax), binds it to a fresh, type-annotated
:class:`~irlib.ir.expr.Var`, and appends the binding to the function being built. The
exporter turns the bindings into a let chain. Outside an export, ops still infer and return
typed tensors (handy for checking shapes interactively), but nothing is recorded.

The builder also knows the dotted path of every submodule, so an error raised while a
submodule's ``forward`` runs names the layer (``model.layers.3.attn.q_proj``).
"""

from __future__ import annotations

import threading
from typing import Optional

from ...analysis import free_vars
from ...errors import IRError, TypeInferenceError
from ...ir import expr as E
from ...ir.rewrite import make_lets
from ...ir.types import TensorType, TupleType
from ...transform.infer_type import infer_type
from .errors import OpError

ROOT_NAME = "model"


def infer_expr_type(expr):
    """The type of ``expr``, whose free variables all carry type annotations.

    Args:
        expr: an expression over annotated vars and constants (one op call, typically).
    """
    if isinstance(expr, E.Var) and expr.type_annotation is not None:
        return expr.type_annotation
    if isinstance(expr, E.Constant):
        return TensorType(expr.data.shape, str(expr.data.dtype))
    func = infer_type(E.Function(tuple(free_vars(expr)), expr))
    return func.body.checked_type


class Builder:
    """Records let bindings for the functions being exported, one scope per function.

    Use as a context manager (``with Builder(): ...``); :meth:`current` returns the innermost
    active builder of this thread, or None.
    """

    _local = threading.local()

    def __init__(self):
        self._scopes: list = []
        self.subroutines: dict = {}
        self.module_paths: dict = {}
        self._path_stack: list = []

    # -- the active builder --------------------------------------------------------------------
    @staticmethod
    def current() -> Optional["Builder"]:
        """The builder active on this thread, or None outside an export."""
        stack = getattr(Builder._local, "stack", None)
        return stack[-1] if stack else None

    def __enter__(self) -> "Builder":
        if not hasattr(Builder._local, "stack"):
            Builder._local.stack = []
        Builder._local.stack.append(self)
        return self

    def __exit__(self, *exc) -> None:
        Builder._local.stack.pop()

    # -- function scopes -----------------------------------------------------------------------
    def begin_scope(self) -> None:
        """Start recording the bindings of a new function body."""
        self._scopes.append([])

    def end_scope(self, result) -> E.Expr:
        """Close the innermost scope: its bindings wrapped around ``result`` as a let chain.

        Args:
            result: the body's final expression.
        """
        return make_lets(self._scopes.pop(), result)

    # -- module paths --------------------------------------------------------------------------
    def register_modules(self, root) -> None:
        """Remember the dotted path of ``root`` and of every submodule below it.

        Args:
            root: the module being exported; it is named ``model``.
        """
        self.module_paths[id(root)] = ROOT_NAME
        for name, module in root.named_modules():
            self.module_paths.setdefault(id(module), f"{ROOT_NAME}.{name}" if name else ROOT_NAME)

    def enter_module(self, module) -> None:
        """Note that ``module``'s forward starts running (for error messages)."""
        self._path_stack.append(self.module_paths.get(id(module), type(module).__name__))

    def exit_module(self) -> None:
        """Note that the innermost module's forward returned."""
        self._path_stack.pop()

    @property
    def where(self) -> str:
        """The dotted path of the module whose code runs now."""
        return self._path_stack[-1] if self._path_stack else ROOT_NAME

    # -- emission ------------------------------------------------------------------------------
    def record(self, var: E.Var, value: E.Expr) -> None:
        """Append the binding ``var = value`` to the current function body.

        Args:
            var: a type-annotated variable.
            value: its value.
        """
        if not self._scopes:
            raise OpError("nn builder: no function is being built (internal misuse of "
                          "Builder.record outside export)")
        self._scopes[-1].append((var, value))


def current_where() -> str:
    """The module path for an error message: the running submodule's, or ``model``."""
    builder = Builder.current()
    return builder.where if builder is not None else ROOT_NAME


def emit(expr: E.Expr, name_hint: str) -> E.Var:
    """Bind ``expr`` to a fresh variable annotated with its inferred type.

    Inside an export the binding is recorded in the function being built; outside, the
    variable is only returned (its type is what callers need).

    Args:
        expr: the expression (usually one op call over emitted vars and constants).
        name_hint: the variable's name hint (the op name or the user's ``name=``).

    Raises:
        OpError: the expression is ill-typed (mismatched dtypes, bad shapes, bad attributes);
            the message names the module path and the op.
    """
    try:
        ty = infer_expr_type(expr)
    except TypeInferenceError as error:
        what = expr.op.name if isinstance(expr, E.Call) and isinstance(expr.op, E.Op) else name_hint
        raise OpError(f"{current_where()}: {what}: {error}") from error
    except IRError as error:
        raise OpError(f"{current_where()}: {name_hint}: {error}") from error
    var = E.Var(name_hint or "v", ty)
    builder = Builder.current()
    if builder is not None and builder._scopes:
        builder.record(var, expr)
    return var


def emit_typed(expr: E.Expr, ty, name_hint: str) -> E.Var:
    """Bind ``expr`` to a fresh variable of the given type, without inferring it (for calls
    of global functions, whose types the local inference cannot see).

    Args:
        expr: the expression.
        ty: its type.
        name_hint: the variable's name hint.
    """
    var = E.Var(name_hint or "v", ty)
    builder = Builder.current()
    if builder is not None and builder._scopes:
        builder.record(var, expr)
    return var


def is_tensor_type(ty) -> bool:
    """Whether ``ty`` is a tensor type (not a tuple, function or ADT)."""
    return isinstance(ty, TensorType)


def is_tuple_type(ty) -> bool:
    """Whether ``ty`` is a tuple type."""
    return isinstance(ty, TupleType)
