"""Matching a dataflow pattern against an expression (Relay's ``DFPatternMatcher``).

The matcher walks the *pattern* (small, written by hand) and the expression side by side.
A pattern node that matched an expression is remembered, so a pattern node reused in the
pattern must match the same expression everywhere; a failed alternative forgets what it
bound. Walks over the *expression* graph (dominator checks) use explicit stacks.

Type-based patterns (``has_type``, ``has_shape``, ``has_dtype``) read the inferred type of
the expression (run InferType first), or a variable's annotation, or a constant's type.
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir.functor import children, post_order
from ..ir.types import TensorType
from . import pattern as P

_COMMUTATIVE = frozenset({"add", "multiply", "maximum", "minimum", "equal", "not_equal",
                          "logical_and", "logical_or"})


def known_type(expr):
    """The expression's inferred type, else a Var's annotation or a Constant's type.

    Args:
        expr: the expression.
    """
    ty = expr._checked_type
    if ty is None and isinstance(expr, E.Var):
        ty = expr.type_annotation
    if ty is None and isinstance(expr, E.Constant):
        ty = expr.tensor_type
    return ty


class ExprGraph:
    """The consumers and immediate post-dominators of every node under ``root``."""

    def __init__(self, root):
        self.order = post_order(root)
        self.index = {node: i for i, node in enumerate(self.order)}
        self.outputs = {node: [] for node in self.order}
        for node in self.order:
            for child in children(node):
                self.outputs[child].append(node)
        self.post_dom = {}
        depth = {}
        for node in reversed(self.order):
            parent = None
            for k, user in enumerate(self.outputs[node]):
                parent = user if k == 0 else self._lca(parent, user, depth)
                if parent is None:
                    break
            self.post_dom[node] = parent
            depth[node] = depth[parent] + 1 if parent is not None else 0
        self.dominated = {node: [] for node in self.order}
        for node, parent in self.post_dom.items():
            if parent is not None:
                self.dominated[parent].append(node)

    def _lca(self, lhs, rhs, depth):
        while lhs is not rhs:
            if lhs is None or rhs is None:
                return None
            if depth[lhs] < depth[rhs]:
                rhs = self.post_dom[rhs]
            elif depth[rhs] < depth[lhs]:
                lhs = self.post_dom[lhs]
            else:
                lhs, rhs = self.post_dom[lhs], self.post_dom[rhs]
        return lhs


class Matcher:
    """Matches patterns against sub-expressions of ``root``.

    Attributes:
        memo: pattern -> list of the expressions it matched in the last :meth:`match`.
    """

    def __init__(self, root):
        self.root = root
        self._graph = None
        self.memo: dict = {}
        self._trail: list = []
        self.memoize = True

    @property
    def graph(self) -> ExprGraph:
        """The expression graph of ``root`` (built on first use)."""
        if self._graph is None:
            self._graph = ExprGraph(self.root)
        return self._graph

    def match(self, pattern, expr) -> bool:
        """Whether ``expr`` matches ``pattern`` (``memo`` then holds the bindings)."""
        self.memo, self._trail = {}, []
        self.memoize = True
        return self.visit(pattern, expr)

    def visit(self, pattern, expr) -> bool:
        """Whether ``expr`` matches ``pattern``, binding what the match binds (undone on failure);
        memoised per pattern when the matcher memoizes.

        Args:
            pattern: the pattern.
            expr: the expression.
        """
        if self.memoize and pattern in self.memo:
            return self.memo[pattern][0] is expr
        mark = len(self._trail)
        handler = _HANDLERS[type(pattern)]
        if handler(self, pattern, expr):
            if self.memoize:
                self.memo.setdefault(pattern, []).append(expr)
                self._trail.append(pattern)
            return True
        for bound in self._trail[mark:]:
            self.memo.pop(bound, None)
        del self._trail[mark:]
        return False

    # -- one method per pattern kind ---------------------------------------------------------

    def _expr(self, pattern, expr):
        if isinstance(pattern.expr, E.Op):
            return isinstance(expr, E.Op) and expr.name == pattern.expr.name
        if pattern.expr is expr:
            return True
        from ..ir.structural import structural_equal
        return structural_equal(pattern.expr, expr)

    def _var(self, pattern, expr):
        return isinstance(expr, E.Var) and (not pattern.name_hint
                                            or expr.name_hint == pattern.name_hint)

    def _constant(self, pattern, expr):
        return isinstance(expr, E.Constant)

    def _wildcard(self, pattern, expr):
        return True

    def _call(self, pattern, expr):
        if type(expr) is not E.Call or not self.visit(pattern.op, expr.op):
            return False
        if pattern.args is None:
            return True
        if len(pattern.args) != len(expr.args):
            return False
        if self._all(pattern.args, expr.args):
            return True
        if len(expr.args) == 2 and isinstance(expr.op, E.Op) and expr.op.name in _COMMUTATIVE:
            return self._all(pattern.args, expr.args[::-1])
        return False

    def _all(self, patterns, exprs):
        mark = len(self._trail)
        if all(self.visit(p, e) for p, e in zip(patterns, exprs)):
            return True
        for bound in self._trail[mark:]:
            self.memo.pop(bound, None)
        del self._trail[mark:]
        return False

    def _function(self, pattern, expr):
        if type(expr) is not E.Function:
            return False
        if pattern.params is not None and (len(pattern.params) != len(expr.params)
                                           or not self._all(pattern.params, expr.params)):
            return False
        return self.visit(pattern.body, expr.body)

    def _tuple(self, pattern, expr):
        if type(expr) is not E.Tuple:
            return False
        if pattern.fields is None:
            return True
        return len(pattern.fields) == len(expr.fields) and self._all(pattern.fields, expr.fields)

    def _tuple_get_item(self, pattern, expr):
        return type(expr) is E.TupleGetItem and \
            (pattern.index is None or pattern.index == -1 or pattern.index == expr.index) and \
            self.visit(pattern.tuple, expr.tuple_value)

    def _if(self, pattern, expr):
        return type(expr) is E.If and self._all(
            [pattern.cond, pattern.true_branch, pattern.false_branch],
            [expr.cond, expr.true_branch, expr.false_branch])

    def _let(self, pattern, expr):
        return type(expr) is E.Let and self._all([pattern.var, pattern.value, pattern.body],
                                                 [expr.var, expr.value, expr.body])

    def _alt(self, pattern, expr):
        return self.visit(pattern.left, expr) or self.visit(pattern.right, expr)

    def _attr(self, pattern, expr):
        if not self.visit(pattern.pattern, expr):
            return False
        for key, value in pattern.attrs.items():
            if isinstance(expr, E.Op):
                from ..op.registry import get_def
                op_def = get_def(expr.name)
                actual = int(op_def.pattern) if key == "TOpPattern" else op_def.get_attr(key)
            elif isinstance(expr, (E.Call, E.Function)):
                attrs = expr.attrs or {}
                if key not in attrs:
                    return False
                actual = attrs[key]
            else:
                return False
            if not _attr_equal(actual, value):
                return False
        return True

    def _type(self, pattern, expr):
        return self.visit(pattern.pattern, expr) and known_type(expr) == pattern.type

    def _shape(self, pattern, expr):
        ty = known_type(expr)
        return self.visit(pattern.pattern, expr) and isinstance(ty, TensorType) and \
            tuple(ty.shape) == tuple(pattern.shape)

    def _dtype(self, pattern, expr):
        ty = known_type(expr)
        return self.visit(pattern.pattern, expr) and isinstance(ty, TensorType) and \
            str(ty.dtype) == pattern.dtype

    def _dominator(self, pattern, expr):
        if not self.visit(pattern.child, expr) or expr not in self.graph.index:
            return False
        return self._matches_path(pattern, expr) and self._dominates_parent(pattern, expr)

    def _inputs(self, expr):
        return [c for c in children(expr) if not (type(expr) is E.Call and c is expr.op)]

    def _matches_path(self, pattern, expr) -> bool:
        # Depth-first from the child towards the inputs: every node before the parent must
        # match the path pattern (its own inputs are not bound).
        stack, seen = list(reversed(self._inputs(expr))), set()
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            if self.visit(pattern.parent, node):
                return True
            self.memoize = False
            ok = self.visit(pattern.path, node)
            self.memoize = True
            if not ok:
                return False
            stack.extend(reversed(self._inputs(node)))
        return True

    def _dominates_parent(self, pattern, expr) -> bool:
        stack, seen = [expr], set()
        while stack:
            current = stack.pop()
            for node in self.graph.dominated.get(current, ()):
                if node in seen:
                    continue
                seen.add(node)
                if self.visit(pattern.parent, node):
                    return True
                stack.append(node)
        return False


def _attr_equal(actual, expected) -> bool:
    if isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple)):
        return len(actual) == len(expected) and all(_attr_equal(a, b)
                                                    for a, b in zip(actual, expected))
    try:
        return bool(actual == expected)
    except Exception:  # noqa: BLE001 - incomparable values simply do not match
        return False


_HANDLERS = {
    P.ExprPattern: Matcher._expr, P.VarPattern: Matcher._var,
    P.ConstantPattern: Matcher._constant, P.WildcardPattern: Matcher._wildcard,
    P.CallPattern: Matcher._call, P.FunctionPattern: Matcher._function,
    P.TuplePattern: Matcher._tuple, P.TupleGetItemPattern: Matcher._tuple_get_item,
    P.IfPattern: Matcher._if, P.LetPattern: Matcher._let, P.AltPattern: Matcher._alt,
    P.AttrPattern: Matcher._attr, P.TypePattern: Matcher._type,
    P.ShapePattern: Matcher._shape, P.DataTypePattern: Matcher._dtype,
    P.DominatorPattern: Matcher._dominator,
}
