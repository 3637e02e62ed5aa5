"""``create_executor``: Relay's executor API over the reference interpreter.

::

    ex = interp.create_executor(kind="debug", mod=mod)
    f = ex.evaluate()                 # mod["main"] as a Python callable
    f(np.ones(3, "float32"))          # -> NDArray
    ex.evaluate(expr)                 # a closed non-function expression -> its value

``kind`` may be ``"debug"`` (the interpreter), ``"graph"``, ``"vm"``, ``"aot"`` or
``"python"``. ``"graph"`` builds ``main`` with ``interp.build`` and runs it on the graph
executor (:mod:`interp.graph_evaluate`; other expressions and programs it cannot run fall
back to the interpreter); the other kinds run on the reference interpreter for now, so
programs that work on one work on all.
"""

from __future__ import annotations

import itertools

from irlib.errors import ArgumentShapeError, InterpreterError, IRError
from irlib.ir import expr as E
from irlib.ir.functor import free_vars
from irlib.ir.module import IRModule
from irlib.ir.types import TensorType
from irlib.ndarray import NDArray, cpu
from irlib.transform import InferType

from .interpreter import Interpreter
from .values import (Closure, RecClosure, ValueConversionError, as_value,
                     from_python_value)

_KINDS = ("debug", "graph", "vm", "aot", "python")
_TARGETS = ("cpu", "llvm", "cuda", "python")
_fresh_names = itertools.count()


def create_executor(kind: str = "debug", mod: IRModule | None = None, device=None,
                    target="cpu", params: dict | None = None) -> "Executor":
    """An executor for ``mod`` (``relay.create_executor``).

    Args:
        kind: ``"debug"``, ``"graph"``, ``"vm"``, ``"aot"`` or ``"python"`` (``"graph"``
            runs on the graph executor where it can; the others on the interpreter).
        mod: the module whose globals and types expressions use (None for an empty one).
        device: the device (``interp.cpu(0)`` by default; values stay host arrays).
        target: ``"cpu"`` (alias ``"llvm"``), ``"cuda"`` or ``"python"``.
        params: ``{name: array}`` values for parameters of ``main``, bound by name; the
            callable ``evaluate()`` returns then takes only the remaining parameters. Names
            that are not parameters of ``main`` are ignored, as Relay's
            ``bind_params_by_name`` does (``from_onnx``'s params of folded weights).

    Returns:
        An :class:`Executor`.

    Raises:
        IRError: on an unknown ``kind`` or ``target``.
    """
    if kind not in _KINDS:
        raise IRError(f"unknown execution strategy {kind!r}; expected one of {list(_KINDS)}")
    target_name = str(target).split()[0] if target is not None else "cpu"
    if target_name not in _TARGETS:
        raise IRError(f"unknown target {target!r}; expected one of {list(_TARGETS)}")
    if kind == "graph":
        from .graph_evaluate import GraphKindExecutor
        return GraphKindExecutor(kind, mod if mod is not None else IRModule(), device or cpu(0),
                                 target_name, params)
    return Executor(kind, mod if mod is not None else IRModule(), device or cpu(0),
                    target_name, params)


class Executor:
    """Evaluates expressions against a module (see :func:`create_executor`).

    Attributes:
        kind, mod, device, target: as given to :func:`create_executor`.
    """

    def __init__(self, kind: str, mod: IRModule, device, target: str, params=None):
        self.kind = kind
        self.mod = mod
        self.device = device
        self.target = target
        self.params = dict(params or {})

    def evaluate(self, expr=None, binds: dict | None = None):
        """Evaluate ``expr`` (Relay's ``Executor.evaluate``).

        The module is type-checked first (with ``expr`` added to it), as Relay does; hoist
        ``evaluate`` out of loops and call the function it returns instead.

        Args:
            expr: None for the module's ``main``; a :class:`~irlib.ir.expr.Function` or
                :class:`~irlib.ir.expr.GlobalVar` (gives a Python callable); any other
                expression (gives its value).
            binds: ``{Var: value}`` values for free variables of ``expr``.

        Returns:
            A callable taking the function's arguments (numpy arrays, Python scalars,
            NDArrays, tuples, ConstructorValues, RefValues; keyword arguments by parameter
            name), or the value of a non-function expression.

        Raises:
            InterpreterError: if ``expr`` has free variables not given in ``binds``, or
                evaluation fails.
            TypeInferenceError: if the module or ``expr`` is ill-typed.
        """
        mod = self.mod.copy()
        binds = dict(binds or {})
        if expr is None:
            expr = mod.get_global_var("main")
        if isinstance(expr, E.GlobalVar) and not binds:
            typed = InferType()(mod)
            interpreter = Interpreter(typed, self.device)
            closure = interpreter.eval_global_var(expr, {})
            return self._callable(interpreter, closure, expr.name_hint)
        missing = [v for v in free_vars(expr) if v not in binds]
        if missing:
            names = ", ".join("%" + v.name_hint for v in missing)
            raise InterpreterError(f"cannot evaluate an expression with free variables "
                                   f"({names}); give their values with binds={{var: value}}")
        # NOTE: as in Relay, a tensor bind becomes `let %v = <constant>; expr`, so the
        # constant gives an unannotated variable its type; other values (ADT values, refs,
        # closures) are passed as parameters of the wrapper function.
        body = expr
        for var, value in reversed(list(binds.items())):
            value = as_value(value)
            if isinstance(value, NDArray):
                body = E.Let(var, E.Constant(value), body)
                del binds[var]
        bind_vars = tuple(binds)
        wrapper = E.Function(bind_vars, body)
        gvar = E.GlobalVar(f"__evaluate_{next(_fresh_names)}")
        mod[gvar] = wrapper
        typed = InferType()(mod)
        interpreter = Interpreter(typed, self.device)
        wrapper_closure = interpreter.eval_global_var(gvar, {})
        result = interpreter.call_value(wrapper_closure, [as_value(binds[v]) for v in bind_vars])
        if isinstance(expr, (E.Function, E.GlobalVar)):
            return self._callable(interpreter, result, "the function")
        return result

    def _callable(self, interpreter, closure, name: str) -> "BoundFunction":
        bound = self.params if name == "main" else {}
        return BoundFunction(interpreter, closure, name, bound)


class BoundFunction:
    """A function value wrapped as a Python callable (what ``evaluate`` returns).

    Positional arguments fill the parameters in order, then keyword arguments by parameter
    name. Python scalars take the parameter's declared dtype; tensor arguments are checked
    against the parameter's static shape and dtype (:class:`~irlib.errors.ArgumentShapeError`),
    and size variables in the parameter types are bound when the function is entered.

    Args:
        interpreter: the interpreter to run on.
        function_value: a :class:`~interp.values.Closure` or ``RecClosure``.
        name: the function's name for messages.
        bound: ``{param name: value}`` already bound (``create_executor(params=...)``).
    """

    def __init__(self, interpreter: Interpreter, function_value, name: str, bound=None):
        self.interpreter = interpreter
        self.function_value = function_value
        self.name = name
        closure = function_value.clos if isinstance(function_value, RecClosure) \
            else function_value
        self.params = closure.func.params if isinstance(closure, Closure) else None
        self.bound = dict(bound or {})
        if self.params is not None:
            # As Relay's bind_params_by_name: names that are not parameters are ignored (a
            # frontend's params dict may hold weights it already folded into constants); a
            # misspelt name leaves its parameter to be passed, or reported missing.
            known = {p.name_hint for p in self.params}
            self.bound = {key: value for key, value in self.bound.items() if key in known}

    def __call__(self, *args, **kwargs):
        if self.params is None:
            return self.interpreter.call_value(self.function_value,
                                               [as_value(a) for a in args])
        free = [p for p in self.params if p.name_hint not in self.bound]
        if len(args) > len(free):
            raise InterpreterError(f"{self.name} takes {len(free)} argument(s), "
                                   f"got {len(args)}")
        given = dict(zip(free, args))
        for key, value in kwargs.items():
            matches = [p for p in free if p.name_hint == key]
            if not matches:
                raise InterpreterError(f"{self.name} has no parameter named {key!r}")
            if matches[0] in given:
                raise InterpreterError(f"duplicate argument {key!r} for {self.name}")
            given[matches[0]] = value
        values = []
        for param in self.params:
            if param.name_hint in self.bound:
                values.append(_convert(self.bound[param.name_hint], param, self.name,
                                       self.interpreter.mod))
            elif param in given:
                values.append(_convert(given[param], param, self.name, self.interpreter.mod))
            else:
                raise InterpreterError(f"missing argument %{param.name_hint} of {self.name}")
        return self.interpreter.call_value(self.function_value, values)

    def __repr__(self) -> str:
        return f"<BoundFunction {self.name}>"


def _param_type(param):
    return param._checked_type or param.type_annotation


def _convert(arg, param, function_name: str, mod=None):
    ty = _param_type(param)
    dtype = ty.dtype if isinstance(ty, TensorType) else None
    if ty is not None and not isinstance(ty, TensorType):
        # Python lists/tuples/None for List/Option/tuple-typed parameters
        try:
            return from_python_value(arg, ty, mod)
        except ValueConversionError as error:
            raise ValueConversionError(f"argument %{param.name_hint} of {function_name}: "
                                       f"{error}") from error
    value = as_value(arg, dtype=dtype)
    if isinstance(ty, TensorType) and isinstance(value, NDArray):
        shape_ok = len(value.shape) == len(ty.shape) and all(
            not isinstance(dim, int) or dim == actual
            for dim, actual in zip(ty.shape, value.shape))
        if not shape_ok or value.dtype != ty.dtype:
            raise ArgumentShapeError(
                f"argument %{param.name_hint} of {function_name} expects {ty}, got an array "
                f"of shape {tuple(value.shape)} and dtype {value.dtype}")
    return value
