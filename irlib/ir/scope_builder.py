"""ScopeBuilder: write nested ``let`` / ``if`` code in straight-line Python (Relay's
``relay.ScopeBuilder``).

    >>> import irlib
    >>> i = irlib.var("i", shape=(), dtype="int32")
    >>> sb = ScopeBuilder()
    >>> j = sb.let("j", irlib.add(i, irlib.const(1)))
    >>> with sb.if_scope(irlib.equal(j, irlib.const(0))):
    ...     sb.ret(j)
    >>> with sb.else_scope():
    ...     sb.ret(irlib.subtract(j, irlib.const(1)))
    >>> body = sb.get()        # let %j = add(%i, 1); if (equal(%j, 0)) { %j } else { ... }

Each scope collects ``let`` bindings and one result (``ret``). An ``if_scope`` must be
followed by an ``else_scope``; leaving the ``else_scope`` makes the ``If`` the result of the
enclosing scope. ``get()`` turns the outermost scope into nested ``Let`` s around its result.
"""

from __future__ import annotations

from contextlib import contextmanager

from ..errors import IRError
from .expr import If, Let, Var, var as make_var


class ScopeBuilder:
    """Builds an expression scope by scope (see the module docstring)."""

    def __init__(self):
        self._bindings = [[]]
        self._results = [None]
        self._pending_if = [None]

    def let(self, var, value) -> Var:
        """Bind ``value`` to a variable in the current scope.

        Args:
            var: a :class:`Var`, a name, or a ``(name, type)`` pair.
            value: the bound expression.

        Returns:
            The bound :class:`Var` (use it in later expressions).
        """
        if isinstance(var, (tuple, list)):
            if len(var) != 2:
                raise IRError(f"ScopeBuilder.let: expected (name, type), got {var!r}")
            var = make_var(var[0], type_annotation=var[1])
        elif isinstance(var, str):
            var = make_var(var)
        if not isinstance(var, Var):
            raise IRError(f"ScopeBuilder.let: expected a Var, a name or (name, type), "
                          f"got {type(var).__name__}")
        self._bindings[-1].append((var, value))
        return var

    def ret(self, value) -> None:
        """Set the result of the current scope.

        Args:
            value: the expression the scope evaluates to.

        Raises:
            IRError: if the scope already has a result.
        """
        if self._results[-1] is not None:
            raise IRError("ScopeBuilder.ret: this scope already has a result")
        self._results[-1] = value

    def type_of(self, expr):
        """The type of ``expr`` after type inference (``expr`` must have no free variables
        without type annotations).

        Returns:
            The inferred type.
        """
        from ..typeinf import infer_expr   # type inference proper, not the pass layer
        return infer_expr(expr).checked_type

    @contextmanager
    def if_scope(self, cond):
        """The ``then`` branch of ``if (cond)``; must be followed by :meth:`else_scope`."""
        self._enter()
        yield
        then_branch = self._exit()
        self._pending_if[-1] = (cond, then_branch)

    @contextmanager
    def else_scope(self):
        """The ``else`` branch of the preceding :meth:`if_scope`; the ``If`` becomes the
        result of the enclosing scope.

        Raises:
            IRError: if no ``if_scope`` comes right before.
        """
        pending = self._pending_if[-1]
        if pending is None:
            raise IRError("ScopeBuilder.else_scope must follow an if_scope")
        self._pending_if[-1] = None
        self._enter()
        yield
        else_branch = self._exit()
        cond, then_branch = pending
        self.ret(If(cond, then_branch, else_branch))

    def get(self):
        """The built expression: the outermost scope's lets around its result.

        Raises:
            IRError: if a scope is still open, an ``if_scope`` has no ``else_scope``, or the
                outermost scope has no result.
        """
        if len(self._bindings) != 1:
            raise IRError("ScopeBuilder.get: a nested scope is still open")
        return self._close(0)

    def _enter(self) -> None:
        self._bindings.append([])
        self._results.append(None)
        self._pending_if.append(None)

    def _exit(self):
        expr = self._close(-1)
        self._bindings.pop()
        self._results.pop()
        self._pending_if.pop()
        return expr

    def _close(self, index: int):
        if self._pending_if[index] is not None:
            raise IRError("ScopeBuilder: an if_scope has no else_scope")
        result = self._results[index]
        if result is None:
            raise IRError("ScopeBuilder: the scope has no result; call ret(value)")
        for var, value in reversed(self._bindings[index]):
            result = Let(var, value, result)
        return result
