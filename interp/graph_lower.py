"""Lowering an optimised ``main`` to the graph executor's node list (Relay's graph codegen).

The input is a type-checked dataflow function whose op calls all sit in ``Primitive``
functions (what :func:`irlib.transform.optimize` produces). Each node of the result is:

* a ``null`` node per parameter of ``main`` (named by its ``name_hint``) and per constant
  (named ``p0``, ``p1``, ... and returned in ``params``);
* a ``tvm_op`` node per call of a primitive function, reading the flattened entries of its
  arguments and writing one entry per tensor of its (flattened) result. Structurally equal
  functions share one ``func_name``; a reshape-only function becomes ``__nop`` (node name
  ``reshape_nop``), whose output aliases its input.

Tuples and projections cost nothing: they only regroup entries. An ``if`` becomes one node
(``func_name`` ``__if``, ``__if_1``...) reading the condition and the outer values its
branches use, each branch lowered to a graph of its own (:attr:`LoweredGraph.branches`,
run by :mod:`interp.graph_control`), so the rest of the program stays compiled. A loop (a
let-bound tail-recursive function) becomes one ``__loop`` node (:mod:`interp.graph_loop`;
with state that grows, :mod:`interp.graph_growing`: static outputs, and the fused functions
after it whose parameters were typed ``?`` are specialised to them). Other recursive
functions, closures, global calls, references, ADTs and other ``Any`` dims are rejected
with a
:class:`GraphUnsupportedError` naming the construct (run such programs on the interpreter
or ``to_python``). Symbolic dims (``Tensor[(n, 16), float32]``) are kept in the node types:
the executor evaluates them per run (:mod:`interp.graph_symbolic`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from irlib.errors import IRError
from irlib.ir import expr as E
from irlib.ir.attrs import Attrs
from irlib.ir.dim_binding import size_param_names
from irlib.ir.dims import DimExpr
from irlib.ir.functor import free_vars, post_order
from irlib.ir.structural import structural_equal, structural_hash
from irlib.ir.types import TensorType, TupleType

from .graph_retype import has_any

_MAX_NAME = 80


class GraphUnsupportedError(IRError):
    """A program uses something the graph executor cannot run (control flow, closures,
    ADTs, references, ``Any`` dims, a size variable no input binds, non-tensor inputs)."""


@dataclass
class GraphNode:
    """One node of the lowered graph.

    Attributes:
        name: the node name.
        inputs: ``(node_id, output_index)`` pairs (empty for null nodes).
        func_name: the library function (None for null nodes).
        num_outputs: number of output entries.
        types: the TensorType of each output entry.
    """

    name: str
    inputs: list
    func_name: str | None
    num_outputs: int
    types: list


@dataclass
class LoweredGraph:
    """The result of :func:`lower_function`.

    Attributes:
        nodes: :class:`GraphNode` s in execution order.
        heads: ``(node_id, output_index)`` of each graph output.
        functions: func_name -> the primitive :class:`~irlib.ir.expr.Function`.
        params: constant name (``p0``...) -> numpy array.
        input_names: the names of ``main``'s parameters, in order.
        size_params: names of ``main``'s scalar int parameters whose value binds the size
            variable of the same name (its ``"size_params"`` attribute).
        size_divisible: ``(dim, divisor)`` pairs: symbolic sizes that ops need to divide
            exactly (a ``split`` into equal sections along a symbolic axis).
    """

    nodes: list = field(default_factory=list)
    heads: list = field(default_factory=list)
    functions: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    input_names: list = field(default_factory=list)
    size_params: tuple = ()
    size_divisible: list = field(default_factory=list)
    branches: dict = field(default_factory=dict)
    """``__if`` func_name -> :class:`IfBranches`, ``__loop`` func_name ->
    :class:`~interp.graph_loop.LoopBodies` (shared by the part graphs)."""


@dataclass
class IfBranches:
    """The lowered branches of one ``if`` node.

    Its node's inputs are the condition, then ``num_free`` entries (the outer values the
    branches read), then the constants of the true branch and those of the false branch
    (``then_consts``/``else_consts`` of them). Each branch graph's inputs are the free
    entries followed by its own constants; its heads are the node's outputs.
    """

    then_graph: LoweredGraph
    else_graph: LoweredGraph
    num_free: int
    then_consts: int
    else_consts: int


def is_primitive(func) -> bool:
    """Whether ``func`` is a Function with ``Primitive=1``."""
    return isinstance(func, E.Function) and func.attrs is not None \
        and bool(func.attrs.get("Primitive", 0))


def _tensor_types(ty, where: str) -> list:
    """The TensorTypes of a (nested tuple) type, flattened, checked to have no ``Any`` dim
    (static ints and symbolic DimExprs are fine)."""
    out, stack = [], [ty]
    while stack:
        current = stack.pop()
        if isinstance(current, TupleType):
            stack.extend(reversed(current.fields))
        elif isinstance(current, TensorType):
            if not all(isinstance(d, (int, np.integer, DimExpr)) for d in current.shape):
                raise GraphUnsupportedError(
                    f"graph executor needs static shapes (or symbolic dims such as n, not "
                    f"Any); {where} has type {current} (use the interpreter for dynamic "
                    f"shapes)")
            if current.dtype == "string":
                raise GraphUnsupportedError(
                    f"graph executor stores numeric tensors only; {where} has type {current} "
                    f"(string tensors run on the interpreter)")
            out.append(current)
        else:
            raise GraphUnsupportedError(
                f"graph executor supports tensors and tuples of tensors only; {where} has "
                f"type {current}")
    return out


def _flatten(value) -> list:
    """Entries of a lowered value (an entry, or a nested list of them), left to right."""
    out, stack = [], [value]
    while stack:
        current = stack.pop()
        if isinstance(current, list):
            stack.extend(reversed(current))
        else:
            out.append(current)
    return out


def _unflatten(ty, entries: list):
    """Regroup ``entries`` along the tuple structure of ``ty``."""
    iterator = iter(entries)

    def build(current):        # recursion over a type: types are shallow
        if isinstance(current, TupleType):
            return [build(f) for f in current.fields]
        return next(iterator)
    return build(ty)


def _op_names(func: E.Function) -> list:
    names, stack, seen = [], [func.body], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, E.Call):
            if isinstance(node.op, E.Op):
                names.append(node.op.name)
            stack.extend(node.args)
        elif isinstance(node, E.Tuple):
            stack.extend(node.fields)
        elif isinstance(node, E.TupleGetItem):
            stack.append(node.tuple_value)
        elif isinstance(node, E.Let):
            stack.extend((node.value, node.body))
    return list(reversed(names))


class _Lowerer:
    def __init__(self, parent: "_Lowerer | None" = None, functions: dict | None = None):
        self.graph = LoweredGraph()
        self.parent = parent
        self.node_names: dict = {}
        self.inherited_functions = dict(functions or {})
        self.const_entries: list = []    # a branch: the parent's entries of its constants
        self.pending_if: dict = {}
        if parent is None:
            self.by_hash: dict = {}
            self.used_names: dict = {}
        else:                            # one function table and one name space for all
            self.by_hash, self.used_names = parent.by_hash, parent.used_names
            self.graph.functions = parent.graph.functions
            self.graph.params = parent.graph.params
            self.graph.branches = parent.graph.branches

    # -- nodes --------------------------------------------------------------------------------
    def add_null(self, name: str, ty) -> tuple:
        types = _tensor_types(ty, f"%{name}")
        if len(types) != 1:
            raise GraphUnsupportedError(f"graph executor inputs must be tensors; %{name} has type {ty}")
        self.graph.nodes.append(GraphNode(name, [], None, 1, types))
        return (len(self.graph.nodes) - 1, 0)

    def add_constant(self, node: E.Constant) -> tuple:
        data = node.data.numpy()
        if self.parent is not None:      # a branch: the constant is an input of the if node
            outer = self.parent.add_constant(node)
            self.const_entries.append(outer)
            name = self.parent.graph.nodes[outer[0]].name
            return self.add_null(name, TensorType(data.shape, data.dtype.name))
        name = f"p{len(self.graph.params)}"
        self.graph.params[name] = data
        return self.add_null(name, TensorType(data.shape, data.dtype.name))

    def unique_name(self, base: str) -> str:
        count = self.used_names.get(base, 0)
        self.used_names[base] = count + 1
        return base if count == 0 else f"{base}_{count}"

    def function_name(self, func: E.Function) -> str:
        key = structural_hash(func)
        for other, name in self.by_hash.get(key, ()):
            if structural_equal(func, other):
                return name
        ops = "_".join(name.replace(".", "_") for name in _op_names(func)) or "identity"
        name = self.unique_name(("tvmgen_default_fused_" + ops)[:_MAX_NAME])
        self.by_hash.setdefault(key, []).append((func, name))
        self.graph.functions[name] = func
        return name

    def add_call(self, func: E.Function, call: E.Call, args: list, out_type=None):
        result_type = call.checked_type if out_type is None else out_type
        out_types = _tensor_types(result_type, "a call result")
        inputs = _flatten(args)
        reshape_only = func.attrs is not None and func.attrs.get("relay.reshape_only", 0)
        if reshape_only and len(inputs) == 1 and len(out_types) == 1:
            in_type = self.graph.nodes[inputs[0][0]].types[inputs[0][1]]
            if in_type.dtype == out_types[0].dtype:
                self.graph.nodes.append(GraphNode("reshape_nop", inputs, "__nop", 1, out_types))
                return (len(self.graph.nodes) - 1, 0)
        func_name = self.function_name(func)
        count = self.node_names.get(func_name, 0)
        self.node_names[func_name] = count + 1
        node_name = func_name if count == 0 else f"{func_name}_n{count}"
        self.graph.nodes.append(GraphNode(node_name, inputs, func_name, len(out_types),
                                          out_types))
        nid = len(self.graph.nodes) - 1
        return _unflatten(result_type, [(nid, i) for i in range(len(out_types))])

    # -- the walk -----------------------------------------------------------------------------
    def lower(self, func: E.Function) -> LoweredGraph:
        values: dict = {}
        for param in func.params:
            ty = param._checked_type or param.type_annotation
            values[param] = self.add_null(param.name_hint, ty)
            self.graph.input_names.append(param.name_hint)
        self.graph.heads = _flatten(self.lower_expr(func.body, values))
        return self.graph

    def lower_expr(self, body, values: dict):
        """The lowered value of ``body`` given the values of its free variables."""
        functions: dict = dict(self.inherited_functions)
        stack = [("visit", body)]
        while stack:
            event, node = stack.pop()
            if event == "visit":
                if node in values:
                    continue
                self.enter(node, values, functions, stack)
            elif event == "let":
                if isinstance(node.value, E.Function):
                    functions[node.var] = node.value
                else:
                    values[node.var] = values[node.value]
                stack.append(("let_done", node))
                stack.append(("visit", node.body))
            elif event == "let_done":
                values[node] = values[node.body]
            else:
                values[node] = self.finish(node, values, functions)
        return values[body]

    def enter(self, node, values, functions, stack) -> None:
        kind = type(node)
        if kind is E.Var:
            raise GraphUnsupportedError(f"graph executor: free variable %{node.name_hint}")
        if kind is E.Constant:
            values[node] = self.add_constant(node)
        elif kind is E.Let:
            stack.append(("let", node))
            if not isinstance(node.value, E.Function):
                stack.append(("visit", node.value))
        elif kind is E.If:
            from .graph_control import free_nodes
            frees = free_nodes(node, values)
            self.pending_if[node] = (frees, dict(functions))
            stack.append(("done", node))
            stack.extend(("visit", child) for child in reversed([node.cond] + frees))
        elif kind in (E.Tuple, E.TupleGetItem, E.Call):
            stack.append(("done", node))
            if kind is E.Tuple:
                operands = node.fields
            elif kind is E.TupleGetItem:
                operands = (node.tuple_value,)
            else:
                operands = node.args
            stack.extend(("visit", child) for child in reversed(operands))
        else:
            what = "a function value (closure)" if kind is E.Function else kind.__name__
            raise GraphUnsupportedError(f"graph executor cannot run {what}: it supports dataflow programs "
                          f"only; use create_executor('debug') or 'vm' for this program")

    def finish(self, node, values, functions):
        kind = type(node)
        if kind is E.Tuple:
            return [values[f] for f in node.fields]
        if kind is E.TupleGetItem:
            return values[node.tuple_value][node.index]
        if kind is E.If:
            return self.finish_if(node, values)
        func = node.op
        if isinstance(func, E.Var) and func in functions:
            func = functions[func]
            if not is_primitive(func):
                from .graph_loop import calls_itself
                if calls_itself(node.op, func):
                    return self.finish_loop(node, node.op, func, values, functions)
        elif isinstance(func, E.Op):
            func = _wrap_op_call(node)
        args = [values[a] for a in node.args]
        if isinstance(func, E.Function) and not is_primitive(func):
            # A Primitive=0 group (tuples and projections only): inline it.
            return self.lower_expr(func.body, dict(zip(func.params, args)))
        if not is_primitive(func):
            raise GraphUnsupportedError(f"graph executor cannot call {type(node.op).__name__} "
                          f"{getattr(node.op, 'name_hint', '')}: only primitive (fused) "
                          f"functions; run the program through interp.build")
        out_type = None
        if has_any(node.checked_type) or \
                any(has_any(p._checked_type or p.type_annotation) for p in func.params):
            func, out_type = self.specialise(func, args)
        return self.add_call(func, node, args, out_type)

    def specialise(self, func: E.Function, args: list) -> tuple:
        """``(function, result type)``: a copy of the primitive ``func`` typed for the
        lowered ``args`` (a parameter typed with a ``?`` dim, fed by a loop whose outputs
        have static shapes, gets the argument's shape: see :mod:`interp.graph_retype`)."""
        from .graph_retype import specialise_primitive
        arg_types = [self.entry_type(a) for a in args]
        try:
            typed = specialise_primitive(func, arg_types)
        except IRError as error:        # a type error, or a relation refusing these shapes
            raise GraphUnsupportedError(
                f"graph executor: a fused function with dynamic (?) parameter types does not "
                f"type-check with its arguments' types {arg_types} ({error})") from None
        return typed, typed.checked_type.ret_type

    def entry_type(self, value):
        """The type of a lowered value: an entry's TensorType, a TupleType for a list."""
        if isinstance(value, list):     # recursion over a value's tuple nesting: shallow
            return TupleType([self.entry_type(item) for item in value])
        nid, index = value
        return self.graph.nodes[nid].types[index]

    def finish_if(self, node: E.If, values: dict):
        """One node running the ``if`` (see :class:`IfBranches`)."""
        frees, functions = self.pending_if.pop(node)
        out_types = _tensor_types(node.checked_type, "the result of an if")
        _static(out_types, "the result of an if")
        branches = [self.lower_branch(branch, frees, functions)
                    for branch in (node.true_branch, node.false_branch)]
        cond = _flatten(values[node.cond])
        free_entries = [e for f in frees for e in _flatten(values[f])]
        inputs = cond + free_entries + branches[0].const_entries + branches[1].const_entries
        func_name = self.unique_name("__if")
        self.graph.branches[func_name] = IfBranches(
            branches[0].graph, branches[1].graph, len(free_entries),
            len(branches[0].const_entries), len(branches[1].const_entries))
        self.graph.nodes.append(GraphNode(func_name, inputs, func_name, len(out_types),
                                          out_types))
        nid = len(self.graph.nodes) - 1
        return _unflatten(node.checked_type, [(nid, i) for i in range(len(out_types))])

    def finish_loop(self, node: E.Call, var: E.Var, func: E.Function, values: dict,
                    functions: dict):
        """One node running a call of the tail-recursive ``func`` (see
        :mod:`interp.graph_loop`)."""
        from .graph_loop import LoopBodies, loop_parts
        parts = loop_parts(var, func)
        if parts is None:
            raise GraphUnsupportedError(
                f"graph executor runs a recursive function (%{var.name_hint}) only as a loop: "
                f"a body that is one if, one branch a tail call of %{var.name_hint} "
                f"(run this program on the interpreter)")
        outer = [v for v in free_vars(func) if v is not var and v not in functions]
        missing = [v.name_hint for v in outer if v not in values]
        if missing:
            raise GraphUnsupportedError(f"graph executor: loop %{var.name_hint} reads "
                                        f"%{missing[0]}, which is not a value of main")
        out_type = node.checked_type
        params, exprs = func.params, (parts.cond, E.Tuple(parts.step), parts.result)
        if any(has_any(p._checked_type or p.type_annotation) for p in func.params) \
                or has_any(out_type):
            # State that grows (scan outputs): parts with symbolic sizes, static outputs.
            from .graph_growing import growing_loop
            grown = growing_loop(var, func, parts, node, outer)
            out_type, params = grown.out_type, grown.params
            exprs = (grown.cond, E.Tuple(grown.step), grown.result)
            outer_vars = [grown.outer[v] for v in outer]
        else:
            grown, outer_vars = None, outer
        trips, appended, control = -1, (), ()
        if grown is not None:
            trips, appended, control = grown.trips, grown.appended, grown.control
        elif all(isinstance(p._checked_type or p.type_annotation, TensorType)
                 for p in func.params):
            # A static loop with a trip count known at build time runs as a growing one
            # does: recorded steps, no condition graph, the control state kept.
            from .graph_growing import control_state, static_trip_count
            found = static_trip_count(var, func, parts, node.args)
            if isinstance(found, int):
                trips = found
                control = tuple(func.params.index(p)
                                for p in control_state(var, func, parts))
        out_types = _tensor_types(out_type, "the result of a loop")
        _static(out_types, "the result of a loop")
        inputs = [(p, "loop_v") for p in params] + [(v, "loop_in") for v in outer_vars]
        symbolic = params is not func.params
        parts_lowered = [self.lower_part(expr, inputs, functions, symbolic)
                         for expr in exprs]
        state = _flatten([values[a] for a in node.args])
        outer_entries = [e for v in outer for e in _flatten(values[v])]
        consts = tuple(len(sub.const_entries) for sub in parts_lowered)
        func_name = self.unique_name("__loop")
        self.graph.branches[func_name] = LoopBodies(
            *(sub.graph for sub in parts_lowered), parts.go_on, len(state),
            len(outer_entries), consts, trips, appended, control)
        entries = state + outer_entries + [e for sub in parts_lowered
                                           for e in sub.const_entries]
        self.graph.nodes.append(GraphNode(func_name, entries, func_name, len(out_types),
                                          out_types))
        nid = len(self.graph.nodes) - 1
        return _unflatten(out_type, [(nid, i) for i in range(len(out_types))])

    def lower_part(self, expr, inputs: list, functions: dict,
                   symbolic: bool = False) -> "_Lowerer":
        """A sub-lowerer holding ``expr`` as a graph whose inputs are the entries of
        ``inputs`` (``(variable, name prefix)`` pairs), then ``expr``'s constants; with
        ``symbolic``, the inputs may have size variables (a loop whose state grows)."""
        sub = _Lowerer(self, functions)
        values: dict = {}
        for position, (variable, prefix) in enumerate(inputs):
            ty = variable._checked_type or variable.type_annotation
            types = _tensor_types(ty, f"loop variable %{variable.name_hint}")
            if not symbolic:
                _static(types, f"loop variable %{variable.name_hint}")
            leaves = [sub.add_null(f"{prefix}{position}_{k}", t) for k, t in enumerate(types)]
            values[variable] = _unflatten(ty, leaves)
        sub.graph.heads = _flatten(sub.lower_expr(expr, values))
        return sub

    def lower_branch(self, branch, frees: list, functions: dict) -> "_Lowerer":
        """A sub-lowerer holding ``branch`` as a graph whose inputs are ``frees``'
        entries (then the branch's constants)."""
        sub = _Lowerer(self, functions)
        values: dict = {}
        for position, free in enumerate(frees):
            types = _tensor_types(free.checked_type, "a value an if branch reads")
            _static(types, "a value an if branch reads")
            leaves = [sub.add_null(f"if_in{position}_{k}", ty) for k, ty in enumerate(types)]
            values[free] = _unflatten(free.checked_type, leaves)
        sub.graph.heads = _flatten(sub.lower_expr(branch, values))
        return sub


def _static(types: list, where: str) -> None:
    if any(not isinstance(d, (int, np.integer)) for ty in types for d in ty.shape):
        raise GraphUnsupportedError(f"graph executor runs an if or a loop with static shapes "
                                    f"only; {where} has a symbolic dim")


def _wrap_op_call(call: E.Call) -> E.Function:
    """A typed ``Primitive`` function around a bare op call."""
    params = tuple(E.Var(f"p{i}", a.checked_type) for i, a in enumerate(call.args))
    for param, arg in zip(params, call.args):
        param.with_type(arg.checked_type)
    body = E.Call(call.op, params, call.attrs, call.type_args)
    body.with_type(call.checked_type)
    func = E.Function(params, body, call.checked_type, (), Attrs({"Primitive": 1}))
    return func


def lower_function(func: E.Function) -> LoweredGraph:
    """Lower a typed, fused dataflow function to graph nodes.

    Args:
        func: ``main`` after the optimisation pipeline (types inferred, ops fused).

    Returns:
        The :class:`LoweredGraph`.

    Raises:
        GraphUnsupportedError: for constructs the graph executor cannot run (control flow,
            closures, ADTs, dynamic shapes, non-tensor inputs).
    """
    graph = _Lowerer().lower(func)
    graph.size_params = size_param_names(func)
    graph.size_divisible = _divisibility(func)
    return graph


def _divisibility(func: E.Function) -> list:
    """``(dim, sections)`` of every ``split`` into equal sections along a symbolic axis, in
    ``func`` and the fused functions it calls: type checking let them through, so the
    run-time size must be checked (else the last elements would be silently dropped)."""
    found = []
    for node in post_order(func):
        if isinstance(node, E.Call) and isinstance(node.op, E.Op) and node.op.name == "split":
            sections = node.attrs["indices_or_sections"]
            data_type = node.args[0].checked_type
            if isinstance(sections, int) and isinstance(data_type, TensorType):
                dim = data_type.shape[node.attrs["axis"] % data_type.ndim]
                if isinstance(dim, DimExpr) and (dim, sections) not in found:
                    found.append((dim, sections))
    return found

