"""Property test: on random well-formed DAGs with sharing across scopes, every printed use of
a variable or graph binding refers to a definition visible at that point, every graph number
is defined once, and each non-atomic node that is not a scope root gets exactly one binding.

The scope checker below reads the printed lines on its own (blocks open at a line ending in
``{`` or ``(`` and close at a line starting with ``}`` or ``)``); it stands in for the parser
until round-trip tests arrive with it.
"""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

import irlib
from irlib import (Clause, Function, If, Let, Match, PatternVar, PatternWildcard, Tuple,
                   TupleGetItem, const, var)
from irlib.ir import expr as E
from irlib.ir.functor import free_vars, post_order

_TOKEN = re.compile(r"%[A-Za-z_][A-Za-z0-9_]*|%\d+")


@st.composite
def programs(draw):
    free = [var("a"), var("b")]
    pool = []   # (expr, frozenset of the variables it needs)

    def build(depth, scope_vars):
        choice = draw(st.integers(0, 9 if depth > 0 else 2))
        if choice == 0:
            return draw(st.sampled_from(scope_vars))
        if choice == 1:
            return const(draw(st.integers(0, 3)))
        if choice == 2:
            usable = [e for e, needs in pool if needs <= frozenset(scope_vars)]
            if usable:
                return draw(st.sampled_from(usable))
            return const(1.0)
        if choice == 3:
            node = irlib.exp(build(depth - 1, scope_vars))
        elif choice == 4:
            node = irlib.add(build(depth - 1, scope_vars), build(depth - 1, scope_vars))
        elif choice == 5:
            node = TupleGetItem(Tuple([build(depth - 1, scope_vars)]), 0)
        elif choice == 6:
            node = If(build(depth - 1, scope_vars), build(depth - 1, scope_vars),
                      build(depth - 1, scope_vars))
        elif choice == 7:
            bound = var("x")
            node = Let(bound, build(depth - 1, scope_vars),
                       build(depth - 1, scope_vars + (bound,)))
        elif choice == 8:
            param = var("p")
            func = Function([param], build(depth - 1, scope_vars + (param,)))
            node = E.Call(func, (build(depth - 1, scope_vars),))
        else:
            head = var("h")
            node = Match(build(depth - 1, scope_vars), [
                Clause(PatternVar(head), build(depth - 1, scope_vars + (head,))),
                Clause(PatternWildcard(), build(depth - 1, scope_vars))])
        pool.append((node, frozenset(free_vars(node))))
        return node

    return build(draw(st.integers(1, 5)), tuple(free))


def check_scopes(text: str):
    scopes = [set()]
    graph_defs = []
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped.startswith(("}", ")")):
            scopes.pop()
            if stripped.endswith("{"):   # } else {
                scopes.append(set())
            continue
        binders, inner = set(), set()
        graph = re.match(r"(%\d+) = ", stripped)
        if graph:
            graph_defs.append(graph.group(1))
            binders.add(graph.group(1))
        let = re.match(r"let (%\w+)", stripped)
        if let:
            binders.add(let.group(1))   # letrec: visible in its own value
        declared = re.match(r"free_var (%\w+)", stripped)
        if declared:
            binders.add(declared.group(1))
        header = re.search(r"fn \(([^)]*)\)", stripped)
        if header:
            inner |= set(_TOKEN.findall(header.group(1)))
        if stripped.endswith("=> {"):
            inner |= set(_TOKEN.findall(stripped))
        scopes[-1] |= binders
        for token in _TOKEN.findall(stripped):
            if token in inner or token in binders:
                continue
            assert any(token in scope for scope in scopes), (token, line, text)
        if stripped.endswith(("{", "(")):
            scopes.append(inner)
    assert len(scopes) == 1, text
    assert len(graph_defs) == len(set(graph_defs)), text
    return graph_defs


def expected_binding_count(expr) -> int:
    """Non-atomic nodes, minus those used once at a root position (and the root itself)."""
    def atomic(node):
        return type(node) in (E.Var, E.GlobalVar, E.Op, E.Constructor, E.Constant) or (
            type(node) is E.Call and type(node.op) is E.Constructor and not node.args)

    uses, root_uses = {}, {}
    for node in post_order(expr):
        kind = type(node)
        roots = []
        if kind is E.Let:
            roots = [node.value, node.body]
            others = []
        elif kind is E.Function:
            roots, others = [node.body], []
        elif kind is E.If:
            roots, others = [node.true_branch, node.false_branch], [node.cond]
        elif kind is E.Match:
            roots, others = [c.rhs for c in node.clauses], [node.data]
        elif kind is E.Call:
            others = [node.op, *node.args]
        elif kind is E.Tuple:
            others = list(node.fields)
        elif kind is E.TupleGetItem:
            others = [node.tuple_value]
        else:
            others = []
        for child in roots:
            uses[child] = uses.get(child, 0) + 1
            root_uses[child] = root_uses.get(child, 0) + 1
        for child in others:
            uses[child] = uses.get(child, 0) + 1
    count = 0
    for node in post_order(expr):
        if atomic(node) or node is expr:
            continue
        if not (uses[node] == 1 and root_uses.get(node) == 1):
            count += 1
    return count


@settings(max_examples=150, deadline=None)
@given(programs())
def test_random_programs_print_with_valid_scoping(expr):
    text = irlib.pretty_print(expr)
    graph_defs = check_scopes(text)
    assert len(graph_defs) == expected_binding_count(expr), text
    assert irlib.astext(expr) == '#[version = "0.0.5"]\n' + text
