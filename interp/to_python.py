"""``to_python`` / ``run_as_python``: IR as a readable Python program (Relay's py_converter).

::

    tree = interp.to_python(expr, mod)       # an ast.Module; ast.unparse(tree) reads well
    value = interp.run_as_python(expr, mod)  # the same value the interpreter gives

The module is type-checked first (op results are cast to their inferred dtypes, as in the
interpreter). Only the global functions the expression reaches are converted, each to one
Python ``def``; see :mod:`interp.py_codegen` for the construct mapping and
``docs/to_python.md`` for worked examples, the tail-call rule and the recursion limit.

The generated module starts with ``from interp.py_runtime import ...`` and reads the objects
that have no literal form (constructors, large constants) from a global ``_objects``; exec
it in ``interp.py_runtime.namespace(tree)``.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import itertools
import types

from irlib.errors import IRError
from irlib.ir import expr as E
from irlib.ir.functor import free_vars
from irlib.ir.module import IRModule
from irlib.ir.types import TensorType
from irlib.transform import InferType

from .py_codegen import OUTPUT, Codegen
from .py_runtime import namespace, run_deep
from .values import as_value

__all__ = ["to_python", "run_as_python", "namespace", "PythonFunction"]

_TARGETS = ("cpu", "llvm", "cuda", "python")
_fresh = itertools.count()


def _prepare(expr, mod, target):
    """The type-checked module and ``(entry, kind)`` for :meth:`Codegen.module`."""
    target_name = str(target).split()[0] if target is not None else "cpu"
    if target_name not in _TARGETS:
        raise IRError(f"to_python: unknown target {target!r}; expected one of {list(_TARGETS)}")
    if isinstance(expr, E.TupleWrapper):
        expr = expr.astuple()
    mod = mod.copy() if mod is not None else IRModule()
    if isinstance(expr, E.GlobalVar):
        typed = InferType()(mod)
        if expr.name_hint not in {g.name_hint for g in typed.get_global_vars()}:
            raise IRError(f"to_python: the module has no global @{expr.name_hint}")
        return typed, typed.get_global_var(expr.name_hint), "global"
    if not isinstance(expr, E.Expr):
        raise IRError(f"to_python expects an IR expression, got {type(expr).__name__}")
    missing = free_vars(expr)
    if missing:
        names = ", ".join("%" + v.name_hint for v in missing)
        raise IRError(f"to_python: the expression has free variables ({names}); make them "
                      f"parameters of a Function")
    is_function = isinstance(expr, E.Function)
    gvar = E.GlobalVar(f"__to_python_entry_{next(_fresh)}")
    mod[gvar] = expr if is_function else E.Function([], expr)
    typed = InferType()(mod)
    return typed, typed[gvar.name_hint], "function" if is_function else "body"


def to_python(expr, mod=None, target="cpu") -> ast.Module:
    """A Python module computing ``expr`` into the variable ``_py_out``.

    Args:
        expr: an expression without free variables, a Function, or a GlobalVar of ``mod``.
        mod: the module defining the globals and ADTs ``expr`` uses (not modified).
        target: ``"cpu"`` (alias ``"llvm"``), ``"cuda"`` or ``"python"``; ops always run
            through their numpy reference implementations, on the host.

    Returns:
        The ``ast.Module``. Its ``irlib_objects`` attribute holds what ``_objects`` must be
        bound to; ``interp.py_runtime.namespace(tree)`` builds the globals to exec it in.

    Raises:
        IRError: on free variables, an unknown target or an op used as a value.
        TypeInferenceError: if ``expr`` or the module is ill-typed.
    """
    with _gc_paused():
        typed, entry, kind = _prepare(expr, mod, target)
        generator = Codegen(typed)
        tree = generator.module(entry, kind)
    tree.irlib_objects = tuple(generator.objects)
    function = typed[entry.name_hint] if kind == "global" else entry
    tree.irlib_params = tuple(function.params) if kind != "body" else None
    return tree


def run_as_python(expr, mod=None, target="cpu"):
    """Convert ``expr`` with :func:`to_python`, run it, and return ``_py_out``.

    Args:
        expr: as for :func:`to_python`.
        mod: as for :func:`to_python`.
        target: as for :func:`to_python`.

    Returns:
        The value the interpreter would give (NDArray, TupleValue, ConstructorValue,
        RefValue); a function value is returned as a :class:`PythonFunction` (arguments
        converted like the interpreter's, run on a deep stack).

    Raises:
        IRError: as :func:`to_python`, or if the generated code is nested too deeply for
            Python's compiler.
        InterpreterError: if the generated code recurses past the recursion limit.
        MatchError: if no clause of a ``match`` covers its value.
    """
    tree = to_python(expr, mod, target)
    try:
        with _gc_paused():
            code = compile(tree, "<irlib.to_python>", "exec")
    except RecursionError as error:
        raise IRError("to_python: the program nests if/match too deeply for Python's "
                      "compiler; run it on the interpreter instead") from error
    globals_ = namespace(tree)
    run_deep(exec, code, globals_)
    out = globals_[OUTPUT]
    if isinstance(out, types.FunctionType):
        return PythonFunction(out, tree.irlib_params)
    return out


@contextlib.contextmanager
def _gc_paused():
    """Pause the cyclic garbage collector while building large trees.

    NOTE: a 100,000-binding program makes millions of AST nodes, none of them garbage; the
    collector's repeated full scans of them doubled the conversion time.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class PythonFunction:
    """A generated Python function as a callable taking interpreter-style arguments.

    Numpy arrays, Python scalars (given the parameter's declared dtype), tuples and values
    are converted with :func:`~interp.values.as_value`; the call runs with
    :func:`~interp.py_runtime.run_deep`.

    Args:
        function: the generated function.
        params: its IR parameters (for scalar dtypes), or None.
    """

    def __init__(self, function, params=None):
        self.function = function
        self.params = params

    def __call__(self, *args):
        dtypes = [None] * len(args)
        if self.params is not None and len(args) == len(self.params):
            dtypes = [_scalar_dtype(param) for param in self.params]
        return run_deep(self.function, *[_argument(arg, dtype)
                                         for arg, dtype in zip(args, dtypes)])

    def __repr__(self) -> str:
        return f"<PythonFunction {self.function.__name__}>"


def _argument(arg, dtype):
    if isinstance(arg, PythonFunction):
        return arg.function
    if isinstance(arg, types.FunctionType):
        return arg
    return as_value(arg, dtype)


def _scalar_dtype(param):
    ty = param._checked_type or param.type_annotation
    return ty.dtype if isinstance(ty, TensorType) else None
