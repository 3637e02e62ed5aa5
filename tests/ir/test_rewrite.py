"""The let-aware hook of ExprMutator and the helpers of irlib.ir.rewrite (substitute,
fresh_copy, binders, let_chain/make_lets), including 100,000-deep let chains."""

from hypothesis import given, settings

import irlib
from irlib import Function, Let, TensorType, Tuple, analysis, const, structural_equal, var
from irlib.ir import expr as E
from irlib.ir.functor import ExprMutator, ExprVisitor
from irlib.ir.rewrite import binders, fresh_copy, let_chain, make_lets, substitute
from irlib.testing import strategies as irst

F32 = TensorType((), "float32")


class InlineConstants(ExprMutator):
    """Inline every let whose (rewritten) value is a constant, dropping the binding."""

    def __init__(self):
        super().__init__()
        self.dropped = set()
        self.order = []

    def bind_let(self, let, new_value):
        self.order.append(("bind", let.var.name_hint))
        if isinstance(new_value, E.Constant):
            self.memo[let.var] = new_value
            self.dropped.add(let)

    def visit_call(self, node, original):
        self.order.append(("call", original.op.name))
        return node

    def visit_let(self, node, original):
        return node.body if original in self.dropped else node


def test_bind_let_runs_after_the_value_and_before_the_body():
    x = var("x", F32)
    a, b = var("a"), var("b")
    program = Function([x], Let(a, irlib.exp(x), Let(b, irlib.negative(a), b)))
    mutator = InlineConstants()
    assert mutator.visit(program) is program
    assert mutator.order == [("call", "exp"), ("bind", "a"), ("call", "negative"),
                             ("bind", "b")]


def test_bind_let_inlines_in_the_same_walk():
    x = var("x", F32)
    c, d = var("c"), var("d")
    program = Function([x], Let(c, const(2.0), Let(d, irlib.add(x, c), irlib.multiply(d, c))))
    result = InlineConstants().visit(program)
    # by hand: fn (%x) { let %d = add(%x, 2f); multiply(%d, 2f) }
    expected_d = var("d")
    expected = Function([x], Let(expected_d, irlib.add(x, const(2.0)),
                                 irlib.multiply(expected_d, const(2.0))))
    assert structural_equal(result, expected)
    assert result.body.var is d
    assert analysis.well_formed(result)


def test_let_mapped_to_a_non_var_keeps_its_binder():
    x, y = var("x", F32), var("y")
    program = Let(y, irlib.exp(x), irlib.negative(y))

    class MapToConstant(ExprMutator):
        def bind_let(self, let, new_value):
            self.memo[let.var] = const(3.0)
    result = MapToConstant().visit(program)
    assert result.var is y
    assert isinstance(result.body.args[0], E.Constant)


def deep_chain(depth):
    x = var("x", F32)
    variables = [x] + [var(f"v{i}") for i in range(depth)]
    bindings = [(variables[i + 1], irlib.add(variables[i], const(1.0))) for i in range(depth)]
    return x, bindings, variables[-1]


def test_hundred_thousand_deep_chain_inlined_by_bind_let():
    depth = 100_000
    x, _, _ = deep_chain(1)
    variables = [var(f"c{i}") for i in range(depth)]
    body = irlib.add(x, variables[-1])
    for i in reversed(range(depth)):
        body = Let(variables[i], const(float(i)) if i == 0 else variables[i - 1], body)

    class Forward(InlineConstants):
        """Inline lets whose value is a constant or a variable (copy propagation)."""

        def bind_let(self, let, new_value):
            if isinstance(new_value, (E.Constant, E.Var)):
                self.memo[let.var] = new_value
                self.dropped.add(let)

        def visit_call(self, node, original):
            return node
    result = Forward().visit(Function([x], body))
    assert structural_equal(result, Function([x], irlib.add(x, const(0.0))))


def test_let_chain_and_make_lets_round_trip_a_deep_chain():
    x, bindings, result = deep_chain(100_000)
    program = make_lets(bindings, result)
    flat, inner = let_chain(program)
    assert inner is result
    assert len(flat) == 100_000
    assert all(a[0] is b[0] and a[1] is b[1] for a, b in zip(flat, bindings))
    assert let_chain(x) == ([], x)
    assert make_lets([], x) is x


def test_fresh_copy_of_a_deep_chain_renames_every_binder():
    x, bindings, result = deep_chain(100_000)
    program = Function([x], make_lets(bindings, result))
    copy = fresh_copy(program)
    assert not set(binders(copy)) & set(binders(program))
    assert len(binders(copy)) == 100_001
    assert structural_equal(program, copy)


def test_substitute_replaces_free_uses_only():
    x, y = var("x", F32), var("y", F32)
    program = Tuple([x, Function([y], irlib.add(x, y))])
    result = substitute(program, {x: const(5.0)})
    expected = Tuple([const(5.0), Function([y], irlib.add(const(5.0), y))])
    assert structural_equal(result, expected)
    assert result.fields[1].params[0] is y
    assert substitute(program, {}) is program


@settings(max_examples=30, deadline=None)
@given(irst.programs())
def test_fresh_copy_of_generated_programs_is_alpha_equal(program):
    copy = fresh_copy(program.expr)
    assert structural_equal(program.expr, copy)
    assert not set(binders(copy)) & set(binders(program.expr))
    assert set(analysis.free_vars(copy)) == set(analysis.free_vars(program.expr))


def test_visitor_sees_a_let_value_before_its_binder():
    x, a = var("x", F32), var("a")
    seen = []

    class Order(ExprVisitor):
        def visit_var(self, node):
            seen.append(node.name_hint)
    Order().visit(Let(a, irlib.exp(x), a))
    assert seen == ["x", "a"]
