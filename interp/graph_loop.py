"""Loops on the graph executor: a tail-recursive function runs as one ``__loop`` node.

The ONNX importer (``Loop``, RNNs with a run-time length) and Relay's ``while_loop`` write a
loop as a let-bound function that calls itself in tail position of one ``if`` branch::

    let %loop = fn (%i, %cond, %x) {
      if (<cond of %i, %cond, outer values>) { %loop(<next %i>, <next %cond>, <next %x>) }
      else { <result of %i, %cond, %x> }
    };
    %loop(0i64, True, %x0)

:func:`loop_parts` recognises that form. :mod:`interp.graph_lower` then lowers each call of
such a function to one graph node (``__loop``, ``__loop_1``, ...) whose inputs are the
initial state, the outer values the function reads (its free variables) and the constants
of its three parts, each lowered to a graph of its own (:class:`LoopBodies`): the
condition, the step (the tail call's arguments: the next state) and the exit value.
:class:`LoopKernel` runs them: condition, then step while it holds, then exit. The state
lives in buffers bound to the three graphs once; each step's results are copied into
them. Everything outside the loop stays compiled, as for an ``if``
(:mod:`interp.graph_control`).

Loops whose state changes shape between iterations (ONNX ``Scan``, ``Loop`` scan outputs
grown by concatenation: state typed with ``?`` dims) run as a ``__loop`` node too when their
trip count is known at build time (:mod:`interp.graph_growing` finds it and the node's static
output types; :class:`LoopBodies` ``trips``). Their part graphs have symbolic dims (a size
variable per ``?``), and the kernel runs them differently: on the first call with a set of
input arrays it runs the known number of steps on
:class:`~interp.graph_symbolic.SymbolicRuntime` s (each step's state has its own sizes) and
records each step's calls (the argument tuples of that binding) and the arrays its results
are copied into (two buffers per state variable, taking turns); later calls replay the
recorded calls, with small kernels chained, without binding, planning or running the
condition. A scan output whose step only appends a row (:attr:`LoopBodies.appended`) lives
in one array of all its rows, each step writing the next row; the control state
(:attr:`LoopBodies.control`: the counter, the condition variable) takes the same values at
every run, so they are kept from the recorded run and the calls only they need are not
replayed. A loop with static state and a build-time trip count (an ONNX ``Loop`` with a
constant ``M``) runs from recorded steps the same way. Growing loops whose trip count depends on run-time data raise
:class:`~interp.graph_lower.GraphUnsupportedError` and run on the interpreter.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from irlib.ir import expr as E

from .graph_control import _reached, same_arrays
from .graph_runtime import GraphInputError, GraphRuntime, parse_graph

__all__ = ["LoopBodies", "LoopKernel", "LoopParts", "calls_itself", "loop_parts"]


@dataclass
class LoopParts:
    """A tail-recursive function's pieces (see :func:`loop_parts`).

    Attributes:
        cond: the ``if`` condition (a bool scalar expression of the parameters).
        go_on: the condition value that means "take the recursive call" (True when the
            call is in the true branch).
        step: the recursive call's arguments, one per parameter.
        result: the other branch: the function's value when the loop stops.
    """

    cond: E.Expr
    go_on: bool
    step: tuple
    result: E.Expr


@dataclass
class LoopBodies:
    """The lowered parts of one ``__loop`` node.

    Its inputs are the ``num_state`` initial state entries, the ``num_outer`` entries of the
    outer values, then the constants of the condition, step and exit graphs (``consts`` of
    each). Every part graph's inputs are the state entries, the outer entries and its own
    constants, in that order; the condition graph's one head is the condition, the step
    graph's heads the next state, the exit graph's heads the node's outputs.
    """

    cond_graph: object
    step_graph: object
    exit_graph: object
    go_on: bool
    num_state: int
    num_outer: int
    consts: tuple
    trips: int = -1
    """The trip count found at build time (:func:`interp.graph_growing.static_trip_count`),
    else -1. A loop whose state changes shape (its part graphs have symbolic dims) needs
    it; any loop with one runs from recorded steps without its condition graph."""
    appended: tuple = ()
    """State variables whose step head is the row to append along axis 0 (scan outputs,
    :func:`interp.graph_growing.append_rows`), not the whole next value."""
    control: tuple = ()
    """State variables of the condition (:func:`interp.graph_growing.control_state`): the
    same values at every run, kept from the first instead of recomputed."""


def _mentions(var: E.Var, root) -> bool:
    return any(node is var for node in _reached(root, {}, callees=True).values())


def calls_itself(var: E.Var, func: E.Function) -> bool:
    """Whether ``func`` (bound to ``var`` by a let) refers to ``var`` in its body.

    Args:
        var: the let-bound variable.
        func: the function bound to it.
    """
    return _mentions(var, func.body)


def loop_parts(var: E.Var, func: E.Function) -> LoopParts | None:
    """The pieces of ``func`` when it is a loop in the form above, else None.

    The body must be one ``if`` (lets before it are not accepted); one branch is a call of
    ``var`` with one argument per parameter, and neither the condition nor the other branch
    mentions ``var``.

    Args:
        var: the let-bound variable ``func`` calls itself through.
        func: the function.
    """
    body = func.body
    if type(body) is not E.If:
        return None
    for go_on, call, other in ((True, body.true_branch, body.false_branch),
                               (False, body.false_branch, body.true_branch)):
        if type(call) is E.Call and call.op is var and len(call.args) == len(func.params) \
                and not _mentions(var, other) and not _mentions(var, body.cond) \
                and not any(_mentions(var, arg) for arg in call.args):
            return LoopParts(body.cond, go_on, tuple(call.args), other)
    return None


class LoopKernel:
    """The library function of a ``__loop`` node: ``fn(*state, *outer, *consts, *outputs)``.

    Without a build-time trip count, each thread gets its own three runtimes and state
    buffers, made on first use; the state buffers, outer values and constants are bound to
    the runtimes without a copy, once per set of input arrays, and condition and step run
    while the condition holds. With one (``bodies.trips >= 0``; required when the part
    graphs have symbolic dims), the steps are recorded once per set of input arrays and
    replayed (see the module docstring).

    Args:
        name: the node's func_name (for messages).
        jsons: the condition, step and exit graphs' JSON.
        bodies: the node's :class:`LoopBodies` (counts, ``go_on``, trip count, appended
            and control state).
        lookup: name -> library function, for the part graphs' nodes.

    Raises:
        ValueError: for symbolic part graphs without a trip count, or a state index out of
            range (``control_kernel`` reports it as an IRError naming the node).
    """

    def __init__(self, name: str, jsons: tuple, bodies: LoopBodies, lookup):
        self.name = name
        self.jsons = tuple(jsons)
        self.graphs = tuple(parse_graph(text) for text in jsons)
        self.go_on = bool(bodies.go_on)
        self.num_state = bodies.num_state
        self.num_outer = bodies.num_outer
        self.consts = tuple(bodies.consts)
        self.num_inputs = self.num_state + self.num_outer + sum(self.consts)
        self.lookup = lookup
        self.trips = int(bodies.trips)
        self.appended = tuple(int(k) for k in bodies.appended)
        self.control = tuple(int(k) for k in bodies.control)
        for what, indices in (("appended", self.appended), ("control", self.control)):
            if any(not 0 <= k < self.num_state for k in indices):
                raise ValueError(f"loop {name!r}: {what} state index out of range "
                                 f"{list(indices)}")
        self.growing = any(graph.is_symbolic for graph in self.graphs)
        if self.growing and self.trips < 0:
            raise ValueError(f"loop {name!r}: a loop whose state changes shape needs the trip "
                             f"count found at build time")
        self._local = threading.local()

    def describe(self) -> dict:
        """What :func:`interp.graph_control.control_kernel` needs to make this kernel again
        (JSON-able; stored by ``export_library``)."""
        return {"kind": "loop", "graphs": list(self.jsons), "go_on": self.go_on,
                "num_state": self.num_state, "num_outer": self.num_outer,
                "consts": list(self.consts), "trips": self.trips,
                "appended": list(self.appended), "control": list(self.control)}

    def _setup(self, arrays):
        local = self._local
        if getattr(local, "runtimes", None) is None:
            local.runtimes = [GraphRuntime(graph, self.lookup) for graph in self.graphs]
            local.state = [np.empty_like(a) for a in arrays[:self.num_state]]
            local.next = [np.empty_like(a) for a in arrays[:self.num_state]]
            local.bound = None
        inputs = arrays[:self.num_inputs]
        if not same_arrays(local.bound, inputs):
            shared = list(local.state) + list(inputs[self.num_state:
                                                     self.num_state + self.num_outer])
            start = self.num_state + self.num_outer
            for runtime, count in zip(local.runtimes, self.consts):
                for index, array in enumerate(shared + list(inputs[start:start + count])):
                    runtime.bind_input(index, array)
                start += count
            local.bound = inputs
        return local

    @staticmethod
    def _heads(runtime) -> list:
        entries, graph = runtime.entries, runtime.graph
        return [entries[graph.entry_id(nid, index)] for nid, index in graph.heads]

    def __call__(self, *arrays):
        if self.trips >= 0:
            self._run_traced(arrays)
            return
        local = self._setup(arrays)
        cond_rt, step_rt, exit_rt = local.runtimes
        for buffer, initial in zip(local.state, arrays[:self.num_state]):
            np.copyto(buffer, initial)
        condition = self._heads(cond_rt)[0]
        step_heads = self._heads(step_rt)
        while True:
            cond_rt.run()
            if bool(condition.reshape(-1)[0]) != self.go_on:
                break
            step_rt.run()
            # Via a second buffer: a step result may be another state variable's input.
            for buffer, head in zip(local.next, step_heads):
                np.copyto(buffer, head)
            for buffer, value in zip(local.state, local.next):
                np.copyto(buffer, value)
        exit_rt.run()
        for out, head in zip(arrays[self.num_inputs:], self._heads(exit_rt)):
            np.copyto(out, head)

    # -- a trip count known at build time: recorded steps ------------------------------------
    def _run_traced(self, arrays) -> None:
        """Run the known number of steps, then the exit, from the calls recorded for these
        input arrays (see :meth:`_trace`; a few sets of arrays are kept per thread, for
        modules that share this library function)."""
        local = self._local
        inputs = arrays[:self.num_inputs]
        traces = getattr(local, "traces", None)
        if traces is None:
            traces = local.traces = OrderedDict()
        key = tuple(id(array) for array in inputs)
        trace = traces.get(key)
        if trace is None or not same_arrays(trace.inputs, inputs):
            trace = traces[key] = self._trace(local, inputs)
            if len(traces) > TRACES_KEPT:
                traces.popitem(last=False)
        else:
            traces.move_to_end(key)
            trace.run()
        for position, (out, head) in enumerate(zip(arrays[self.num_inputs:], trace.exit_heads)):
            if out.shape != head.shape:
                raise GraphInputError(
                    f"loop node {self.name!r}: output {position} has shape {head.shape} after "
                    f"{self.trips} steps, but the graph was built for {out.shape}")
            np.copyto(out, head)

    def _trace(self, local, inputs) -> "_Trace":
        """Run the loop once on the step and exit graphs' runtimes (symbolic: each step's
        state has its own sizes), keeping each step's calls (the runtime's argument tuples
        for that binding), result arrays and the arrays its results are copied into (two
        buffers per state variable, taking turns, so a step never writes the state it
        reads; an appended scan output has one array of all its rows, the state of step k
        being its first rows and step k's head the next row). The trip count was proved at
        build time, so the condition is not run."""
        if getattr(local, "growing", None) is None:
            from .graph_symbolic import SymbolicRuntime
            local.growing = [SymbolicRuntime(graph, self.lookup) if graph.is_symbolic
                             else GraphRuntime(graph, self.lookup) for graph in self.graphs]
            local.buffers = [[None, None] for _ in range(self.num_state)]
        _, step_rt, exit_rt = local.growing
        outer = list(inputs[self.num_state:self.num_state + self.num_outer])
        start = self.num_state + self.num_outer + self.consts[0]
        for runtime, count in ((step_rt, self.consts[1]), (exit_rt, self.consts[2])):
            for index, array in enumerate(outer + list(inputs[start:start + count])):
                runtime.bind_input(self.num_state + index, array)
            start += count
        state, steps = list(inputs[:self.num_state]), []
        stacks, starts = {}, []         # appended state: one array, rows filled in turn
        for k in self.appended:
            initial = inputs[k]
            stacks[k] = np.empty((initial.shape[0] + self.trips,) + initial.shape[1:],
                                 initial.dtype)
            if initial.size:
                starts.append((stacks[k][:initial.shape[0]], initial))
            state[k] = stacks[k][:initial.shape[0]]
        for view, initial in starts:
            np.copyto(view, initial)
        needed = self._needed_calls()
        for trip in range(self.trips):
            calls, heads = _recorded(step_rt, state)
            if len(calls) == len(needed):
                calls = [call for call, keep in zip(calls, needed) if keep]
            views, following, copied = [], [], []
            for k, head in enumerate(heads):
                if k in self.control:       # the same at every run: kept, not recomputed
                    following.append(head.copy())
                    continue
                copied.append(head)
                if k in stacks:
                    rows = state[k].shape[0]
                    views.append(stacks[k][rows:rows + 1].reshape(head.shape))
                    np.copyto(views[-1], head)
                    following.append(stacks[k][:rows + 1])
                else:
                    views.append(_into(local.buffers[k], (trip + 1) % 2, head))
                    following.append(views[-1])
            steps.append((calls, copied, views))
            state = following
        exit_calls, exit_heads = _recorded(exit_rt, state)
        return _Trace(inputs, steps, exit_calls, exit_heads, starts)


    def _needed_calls(self) -> list:
        """Per call the step graph's runtime makes (its op nodes but ``__nop``, in order),
        whether the next value of some state outside the control state needs it."""
        graph = self.graphs[1]
        stack = [graph.heads[k][0] for k in range(self.num_state) if k not in self.control]
        needed = set()
        while stack:
            nid = stack.pop()
            if nid not in needed:
                needed.add(nid)
                stack.extend(source for source, *_ in graph.nodes[nid]["inputs"])
        return [nid in needed for nid, node in enumerate(graph.nodes)
                if node["op"] == "tvm_op" and node["attrs"]["func_name"] != "__nop"]


TRACES_KEPT = 4
"""Sets of input arrays whose recorded steps a growing loop keeps per thread."""


class _Trace:
    """The recorded run of a growing loop for one set of input arrays.

    Args:
        inputs: the node's input arrays it was recorded for.
        steps: per step ``(calls, result arrays, arrays the results are copied into)``.
        exit_calls, exit_heads: the exit graph's calls and result arrays.
        starts: ``(array, initial value)`` to copy first (appended state's initial rows).
    """

    def __init__(self, inputs, steps, exit_calls, exit_heads, starts=()):
        self.inputs, self.steps = inputs, steps
        self.exit_calls, self.exit_heads = exit_calls, exit_heads
        self.starts = list(starts)
        self.chained = False

    def run(self) -> None:
        """Replay the steps and the exit (their small kernels chained on the first replay,
        as a graph's second run chains them: :func:`interp.graph_chains.chain_calls`; the
        steps' chains share one source, compiled once)."""
        if not self.chained:
            from .graph_chains import chain_calls
            from .kernel_compile import watch_compiles
            with watch_compiles():
                self.steps = [(chain_calls(calls), heads, views)
                              for calls, heads, views in self.steps]
                self.exit_calls = chain_calls(self.exit_calls)
            self.chained = True
        for view, initial in self.starts:
            np.copyto(view, initial)
        for calls, heads, views in self.steps:
            for fn, args in calls:
                fn(*args)
            for view, head in zip(views, heads):
                np.copyto(view, head)
        for fn, args in self.exit_calls:
            fn(*args)


def _recorded(runtime, state: list) -> tuple:
    """Bind ``state`` to the first inputs of ``runtime``, run it, and return its calls and
    result arrays for this binding (a static graph's calls are run one by one: its
    ``run`` would chain them anew for every binding; the replay chains them once)."""
    for index, array in enumerate(state):
        runtime.bind_input(index, array)
    if runtime.graph.is_symbolic:
        runtime.run()
        current = runtime.state
        return list(current.calls), [current.entries[h] for h in runtime.heads]
    calls = list(runtime.calls)
    for fn, args in calls:
        fn(*args)
    graph = runtime.graph
    return calls, [runtime.entries[graph.entry_id(n, i)] for n, i in graph.heads]


def _into(pair: list, turn: int, value: np.ndarray) -> np.ndarray:
    """A copy of ``value`` in ``pair[turn]`` (a byte buffer, replaced by a larger one when
    too small; arrays already made keep the old one alive)."""
    buffer = pair[turn]
    if buffer is None or buffer.size < value.nbytes:
        buffer = pair[turn] = np.empty(max(64, int(value.nbytes * 1.5)), np.uint8)
    array = np.ndarray(value.shape, value.dtype, buffer)
    np.copyto(array, value)
    return array
