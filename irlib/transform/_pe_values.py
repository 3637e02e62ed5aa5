"""PartialEvaluate's partial values (what is known statically about a value, and the atom
that computes it), the termination measure (fuel) and static pattern matching.

See :mod:`irlib.transform.partial_evaluate` for the algorithm.
"""

from __future__ import annotations

import numpy as np

from ..ir import expr as E
from ..ir.type_functor import iter_types
from ..ir.types import TypeVar


# -- partial values ------------------------------------------------------------------------------

class PV:
    """A partial value: ``static`` knowledge (None: unknown) and the residual atom ``dyn``."""

    __slots__ = ("static", "dyn")

    def __init__(self, static, dyn):
        self.static = static
        self.dyn = dyn


class SConst:
    """Static knowledge that a value is this constant.

    Args:
        value: the constant's numpy array.
    """

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class STuple:
    """Static knowledge that a value is a tuple (of partial values).

    Args:
        fields: the fields' :class:`PV` s.
    """

    __slots__ = ("fields",)

    def __init__(self, fields):
        self.fields = fields


class SCtor:
    """Static knowledge that a value is an ADT value built by a known constructor.

    Args:
        ctor: the Constructor.
        fields: the arguments' :class:`PV` s.
    """

    __slots__ = ("ctor", "fields")

    def __init__(self, ctor, fields):
        self.ctor = ctor
        self.fields = fields


class SFunc:
    """Static knowledge that a value is a known function (a global, or a closure over a frame).

    Args:
        func: the Function.
        frame: the :class:`Frame` it closes over.
        key: what identifies the function for the termination check (the GlobalVar, or the Function
            itself).
    """

    __slots__ = ("func", "frame", "key")

    def __init__(self, func, frame, key):
        self.func = func
        self.frame = frame
        self.key = key


class SRef:
    """Static knowledge that a value is a reference (its contents are tracked by the store, not
    here)."""

    __slots__ = ()


class Frame:
    """Variable -> PV bindings of one activation, chained to the defining frame.

    Args:
        parent: the frame the activation's function was defined in (None for the outermost).
    """

    __slots__ = ("env", "parent")

    def __init__(self, parent=None):
        self.env: dict = {}
        self.parent = parent

    def lookup(self, var):
        """The :class:`PV` bound to ``var`` in this frame or an enclosing one, or None.

        Args:
            var: the variable.
        """
        frame = self
        while frame is not None:
            pv = frame.env.get(var)
            if pv is not None:
                return pv
            frame = frame.parent
        return None


def static_size(pv) -> int:
    """How much is known about ``pv``: 0 if nothing, else 1 + the fields' sizes."""
    size, stack = 0, [pv]
    while stack:
        static = stack.pop().static
        if static is None:
            continue
        size += 1
        if isinstance(static, (STuple, SCtor)):
            stack.extend(static.fields)
    return size


def fuel(args) -> tuple:
    """The termination measure of a call: one natural number per argument.

    An argument's fuel is its static size plus the absolute value of a known integer
    scalar (a known list or nat shrinks; a known counter moves toward 0). A recursive
    inlining must make progress: some argument's fuel must fall below the meet
    (element-wise minimum) of the active inlinings of the same function, as in Relay.

    Args:
        args: the arguments' :class:`PV` s.
    """
    result = []
    for arg in args:
        amount = static_size(arg)
        static = arg.static
        if isinstance(static, SConst):
            value = np.asarray(static.value)
            if value.ndim == 0 and value.dtype.kind in "iu":
                amount += abs(int(value))
        result.append(amount)
    return tuple(result)


def meet_with_progress(active: tuple, new: tuple):
    """(element-wise minimum, whether some element of ``new`` is below ``active``)."""
    if len(active) != len(new):
        return new, False
    progress = any(b < a for a, b in zip(active, new))
    return tuple(min(a, b) for a, b in zip(active, new)), progress


def _const_value(pv):
    """The numpy value of a known constant or tuple of constants, else None."""
    static = pv.static
    if isinstance(static, SConst):
        return static.value
    if isinstance(static, STuple):
        values = [_const_value(f) for f in static.fields]
        return None if any(v is None for v in values) else tuple(values)
    return None



def _closed_type(ty, own):
    """``ty`` unless it mentions type variables other than ``own``: a function inlined out
    of a polymorphic one would otherwise refer to type parameters no longer in scope (type
    inference fills the annotation in again)."""
    if ty is None:
        return None
    if any(isinstance(t, TypeVar) and t not in own for t in iter_types(ty)):
        return None
    return ty


def _is_atom(node):
    return isinstance(node, (E.Var, E.Constant, E.GlobalVar, E.Op, E.Constructor))


def _static_match(pattern, pv):
    """(True, bindings) if ``pattern`` surely matches, (False, None) if surely not, and
    (None, None) if it depends on unknown parts."""
    bindings, unknown, stack = {}, False, [(pattern, pv)]
    while stack:
        pat, value = stack.pop()
        kind = type(pat)
        if kind is E.PatternWildcard:
            continue
        if kind is E.PatternVar:
            bindings[pat.var] = value
            continue
        static = value.static
        if kind is E.PatternConstructor:
            if not isinstance(static, SCtor):
                unknown = True
                continue
            if static.ctor is not pat.constructor and static.ctor.tag != pat.constructor.tag:
                return False, None
            stack.extend(zip(pat.patterns, static.fields))
        elif kind is E.PatternTuple:
            if not isinstance(static, STuple):
                unknown = True
                continue
            stack.extend(zip(pat.patterns, static.fields))
    return (None, None) if unknown else (True, bindings)
