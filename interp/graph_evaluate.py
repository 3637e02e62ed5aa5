"""``create_executor("graph", ...)``: Relay's executor API over ``build`` + the graph executor.

``evaluate()`` (or ``evaluate(mod's main)``) builds ``main`` once for the executor's target
and returns a callable that sets the inputs, runs the graph, and returns an NDArray (a
:class:`~interp.values.TupleValue` of them for a tuple result). Programs the graph executor
cannot run (control flow, closures, ADTs, references, dynamic shapes) and non-function
expressions are evaluated by the reference interpreter instead, so a program that works
with ``kind="debug"`` works with ``kind="graph"``; ``executor.fallback`` then holds the
reason.
"""

from __future__ import annotations

from irlib.errors import InterpreterError
from irlib.ir.types import TupleType
from irlib.ndarray import NDArray

from .executor import Executor
from .graph_lower import GraphUnsupportedError
from .values import TupleValue


class GraphKindExecutor(Executor):
    """An :class:`~interp.executor.Executor` whose ``main`` runs on the graph executor."""

    fallback: str | None = None

    def evaluate(self, expr=None, binds: dict | None = None):
        """See :meth:`interp.executor.Executor.evaluate`."""
        main = self.mod.get_global_var("main") if "main" in self.mod else None
        if binds or not (expr is None or (main is not None and expr is main)):
            return super().evaluate(expr, binds)
        from .build import build
        from .graph_executor import GraphModule
        target = "python" if self.target == "python" else self.target
        try:
            factory = build(self.mod, target=target, params=self.params)
        except GraphUnsupportedError as error:
            self.fallback = str(error)
            return super().evaluate(expr, binds)
        module = GraphModule(factory["default"](self.device))
        from irlib.transform import InferType
        func = InferType()(self.mod)["main"]
        free = [p for p in func.params if p.name_hint not in self.params]
        return GraphFunction(module, free, func.checked_type.ret_type)


class GraphFunction:
    """``main`` on a graph executor as a Python callable (positional or keyword arguments).

    Args:
        module: the :class:`~interp.graph_executor.GraphModule`.
        params: main's parameters that are graph inputs, in order.
        ret_type: main's return type (to regroup tuple outputs).
    """

    def __init__(self, module, params, ret_type):
        self.module = module
        self.params = list(params)
        self.ret_type = ret_type
        self._count = len(self.params)
        # a flat tuple of tensors (a decode step's logits and caches, an LSTM's state)
        # needs no regrouping walk per call
        self._flat = isinstance(ret_type, TupleType) and not any(
            isinstance(field, TupleType) for field in ret_type.fields)

    def __call__(self, *args, **kwargs):
        if kwargs or len(args) != self._count:
            if len(args) > self._count:
                raise InterpreterError(f"main takes {self._count} argument(s), "
                                       f"got {len(args)}")
            args = self._positional(args, kwargs)
        module = self.module.module
        device = module.device
        heads = [NDArray(array, device) for array in module.thread_runtime().call_arrays(args)]
        if self._flat:
            return TupleValue(*heads)
        if not isinstance(self.ret_type, TupleType):
            return heads[0]
        iterator = iter(heads)

        def regroup(ty):           # recursion over a type: shallow
            if isinstance(ty, TupleType):
                return TupleValue(*[regroup(f) for f in ty.fields])
            return next(iterator)
        return regroup(self.ret_type)

    def _positional(self, args, kwargs) -> list:
        """The arguments in parameter order, keywords placed by name."""
        given = dict(enumerate(args))
        for key, value in kwargs.items():
            matches = [i for i, p in enumerate(self.params) if p.name_hint == key]
            if not matches:
                raise InterpreterError(f"main has no parameter named {key!r}")
            if matches[0] in given:
                raise InterpreterError(f"duplicate argument {key!r} for main")
            # NOTE: parameters sharing a name (the lstm's per-step "data") all take the value.
            for index in matches:
                given.setdefault(index, value)
        for index, param in enumerate(self.params):
            if index not in given:
                raise InterpreterError(f"missing argument %{param.name_hint} of main")
        return [given[index] for index in range(len(self.params))]

    def __repr__(self) -> str:
        return "<GraphFunction main>"

