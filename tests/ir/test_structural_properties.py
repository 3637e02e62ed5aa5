"""Property tests of structural equality and hashing on generated programs."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import irlib
from irlib import analysis, structural_equal, structural_hash
from irlib.ir import expr as E
from irlib.ir.functor import ExprMutator, post_order
from irlib.testing import strategies as irst

ANY_PROGRAM = st.one_of(irst.tensor_exprs(), irst.programs())


class RenameBound(ExprMutator):
    """A fresh Var (same annotation) at every binder; uses follow through the memo."""

    def __init__(self, bound):
        super().__init__()
        self.bound = set(bound)

    def visit_var(self, node, original):
        if node in self.bound:
            return E.Var(node.name_hint + "_renamed", node.type_annotation)
        return node


class RenameAll(RenameBound):
    def __init__(self):
        super().__init__(())

    def visit_var(self, node, original):
        return E.Var(node.name_hint + "_renamed", node.type_annotation)


class ReplaceNode(ExprMutator):
    """Replace one node (found by identity) with ``new``."""

    def __init__(self, target, new):
        super().__init__()
        self.target, self.new = target, new

    def visit_call(self, node, original):
        return self.new if node is self.target else node

    def visit_constant(self, node, original):
        return self.new if node is self.target else node


def alpha_renamed(expr):
    return RenameBound(analysis.bound_vars(expr)).visit(expr)


@settings(max_examples=60, deadline=None)
@given(ANY_PROGRAM)
def test_alpha_renamed_copies_are_equal_and_hash_alike(program):
    renamed = alpha_renamed(program.expr)
    assert not set(analysis.bound_vars(renamed)) & set(analysis.bound_vars(program.expr))
    assert structural_equal(program.expr, renamed)
    assert structural_equal(renamed, program.expr)
    assert structural_hash(program.expr) == structural_hash(renamed)
    function = program.function
    assert structural_equal(function, alpha_renamed(function))
    assert structural_hash(function) == structural_hash(alpha_renamed(function))


@settings(max_examples=40, deadline=None)
@given(ANY_PROGRAM)
def test_renaming_free_vars_needs_map_free_vars(program):
    renamed = RenameAll().visit(program.expr)
    assert structural_equal(program.expr, renamed, map_free_vars=True)
    assert structural_hash(program.expr, map_free_vars=True) == \
        structural_hash(renamed, map_free_vars=True)
    if analysis.free_vars(program.expr):
        assert not structural_equal(program.expr, renamed)


@settings(max_examples=40, deadline=None)
@given(ANY_PROGRAM)
def test_modules_of_renamed_programs_are_equal(program):
    mod = program.module()
    other = irlib.IRModule()
    for gvar, function in mod.items():
        other[gvar.name_hint] = alpha_renamed(function)
    assert structural_equal(mod, other)
    assert structural_hash(mod) == structural_hash(other)


@settings(max_examples=60, deadline=None)
@given(ANY_PROGRAM, st.data())
def test_a_changed_constant_is_noticed(program, data):
    constants = [n for n in post_order(program.expr) if isinstance(n, E.Constant)]
    if not constants:
        return
    target = data.draw(st.sampled_from(constants))
    array = target.data.numpy()
    changed = E.Constant(array + np.ones((), array.dtype))
    mutated = ReplaceNode(target, changed).visit(program.expr)
    assert not structural_equal(program.expr, mutated)
    assert structural_hash(program.expr) != structural_hash(mutated)


@settings(max_examples=60, deadline=None)
@given(ANY_PROGRAM, st.data())
def test_a_changed_op_is_noticed(program, data):
    calls = [n for n in post_order(program.expr)
             if isinstance(n, E.Call) and isinstance(n.op, E.Op) and len(n.args) == 2
             and n.attrs is None]
    if not calls:
        return
    target = data.draw(st.sampled_from(calls))
    other = "subtract" if target.op.name != "subtract" else "add"
    mutated = ReplaceNode(target, target.replace(op=irlib.op.get(other))).visit(program.expr)
    assert not structural_equal(program.expr, mutated)
    assert structural_hash(program.expr) != structural_hash(mutated)


@settings(max_examples=60, deadline=None)
@given(ANY_PROGRAM, st.data())
def test_swapped_arguments_are_noticed_unless_equal(program, data):
    calls = [n for n in post_order(program.expr)
             if isinstance(n, E.Call) and len(n.args) == 2]
    if not calls:
        return
    target = data.draw(st.sampled_from(calls))
    first, second = target.args
    swapped = ReplaceNode(target, target.replace(args=(second, first))).visit(program.expr)
    assert structural_equal(program.expr, swapped) == structural_equal(first, second)
