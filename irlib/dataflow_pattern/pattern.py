"""Dataflow patterns: the pattern nodes and the builder functions (Relay's
``tvm.relay.dataflow_pattern``).

A pattern is a small tree (or DAG, when a sub-pattern is reused) of :class:`DFPattern`
nodes. A pattern node used twice must match the *same* expression both times, so
``x = wildcard(); is_op("add")(x, x)`` matches ``add(%a, %a)`` but not ``add(%a, %b)``.

Build patterns with the functions at the bottom (``is_op``, ``wildcard``, ...) and the
methods of :class:`DFPattern` (call it to make a call pattern, ``|`` for alternatives,
``+ - * /`` for the arithmetic ops, ``has_attr`` / ``has_type`` / ``has_shape`` /
``has_dtype`` / ``optional`` / ``dominates``).
"""

from __future__ import annotations

from typing import Optional

from ..ir import expr as E


class DFPattern:
    """Base class of dataflow patterns."""

    __slots__ = ()

    def __call__(self, *args):
        """A :class:`CallPattern` of this pattern with the argument patterns ``args``."""
        return CallPattern(self, [_as_pattern(a) for a in args])

    def __or__(self, other):
        return AltPattern(self, _as_pattern(other))

    def __add__(self, other):
        return is_op("add")(self, other)

    def __sub__(self, other):
        return is_op("subtract")(self, other)

    def __mul__(self, other):
        return is_op("multiply")(self, other)

    def __truediv__(self, other):
        return is_op("divide")(self, other)

    def has_attr(self, attrs: dict) -> "AttrPattern":
        """This pattern, where the matched node also has these attribute values (an op call's
        attrs, a function's attrs, or an op's registry attributes such as ``TOpPattern``)."""
        return AttrPattern(self, dict(attrs))

    def has_type(self, ttype) -> "TypePattern":
        """This pattern, where the matched expression's type equals ``ttype``."""
        return TypePattern(self, ttype)

    def has_dtype(self, dtype: str) -> "DataTypePattern":
        """This pattern, where the matched tensor has dtype ``dtype``."""
        return DataTypePattern(self, str(dtype))

    def has_shape(self, shape) -> "ShapePattern":
        """This pattern, where the matched tensor has shape ``shape``."""
        return ShapePattern(self, tuple(shape))

    def optional(self, option_constructor) -> "AltPattern":
        """``self | option_constructor(self)``: the option wraps this pattern or not."""
        return self | option_constructor(self)

    def dominates(self, parent, path=None) -> "DominatorPattern":
        """A :class:`DominatorPattern` with this pattern as the child.

        Args:
            parent: the pattern of the dominating node.
            path: the pattern every node between them must match (default: a wildcard).
        """
        return DominatorPattern(parent, path if path is not None else wildcard(), self)

    def match(self, expr, root=None) -> bool:
        """Whether ``expr`` matches this pattern.

        Args:
            expr: the expression.
            root: the whole expression ``expr`` sits in (dominator patterns look at the
                graph around the match); default ``expr``.
        """
        from .matcher import Matcher
        return Matcher(root if root is not None else expr).match(self, expr)

    def partition(self, expr, attrs=None, check=None):
        """``expr`` with each non-overlapping match extracted into a function (see
        :func:`irlib.dataflow_pattern.partition`).

        Args:
            expr: the expression.
            attrs: extra attributes of the extracted functions.
            check: a predicate on each match; matches it rejects stay in place.
        """
        from .rewrite import partition
        return partition(self, expr, attrs, check)


def _as_pattern(value) -> DFPattern:
    if isinstance(value, DFPattern):
        return value
    if isinstance(value, E.Expr):
        return ExprPattern(value)
    raise TypeError(f"expected a pattern or an expression, got {type(value).__name__}")


class ExprPattern(DFPattern):
    """Matches an expression structurally equal to ``expr`` (the same op, for an Op)."""

    __slots__ = ("expr",)

    def __init__(self, expr):
        self.expr = expr


class VarPattern(DFPattern):
    """Matches a Var, named ``name_hint`` unless that is empty."""

    __slots__ = ("name_hint",)

    def __init__(self, name_hint: str = ""):
        self.name_hint = name_hint


class ConstantPattern(DFPattern):
    """Matches any Constant."""

    __slots__ = ()


class WildcardPattern(DFPattern):
    """Matches anything."""

    __slots__ = ()


class CallPattern(DFPattern):
    """Matches a Call whose callee matches ``op`` and whose arguments match ``args`` (any
    arguments when ``args`` is None). ``add`` and ``multiply`` also match swapped."""

    __slots__ = ("op", "args")

    def __init__(self, op: DFPattern, args: Optional[list]):
        self.op = op
        self.args = None if args is None else list(args)


class FunctionPattern(DFPattern):
    """Matches a Function with matching parameters (any when None) and body.

    Args:
        params: the parameter patterns, or None for any.
        body: the body pattern.
    """

    __slots__ = ("params", "body")

    def __init__(self, params, body):
        self.params = None if params is None else [_as_pattern(p) for p in params]
        self.body = _as_pattern(body)


class TuplePattern(DFPattern):
    """Matches a Tuple whose fields match (any tuple when ``fields`` is None)."""

    __slots__ = ("fields",)

    def __init__(self, fields):
        self.fields = None if fields is None else [_as_pattern(f) for f in fields]


class TupleGetItemPattern(DFPattern):
    """Matches a projection of a matching tuple (any index when ``index`` is None).

    Args:
        tuple_value: the tuple's pattern.
        index: the field index, or None.
    """

    __slots__ = ("tuple", "index")

    def __init__(self, tuple_value, index=None):
        self.tuple = _as_pattern(tuple_value)
        self.index = index


class IfPattern(DFPattern):
    """Matches an ``if`` with matching condition and branches.

    Args:
        cond: the condition's pattern.
        true_branch: the then branch's pattern.
        false_branch: the else branch's pattern.
    """

    __slots__ = ("cond", "true_branch", "false_branch")

    def __init__(self, cond, true_branch, false_branch):
        self.cond, self.true_branch, self.false_branch = (
            _as_pattern(cond), _as_pattern(true_branch), _as_pattern(false_branch))


class LetPattern(DFPattern):
    """Matches a ``let`` with matching variable, value and body.

    Args:
        var: the variable's pattern.
        value: the bound value's pattern.
        body: the body's pattern.
    """

    __slots__ = ("var", "value", "body")

    def __init__(self, var, value, body):
        self.var, self.value, self.body = _as_pattern(var), _as_pattern(value), _as_pattern(body)


class AltPattern(DFPattern):
    """Matches what ``left`` matches, else what ``right`` matches."""

    __slots__ = ("left", "right")

    def __init__(self, left, right):
        self.left, self.right = left, right


class AttrPattern(DFPattern):
    """``pattern`` with attribute values required on the matched node.

    Args:
        pattern: the pattern the node must match.
        attrs: attribute name -> required value.
    """

    __slots__ = ("pattern", "attrs")

    def __init__(self, pattern, attrs):
        self.pattern, self.attrs = pattern, attrs


class TypePattern(DFPattern):
    """``pattern`` whose match has type ``type``.

    Args:
        pattern: the pattern the node must match.
        ttype: the required type.
    """

    __slots__ = ("pattern", "type")

    def __init__(self, pattern, ttype):
        self.pattern, self.type = pattern, ttype


class ShapePattern(DFPattern):
    """``pattern`` whose match is a tensor of shape ``shape``."""

    __slots__ = ("pattern", "shape")

    def __init__(self, pattern, shape):
        self.pattern, self.shape = pattern, shape


class DataTypePattern(DFPattern):
    """``pattern`` whose match is a tensor of dtype ``dtype``."""

    __slots__ = ("pattern", "dtype")

    def __init__(self, pattern, dtype):
        self.pattern, self.dtype = pattern, dtype


class DominatorPattern(DFPattern):
    """Matches ``child`` at an expression that post-dominates a match of ``parent``, where
    every node between them matches ``path`` (Relay's diamond patterns)."""

    __slots__ = ("parent", "path", "child")

    def __init__(self, parent, path, child):
        self.parent, self.path, self.child = parent, path, child


# -- builders ---------------------------------------------------------------------------------

def is_op(op_name: str) -> ExprPattern:
    """A pattern matching the op ``op_name`` (call it with argument patterns).

    Raises:
        UnknownNameError: if no op has that name.
    """
    from ..op import registry
    return ExprPattern(registry.get(op_name))


def wildcard() -> WildcardPattern:
    """A pattern matching any expression."""
    return WildcardPattern()


def is_var(name: str = "") -> VarPattern:
    """A pattern matching a variable (named ``name`` if given)."""
    return VarPattern(name)


def is_constant() -> ConstantPattern:
    """A pattern matching any constant."""
    return ConstantPattern()


def is_expr(expr) -> ExprPattern:
    """A pattern matching expressions structurally equal to ``expr``."""
    return ExprPattern(expr)


def is_tuple(fields) -> TuplePattern:
    """A pattern matching a tuple with these field patterns (None: any tuple).

    Args:
        fields: the field patterns, or None.
    """
    return TuplePattern(fields)


def is_tuple_get_item(tuple_value, index=None) -> TupleGetItemPattern:
    """A pattern matching ``tuple_value.index`` (any index when None)."""
    return TupleGetItemPattern(tuple_value, index)


def is_if(cond, true_branch, false_branch) -> IfPattern:
    """A pattern matching an ``if``.

    Args:
        cond: the condition's pattern.
        true_branch: the then branch's pattern.
        false_branch: the else branch's pattern.
    """
    return IfPattern(cond, true_branch, false_branch)


def is_let(var, value, body) -> LetPattern:
    """A pattern matching a ``let``.

    Args:
        var: the variable's pattern.
        value: the bound value's pattern.
        body: the body's pattern.
    """
    return LetPattern(var, value, body)


def has_attr(attrs: dict, pattern=None) -> AttrPattern:
    """``pattern`` (default: wildcard) with required attribute values.

    Args:
        attrs: attribute name -> required value.
        pattern: the pattern (default: a wildcard).
    """
    return (pattern if pattern is not None else wildcard()).has_attr(attrs)


def has_type(ttype, pattern=None) -> TypePattern:
    """``pattern`` (default: wildcard) with a required type.

    Args:
        ttype: the required type.
        pattern: the pattern (default: a wildcard).
    """
    return (pattern if pattern is not None else wildcard()).has_type(ttype)


def has_dtype(dtype, pattern=None) -> DataTypePattern:
    """``pattern`` (default: wildcard) with a required dtype."""
    return (pattern if pattern is not None else wildcard()).has_dtype(dtype)


def has_shape(shape, pattern=None) -> ShapePattern:
    """``pattern`` (default: wildcard) with a required shape."""
    return (pattern if pattern is not None else wildcard()).has_shape(shape)


def dominates(parent, path, child) -> DominatorPattern:
    """A diamond pattern: ``child`` post-dominating ``parent`` through ``path`` nodes."""
    return DominatorPattern(parent, path, child)
