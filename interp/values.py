"""Runtime values of the interpreter (and of ``to_python``'s generated code).

==========================  =====================================================================
value                       what it is
==========================  =====================================================================
:class:`~irlib.ndarray.NDArray`  a tensor (numpy-backed)
:class:`TupleValue`         a tuple; a subclass of Python ``tuple`` (index, iterate, unpack)
:class:`Closure`            a function value: the :class:`~irlib.ir.expr.Function` and the values
                            of its free variables captured when it was created
:class:`RecClosure`         a let-bound function that may call itself (letrec): a closure plus
                            the variable the function refers to itself by
:class:`RefValue`           a mutable cell (``ref(e)``); ``.value`` is read and written in place
:class:`ConstructorValue`   an ADT value: ``tag``, ``fields``, ``constructor``
==========================  =====================================================================

These mirror Relay's runtime objects (``ConstructorValue(tag, fields, constructor)`` and
``RefValue(value)`` can be built directly and passed to executors). :func:`format_value`
prints any of them readably (``Cons(1, Cons(2, Nil))``) without recursion, abbreviating long
values, and :func:`as_value` converts what a user passes in (numpy arrays, Python scalars,
tuples) into values. :func:`from_python_value` converts guided by a type (Python lists and
tuples for the Prelude's ``List``, None or a value for ``Option``) and
:func:`to_python_value` converts results back (lists, None, tuples, numpy arrays).
"""

from __future__ import annotations

import numpy as np

from irlib.errors import InterpreterError, IRError
from irlib.ir.expr import Constant, const
from irlib.ir.types import GlobalTypeVar
from irlib.ndarray import NDArray


class TupleValue(tuple):
    """A tuple value: a Python tuple of values, built with ``TupleValue(*fields)``.

    Relay 0.16 returns runtime ADT tuples (indexable, ``len``-able); legacy Relay had
    ``TupleValue(*fields)`` with ``.fields``. This is both.
    """

    __slots__ = ()

    def __new__(cls, *fields):
        return super().__new__(cls, fields)

    def __getnewargs__(self):
        return tuple(self)

    @property
    def fields(self) -> tuple:
        """The elements as a plain tuple."""
        return tuple(self)

    def __repr__(self) -> str:
        return format_value(self)

    __str__ = __repr__


class Closure:
    """A function value: ``func`` with the values ``env`` of its free variables.

    Calling a closure from Python runs it on the interpreter that created it.

    Args:
        func: the :class:`~irlib.ir.expr.Function`.
        env: a dict from each free :class:`~irlib.ir.expr.Var` of ``func`` to its value.
        interpreter: the interpreter that created it (needed only to call it from Python).
    """

    __slots__ = ("func", "env", "interpreter")

    def __init__(self, func, env: dict, interpreter=None):
        self.func = func
        self.env = env
        self.interpreter = interpreter

    def __call__(self, *args):
        if self.interpreter is None:
            raise TypeError("this closure was not made by an interpreter; evaluate it with "
                            "interp.create_executor(...).evaluate(...) first")
        return self.interpreter.call_value(self, [as_value(a) for a in args])

    def __repr__(self) -> str:
        return format_value(self)


class RecClosure:
    """A let-bound (recursive) function value: ``clos`` that refers to itself as ``bind``.

    ``let %f = fn (...) { ... %f(...) ... }`` evaluates to ``RecClosure(clos, %f)``; ``%f`` is
    not in ``clos.env`` and is bound to this value each time the function is entered.

    Args:
        clos: the :class:`Closure`.
        bind: the let-bound :class:`~irlib.ir.expr.Var`.
    """

    __slots__ = ("clos", "bind")

    def __init__(self, clos: Closure, bind):
        self.clos = clos
        self.bind = bind

    def __call__(self, *args):
        if self.clos.interpreter is None:
            raise TypeError("this closure was not made by an interpreter")
        return self.clos.interpreter.call_value(self, [as_value(a) for a in args])

    def __repr__(self) -> str:
        return format_value(self)


class RefValue:
    """A mutable reference cell; ``.value`` is its current contents.

    Args:
        value: the initial contents (converted with :func:`as_value`).
    """

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = as_value(value)

    def __repr__(self) -> str:
        return format_value(self)


class ConstructorValue:
    """A value of an algebraic data type: ``constructor`` applied to ``fields``.

    Args:
        tag: the constructor's tag (``constructor.tag``).
        fields: the field values (numpy arrays and Python scalars are converted to NDArrays).
        constructor: the :class:`~irlib.ir.expr.Constructor`, or None (then only ``tag``
            identifies it, as in code generated by ``to_python``).

    Raises:
        TypeError: if ``constructor`` is given and the number of fields does not match it.
    """

    __slots__ = ("tag", "fields", "constructor")

    def __init__(self, tag: int, fields=(), constructor=None):
        fields = tuple(fields)
        if any(type(f) not in _PLAIN_VALUES for f in fields):
            fields = tuple(as_value(f) for f in fields)
        if constructor is not None and len(fields) != len(constructor.inputs):
            raise TypeError(f"constructor {constructor.name_hint} takes "
                            f"{len(constructor.inputs)} field(s), got {len(fields)}")
        self.tag = tag
        self.fields = fields
        self.constructor = constructor

    @property
    def name(self) -> str:
        """The constructor's name (``"Cons"``), or ``"ctor<tag>"`` without a constructor."""
        return self.constructor.name_hint if self.constructor is not None else f"ctor<{self.tag}>"

    def __repr__(self) -> str:
        return format_value(self)


_PLAIN_VALUES = frozenset({NDArray, ConstructorValue, Closure, RecClosure, RefValue})


def as_value(obj, dtype: str | None = None):
    """Convert a Python argument into an interpreter value.

    NDArrays and values pass through; numpy arrays become NDArrays (copied); Python and
    numpy scalars become 0-d NDArrays by ``irlib.const``'s rules (int -> int32, float ->
    float32, bool -> bool, int64/float64 narrowed) unless ``dtype`` is given; tuples become
    :class:`TupleValue` s (elementwise); lists become tensors; a ``Constant`` expression
    gives its tensor.

    Args:
        obj: the object to convert.
        dtype: the dtype a Python scalar or list should get (e.g. the declared dtype of the
            parameter it is passed to); numpy arrays keep theirs.

    Returns:
        The value.

    Raises:
        ValueConversionError: (an InterpreterError and a TypeError) if ``obj`` cannot be a
            value.
    """
    kind = type(obj)
    if kind in _PLAIN_VALUES or kind is TupleValue:
        return obj
    if isinstance(obj, tuple):
        return TupleValue(*(as_value(item) for item in obj))
    if kind is Constant:
        # Relay passes a Constant argument through as its tensor
        return NDArray(np.array(obj.data.numpy()))
    if isinstance(obj, np.ndarray):
        return NDArray(np.array(obj))
    if isinstance(obj, (bool, int, float, list, np.generic)):
        if dtype is not None:
            return NDArray(np.asarray(obj, dtype=dtype))
        if kind is int and -2**31 <= obj < 2**31:
            return NDArray(np.array(obj, dtype=np.int32))   # const's rule, without a node
        return NDArray(np.array(const(obj).data.numpy()))
    if isinstance(obj, (NDArray, ConstructorValue, Closure, RecClosure, RefValue)):
        return obj
    if hasattr(obj, "__array__") or hasattr(obj, "__dlpack__"):
        return NDArray(np.array(obj))
    raise ValueConversionError(
        f"cannot use a {kind.__name__} as an interpreter value; pass a numpy array, NDArray, "
        f"Python scalar, tuple, ConstructorValue or RefValue (lists and None are accepted for "
        f"List/Option-typed parameters: see from_python_value)")


class ValueConversionError(InterpreterError, TypeError):
    """A Python object cannot become an interpreter value of the expected type.

    Raised by :func:`as_value` and :func:`from_python_value` (and so by executors given an
    argument such as ``None`` for a tensor parameter); also a ``TypeError`` for callers that
    caught the old error.
    """


def from_python_value(value, ty=None, mod=None):
    """A Python value as an interpreter value of type ``ty``.

    Why: users of imported models (ONNX sequences/optionals) and of Prelude-typed functions
    hold Python lists and ``None``, not ``Cons``/``Nil``/``Some`` values. Executors call this
    for each argument of a function whose parameter has a ``List``/``Option``/tuple type.

    Args:
        value: a Python object: for ``List[T]`` a list or tuple of T's; for ``Option[T]``
            None or a T; for a tuple type a tuple or list; for a tensor type anything
            :func:`as_value` takes (numpy arrays, scalars, NDArrays; numpy object arrays of
            strings become ``str`` arrays). Interpreter values pass through.
        ty: the expected type (None: :func:`as_value`'s rules).
        mod: the module defining ``List``/``Option`` (needed when ``ty`` mentions them).

    Returns:
        The interpreter value.

    Raises:
        ValueConversionError: when ``value`` does not fit ``ty``.
    """
    from irlib.ir.types import TensorType, TupleType, TypeCall
    kind = type(value)
    if kind in _PLAIN_VALUES or kind is TupleValue:
        return value
    if isinstance(ty, TypeCall) and isinstance(ty.func, GlobalTypeVar) \
            and ty.func.name_hint in ("List", "Option"):
        ctors = _constructors(mod, ty.func.name_hint)
        element = ty.args[0] if ty.args else None
        if ty.func.name_hint == "Option":
            if value is None:
                return ConstructorValue(ctors["None"].tag, (), ctors["None"])
            return ConstructorValue(ctors["Some"].tag,
                                    (from_python_value(value, element, mod),), ctors["Some"])
        if not isinstance(value, (list, tuple)):
            raise ValueConversionError(f"expected a list or tuple for {ty}, got "
                                       f"{kind.__name__}")
        result = ConstructorValue(ctors["Nil"].tag, (), ctors["Nil"])
        for item in reversed(value):
            result = ConstructorValue(ctors["Cons"].tag,
                                      (from_python_value(item, element, mod), result),
                                      ctors["Cons"])
        return result
    if isinstance(ty, TupleType):
        if not isinstance(value, (tuple, list)) or len(value) != len(ty.fields):
            raise ValueConversionError(f"expected a tuple of {len(ty.fields)} for {ty}, got "
                                       f"{kind.__name__}")
        return TupleValue(*(from_python_value(v, t, mod) for v, t in zip(value, ty.fields)))
    if value is None:
        raise ValueConversionError(f"None is not a value of type {ty}" if ty is not None
                                   else "None is not an interpreter value")
    if isinstance(value, np.ndarray) and value.dtype == object:
        value = value.astype(str)   # e.g. ONNX string tensors
    dtype = ty.dtype if isinstance(ty, TensorType) and not isinstance(value, np.ndarray) \
        else None
    try:
        return as_value(value, dtype=dtype)
    except ValueConversionError:
        raise
    except (TypeError, ValueError, OverflowError) as error:
        raise ValueConversionError(f"cannot convert a {kind.__name__} to {ty}: "
                                   f"{error}") from error


def _constructors(mod, name: str) -> dict:
    if mod is None:
        raise ValueConversionError(f"converting to {name} needs the module that defines it")
    try:
        _, *ctors = mod.get_type(name)
    except IRError as error:
        raise ValueConversionError(f"the module defines no {name} type: {error}") from error
    return {ctor.name_hint: ctor for ctor in ctors}


def to_python_value(value):
    """An interpreter value as plain Python: the Prelude's ``List`` (Cons/Nil) becomes a
    list, ``Option`` becomes the value or None, tuples become tuples; tensors stay
    :class:`~irlib.ndarray.NDArray` s (``np.asarray`` or ``.numpy()`` gives the array, as
    for an executor's tensor result); other constructor values, closures and references are
    returned as they are.

    Args:
        value: an interpreter value (what an executor's function returns).

    Returns:
        The Python value (lists built iteratively: a 100,000-long list converts).
    """
    if isinstance(value, TupleValue):
        return tuple(to_python_value(item) for item in value)
    if not isinstance(value, ConstructorValue):
        return value
    if value.name in ("Cons", "Nil"):
        items = []
        while isinstance(value, ConstructorValue) and value.name == "Cons":
            items.append(to_python_value(value.fields[0]))
            value = value.fields[1]
        return items
    if value.name == "Some":
        return to_python_value(value.fields[0])
    if value.name == "None":
        return None
    return value


# -- printing ------------------------------------------------------------------------------------

_MAX_NODES = 60


def format_value(value, max_nodes: int = _MAX_NODES) -> str:
    """A readable one-line rendering of a value, e.g. ``Cons(1, Cons(2, Nil))``.

    Scalars print as Python numbers, other tensors as numpy prints them, tuples as
    ``(a, b)``, references as ``ref(v)`` and closures as ``<closure fn(%x, %y)>``. Works on
    values of any depth (no recursion); after ``max_nodes`` constructor/tuple nodes the rest
    is written ``...``.

    Args:
        value: the value.
        max_nodes: how many compound nodes to expand before abbreviating.

    Returns:
        The text.
    """
    pieces = []
    expanded = 0
    # The stack holds pending work: strings to emit, or values to render.
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is str:
            pieces.append(item)
            continue
        kind = type(item)
        if kind is NDArray:
            pieces.append(_format_tensor(item))
        elif kind is ConstructorValue or kind is TupleValue or kind is RefValue:
            expanded += 1
            if expanded > max_nodes:
                pieces.append("...")
                continue
            if kind is ConstructorValue:
                if not item.fields:
                    pieces.append(item.name)
                    continue
                opener, fields, closer = item.name + "(", item.fields, ")"
            elif kind is TupleValue:
                opener, fields, closer = "(", tuple(item), ",)" if len(item) == 1 else ")"
            else:
                opener, fields, closer = "ref(", (item.value,), ")"
            pieces.append(opener)
            stack.append(closer)
            for index in range(len(fields) - 1, -1, -1):
                stack.append(fields[index])
                if index:
                    stack.append(", ")
        elif kind is Closure:
            pieces.append(_format_closure(item.func, None))
        elif kind is RecClosure:
            pieces.append(_format_closure(item.clos.func, item.bind))
        else:
            pieces.append(repr(item))
    return "".join(pieces)


def _format_tensor(array: NDArray) -> str:
    data = array.numpy()
    if data.ndim == 0:
        return repr(data.item())
    return np.array2string(data, separator=", ", threshold=8, edgeitems=2).replace("\n", "")


def _format_closure(func, bind) -> str:
    params = ", ".join("%" + p.name_hint for p in func.params)
    name = f" %{bind.name_hint}" if bind is not None else ""
    return f"<closure{name} fn({params})>"
