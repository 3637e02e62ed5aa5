"""Executors for the test helpers, by name, and a comparison of their results.

:func:`irlib.testing.check_pass` and :func:`irlib.testing.differential` run programs, but
``irlib`` may not import the runtime (``interp``): the layer rule keeps the IR toolkit free of
it. So the helpers take an *executor*: a callable ``run(mod, args) -> value`` that evaluates
``mod["main"]`` on ``args``, or the name of one registered here. irlib registers only
``"dataflow"`` (:mod:`irlib.testing.dataflow_eval`, the numpy evaluator of the dataflow
fragment); importing ``interp`` registers ``"debug"`` (the reference interpreter),
``"graph"`` (``interp.build`` and the graph executor) and ``"python"`` (``to_python`` /
``run_as_python``), see :mod:`interp.testing`. A user's own backend (another compiler,
onnxruntime, ...) registers the same way with :func:`register_runner`.

Values are compared in a *plain* form (:func:`plain`) that needs no runtime classes: arrays
are numpy arrays, tuples are tuples, a constructor value is ``Adt(name, fields)`` and a
reference is ``Ref(value)``. Both conversions and :func:`compare` walk values with an
explicit stack, so a long list (a deep chain of ``Cons``) compares without recursion.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from ..errors import IRError, UnknownNameError

__all__ = ["Adt", "Ref", "register_runner", "get_runner", "runner_names", "plain", "compare",
           "ValueMismatch"]

_RUNNERS: dict = {}


class Adt(NamedTuple):
    """A constructor value in plain form: the constructor's name and its plain fields."""

    name: str
    fields: tuple


class Ref(NamedTuple):
    """A reference (``ref(v)``) in plain form: its current plain value."""

    value: object


class ValueMismatch(IRError):
    """Two results differ; the message says where (a path such as ``result[1].fields[0]``)."""


def register_runner(name: str, run: Callable) -> None:
    """Make ``run`` available to the test helpers under ``name``.

    Args:
        name: the executor name (e.g. ``"debug"``); registering a name again replaces it.
        run: ``run(mod, args) -> value``: evaluate ``mod["main"]`` on the list ``args`` of
            numpy arrays / runtime values and return the result (any value :func:`plain`
            understands).
    """
    if not callable(run):
        raise IRError(f"the runner registered as {name!r} is not callable: {run!r}")
    _RUNNERS[name] = run


def runner_names() -> tuple:
    """The names of the registered executors, sorted."""
    return tuple(sorted(_RUNNERS))


def get_runner(executor) -> Callable:
    """The ``run(mod, args)`` callable for ``executor`` (a registered name or a callable).

    Raises:
        UnknownNameError: when no executor of that name is registered (the message says that
            ``import interp`` registers ``debug``, ``graph`` and ``python``).
    """
    if callable(executor):
        return executor
    run = _RUNNERS.get(executor)
    if run is None:
        hint = ""
        if executor in ("debug", "graph", "python", "vm"):
            hint = (" (the runtime's executors are registered by `import interp`; irlib "
                    "itself never imports the runtime)")
        raise UnknownNameError(f"no executor named {executor!r} is registered{hint}; "
                               f"registered: {list(runner_names())}")
    return run


def _dataflow_runner(mod, args):
    from .dataflow_eval import evaluate
    main = mod["main"]
    return evaluate(main.body, dict(zip(main.params, args)))


register_runner("dataflow", _dataflow_runner)


# -- plain values ---------------------------------------------------------------------------

def _leaf(value):
    """The plain form of a non-container value, or None when it is a container."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (np.generic, bool, int, float)):
        return np.asarray(value)
    if hasattr(value, "numpy") and not hasattr(value, "fields"):
        return np.asarray(value.numpy())
    return None


def plain(value):
    """``value`` (a runtime value, numpy array or nested tuple) in plain form (module docs).

    Raises:
        ValueMismatch: for a value that cannot be compared (a closure).
    """
    # Post-order over an explicit stack: (value, built children count) frames.
    root: list = [None]
    stack = [(value, root, 0)]
    while stack:
        current, holder, index = stack.pop()
        leaf = _leaf(current)
        if leaf is not None:
            holder[index] = leaf
        elif isinstance(current, Adt):              # already plain
            fields = [None] * len(current.fields)
            holder[index] = _Pending(Adt, current.name, fields)
            stack.extend((f, fields, i) for i, f in enumerate(current.fields))
        elif isinstance(current, Ref):
            box = [None]
            holder[index] = _Pending(Ref, None, box)
            stack.append((current.value, box, 0))
        elif hasattr(current, "constructor") and hasattr(current, "fields"):
            fields = [None] * len(current.fields)
            name = getattr(current.constructor, "name_hint", None) or f"tag{current.tag}"
            holder[index] = _Pending(Adt, name, fields)
            stack.extend((f, fields, i) for i, f in enumerate(current.fields))
        elif isinstance(current, tuple):
            fields = [None] * len(current)
            holder[index] = _Pending(tuple, None, fields)
            stack.extend((f, fields, i) for i, f in enumerate(current))
        elif type(current).__name__ == "RefValue":
            box = [None]
            holder[index] = _Pending(Ref, None, box)
            stack.append((current.value, box, 0))
        else:
            raise ValueMismatch(f"cannot compare a {type(current).__name__} result (closures "
                                f"and other functions have no comparable value)")
    return _finish(root[0])


class _Pending:
    __slots__ = ("kind", "name", "items")

    def __init__(self, kind, name, items):
        self.kind, self.name, self.items = kind, name, items


def _finish(built):
    """Turn the ``_Pending`` placeholders into Adt/tuple/Ref, bottom-up, without recursion."""
    order, stack = [], [built]
    while stack:
        node = stack.pop()
        if isinstance(node, _Pending):
            order.append(node)
            stack.extend(node.items)
    done: dict = {}
    for node in reversed(order):
        items = tuple(done.get(id(i), i) if isinstance(i, _Pending) else i for i in node.items)
        if node.kind is Adt:
            done[id(node)] = Adt(node.name, items)
        elif node.kind is Ref:
            done[id(node)] = Ref(items[0])
        else:
            done[id(node)] = items
    return done.get(id(built), built) if isinstance(built, _Pending) else built


def compare(actual, expected, rtol: float = 1e-5, atol: float = 1e-6,
            exact: bool = False, label: str = "result") -> None:
    """Require two results to agree: same structure, shapes, dtypes and (close) contents.

    Args:
        actual, expected: results (runtime values, arrays or tuples; converted by :func:`plain`).
        rtol, atol: tolerance for floating-point contents (``numpy.allclose``'s meaning);
            integers and booleans must be equal.
        exact: require bitwise-equal contents, floats included (NaNs equal).
        label: how the message names the root value.

    Raises:
        ValueMismatch: naming the first path where they differ and both values there.
    """
    stack = [(plain(actual), plain(expected), label)]
    while stack:
        got, want, path = stack.pop()
        if isinstance(want, Adt):
            if not isinstance(got, Adt) or got.name != want.name \
                    or len(got.fields) != len(want.fields):
                raise ValueMismatch(f"{path}: expected {_short(want)}, got {_short(got)}")
            stack.extend((g, w, f"{path}.{want.name}[{i}]")
                         for i, (g, w) in enumerate(zip(got.fields, want.fields)))
        elif isinstance(want, Ref):
            if not isinstance(got, Ref):
                raise ValueMismatch(f"{path}: expected a reference, got {_short(got)}")
            stack.append((got.value, want.value, f"!{path}"))
        elif isinstance(want, tuple):
            if type(got) is not tuple or len(got) != len(want):
                raise ValueMismatch(f"{path}: expected {_short(want)}, got {_short(got)}")
            stack.extend((g, w, f"{path}[{i}]") for i, (g, w) in enumerate(zip(got, want)))
        else:
            _compare_arrays(got, want, path, rtol, atol, exact)


def _compare_arrays(got, want, path, rtol, atol, exact):
    if not isinstance(got, np.ndarray):
        raise ValueMismatch(f"{path}: expected a tensor, got {_short(got)}")
    if got.shape != want.shape or got.dtype != want.dtype:
        raise ValueMismatch(f"{path}: expected {want.dtype}{list(want.shape)}, got "
                            f"{got.dtype}{list(got.shape)}")
    floating = np.issubdtype(want.dtype, np.floating)
    if exact or not floating:
        same = np.array_equal(got, want, equal_nan=floating)
    else:
        same = np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    if not same:
        raise ValueMismatch(f"{path}: values differ\n  expected: {_text(want)}\n"
                            f"  got:      {_text(got)}")


def _text(array) -> str:
    return np.array2string(np.asarray(array), precision=6, threshold=40).replace("\n", " ")


def _short(value) -> str:
    if isinstance(value, Adt):
        return f"constructor {value.name}"
    if isinstance(value, Ref):
        return "a reference"
    if isinstance(value, tuple):
        return f"a tuple of {len(value)}"
    if isinstance(value, np.ndarray):
        return f"a tensor {value.dtype}{list(value.shape)}"
    return type(value).__name__
