"""What each pass must produce, checked against hand-built expected programs."""

import numpy as np
import pytest

import irlib
from irlib import Function, GlobalVar, IRModule, Let, Tuple, TupleGetItem, const, var
from irlib.analysis import well_formed
from irlib.errors import IRError, UnknownNameError
from irlib.ir.structural import assert_structural_equal
from irlib.transform import (DeadCodeElimination, EliminateCommonSubexpr, EtaExpand,
                             FoldConstant, InferType, Inline, LambdaLift,
                             RemoveUnusedFunctions, ToANormalForm, ToGraphNormalForm)

T3 = irlib.TensorType((3,), "float32")


def check(before, after, pass_):
    out = pass_(before)
    assert_structural_equal(out, after, map_free_vars=True)
    return out


# -- DeadCodeElimination ----------------------------------------------------------------------

def test_dce_removes_unused_lets_transitively():
    x, a, b, z = var("x", T3), var("a"), var("b"), var("z", T3)
    before = Function([x, z], Let(a, x + x, Let(b, a * a, z)))
    check(before, Function([x, z], z), DeadCodeElimination())


def test_dce_reference_examples():
    x, z = var("x"), var("z")
    check(Let(x, const(1), z), z, DeadCodeElimination())
    a, b, c, d = var("a"), var("b"), var("c"), var("d")
    check(Let(a, b, Let(c, d, c)), Let(c, d, c), DeadCodeElimination())


def test_dce_inline_once_substitutes_single_uses_but_not_into_functions():
    x, a, b = var("x", T3), var("a"), var("b")
    before = Function([x], Let(a, x + x, Let(b, a * x, b)))
    check(before, Function([x], (x + x) * x), DeadCodeElimination(inline_once=True))
    y = var("y", T3)
    inner = Function([y], a + y)
    nested = Function([x], Let(a, x + x, inner))
    out = DeadCodeElimination(inline_once=True)(nested)
    assert isinstance(out.body, Let)          # a use inside a function counts as two


def test_dce_keeps_bindings_with_effects():
    x, r, u = var("x", T3), var("r"), var("u")
    before = Function([x], Let(r, irlib.RefCreate(x), Let(u, irlib.RefWrite(r, x), x)))
    out = DeadCodeElimination()(before)
    assert isinstance(out.body, Let) and out.body.var is r


def test_dce_keeps_used_recursive_function():
    n, f = var("n", "int32"), var("f")
    loop = Function([n], irlib.If(n > const(0), f(n - const(1)), n))
    before = Function([], Let(f, loop, f(const(3))))
    assert DeadCodeElimination()(before) is before


# -- EliminateCommonSubexpr --------------------------------------------------------------------

def test_cse_merges_identical_calls():
    x = var("x", T3)
    before = Function([x], irlib.add(irlib.add(irlib.nn.relu(x), const(1.0)),
                                     irlib.add(irlib.nn.relu(x), const(1.0))))
    shared = irlib.add(irlib.nn.relu(x), const(1.0))
    out = check(before, Function([x], irlib.add(shared, shared)), EliminateCommonSubexpr())
    assert out.body.args[0] is out.body.args[1]


def test_cse_respects_attrs_and_fskip():
    x = var("x", shape=(2, 3))
    before = Function([x], Tuple([irlib.sum(x, axis=0), irlib.sum(x, axis=1)]))
    out = EliminateCommonSubexpr()(before)
    assert out.body.fields[0] is not out.body.fields[1]
    same = Function([x], Tuple([irlib.exp(x), irlib.exp(x)]))
    merged = EliminateCommonSubexpr()(same)
    assert merged.body.fields[0] is merged.body.fields[1]
    skipped = EliminateCommonSubexpr(fskip=lambda e: True)(same)
    assert skipped.body.fields[0] is not skipped.body.fields[1]


def test_cse_merges_projections():
    t = var("t", irlib.TupleType([T3, T3]))
    before = Function([t], TupleGetItem(t, 0) + TupleGetItem(t, 0))
    out = EliminateCommonSubexpr()(before)
    assert out.body.args[0] is out.body.args[1]


# -- FoldConstant -------------------------------------------------------------------------------

def test_fold_constant_turns_a_constant_subgraph_into_one_constant():
    x = var("x", T3)
    c = const(np.array([1.0, 2.0, 3.0], dtype="float32"))
    before = Function([x], x + irlib.multiply(c + c, const(2.0)))
    expected = Function([x], x + const(np.array([4.0, 8.0, 12.0], dtype="float32")))
    check(before, expected, FoldConstant())


def test_fold_constant_let_if_projection_and_shape_of():
    x, a = var("x", shape=(2, 5)), var("a")
    body = Let(a, const(2.0) * const(3.0),
               irlib.If(const(True), Tuple([x * a, const(1.0)]), Tuple([x, const(0.0)])))
    out = FoldConstant()(Function([x], TupleGetItem(body, 0)))
    # Relay projects a tuple literal even when it is not all constants
    check(out, Function([x], x * const(6.0)), lambda e: e)
    folded = FoldConstant()(Function([x], TupleGetItem(Tuple([const(1.0), const(2.0)]), 1)))
    assert float(folded.body.data.numpy()) == 2.0
    shape = FoldConstant()(Function([x], irlib.shape_of(x)))
    np.testing.assert_array_equal(shape.body.data.numpy(), np.array([2, 5], "int32"))


def test_fold_constant_keeps_zero_argument_calls_and_refs():
    zeros = irlib.zeros((2,), "float32")
    out = FoldConstant()(Function([], zeros))
    assert out.body is zeros
    ref = Function([], irlib.RefRead(irlib.RefCreate(const(1.0) + const(1.0))))
    out = FoldConstant()(ref)
    assert isinstance(out.body, irlib.RefRead) and isinstance(out.body.ref.value, irlib.Constant)


def test_fold_constant_leaves_primitive_functions_alone():
    prim = Function([], const(1.0) + const(1.0)).with_attr("Primitive", 1)
    before = Function([], prim())
    assert FoldConstant()(before) is before


# -- ToANormalForm / ToGraphNormalForm ---------------------------------------------------------------

def test_anf_reference_example_and_round_trip():
    x = var("x", T3)
    shared = irlib.add(x, x)
    before = Function([x], irlib.multiply(shared, shared))
    x0, x1 = var("x_0"), var("x_1")
    expected = Function([x], Let(x0, irlib.add(x, x), Let(x1, irlib.multiply(x0, x0), x1)))
    anf = check(before, expected, ToANormalForm())
    check(anf, before, ToGraphNormalForm())


def test_anf_makes_every_argument_atomic():
    x = var("x", T3)
    before = Function([x], Tuple([irlib.exp(x + x), TupleGetItem(Tuple([x, x]), 0)]))
    out = ToANormalForm()(before)
    assert irlib.analysis.check_basic_block_normal_form(out)
    assert irlib.analysis.is_a_normal_form(out.body)
    assert not irlib.analysis.is_a_normal_form(before.body)
    node = out.body
    while isinstance(node, Let):
        for child in irlib.ir.functor.children(node.value):
            assert isinstance(child, (irlib.Var, irlib.Constant, irlib.Op, irlib.GlobalVar))
        node = node.body


def test_anf_keeps_branch_code_in_its_branch_and_hoists_shared_code():
    x, c = var("x", T3), var("c", "bool")
    shared = irlib.exp(x)
    before = Function([x, c], irlib.If(c, irlib.log(x) + shared, shared))
    out = ToANormalForm()(before)
    first = out.body
    assert isinstance(first, Let) and first.value.op.name == "exp"   # hoisted above the if
    branch = first.body.value.true_branch
    assert isinstance(branch, Let) and branch.value.op.name == "log"  # stays in its branch


def test_gnf_keeps_recursive_lets():
    n, f = var("n", "int32"), var("f")
    loop = Function([n], irlib.If(n > const(0), f(n - const(1)), n))
    before = Function([], Let(f, loop, f(const(3))))
    out = ToGraphNormalForm()(before)
    assert isinstance(out.body, Let) and out.body.var is f


# -- Inline / RemoveUnusedFunctions ----------------------------------------------------------------

def test_inline_replaces_calls_and_removes_the_inlined_global():
    x, y = var("x", T3), var("y", T3)
    g = GlobalVar("g")
    mod = IRModule({g: Function([x], x + const(1.0)).with_attr("Inline", 1),
                    "main": Function([y], g(y))})
    out = Inline()(mod)
    assert "g" not in out and "g" in mod
    assert_structural_equal(out["main"], Function([y], y + const(1.0)))


def test_inline_leaves_recursive_globals():
    n = var("n", "int32")
    f = GlobalVar("f")
    mod = IRModule({f: Function([n], irlib.If(n > const(0), f(n - const(1)), n))
                    .with_attr("Inline", 1), "main": Function([], f(const(2)))})
    out = Inline()(mod)
    assert out["main"] is mod["main"] and "f" in out


def test_inline_twice_stays_well_formed():
    x, y, t = var("x", T3), var("y", T3), var("t")
    g = GlobalVar("g")
    mod = IRModule({g: Function([x], Let(t, x * x, t)).with_attr("Inline", 1),
                    "main": Function([y], g(g(y)))})
    out = Inline()(mod)
    assert well_formed(out["main"])
    InferType()(out)


def test_remove_unused_functions():
    x = var("x", T3)
    helper, unused = GlobalVar("helper"), GlobalVar("unused")
    mod = IRModule({helper: Function([x], x), unused: Function([x], x),
                    "main": Function([x], helper(x))})
    out = RemoveUnusedFunctions()(mod)
    assert sorted(g.name_hint for g in out.get_global_vars()) == ["helper", "main"]
    assert len(mod.get_global_vars()) == 3
    only_unused = RemoveUnusedFunctions(entry_functions=["unused"])(mod)
    assert [g.name_hint for g in only_unused.get_global_vars()] == ["unused"]
    with pytest.raises(UnknownNameError, match="nope"):
        RemoveUnusedFunctions(entry_functions=["nope"])(mod)


# -- LambdaLift / EtaExpand ---------------------------------------------------------------------------

def test_lambda_lift_without_captures_gives_two_globals():
    x1, y1, x2, y2 = var("x1", T3), var("y1", T3), var("x2", T3), var("y2", T3)
    mod = IRModule.from_expr(Function([x1, y1], Function([x2, y2], x2 + y2)(x1, y1)))
    out = LambdaLift()(InferType()(mod))
    assert len(out.get_global_vars()) == 2
    InferType()(out)


def test_lambda_lift_with_capture_makes_a_closure_global():
    x, y = var("x", T3), var("y", T3)
    mod = InferType()(IRModule.from_expr(Function([x], Function([y], x + y)(x))))
    out = LambdaLift()(mod)
    lifted = [f for g, f in out.items() if g.name_hint.startswith("lifted_name")]
    assert len(lifted) == 1 and lifted[0].get_attr("Closure") == 1
    assert isinstance(lifted[0].body, Function)
    InferType()(out)
    for _, func in out.items():
        assert not any(isinstance(n, Function) and n is not func and n is not func.body
                       for n in irlib.ir.functor.post_order(func))


def test_lambda_lift_recursive_let_function():
    n, f, k = var("n", "int32"), var("f"), var("k", "int32")
    loop = Function([n], irlib.If(n > k, f(n - const(1)), n))
    mod = InferType()(IRModule.from_expr(Function([k], Let(f, loop, f(const(3))))))
    out = LambdaLift()(mod)
    InferType()(out)
    assert len(out.get_global_vars()) == 2


def test_eta_expand_global_and_constructor():
    z = var("z", "float32")
    aux = GlobalVar("aux")
    mod = IRModule({aux: Function([z], z), "main": Function([], aux)})
    out = EtaExpand(expand_global_var=True)(mod)
    p = var("p", "float32")
    assert_structural_equal(out["main"], Function([], Function([p], aux(p))))
    with pytest.raises(IRError):
        EtaExpand()(mod)


def test_eta_expand_constructor_used_as_value():
    a = irlib.TypeVar("a")
    box = irlib.GlobalTypeVar("Box")
    ctor = irlib.Constructor("MkBox", [a], box)
    mod = IRModule(type_definitions={box: irlib.TypeData(box, [a], [ctor])})
    x = var("x", "float32")
    mod["main"] = Function([x], Tuple([ctor, ctor(x)]))
    out = EtaExpand(expand_constructor=True)(mod)
    first, second = out["main"].body.fields
    assert isinstance(first, Function) and len(first.params) == 1 and first.type_params
    assert second.op is ctor
    InferType()(out)
