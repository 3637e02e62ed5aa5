"""Effects of the nn builder: :class:`IOEffect` (``print_``, ``debug_func``) and
:class:`KVCache`.

Exported functions are pure: an effect's state is an explicit value that each method takes
as an input (after the spec'd inputs) and returns after its result, ``(result, (state,
...))``; ``_initialize_effect`` returns the initial states. ``Module.jit`` hides this: it
keeps the states between calls (see :mod:`irlib.frontend.nn.jit`).

**IOEffect** (present when a module is exported with ``debug=True``). Its state is one *IO
token* of type ``Tensor[(), int64]`` (:data:`irlib.op.debug_io.TOKEN_TYPE`; the value counts
the IO calls made, ``_initialize_effect`` gives ``0``). :func:`print_` and :func:`debug_func`
each emit a ``debug_io.call`` that takes the current token and returns the next one, so the
calls run at run time, in program order, on every executor, and no pass removes, merges or
folds them (see :mod:`irlib.op.debug_io`). ``print_(x)`` writes numpy's repr of the value
(``array([...], dtype=float32)``) and a newline to ``sys.stdout``.

**KVCache** (``KVCache(init_seq_len, unit_shape, dtype)``, an attribute of a module). Its
state is a plain tensor holding exactly the rows appended so far: its type is
``Tensor[(<name>_len, *unit_shape), dtype]``, where ``<name>_len`` is a size variable named
after the cache's attribute path (dots become underscores: ``layers_0_k_cache_len``), bound
when the method is called. :meth:`KVCache.append` concatenates rows along axis 0 (the state's
type becomes ``Tensor[(<name>_len + k, ...)]``), :meth:`KVCache.view` returns the first
``seq_len`` rows. ``init_seq_len`` is Relax's initial *capacity*; here nothing is
preallocated: the initial state has length 0, and the cache grows past ``init_seq_len``
without limit.
"""

from __future__ import annotations

import inspect
import re
from typing import List, Optional, Sequence

import numpy as np

from ... import op as _op
from ...ir import expr as E
from ...ir.dims import DimExpr, size_var
from ...ir.types import TensorType
from ...op.debug_io import (DEBUG_PRINT, TOKEN_TYPE, debug_call, get_debug_func,  # noqa: F401
                            list_debug_funcs, register_debug_func)
from ._builder import current_where, emit
from .core import Effect, Tensor, get_default_dtype
from .errors import NNError, OpError

__all__ = ["IOEffect", "KVCache", "print_", "debug_func", "register_debug_func"]


class IOEffect(Effect):
    """The IO side effect: printing tensors and calling Python debug functions at run time.

    Created by the exporter when a module is exported with ``debug=True``; its state is the
    IO token (see the module docstring). Use it through :func:`print_` and
    :func:`debug_func`.
    """

    def __init__(self):
        self.effect: Optional[E.Expr] = None

    @staticmethod
    def _var_name(name_hint: str) -> str:
        return f"{name_hint}.io" if name_hint else "_io"

    def emit_init(self, name_hint: str, builder) -> List[E.Var]:
        """The initial token, ``0`` (emitted in ``_initialize_effect``).

        Args:
            name_hint: the effect's path (empty for the module-wide IO effect).
            builder: the active builder (the binding goes to its current scope).
        """
        return [emit(E.Constant(np.array(0, dtype="int64")), self._var_name(name_hint))]

    def create(self, name_hint: str) -> List[E.Var]:
        """The parameter carrying the token into a method (``Tensor[(), int64]``).

        Args:
            name_hint: the effect's path (empty for the module-wide IO effect).
        """
        return [E.Var(self._var_name(name_hint), TOKEN_TYPE)]

    def set_state(self, state_vars: List[E.Expr]) -> None:
        """Make ``state_vars[0]`` the current token.

        Args:
            state_vars: one expression of type ``Tensor[(), int64]``.
        """
        (self.effect,) = state_vars

    def finalize(self) -> List[E.Expr]:
        """The token after the method's last IO call (and forget it)."""
        result, self.effect = self.effect, None
        return [result]

    def call(self, func_name: str, args: Sequence, line_info: str) -> None:
        """Emit a call of debug function ``func_name`` on ``args`` and advance the token.

        Args:
            func_name: a name registered with :func:`register_debug_func`.
            args: nn Tensors, ints, floats, strs or size expressions.
            line_info: the ``"file:line"`` passed to the function.

        Raises:
            OpError: an argument of another type.
        """
        if self.effect is None:
            raise NNError(f"{current_where()}: the IO effect has no state (print_/debug_func "
                          "called outside an exported method)")
        tensors, kinds, scalars = [], [], []
        for index, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensors.append(arg._expr)
                kinds.append("tensor")
            elif isinstance(arg, (bool, int, np.integer)):
                kinds.append("int")
                scalars.append(int(arg))
            elif isinstance(arg, (float, np.floating)):
                kinds.append("float")
                scalars.append(float(arg))
            elif isinstance(arg, str):
                kinds.append("str")
                scalars.append(arg)
            elif isinstance(arg, DimExpr):
                kinds.append("dim")
                scalars.append(arg)
            else:
                raise OpError(f"{current_where()}: debug_func({func_name!r}): argument {index} "
                              f"is a {type(arg).__name__}; arguments must be nn Tensors, "
                              "ints, floats, strs or size expressions")
        call = debug_call(self.effect, E.Tuple(tensors), func_name=func_name,
                          line_info=line_info, arg_kinds=kinds, scalars=scalars)
        name = self.effect.name_hint if isinstance(self.effect, E.Var) else "_io"
        self.effect = emit(call, name)

    def print_(self, tensor: Tensor, line_info: str = "") -> None:
        """Emit a run-time print of ``tensor`` (numpy's repr of its value).

        Args:
            tensor: the nn Tensor to print.
            line_info: ``"file:line"`` of the call (kept in the IR).
        """
        if not isinstance(tensor, Tensor):
            raise OpError(f"{current_where()}: print_ takes an nn.Tensor, got "
                          f"{type(tensor).__name__}")
        self.call(DEBUG_PRINT, [tensor], line_info)


def _io_effect(what: str) -> IOEffect:
    from .exporter import Exporter
    io_effect = Exporter.current().io_effect
    if io_effect is None:
        raise NNError(f"{current_where()}: {what} works only in modules exported or jitted "
                      "with debug=True")
    return io_effect


def _caller_line(depth: int = 2) -> str:
    frame = inspect.currentframe()
    for _ in range(depth):
        frame = frame.f_back if frame is not None else None
    if frame is None:
        return ""
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def debug_func(name: str, *args, _line_info: Optional[str] = None) -> None:
    """Call the Python debug function registered as ``name`` at run time.

    The function (see :func:`register_debug_func`) is called as ``func(line_info, *args)``
    each time the method runs, in program order with the other IO calls. Needs a module
    exported or jitted with ``debug=True``.

    Args:
        name: the registered name.
        *args: nn Tensors (passed as NDArrays), ints, floats, strs, or size expressions
            (passed as the int they have at run time).
        _line_info: the ``"file:line"`` string to pass; the caller's file and line when None.

    Raises:
        NNError: the module is not exported with ``debug=True``.
        OpError: an argument of an unsupported type.
    """
    line_info = _caller_line() if _line_info is None else str(_line_info)
    _io_effect("debug_func").call(name, args, line_info)


def print_(tensor: Tensor) -> None:
    """Print ``tensor``'s value at run time: numpy's repr of it and a newline, on stdout.

    Needs a module exported or jitted with ``debug=True``.

    Args:
        tensor: the nn Tensor.

    Raises:
        NNError: the module is not exported with ``debug=True``.
    """
    _io_effect("print_").print_(tensor, _caller_line())


_NON_IDENT = re.compile(r"\W")


class KVCache(Effect):
    """A growing cache of rows (keys or values of attention), threaded as a plain tensor.

    The state is a tensor of type ``Tensor[(<name>_len, *unit_shape), dtype]`` holding the
    rows appended so far (see the module docstring): each method takes the current cache
    as an input and returns the new one after its result; ``jit`` keeps it between calls.

    Args:
        init_seq_len: Relax's initial capacity. Nothing is preallocated here (the initial
            state has 0 rows and the cache grows past ``init_seq_len`` as rows are
            appended); the value is kept for reference.
        unit_shape: the shape of one row (``[num_heads, head_dim]``).
        dtype: the element dtype; :func:`~irlib.frontend.nn.get_default_dtype` when None.
    """

    def __init__(self, init_seq_len: int, unit_shape: Sequence[int], dtype: Optional[str] = None):
        if isinstance(init_seq_len, bool) or not isinstance(init_seq_len, (int, np.integer)) \
                or init_seq_len < 0:
            raise NNError(f"KVCache: init_seq_len must be a non-negative int, got "
                          f"{init_seq_len!r}")
        try:
            self.unit_shape = [int(d) for d in unit_shape]
        except (TypeError, ValueError) as error:
            raise NNError(f"KVCache: unit_shape must be a sequence of ints, got "
                          f"{unit_shape!r}") from error
        if any(d < 0 for d in self.unit_shape):
            raise NNError(f"KVCache: unit_shape {self.unit_shape} has a negative dim")
        self.init_seq_len = int(init_seq_len)
        self.dtype = get_default_dtype() if dtype is None else dtype
        self.cache: Optional[Tensor] = None

    def emit_init(self, name_hint: str, bb) -> List[E.Var]:
        """The initial state: ``zeros((0, *unit_shape), dtype)`` (no rows).

        Args:
            name_hint: the name of the initial state's variable.
            bb: the active builder (the binding goes to its current scope).
        """
        return [emit(_op.zeros((0, *self.unit_shape), self.dtype), name_hint)]

    def length_var_name(self, name_hint: str) -> str:
        """The name of the size variable of the state's length (``<name>_len``).

        Args:
            name_hint: the cache's attribute path.
        """
        return _NON_IDENT.sub("_", name_hint) + "_len"

    def create(self, name_hint: str) -> List[E.Var]:
        """The parameter carrying the cache into a method: ``Tensor[(<name>_len,
        *unit_shape), dtype]``.

        Args:
            name_hint: the cache's attribute path.
        """
        shape = (size_var(self.length_var_name(name_hint)), *self.unit_shape)
        return [E.Var(name_hint, TensorType(shape, self.dtype))]

    def set_state(self, state_vars: List[E.Expr]) -> None:
        """Make ``state_vars[0]`` the current cache.

        Args:
            state_vars: one tensor-typed expression.
        """
        (state,) = state_vars
        self.cache = Tensor(_expr=state)

    def finalize(self) -> List[E.Expr]:
        """The cache after the method's appends (and forget it)."""
        result, self.cache = self.cache, None
        return [result._expr]

    def to(self, dtype: Optional[str] = None) -> None:
        """Use ``dtype`` for the cache's elements from now on.

        Args:
            dtype: the new dtype; None keeps it.
        """
        if dtype is not None:
            self.dtype = dtype

    def _state(self, what: str) -> Tensor:
        if self.cache is None:
            raise NNError(f"{current_where()}: KVCache.{what} works only inside an exported "
                          "method (the cache has no state here)")
        return self.cache

    def append(self, new_element: Tensor) -> None:
        """Append rows: ``new_element`` of shape ``(k, *unit_shape)`` (or one row of shape
        ``unit_shape``) goes after the cached rows.

        Args:
            new_element: the rows, of the cache's dtype.

        Raises:
            OpError: a dtype or row shape that differs from the cache's.
        """
        cache = self._state("append")
        if not isinstance(new_element, Tensor):
            raise OpError(f"{current_where()}: KVCache.append takes an nn.Tensor, got "
                          f"{type(new_element).__name__}")
        if new_element.dtype != self.dtype:
            raise OpError(f"{current_where()}: KVCache has dtype {self.dtype!r}, got a tensor "
                          f"of dtype {new_element.dtype!r}")
        expr = new_element._expr
        if new_element.ndim == len(self.unit_shape):
            expr = emit(_op.expand_dims(expr, axis=0), "kv_row")
            rows = [1, *new_element.shape]
        else:
            rows = new_element.shape
        if len(rows) != len(self.unit_shape) + 1 or list(rows[1:]) != self.unit_shape:
            raise OpError(f"{current_where()}: KVCache.append: rows of shape "
                          f"{tuple(self.unit_shape)} expected, got a tensor of shape "
                          f"{tuple(new_element.shape)}")
        self.cache = Tensor(_expr=emit(_op.concatenate([cache._expr, expr], axis=0),
                                       "kv_cache"))

    def view(self, seq_len) -> Tensor:
        """The first ``seq_len`` rows of the cache, ``Tensor[(seq_len, *unit_shape)]``.

        When ``seq_len`` is the cache's length (the usual ``view(total_seq_len)`` after
        appending, if the lengths are the same expression) the cache itself is returned;
        otherwise a ``strided_slice`` with that (possibly symbolic) end.

        Args:
            seq_len: an int, or a size expression (a ``spec.Int`` argument such as
                ``total_seq_len``).
        """
        cache = self._state("view")
        if isinstance(seq_len, bool) or not isinstance(seq_len, (int, np.integer, DimExpr)):
            raise OpError(f"{current_where()}: KVCache.view takes an int or a size expression, "
                          f"got {type(seq_len).__name__}")
        if not isinstance(seq_len, DimExpr):
            seq_len = int(seq_len)
            if seq_len < 0:
                raise OpError(f"{current_where()}: KVCache.view: negative length {seq_len}")
        length = cache.shape[0]
        if type(length) is type(seq_len) and length == seq_len:
            return cache
        sliced = _op.strided_slice(cache._expr, begin=[0], end=[seq_len], axes=[0])
        return Tensor(_expr=emit(sliced, "kv_view"))
