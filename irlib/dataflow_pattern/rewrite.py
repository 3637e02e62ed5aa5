"""Grouping matches, partitioning and rewriting (Relay's ``PatternGrouper``,
``PatternPartitioner`` and ``PatternRewriter``).

Matches are searched from the outputs of the expression towards its inputs. A match is kept
when none of its inner (non-input) nodes belongs to an earlier match and none is used
outside the match except its root, so the matched subgraph can be replaced by one value.
The expressions matched by the pattern's *leaves* (wildcards, vars, expression patterns)
are the match's inputs, except constants matched by ``is_constant()``/``is_expr`` and ops,
which stay inside.
"""

from __future__ import annotations

from ..errors import IRError
from ..ir import expr as E
from ..ir.functor import children, post_order, rebuild
from . import pattern as P
from .matcher import Matcher, known_type

MAX_REWRITE_ITERATIONS = 100


class Group:
    """One accepted match.

    Attributes:
        root: the matched expression.
        node_map: pattern -> list of matched expressions.
        inputs: the expressions flowing into the match, in parameter order.
        inner: the matched nodes computed inside the group (root included).
    """

    def __init__(self, root, node_map, inputs, inner):
        self.root, self.node_map, self.inputs, self.inner = root, node_map, inputs, inner


def _pattern_post_order(pattern) -> list:
    return post_order(pattern, _pattern_children)


def _pattern_children(node) -> list:
    kind = type(node)
    if kind is P.CallPattern:
        return [node.op] + list(node.args or [])
    if kind is P.FunctionPattern:
        return list(node.params or []) + [node.body]
    if kind is P.TuplePattern:
        return list(node.fields or [])
    if kind is P.TupleGetItemPattern:
        return [node.tuple]
    if kind is P.IfPattern:
        return [node.cond, node.true_branch, node.false_branch]
    if kind is P.LetPattern:
        return [node.var, node.value, node.body]
    if kind is P.AltPattern:
        return [node.left, node.right]
    if kind is P.DominatorPattern:
        return [node.parent, node.path, node.child]
    if kind in (P.AttrPattern, P.TypePattern, P.ShapePattern, P.DataTypePattern):
        return [node.pattern]
    return []


def _is_leaf(pattern) -> bool:
    return not _pattern_children(pattern)


def _embedded(expr, pattern) -> bool:
    """Constants matched by a constant or expression pattern stay inside the group."""
    return isinstance(expr, E.Constant) and isinstance(pattern, (P.ConstantPattern,
                                                                  P.ExprPattern))


def group_matches(pattern, expr) -> list:
    """The accepted, non-overlapping matches of ``pattern`` in ``expr``.

    Args:
        pattern: the pattern.
        expr: the expression searched.

    Returns:
        A list of :class:`Group`, outputs first.
    """
    matcher = Matcher(expr)
    graph = matcher.graph
    pattern_order = _pattern_post_order(pattern)
    fuzzy = [p for p in pattern_order if isinstance(p, P.DominatorPattern)]
    assigned: set = set()
    pre_partitioned: set = set()
    groups = []
    for node in reversed(graph.order):
        if isinstance(node, (E.Op, E.Constructor)) or node in assigned:
            continue
        if type(node) is E.Function and node.get_attr("PartitionedFromPattern") is not None:
            # the body of an earlier partition is not matched again
            pre_partitioned.update(post_order(node.body))
        if node in pre_partitioned:
            continue
        if not matcher.match(pattern, node):
            continue
        node_map = {p: list(v) for p, v in matcher.memo.items()}
        skip = set()
        for dom in fuzzy:
            for part in (dom.parent, dom.path):
                skip.update(node_map.get(part, ()))
        inputs, seen = [], set()
        for pat in pattern_order:
            if not _is_leaf(pat):
                continue
            for match in node_map.get(pat, ()):
                if match in seen or match in skip or isinstance(match, (E.Op, E.Function)) \
                        or _embedded(match, pat):
                    continue
                seen.add(match)
                inputs.append(match)
        inner = _inner_nodes(node, set(inputs))
        if inner is None or any(n in assigned for n in inner if _counts(n)):
            continue
        if any(user not in inner for n in inner if n is not node and _counts(n)
               for user in graph.outputs[n]):
            continue
        assigned.update(n for n in inner if _counts(n))
        groups.append(Group(node, node_map, inputs, inner))
    return groups


def _counts(node) -> bool:
    return not isinstance(node, (E.Op, E.Constant, E.Function, E.Constructor, E.GlobalVar))


def _inner_nodes(root, inputs):
    """The nodes computed between the inputs and ``root`` (None if a free var is reached)."""
    inner, stack = set(), [root]
    while stack:
        node = stack.pop()
        if node in inner or node in inputs:
            continue
        if isinstance(node, E.Var):
            return None   # a variable not among the inputs would escape the group
        inner.add(node)
        if isinstance(node, E.Function):
            continue
        stack.extend(children(node))
    return inner


def _extract(group, number):
    """``(function body, params, name)`` of a group, inputs replaced by fresh variables."""
    params, memo = [], {}
    for index, value in enumerate(group.inputs):
        param = E.Var(f"FunctionVar_{number}_{index}", known_type(value))
        params.append(param)
        memo[value] = param
    inputs = set(memo)

    def inner_children(node):
        return children(node) if node in group.inner and node not in inputs else ()
    name = []
    for node in post_order(group.root, children_of=inner_children):
        if node in memo:
            continue
        if node not in group.inner:
            memo[node] = node          # an op, a constant kept inside, a function
            continue
        memo[node] = rebuild(node, tuple(memo[c] for c in children(node)))
        name.append(_name_part(node))
    return memo[group.root], params, "".join(name)


def _name_part(node) -> str:
    kind = type(node)
    if kind is E.Call:
        return node.op.name + "_" if isinstance(node.op, E.Op) else "Call_"
    if kind is E.Tuple:
        return "Tuple_"
    if kind is E.TupleGetItem:
        return f"TupleGetItem{node.index}_"
    if kind is E.Let:
        return "Let_"
    if kind is E.If:
        return "If_"
    if kind is E.Function:
        return "Function"
    return ""


def partition(pattern, expr, attrs=None, check=None):
    """Extract every accepted match of ``pattern`` in ``expr`` into a function.

    Each match becomes ``(fn (%FunctionVar_<g>_<i>...) { match body })(inputs...)`` with
    the attribute ``PartitionedFromPattern`` (the op names of the body in post order, each
    followed by ``_``) plus ``attrs``.

    Args:
        pattern: the pattern.
        expr: the expression.
        attrs: extra function attributes (e.g. ``{"Composite": "conv_bias_relu"}``).
        check: ``check(matched_expr) -> bool``; a match it rejects is left alone.

    Returns:
        The partitioned expression.
    """
    extracted = {}
    for number, group in enumerate(g for g in group_matches(pattern, expr)
                                   if check is None or check(g.root)):
        body, params, name = _extract(group, number)
        fields = {"PartitionedFromPattern": name}
        fields.update(attrs or {})
        extracted[group.root] = (E.Function(params, body, None, (), fields), group.inputs)
    memo: dict = {}
    for node in post_order(expr):
        if node in extracted:
            func, inputs = extracted[node]
            memo[node] = E.Call(func, tuple(memo[v] for v in inputs), span=node.span)
        else:
            memo[node] = rebuild(node, tuple(memo[c] for c in children(node)))
    return memo[expr]


class DFPatternCallback:
    """A rewrite rule for :func:`rewrite`: subclass it, set ``self.pattern`` in ``__init__``
    and implement :meth:`callback`.

    Args:
        require_type: type-check the expression before each matching round.
        rewrite_once: run the rule once instead of to a fixed point.
    """

    def __init__(self, require_type: bool = False, rewrite_once: bool = False):
        self.pattern = None
        self.require_type = require_type
        self.rewrite_once = rewrite_once

    def callback(self, pre, post, node_map):
        """The replacement for a match.

        Args:
            pre: the matched expression before this round's rewriting.
            post: the same expression with its inputs rewritten.
            node_map: pattern -> list of the matched (rewritten) expressions.

        Returns:
            The replacement expression (``post`` to keep it).
        """
        raise NotImplementedError(f"{type(self).__name__} must implement callback")

    def rewrite(self, expr):
        """``rewrite([self], expr)``."""
        return rewrite(self, expr)


def rewrite(callbacks, expr, mod=None):
    """Apply the callbacks' rewrites to ``expr`` until nothing changes (at most 100 rounds;
    one round with ``rewrite_once``).

    Args:
        callbacks: a :class:`DFPatternCallback` or a list of them, tried in order.
        expr: the expression.
        mod: the module the expression's globals live in (for ``require_type``).

    Returns:
        The rewritten expression.

    Raises:
        IRError: if a callback has no pattern.
    """
    from ..ir.structural import structural_equal
    if isinstance(callbacks, DFPatternCallback):
        callbacks = [callbacks]
    for callback in callbacks:
        if not isinstance(callback.pattern, P.DFPattern):
            raise IRError(f"{type(callback).__name__}.pattern is not a dataflow pattern")
    post = expr
    for _ in range(MAX_REWRITE_ITERATIONS):
        last = post
        for callback in callbacks:
            if callback.require_type:
                from ..typeinf import infer_expr
                post = infer_expr(post, mod)
            post = _rewrite_round(callback, post)
        if all(c.rewrite_once for c in callbacks) or structural_equal(last, post):
            break
    return post


def _rewrite_round(callback, expr):
    groups = {g.root: g for g in group_matches(callback.pattern, expr)}
    memo: dict = {}
    for node in post_order(expr):
        rebuilt = rebuild(node, tuple(memo[c] for c in children(node)))
        group = groups.get(node)
        if group is not None:
            node_map = {p: [memo.get(e, e) for e in exprs]
                        for p, exprs in group.node_map.items()}
            rebuilt = callback.callback(node, rebuilt, node_map)
        memo[node] = rebuilt
    return memo[expr]
