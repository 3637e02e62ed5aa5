"""``if`` on the graph executor: the branches run as graphs of their own.

:mod:`interp.graph_lower` turns an ``if`` of ``main`` into one graph node (``__if``) whose
inputs are the condition, the outer values the branches read (:func:`free_nodes`) and the
branches' constants, and lowers each branch to a graph of its own
(:class:`~interp.graph_lower.IfBranches`). :func:`add_if_kernels` makes each such node's
library function an :class:`IfKernel`: it runs the taken branch's graph on a
:class:`~interp.graph_runtime.GraphRuntime` (its fused kernels compiled as the rest of the
program's are) and copies its results into the node's outputs. The code outside the ``if``
stays on the graph executor, so a model whose only control flow is an ``if`` (silero-vad
picks its front end by sample rate) no longer falls back to the interpreter as a whole.
"""

from __future__ import annotations

import threading

import numpy as np

from irlib.ir import expr as E

from .graph_runtime import GraphRuntime, parse_graph

_LEAVES = (E.Function, E.Op, E.Constant, E.GlobalVar)


def _reached(root, values: dict, callees: bool = False) -> dict:
    """Nodes reachable from ``root`` (id -> node, in visit order), not entering primitive
    functions nor nodes already lowered (``values``); with ``callees``, a call's variable
    callee is reached too (how :mod:`interp.graph_loop` finds a function calling itself)."""
    seen: dict = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen[id(node)] = node
        if node in values or isinstance(node, _LEAVES):
            continue
        kind = type(node)
        if kind is E.Call:
            stack.extend(reversed(node.args))
            if not isinstance(node.op, (E.Var, E.Function, E.Op)) or \
                    (callees and isinstance(node.op, E.Var)):
                stack.append(node.op)
        elif kind is E.Tuple:
            stack.extend(reversed(node.fields))
        elif kind is E.TupleGetItem:
            stack.append(node.tuple_value)
        elif kind is E.Let:
            stack.extend((node.body, node.value))
        elif kind is E.If:
            stack.extend((node.false_branch, node.true_branch, node.cond))
    return seen


def same_arrays(bound, arrays) -> bool:
    """Whether ``arrays`` are the very arrays ``bound`` holds (a control kernel binds its
    inputs to its sub-graphs without a copy, again only when they change).

    Args:
        bound: the arrays bound last time, or None.
        arrays: this call's arrays.
    """
    return bound is not None and len(bound) == len(arrays) and \
        all(a is b for a, b in zip(bound, arrays))


def free_nodes(node: E.If, values: dict) -> list:
    """The values an ``if``'s branches read from outside: nodes already lowered, and the
    nodes both branches reach (computed once, outside, as Relay's graph form shares them).

    Args:
        node: the ``if``.
        values: the lowered values so far (node -> entries).

    Returns:
        The nodes, in a fixed order (the true branch's visit order, then the false one's).
    """
    then_nodes = _reached(node.true_branch, values)
    else_nodes = _reached(node.false_branch, values)
    frees, added = [], set()
    for key, item in list(then_nodes.items()) + list(else_nodes.items()):
        if key in added or isinstance(item, _LEAVES):
            continue
        outer = item in values
        shared = key in then_nodes and key in else_nodes and \
            isinstance(item, (E.Call, E.Tuple, E.TupleGetItem, E.If))
        if outer or shared:
            frees.append(item)
            added.add(key)
    return frees


class IfKernel:
    """The library function of an ``__if`` node: ``fn(cond, *free, *then_consts,
    *else_consts, *outputs)``.

    Each thread gets its own runtime per branch, made on first use. The free values and
    constants are bound to the branch runtime without a copy, once per set of arrays (the
    graph passes the same storage views every run); the results are copied out.

    Args:
        name: the node's func_name (for messages).
        then_json, else_json: the branch graphs' JSON.
        num_free, then_consts, else_consts: the input counts (see
            :class:`~interp.graph_lower.IfBranches`).
        lookup: name -> library function, for the branch graphs' nodes.
    """

    def __init__(self, name: str, then_json: str, else_json: str, num_free: int,
                 then_consts: int, else_consts: int, lookup):
        self.name = name
        self.jsons = (then_json, else_json)
        self.graphs = (parse_graph(then_json), parse_graph(else_json))
        self.num_free = num_free
        self.const_counts = (then_consts, else_consts)
        self.num_inputs = 1 + num_free + then_consts + else_consts
        self.lookup = lookup
        self._local = threading.local()

    def describe(self) -> dict:
        """What :func:`control_kernel` needs to make this kernel again (JSON-able; stored
        by ``export_library``)."""
        return {"kind": "if", "graphs": list(self.jsons), "num_free": self.num_free,
                "consts": list(self.const_counts)}

    def _runtime(self, which: int):
        runtimes = getattr(self._local, "runtimes", None)
        if runtimes is None:
            runtimes = self._local.runtimes = [None, None]
            self._local.bound = [None, None]
        if runtimes[which] is None:
            runtimes[which] = GraphRuntime(self.graphs[which], self.lookup)
        return runtimes[which]

    def __call__(self, cond, *arrays):
        which = 0 if cond.reshape(-1)[0] else 1
        runtime = self._runtime(which)
        free = arrays[:self.num_free]
        start = self.num_free + (0 if which == 0 else self.const_counts[0])
        inputs = free + arrays[start:start + self.const_counts[which]]
        bound = self._local.bound
        if not same_arrays(bound[which], inputs):
            for index, array in enumerate(inputs):
                runtime.bind_input(index, array)
            bound[which] = inputs
        runtime.run()
        outputs = arrays[self.num_inputs - 1:]
        entries = runtime.entries
        for out, (nid, index) in zip(outputs, runtime.graph.heads):
            np.copyto(out, entries[runtime.graph.entry_id(nid, index)])


def add_if_kernels(lowered, lib, graph_json) -> None:
    """Put an :class:`IfKernel` in ``lib`` for every ``__if`` node of ``lowered``, and a
    :class:`~interp.graph_loop.LoopKernel` for every ``__loop`` node.

    Args:
        lowered: the :class:`~interp.graph_lower.LoweredGraph` (its ``branches``).
        lib: the :class:`~interp.build.Library` (its ``compiled`` table gets the kernels;
            the branches' fused functions are already in it).
        graph_json: ``(lowered graph, lib) -> (json text, memory)`` (build's writer).
    """
    from .graph_functions import CompiledFunction
    from .graph_loop import LoopBodies, LoopKernel
    for name, branches in lowered.branches.items():
        if isinstance(branches, LoopBodies):
            jsons = tuple(graph_json(graph, lib)[0] for graph in
                          (branches.cond_graph, branches.step_graph, branches.exit_graph))
            lib.compiled[name] = CompiledFunction(LoopKernel(name, jsons, branches,
                                                             lib.get_function), "control", ())
            continue
        then_json = graph_json(branches.then_graph, lib)[0]
        else_json = graph_json(branches.else_graph, lib)[0]
        kernel = IfKernel(name, then_json, else_json, branches.num_free,
                          branches.then_consts, branches.else_consts, lib.get_function)
        lib.compiled[name] = CompiledFunction(kernel, "control", ())


def control_kernel(name: str, description: dict, lookup):
    """The kernel of a control-flow node from its :meth:`IfKernel.describe` or
    :meth:`~interp.graph_loop.LoopKernel.describe` (what ``load_module`` reads back).

    Args:
        name: the node's func_name.
        description: the stored description.
        lookup: name -> library function, for the sub-graphs' nodes.

    Raises:
        IRError: for a description that is not one (not a dict, an unknown kind, a missing
            or malformed field), naming the node.
    """
    from irlib.errors import IRError
    from .graph_loop import LoopBodies, LoopKernel
    kind = description.get("kind") if isinstance(description, dict) else None
    try:
        if kind == "if":
            then_consts, else_consts = description["consts"]
            then_json, else_json = description["graphs"]
            return IfKernel(name, then_json, else_json, int(description["num_free"]),
                            int(then_consts), int(else_consts), lookup)
        if kind == "loop":
            consts = tuple(int(count) for count in description["consts"])
            graphs = tuple(description["graphs"])
            if len(consts) != 3 or len(graphs) != 3:
                raise ValueError("a loop has three part graphs")
            bodies = LoopBodies(None, None, None, bool(description["go_on"]),
                                int(description["num_state"]), int(description["num_outer"]),
                                consts, int(description.get("trips", -1)),
                                tuple(description.get("appended", ())),
                                tuple(description.get("control", ())))
            return LoopKernel(name, graphs, bodies, lookup)
    except (KeyError, TypeError, ValueError, IRError) as error:
        # IRError: a part graph's JSON that parse_graph refuses.
        raise IRError(f"control-flow node {name!r}: malformed {kind} description in the "
                      f"library ({type(error).__name__}: {error})") from None
    raise IRError(f"control-flow node {name!r}: unknown kind {kind!r} in the library")
