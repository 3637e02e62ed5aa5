"""check_pass: it passes on the real DCE, FoldConstant and CSE, and finds the bug in each of
nine purposely broken copies of them (three each) within its default example budget.

Each mutant is the real pass's mutator with one method overridden by a plausible mistake;
the failure must be a PassCheckError whose report shows the program before and after in
the text format and the inputs.
"""

import numpy as np
import pytest

import interp  # noqa: F401  (registers the "debug", "graph" and "python" executors)
from irlib.ir import expr as E
from irlib.ir.types import TensorType
from irlib.op.registry import make_call
from irlib.testing import PassCheckError, check_pass
from irlib.transform import DeadCodeElimination, EliminateCommonSubexpr, FoldConstant
from irlib.transform import dead_code, eliminate_common_subexpr as cse, fold_constant as fold
from irlib.transform._rewrite import map_functions


def module_pass(expr_rewrite):
    """A module -> module function applying ``expr_rewrite`` to every function."""
    def run(mod):
        return map_functions(mod, expr_rewrite)
    run.__name__ = expr_rewrite.__name__
    return run


# -- DeadCodeElimination mutants --------------------------------------------------------------

@module_pass
def dce_drops_effects(func):
    """Treats every binding as pure: an unused ``r := ...`` or closure call disappears."""
    effect = dict.fromkeys(dead_code.may_have_effect(func), False)
    counts = dead_code.live_use_counts(func, effect)
    return dead_code._Eliminate(counts, effect, False).visit(func)


@module_pass
def dce_off_by_one(func):
    """Counts a binding used once as dead (``<= 1`` where ``== 0`` was meant)."""
    effect = dead_code.may_have_effect(func)
    counts = {var: n - 1 for var, n in dead_code.live_use_counts(func, effect).items()}
    return dead_code._Eliminate(counts, effect, False).visit(func)


class _KeepValue(dead_code._Eliminate):
    def visit_let(self, node, original):
        # Removes a dead let but keeps its value instead of its body.
        return node.value if original in self.removed else node


@module_pass
def dce_keeps_the_wrong_part(func):
    """Replaces a dead ``let %v = e; body`` by ``e`` instead of ``body``."""
    effect = dead_code.may_have_effect(func)
    counts = dead_code.live_use_counts(func, effect)
    return _KeepValue(counts, effect, False).visit(func)


# -- FoldConstant mutants ---------------------------------------------------------------------

class _SwapArgs(fold._Fold):
    def visit_call(self, node, original):
        # Evaluates binary ops with their arguments swapped.
        if isinstance(node.op, E.Op) and len(node.args) == 2:
            node = node.replace(args=(node.args[1], node.args[0]))
        return super().visit_call(node, original)


class _ProjectNext(fold._Fold):
    def visit_tuple_get_item(self, node, original):
        # ``(a, b, c).i`` becomes field ``(i + 1) % n`` (an off-by-one index).
        value = node.tuple_value
        if isinstance(value, E.Tuple):
            return value.fields[(node.index + 1) % len(value.fields)]
        return node


class _Float64(fold._Fold):
    def visit_call(self, node, original):
        # Folds into float64 constants whatever the op's dtype.
        folded = super().visit_call(node, original)
        if folded is not node and isinstance(folded, E.Constant):
            return E.Constant(folded.data.numpy().astype("float64"))
        return folded


@module_pass
def fold_swaps_arguments(func):
    """Evaluates ``subtract(1f, 2f)`` as ``subtract(2f, 1f)``."""
    return _SwapArgs().visit(func)


@module_pass
def fold_projects_the_next_field(func):
    """Folds ``(a, b).0`` to ``b``."""
    return _ProjectNext().visit(func)


@module_pass
def fold_widens_to_float64(func):
    """Gives folded constants dtype float64."""
    return _Float64().visit(func)


# -- EliminateCommonSubexpr mutants ------------------------------------------------------------

class _IgnoreOpName(cse._CommonSubexpr):
    def visit_call(self, node):
        # Keys calls by attributes and arguments only: add(a, b) merges with multiply(a, b).
        if not isinstance(node.op, E.Op) or not node.args:
            return node
        key = (node.attrs, tuple(cse._argument_key(a) for a in node.args))
        return self.calls.setdefault(key, node)


class _IgnoreAttrs(cse._CommonSubexpr):
    def visit_call(self, node):
        # Keys calls by op and arguments only: sum(x, axis=0) merges with sum(x, axis=1).
        if not isinstance(node.op, E.Op) or not node.args:
            return node
        key = (node.op.name, tuple(cse._argument_key(a) for a in node.args))
        return self.calls.setdefault(key, node)


class _IgnoreIndex(cse._CommonSubexpr):
    def visit_tuple_get_item(self, node):
        # Keys projections by their tuple only: t.0 merges with t.1.
        return self.projections.setdefault(id(node.tuple_value), node)


@module_pass
def cse_ignores_the_op(func):
    """Merges calls of different ops on the same arguments."""
    return _IgnoreOpName(None).visit(func)


@module_pass
def cse_ignores_attributes(func):
    """Merges calls of one op with different attributes."""
    return _IgnoreAttrs(None).visit(func)


@module_pass
def cse_ignores_the_index(func):
    """Merges projections of one tuple at different indices."""
    return _IgnoreIndex(None).visit(func)


class _MapsFreeVars(cse._CommonSubexpr):
    def visit_call(self, node):
        from irlib.ir.structural import structural_hash
        if not isinstance(node.op, E.Op) or not node.args:
            return node
        key = (node.op.name, node.attrs, structural_hash(node, map_free_vars=True))
        return self.calls.setdefault(key, node)


@module_pass
def cse_maps_free_vars(func):
    """Keys calls by a structural hash that maps free variables: negative(%x0) == negative(%x1)."""
    return _MapsFreeVars(None).visit(func)


# -- the checks ------------------------------------------------------------------------------

MUTANTS = [
    (dce_drops_effects, "effects"),
    (dce_off_by_one, "dataflow"),
    (dce_keeps_the_wrong_part, "dataflow"),
    (fold_swaps_arguments, "dataflow"),
    (fold_projects_the_next_field, "dataflow"),
    (fold_widens_to_float64, "dataflow"),
    (cse_ignores_the_op, "sharing"),
    (cse_ignores_attributes, "sharing"),
    (cse_ignores_the_index, "sharing"),
    (cse_maps_free_vars, "sharing"),
]


@pytest.mark.parametrize("mutant, programs", MUTANTS, ids=[m.__name__ for m, _ in MUTANTS])
def test_check_pass_finds_the_seeded_bug(mutant, programs):
    # Default budget; shrinking off here for speed (the next test shrinks).
    with pytest.raises(PassCheckError) as caught:
        check_pass(mutant, programs=programs, shrink=False)
    report = str(caught.value)
    assert report.startswith(f"check_pass: {mutant.__name__} ")
    assert "--- program before the pass:" in report and "def @main" in report
    assert "--- inputs:" in report and "--- detail:" in report
    assert caught.value.before is not None and caught.value.inputs is not None


def test_the_report_shows_the_shrunk_program():
    with pytest.raises(PassCheckError) as caught:
        check_pass(dce_off_by_one)
    report = str(caught.value)
    before = report.split("--- program before the pass:")[1].split("--- after the pass:")[0]
    assert len(before.strip().splitlines()) <= 6, report     # shrunk to a few lines
    assert "ill-formed @main" in report and "free variable" in report


@pytest.mark.parametrize("pass_, programs", [
    (DeadCodeElimination(), ("dataflow", "effects")),
    (FoldConstant(), ("dataflow", "effects")),
    (EliminateCommonSubexpr(), ("dataflow", "sharing")),
], ids=["dce", "fold", "cse"])
def test_check_pass_accepts_the_real_passes(pass_, programs):
    result = check_pass(pass_, programs=programs, idempotent=True)
    assert result.examples >= 60
    assert result.changed > 0          # the programs exercised the pass


def test_the_real_passes_on_control_flow_and_adt_programs():
    check_pass(DeadCodeElimination(), programs="control", max_examples=20)
    check_pass(FoldConstant(), programs="adt", max_examples=5)


def test_an_input_mutating_pass_is_reported():
    def mutate(mod):
        mod["main"] = mod["main"].replace(body=E.Tuple((mod["main"].body,)))
        return mod
    with pytest.raises(PassCheckError, match="mutated its input module"):
        check_pass(mutate, max_examples=5, shrink=False)


def test_a_pass_that_is_not_idempotent_is_reported():
    def wrap_again(mod):
        out = mod.copy()
        main = mod["main"]
        out["main"] = main.replace(body=E.TupleGetItem(E.Tuple((main.body,)), 0))
        return out
    # Result-preserving, well typed, but it grows on every run.
    with pytest.raises(PassCheckError, match="is not idempotent"):
        check_pass(wrap_again, idempotent=True, max_examples=5, shrink=False)


def test_tolerance_mode_accepts_approximate_passes_only_within_it():
    def nudge(mod):
        """Scales a float result by 1 + 1e-4: right only up to a relative 1e-4."""
        out = mod.copy()
        main = mod["main"]
        ty = main.checked_type.ret_type
        if not isinstance(ty, TensorType) or not ty.dtype.startswith("float"):
            return out
        scale = E.const(np.array(1.0 + 1e-4, dtype=ty.dtype))
        out["main"] = main.replace(body=make_call("multiply", (main.body, scale)))
        return out
    programs = "dataflow"
    with pytest.raises(PassCheckError, match="changed the result"):
        check_pass(nudge, programs=programs, max_examples=30, shrink=False)
    check_pass(nudge, programs=programs, max_examples=30, rtol=1e-3, atol=1e-3)


def test_unknown_executor_and_program_family_are_named():
    from irlib.errors import IRError, UnknownNameError
    with pytest.raises(UnknownNameError, match="no executor named 'tvm'"):
        check_pass(FoldConstant(), executor="tvm")
    with pytest.raises(IRError, match="unknown program family 'graphs'"):
        check_pass(FoldConstant(), programs="graphs")


def test_the_executor_may_be_a_callable_or_another_registered_one():
    calls = []

    def run(mod, args):
        calls.append(len(args))
        return interp.create_executor("debug", mod=mod).evaluate()(*args)
    check_pass(FoldConstant(), executor=run, max_examples=5)
    assert len(calls) == 10                        # before and after, five programs
    check_pass(FoldConstant(), executor="python", max_examples=5)
    check_pass(FoldConstant(), executor="dataflow", max_examples=5)



def test_an_executor_failing_before_the_pass_is_not_blamed_on_the_pass():
    def fails(mod, args):
        raise RuntimeError("unsupported")
    with pytest.raises(PassCheckError, match="was not to blame: the executor failed on the "
                                             "program \\*before\\* the pass") as caught:
        check_pass(FoldConstant(), executor=fails, max_examples=3, shrink=False)
    assert "RuntimeError: unsupported" in str(caught.value)


def swap_independent_lets(mod):
    """Swaps every adjacent pair of top-level lets of main whose second value does not use
    the first variable: right for pure code, wrong when both have effects."""
    from irlib.analysis import free_vars
    main = mod["main"]
    spine, node = [], main.body
    while isinstance(node, E.Let):
        spine.append((node.var, node.value))
        node = node.body
    index = 0
    while index + 1 < len(spine):
        (var1, value1), (var2, value2) = spine[index], spine[index + 1]
        if var1 not in free_vars(value2):
            spine[index], spine[index + 1] = spine[index + 1], spine[index]
            index += 2
        else:
            index += 1
    for var, value in reversed(spine):
        node = E.Let(var, value, node)
    out = mod.copy()
    out["main"] = main.replace(body=node)
    return out


def test_effect_order_matters_only_in_effect_programs():
    check_pass(swap_independent_lets, programs="dataflow", max_examples=30)
    with pytest.raises(PassCheckError, match="changed the result"):
        check_pass(swap_independent_lets, programs="effects", shrink=False)


def test_interp_testing_exposes_the_helpers_with_the_runtime_executors():
    import interp.testing
    from irlib.testing import runner_names
    assert {"debug", "graph", "python", "dataflow"} <= set(runner_names())
    result = interp.testing.check_pass(FoldConstant(), max_examples=3, shrink=False)
    assert result.examples == 3
    x = E.Var("x", TensorType((2,), "float32"))
    from irlib.ir.module import IRModule
    mod = IRModule.from_expr(E.Function([x], make_call("negative", (x,))))
    results = interp.testing.differential(mod, inputs=[np.array([1, -2], "float32")])
    np.testing.assert_array_equal(results["python"], [-1, 2])


# -- verify mode --------------------------------------------------------------------------------

def _break_then_repair():
    """A Sequential whose first pass leaves an ill-typed program (``main``'s body plus a
    7-element constant) that its second pass repairs: the end result is the input again."""
    import irlib
    from irlib import transform

    def rewrite_main(mod, rewrite):
        out = mod.copy()
        out["main"] = rewrite(mod["main"])
        return out

    @transform.module_pass(opt_level=0, name="AddsAWrongShape")
    def breaks(mod, ctx):
        return rewrite_main(mod, lambda f: E.Function(f.params, irlib.add(
            f.body, irlib.const(np.zeros(7, "float32")))))

    @transform.module_pass(opt_level=0, name="RemovesIt")
    def repairs(mod, ctx):
        def remove(func):
            body = func.body
            if isinstance(body, E.Call) and isinstance(body.args[1], E.Constant) \
                    and body.args[1].data.shape == (7,):
                return E.Function(func.params, body.args[0])
            return func
        return rewrite_main(mod, remove)

    return transform.Sequential([breaks, repairs], opt_level=0)


def test_verify_mode_names_the_inner_pass_that_broke_the_program():
    pipeline = _break_then_repair()
    with pytest.raises(PassCheckError) as failure:
        check_pass(pipeline, max_examples=5, shrink=False)
    report = str(failure.value)
    assert "raised an exception" in report and "AddsAWrongShape" in report


def test_without_verify_mode_only_the_end_result_is_checked():
    result = check_pass(_break_then_repair(), max_examples=5, verify=False)
    assert result.examples == 5
