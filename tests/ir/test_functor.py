"""ExprFunctor / ExprVisitor / ExprMutator: every node kind, memoisation, depth, renaming,
spans and enter_ hooks."""

import inspect

import pytest
from hypothesis import given, settings

import irlib
from irlib import (Call, Clause, Constructor, Function, GlobalTypeVar, GlobalVar, If, IRError,
                   Let, Match, PatternConstructor, PatternVar, PatternWildcard, RefCreate,
                   RefRead, RefWrite, Span, TensorType, Tuple, TupleGetItem, analysis, const,
                   structural_equal, var)
from irlib.ir import expr as E
from irlib.ir import functor
from irlib.ir.functor import ExprFunctor, ExprMutator, ExprVisitor, children, rebuild
from irlib.testing import strategies as irst
from helpers import let_chain_function

F32 = TensorType((), "float32")
ALL_KINDS = {"var", "global_var", "constant", "tuple", "tuple_get_item", "call", "let", "if",
             "function", "op", "constructor", "ref_create", "ref_read", "ref_write", "match"}


def every_kind_program():
    """A function that contains one node of every expression kind."""
    x, c, r, h = var("x", F32), var("c", TensorType((), "bool")), var("r"), var("h")
    list_type = GlobalTypeVar("List")
    cons = Constructor("Cons", [F32, F32], list_type)
    nil = Constructor("Nil", [], list_type)
    data = Call(cons, [x, Call(nil, [])])
    match = Match(data, [Clause(PatternConstructor(cons, [PatternVar(h), PatternWildcard()]), h),
                         Clause(PatternWildcard(), x)])
    body = Let(r, RefCreate(x), Tuple([
        RefWrite(r, RefRead(r)), If(c, x, const(1.0)), TupleGetItem(Tuple([x]), 0), match,
        Call(GlobalVar("g"), [x]), irlib.exp(x)]))
    return Function([x, c], body)


def test_every_expression_class_has_a_kind():
    concrete = {cls for _, cls in inspect.getmembers(E, inspect.isclass)
                if issubclass(cls, E.Expr) and cls is not E.Expr}
    assert concrete == set(functor._NODE_KINDS)
    assert set(functor._NODE_KINDS.values()) == ALL_KINDS


def test_visitor_sees_every_kind_once_per_node():
    seen = []


    def recorder(kind):
        return lambda self, node: seen.append((kind, node))
    Recorder = type("Recorder", (ExprVisitor,), {"visit_" + k: recorder(k) for k in ALL_KINDS})
    program = every_kind_program()
    Recorder().visit(program)
    assert {kind for kind, _ in seen} == ALL_KINDS
    nodes = [node for _, node in seen]
    assert len(nodes) == len(set(nodes))
    assert nodes[-1] is program


def test_mutator_dispatches_every_kind():
    seen = set()

    def keep(kind):
        def handler(self, node, original):
            seen.add(kind)
            return node
        return handler
    Keeper = type("Keeper", (ExprMutator,), {"visit_" + k: keep(k) for k in ALL_KINDS})
    program = every_kind_program()
    assert Keeper().visit(program) is program
    assert seen == ALL_KINDS


def test_functor_results_are_memoised_across_visits():
    calls = []

    class CountCalls(ExprFunctor):
        def visit_var(self, node, results):
            calls.append(node)
            return 1

        def visit_tuple(self, node, results):
            calls.append(node)
            return sum(results)
    x = var("x")
    shared = Tuple([x, x])
    folder = CountCalls()
    assert folder.visit(shared) == 2
    assert folder.visit(Tuple([shared, shared, x])) == 5
    assert len(calls) == 3   # x, the shared tuple, the outer tuple


def test_functor_folds_children_results():
    def height(self, node, results):
        return 1 + max(results, default=0)
    Height = type("Height", (ExprFunctor,), {"visit_" + k: height for k in ALL_KINDS})
    x = var("x")
    assert Height().visit(x) == 1
    assert Height().visit(Tuple([x, irlib.exp(x)])) == 3   # tuple -> call -> (op | x)
    assert Height().visit(every_kind_program()) > 4


def test_functor_without_a_rule_names_itself_and_the_node():
    class OnlyVars(ExprFunctor):
        def visit_var(self, node, results):
            return node
    with pytest.raises(IRError, match="OnlyVars has no rule for Tuple"):
        OnlyVars().visit(Tuple([var("x")]))


def test_noop_mutator_returns_the_same_object():
    program = every_kind_program()
    assert ExprMutator().visit(program) is program


@settings(max_examples=40, deadline=None)
@given(irst.programs())
def test_noop_mutator_on_generated_programs(program):
    assert ExprMutator().visit(program.expr) is program.expr


class RenameVars(ExprMutator):
    def visit_var(self, node, original):
        return E.Var(node.name_hint + "2", node.type_annotation)


def test_renaming_at_binding_sites_reaches_every_use():
    program = every_kind_program()
    renamed = RenameVars().visit(program)
    assert renamed is not program
    old_vars = set(analysis.all_vars(program))
    new_vars = analysis.all_vars(renamed)
    assert not old_vars & set(new_vars)
    assert analysis.free_vars(renamed) == []
    assert analysis.well_formed(renamed)
    assert structural_equal(program, renamed)
    match = renamed.body.body.fields[3]
    pattern_var = match.clauses[0].lhs.patterns[0].var
    assert match.clauses[0].rhs is pattern_var
    assert pattern_var.name_hint == "h2"


def test_mutator_replacing_a_node_keeps_spans_of_rebuilt_parents():
    x = var("x", F32)
    inner = irlib.add(x, const(1.0))
    inner = inner.replace(span=Span("m.rly", 2, 3, 2, 9))
    outer = Function([x], Tuple([inner], span=Span("m.rly", 2, 1, 2, 12)))

    class ConstantsToTwo(ExprMutator):
        def visit_constant(self, node, original):
            return const(2.0)
    rewritten = ConstantsToTwo().visit(outer)
    assert rewritten.body.fields[0].args[1].data.numpy() == 2.0
    assert rewritten.body.span == outer.body.span
    assert rewritten.body.fields[0].span == inner.span
    assert rewritten.params[0] is x


def test_enter_hook_can_skip_children():
    x, y = var("x"), var("y")
    program = Tuple([Function([y], irlib.exp(y)), irlib.negative(x)])
    visited = []

    class SkipFunctions(ExprVisitor):
        def enter_function(self, node):
            return False

        def visit_call(self, node):
            visited.append(node.op.name)
    SkipFunctions().visit(program)
    assert visited == ["negative"]

    class RenameOutsideFunctions(RenameVars):
        def enter_function(self, node):
            return False
    rewritten = RenameOutsideFunctions().visit(program)
    assert rewritten.fields[0] is program.fields[0]
    assert rewritten.fields[1].args[0] is not x


def test_memoisation_keeps_a_doubling_dag_linear():
    x = var("x", F32)
    node = x
    for _ in range(100_000):
        node = node + node
    counts = {"call": 0, "var": 0}

    class Counter(ExprVisitor):
        def visit_call(self, node):
            counts["call"] += 1

        def visit_var(self, node):
            counts["var"] += 1
    Counter().visit(node)
    assert counts == {"call": 100_000, "var": 1}

    y = var("y", F32)

    class XtoY(ExprMutator):
        def visit_var(self, node, original):
            return y if node is x else node
    rewritten = XtoY().visit(node)
    assert rewritten.args[0] is rewritten.args[1]
    assert len(functor.post_order(rewritten)) == 100_000 + 2   # calls, y and the add op


def deep_let_chain(depth):
    return let_chain_function(depth, lambda previous: Tuple([previous]), first=var("v0", F32))


def test_hundred_thousand_deep_let_chain_is_visited_and_mutated():
    program = deep_let_chain(100_000)
    lets = []

    class LetCounter(ExprVisitor):
        def visit_let(self, node):
            lets.append(node)
    LetCounter().visit(program)
    assert len(lets) == 100_000
    renamed = RenameVars().visit(program)
    assert renamed.body.var.name_hint == "v12"
    assert analysis.free_vars(renamed) == []
    assert structural_equal(program, renamed)


def test_hundred_thousand_deep_call_chain_is_visited_and_mutated():
    x = var("x", F32)
    node = x
    for _ in range(100_000):
        node = irlib.exp(node)

    class ExpToNegative(ExprMutator):
        def visit_call(self, node, original):
            return node.replace(op=irlib.op.get("negative"))
    rewritten = ExpToNegative().visit(node)
    names = set()

    class Names(ExprVisitor):
        def visit_op(self, node):
            names.add(node.name)
    Names().visit(rewritten)
    assert names == {"negative"}


def test_children_and_rebuild_round_trip_for_every_kind():
    for node in functor.post_order(every_kind_program()):
        assert rebuild(node, children(node)) is node
