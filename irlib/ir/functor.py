"""Iterative, memoised traversal of expressions.

Nothing here uses Python recursion, so a 100,000-deep let chain or nat is no harder than a
short one, and every node of a DAG is handled once (shared subexpressions are memoised by
identity), so traversal is linear in the number of distinct nodes.

* :func:`children` lists a node's sub-expressions in evaluation order (binders included:
  a function's params, a let's var, the variables bound by match patterns), and
  :func:`rebuild` puts new children back (returning the node itself if none changed).
* :func:`post_order` lists every reachable node, children before parents. It is the one
  post-order walker: an analysis over another graph (operands only, scopes of a function,
  stopping at opaque functions) passes its own ``children_of``.
* :class:`ExprFunctor` is the one driver: an explicit stack walks the DAG, calls the optional
  pre-order hook ``enter_<kind>(node)`` (return ``False`` to skip the node's children), and
  folds bottom-up through ``visit_<kind>``. Dispatch is a per-class table keyed by node type,
  built once in ``__init_subclass__``.
* :class:`ExprVisitor`: ``visit_<kind>(node)`` is called once per node, children first.
* :class:`ExprMutator`: ``visit_<kind>(node, original)`` receives the node *with its children
  already rewritten* (and the input node) and returns its replacement; the default keeps it.
  A let is walked value -> ``bind_let`` -> body, so a pass can inline or substitute a
  binding in the same walk. Pass authors never call ``self.visit(child)`` themselves; this
  is the one mutator of the project (see its docstring for the hooks).

``<kind>`` is the snake-case class name: ``var``, ``global_var``, ``constant``, ``tuple``,
``tuple_get_item``, ``call``, ``let``, ``if``, ``function``, ``op``, ``constructor``,
``ref_create``, ``ref_read``, ``ref_write``, ``match``.
"""

from __future__ import annotations

from ..errors import IRError
from . import expr as E

# -- structure of each node kind ---------------------------------------------------------------


def pattern_vars(pattern) -> list:
    """The variables a pattern binds, left to right."""
    found = []
    stack = [pattern]
    while stack:
        current = stack.pop()
        if isinstance(current, E.PatternVar):
            found.append(current.var)
        elif isinstance(current, (E.PatternConstructor, E.PatternTuple)):
            stack.extend(reversed(current.patterns))
    return found


def pattern_children(pattern) -> tuple:
    """The sub-patterns of ``pattern`` (a constructor's or tuple's fields; none for variables
    and wildcards): the ``children_of`` that makes :func:`post_order` walk a pattern.

    Args:
        pattern: a :class:`~irlib.ir.expr.Pattern`.
    """
    if isinstance(pattern, (E.PatternConstructor, E.PatternTuple)):
        return pattern.patterns
    return ()


def rename_pattern(pattern, mapping: dict):
    """``pattern`` with each bound Var replaced per ``mapping`` (old Var -> new Var)."""
    if not mapping:
        return pattern
    done: dict = {}
    for current in post_order(pattern, pattern_children):
        if isinstance(current, E.PatternVar):
            done[current] = current.replace(var=mapping.get(current.var, current.var))
        elif isinstance(current, (E.PatternConstructor, E.PatternTuple)):
            new_subs = tuple(done[p] for p in current.patterns)
            changed = any(a is not b for a, b in zip(new_subs, current.patterns))
            done[current] = current.replace(patterns=new_subs) if changed else current
        else:
            done[current] = current
    return done[pattern]


def children(node) -> tuple:
    """The sub-expressions of ``node`` in evaluation order (see module docstring)."""
    kind = type(node)
    if kind in _LEAVES:
        return ()
    if kind in _OPERANDS_ONLY:
        return operands(node)
    if kind is E.Let:
        return (node.var, node.value, node.body)
    if kind is E.Function:
        return node.params + (node.body,)
    if kind is E.If:
        return (node.cond, node.true_branch, node.false_branch)
    if kind is E.Match:
        items = [node.data]
        for clause in node.clauses:
            items.extend(pattern_vars(clause.lhs))
            items.append(clause.rhs)
        return tuple(items)
    raise IRError(f"unknown expression node type {kind.__name__}")


_LEAVES = frozenset({E.Var, E.GlobalVar, E.Constant, E.Op, E.Constructor})
_OPERANDS_ONLY = frozenset({E.Call, E.Tuple, E.TupleGetItem, E.RefCreate, E.RefRead, E.RefWrite})
"""Kinds whose children are exactly their :func:`operands` (no scopes, no branches)."""


def operands(node) -> tuple:
    """The sub-expressions evaluated, every time, before ``node`` itself: a call's callee then
    arguments, a tuple's fields, a projection's tuple, an ``if``'s condition, a ``match``'s
    scrutinee, a reference node's operands. Branches, clause bodies and the parts of lets
    and functions (scopes of their own) are not operands; leaves have none.

    Args:
        node: an expression.
    """
    kind = type(node)
    if kind is E.Call:
        return (node.op,) + node.args
    if kind is E.Tuple:
        return node.fields
    if kind is E.TupleGetItem:
        return (node.tuple_value,)
    if kind is E.If:
        return (node.cond,)
    if kind is E.Match:
        return (node.data,)
    if kind is E.RefCreate:
        return (node.value,)
    if kind is E.RefRead:
        return (node.ref,)
    if kind is E.RefWrite:
        return (node.ref, node.value)
    return ()


def rebuild(node, new_children: tuple):
    """``node`` with its children replaced by ``new_children`` (ordered as :func:`children`).

    Returns ``node`` itself when every child is the same object.
    """
    kind = type(node)
    if kind in _LEAVES:
        return node
    if kind is E.Call:
        return node.replace(op=new_children[0], args=_same_or(node.args, new_children[1:]))
    if kind is E.Let:
        return node.replace(var=new_children[0], value=new_children[1], body=new_children[2])
    if kind is E.Tuple:
        return node.replace(fields=_same_or(node.fields, new_children))
    if kind is E.TupleGetItem:
        return node.replace(tuple_value=new_children[0])
    if kind is E.Function:
        return node.replace(params=_same_or(node.params, new_children[:-1]),
                            body=new_children[-1])
    if kind is E.If:
        return node.replace(cond=new_children[0], true_branch=new_children[1],
                            false_branch=new_children[2])
    if kind is E.Match:
        return _rebuild_match(node, new_children)
    if kind is E.RefCreate:
        return node.replace(value=new_children[0])
    if kind is E.RefRead:
        return node.replace(ref=new_children[0])
    if kind is E.RefWrite:
        return node.replace(ref=new_children[0], value=new_children[1])
    raise IRError(f"unknown expression node type {kind.__name__}")


def _same_or(old: tuple, new: tuple) -> tuple:
    """``old`` if ``new`` holds the same objects (so ``replace`` sees no change)."""
    if len(old) == len(new) and all(a is b for a, b in zip(old, new)):
        return old
    return tuple(new)


def _rebuild_match(node, new_children):
    data = new_children[0]
    position = 1
    clauses = []
    changed = data is not node.data
    for clause in node.clauses:
        old_vars = pattern_vars(clause.lhs)
        new_vars = new_children[position:position + len(old_vars)]
        position += len(old_vars)
        rhs = new_children[position]
        position += 1
        mapping = {o: n for o, n in zip(old_vars, new_vars) if o is not n}
        lhs = rename_pattern(clause.lhs, mapping)
        if lhs is not clause.lhs or rhs is not clause.rhs:
            clause = clause.replace(lhs=lhs, rhs=rhs)
            changed = True
        clauses.append(clause)
    if not changed:
        return node
    return node.replace(data=data, clauses=tuple(clauses))


def post_order(expr, children_of=children) -> list:
    """Every node reachable from ``expr``, each once, children before parents.

    Args:
        expr: the root.
        children_of: the function listing a node's children (default :func:`children`);
            pass another to walk a different graph (patterns) or to stop at some nodes.
    """
    order = []
    seen = set()
    stack = [(expr, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if node in seen:
            continue
        seen.add(node)
        stack.append((node, True))
        kids = children_of(node)
        for child in reversed(kids):
            if child not in seen:
                stack.append((child, False))
    return order


# -- the functor driver --------------------------------------------------------------------------

_NODE_KINDS = {
    E.Var: "var", E.GlobalVar: "global_var", E.Constant: "constant", E.Tuple: "tuple",
    E.TupleGetItem: "tuple_get_item", E.Call: "call", E.Let: "let", E.If: "if",
    E.Function: "function", E.Op: "op", E.Constructor: "constructor",
    E.RefCreate: "ref_create", E.RefRead: "ref_read", E.RefWrite: "ref_write",
    E.Match: "match",
}


def node_kind(node) -> str:
    """The snake-case kind name used in handler names (``"tuple_get_item"``).

    Args:
        node: an expression.
    """
    return _NODE_KINDS[type(node)]


_ENTER, _BIND, _DONE = 0, 1, 2


class ExprFunctor:
    """Bottom-up fold over an expression DAG with an explicit stack (the one driver).

    Subclasses define ``visit_<kind>(self, node, child_results)`` returning the node's result
    (``child_results`` is a tuple aligned with :func:`children`), and optionally
    ``enter_<kind>(self, node)``, called before the node's children are visited; returning
    ``False`` from it skips the children and makes ``skip(node)`` the node's result.
    Results are memoised per node (``self.memo``) for the life of the functor object.

    A ``let`` is walked *value, then bind, then body*: after the value's result is known,
    :meth:`bind_let` runs, and may set ``self.memo[let.var]`` to any result; every use of
    the variable in the body then sees it (this is how a mutator inlines a binding in the
    same walk). Let chains cost one stack entry per let, never Python recursion.
    """

    _visit_table: dict = {}
    _enter_table: dict = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._visit_table = {node_type: getattr(cls, "visit_" + kind)
                            for node_type, kind in _NODE_KINDS.items()
                            if hasattr(cls, "visit_" + kind)}
        cls._enter_table = {node_type: getattr(cls, "enter_" + kind)
                            for node_type, kind in _NODE_KINDS.items()
                            if hasattr(cls, "enter_" + kind)}

    def __init__(self):
        self.memo: dict = {}

    def skip(self, node):
        """Result of a node whose ``enter_`` hook returned False (default: None)."""
        return None

    def bind_let(self, let, value_result) -> None:
        """Hook between a let's value and its body (default: nothing).

        Args:
            let: the original :class:`~irlib.ir.expr.Let` node.
            value_result: the result of its value (for a mutator: the rewritten value).
        """

    def _dispatch(self, node, child_results):
        handler = self._visit_table.get(type(node))
        if handler is None:
            raise IRError(f"{type(self).__name__} has no rule for {type(node).__name__}")
        return handler(self, node, child_results)

    def visit(self, expr):
        """Fold ``expr``; returns its result."""
        memo = self.memo
        if expr in memo:
            return memo[expr]
        enter_table = self._enter_table
        let_type = E.Let
        stack = [(expr, _ENTER)]
        while stack:
            node, stage = stack.pop()
            if stage == _ENTER:
                if node in memo:
                    continue
                enter = enter_table.get(type(node))
                if enter is not None and enter(self, node) is False:
                    memo[node] = self.skip(node)
                    continue
                if type(node) is let_type:
                    stack.append((node, _BIND))
                    if node.value not in memo:
                        stack.append((node.value, _ENTER))
                    continue
                stack.append((node, _DONE))
                for child in reversed(children(node)):
                    if child not in memo:
                        stack.append((child, _ENTER))
            elif stage == _BIND:
                self.bind_let(node, memo[node.value])
                stack.append((node, _DONE))
                if node.body not in memo:
                    stack.append((node.body, _ENTER))
                if node.var not in memo:
                    stack.append((node.var, _ENTER))
            elif node not in memo:
                memo[node] = self._dispatch(node, tuple(memo[c] for c in children(node)))
        return memo[expr]

    __call__ = visit


class ExprVisitor(ExprFunctor):
    """Calls ``visit_<kind>(node)`` once for every reachable node, children first.

    Override only the kinds you care about; the rest do nothing. ``enter_<kind>(node)``
    hooks run top-down before a node's children (return ``False`` to skip them).
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        table = {}
        for node_type, kind in _NODE_KINDS.items():
            method = getattr(cls, "visit_" + kind, None)
            table[node_type] = _adapt_visitor(method)
        cls._visit_table = table

    def visit(self, expr):
        """Visit ``expr`` and everything below it (each node once per visitor)."""
        super().visit(expr)


def _adapt_visitor(method):
    if method is None:
        return lambda self, node, results: None
    return lambda self, node, results: method(self, node)


ExprVisitor.__init_subclass__()


class ExprMutator(ExprFunctor):
    """The rewriter every pass builds on: bottom-up, memoised, iterative, let-aware.

    A subclass overrides any of three hooks; everything else is kept as it is, so a
    mutator that overrides nothing returns its input (the same object).

    * ``visit_<kind>(self, node, original) -> Expr`` -- **the handler signature.**
      ``original`` is the input node; ``node`` is ``original`` rebuilt with its
      already-rewritten children (``node is original`` when no child changed). Read types
      (``_checked_type``) and attributes from ``original``, build from ``node``; return the
      replacement. Handlers never call ``self.visit(child)``.
    * ``enter_<kind>(self, node) -> bool | None``: called top-down before the children;
      return ``False`` to keep the node, unvisited below.
    * ``bind_let(self, let, new_value)``: called after a let's value is rewritten and
      before its body; setting ``self.memo[let.var] = expr`` replaces every use of the
      variable in the body by ``expr`` (inline or substitute in the same walk). A let whose
      variable was mapped to a non-Var keeps its original variable as binder; a
      ``visit_let`` may then drop the binding (return ``node.body``).

    ``<kind>`` is the snake-case class name (see :func:`node_kind`). A variable replaced
    at its binding site (function parameter, let variable, pattern variable) is replaced
    at every use, since results are memoised per node. Pre-setting ``self.memo`` (Var ->
    Expr) before :meth:`visit` substitutes those variables (this is :func:`substitute`).
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        table = {}
        for node_type, kind in _NODE_KINDS.items():
            table[node_type] = _adapt_mutator(getattr(cls, "visit_" + kind, None))
        cls._visit_table = table

    def skip(self, node):
        """A skipped node is kept as it is."""
        return node


def _rebuild_rewritten(node, results):
    """``rebuild`` that keeps a let's original binder when its var was mapped to a non-Var."""
    if type(node) is E.Let and not isinstance(results[0], E.Var):
        results = (node.var,) + results[1:]
    return rebuild(node, results)


def _adapt_mutator(method):
    if method is None:
        return lambda self, node, results: _rebuild_rewritten(node, results)
    return lambda self, node, results: method(self, _rebuild_rewritten(node, results), node)


ExprMutator.__init_subclass__()


def use_counts(expr) -> dict:
    """How many parent edges point at each node reachable from ``expr`` (a node shared by
    two calls counts 2; the root counts 0 and is absent)."""
    uses: dict = {}
    for node in post_order(expr):
        for child in children(node):
            uses[child] = uses.get(child, 0) + 1
    return uses


def binder_set(expr) -> set:
    """Every variable bound somewhere in ``expr`` (function params, let vars, pattern vars)."""
    bound = set()
    for node in post_order(expr):
        kind = type(node)
        if kind is E.Let:
            bound.add(node.var)
        elif kind is E.Function:
            bound.update(node.params)
        elif kind is E.Match:
            for clause in node.clauses:
                bound.update(pattern_vars(clause.lhs))
    return bound


def free_vars(expr) -> list:
    """Free local variables of ``expr`` in first-occurrence (post-order) order."""
    bound = binder_set(expr)
    # post_order lists each node once, so each free Var appears once.
    return [node for node in post_order(expr) if type(node) is E.Var and node not in bound]
