"""Relay-compatibility tests for the module-level and normal-form passes.

Mirrors the behaviours checked by TVM's ``test_pass_inline.py``, ``test_pass_lambda_lift.py``,
``test_pass_remove_unused_functions.py``, ``test_pass_to_a_normal_form.py``,
``test_pass_to_graph_normal_form.py`` and ``test_pass_to_cps.py``. Expected programs are
written by hand in the text format; expected values are computed by hand.
"""

import numpy as np
import pytest

import irlib
from irlib import transform
from irlib.ir.structural import assert_structural_equal
from irlib.prelude import Prelude
from interp import create_executor
from interp.nat import count, make_nat_expr

V = '#[version = "0.0.5"]\n'
T2 = "Tensor[(2), float32]"


def evaluate(expr, mod=None, *args):
    return create_executor(mod=mod).evaluate(expr)(*args) if args else \
        create_executor(mod=mod).evaluate(expr)


def typed(text):
    return transform.InferType()(irlib.parse(V + text))


def assert_mod_equal(got, want_text):
    want = typed(want_text)
    assert sorted(g.name_hint for g in got.get_global_vars()) == \
        sorted(g.name_hint for g in want.get_global_vars())
    for gvar in want.get_global_vars():
        assert_structural_equal(got[gvar.name_hint], want[gvar], map_free_vars=True)


# -- Inline ------------------------------------------------------------------------------------

def test_inline_chain_removes_inlined_globals():
    got = transform.Inline()(typed(f"""
    def @g1(%x: {T2}, Inline=1) -> {T2} {{ add(%x, %x) }}
    def @g2(%y: {T2}, Inline=1) -> {T2} {{ multiply(@g1(%y), %y) }}
    def @main(%z: {T2}) -> {T2} {{ subtract(@g2(%z), @g1(%z)) }}"""))
    assert_mod_equal(got, f"""
    def @main(%z: {T2}) -> {T2} {{ subtract(multiply(add(%z, %z), %z), add(%z, %z)) }}""")


def test_inline_keeps_non_inline_and_recursive_functions():
    text = f"""
    def @plain(%x: {T2}) -> {T2} {{ add(%x, %x) }}
    def @rec(%n: int32, Inline=1) -> int32 {{
      if (equal(%n, 0)) {{ %n }} else {{ @rec(subtract(%n, 1)) }}
    }}
    def @main(%z: {T2}, %n: int32) -> ({T2}, int32) {{ (@plain(%z), @rec(%n)) }}"""
    got = transform.Inline()(typed(text))
    assert_mod_equal(got, text)


def test_inline_global_as_argument_and_bare():
    got = transform.Inline()(typed(f"""
    def @g(%x: {T2}, Inline=1) -> {T2} {{ add(%x, %x) }}
    def @apply(%f: fn({T2}) -> {T2}, %x: {T2}) -> {T2} {{ %f(%x) }}
    def @main(%z: {T2}) -> {T2} {{ @apply(@g, %z) }}"""))
    assert_mod_equal(got, f"""
    def @apply(%f: fn({T2}) -> {T2}, %x: {T2}) -> {T2} {{ %f(%x) }}
    def @main(%z: {T2}) -> {T2} {{
      @apply(fn (%x: {T2}, Inline=1) -> {T2} {{ add(%x, %x) }}, %z)
    }}""")


def test_inline_external_function_becomes_literal_call():
    got = transform.Inline()(typed(f"""
    def @ext(%x: {T2}, Inline=1, Compiler="cc", Primitive=1, global_symbol="ext") -> {T2} {{
      add(%x, %x)
    }}
    def @main(%z: {T2}) -> {T2} {{ @ext(%z) }}"""))
    body = got["main"].body
    assert isinstance(body, irlib.Call) and isinstance(body.op, irlib.Function)
    assert body.op.get_attr("Compiler") == "cc"
    assert [g.name_hint for g in got.get_global_vars()] == ["main"]


def test_inline_entry_function_with_inline_attr_stays():
    text = f"def @main(%z: {T2}, Inline=1) -> {T2} {{ add(%z, %z) }}"
    got = transform.Inline()(typed(text))
    assert [g.name_hint for g in got.get_global_vars()] == ["main"]


# -- LambdaLift --------------------------------------------------------------------------------

def test_lambda_lift_global_counts():
    basic = typed("""def @main(%x1: Tensor[(10, 5), float32], %y1: Tensor[(10, 5), float32]) {
      (fn (%x2: Tensor[(10, 5), float32], %y2: Tensor[(10, 5), float32]) {
        subtract(%x2, %y2)
      })(%x1, %y1)
    }""")
    assert len(transform.LambdaLift()(basic).functions) == 2
    closure = typed("""def @main() {
      %0 = fn (%y: Tensor[(2), float32]) { fn (%x: Tensor[(2), float32]) { add(%x, %y) } };
      %1 = %0(ones(shape=[2], dtype="float32"));
      %1(zeros(shape=[2], dtype="float32"))
    }""")
    lifted = transform.LambdaLift()(closure)
    assert len(lifted.functions) == 3
    closures = [f for f in lifted.functions.values() if f.get_attr("Closure")]
    assert len(closures) == 1
    np.testing.assert_allclose(evaluate(lifted.get_global_var("main"), lifted)().numpy(),
                               [1, 1])
    recursive = typed("""def @main(%x: Tensor[(2), float32]) {
      let %while_loop = fn (%i: int32, %s: Tensor[(2), float32]) -> Tensor[(2), float32] {
        if (less(%i, 10)) { %while_loop(add(%i, 1), add(%s, %x)) } else { %s }
      };
      %while_loop(0, zeros(shape=[2], dtype="float32"))
    }""")
    lifted = transform.LambdaLift()(recursive)
    assert len(lifted.functions) == 2
    out = evaluate(lifted.get_global_var("main"), lifted)(np.array([1, 2], "float32"))
    np.testing.assert_allclose(out.numpy(), [10, 20])


# -- RemoveUnusedFunctions ---------------------------------------------------------------------

def test_remove_unused_functions_with_prelude():
    mod = irlib.IRModule()
    p = Prelude(mod)
    map_gv = mod.get_global_var("map")
    x = irlib.var("x", shape=(2,))
    mod["main"] = irlib.Function([x], x)
    names = {g.name_hint for g in transform.RemoveUnusedFunctions()(mod).get_global_vars()}
    assert names == {"main"}
    f = irlib.Function([x], x)
    lst = irlib.var("l", p.mod.get_global_type_var("List")(x.type_annotation))
    mod["main"] = irlib.Function([lst], map_gv(f, lst))
    out = transform.RemoveUnusedFunctions()(mod)
    assert {g.name_hint for g in out.get_global_vars()} == {"main", "map"}
    assert out.get_global_type_var("List") is not None
    # several entries, and a global referenced without being called
    mod["main"] = irlib.Function([], mod.get_global_var("hd"))
    out = transform.RemoveUnusedFunctions(["main", "tl"])(mod)
    assert {g.name_hint for g in out.get_global_vars()} == {"main", "hd", "tl"}


# -- ToANormalForm -----------------------------------------------------------------------------

def _infer_body(expr):
    return transform.InferType()(irlib.IRModule.from_expr(expr))["main"].body


def _anf(expr):
    return transform.InferType()(transform.ToANormalForm()(
        irlib.IRModule.from_expr(expr)))["main"].body


def test_anf_explicit_bound_and_order():
    one, two, three = irlib.const(1.0), irlib.const(2.0), irlib.const(3.0)
    expr = irlib.add(one, irlib.multiply(two, three))
    got = _anf(expr)
    want = irlib.parse_expr("""let %a = 1f; let %b = 2f; let %c = 3f;
      let %d = multiply(%b, %c); let %e = add(%a, %d); %e""")
    assert_structural_equal(got, _infer_body(want), map_free_vars=True)
    np.testing.assert_allclose(evaluate(got).numpy(), 7.0)
    shared = irlib.add(one, one)
    twice = irlib.add(shared, shared)
    got = _anf(irlib.add(twice, twice))
    np.testing.assert_allclose(evaluate(got).numpy(), 8.0)
    assert irlib.analysis.is_a_normal_form(got)


def test_anf_if_scoping():
    got = _anf(irlib.If(irlib.const(True), irlib.const(2), irlib.const(3)))
    want = irlib.parse_expr("""let %c = True;
      let %d = if (%c) { let %a = 2; %a } else { let %b = 3; %b }; %d""")
    assert_structural_equal(got, _infer_body(want), map_free_vars=True)


def test_anf_nat_add_and_recursion_evaluate():
    mod = irlib.IRModule()
    p = Prelude(mod)
    mod.import_from_std("nat.rly")
    add = mod.get_global_var("nat_add")
    expr = add(make_nat_expr(p, 2), make_nat_expr(p, 3))
    mod["main"] = irlib.Function([], expr)
    mod = transform.ToANormalForm()(mod)
    assert count(p, evaluate(mod.get_global_var("main"), mod)()) == 5


# -- ToGraphNormalForm -------------------------------------------------------------------------

def test_gnf_let_and_round_trip():
    expr = irlib.parse_expr("let %x = 4f; let %y = %x; add(%x, %y)")
    got = transform.ToGraphNormalForm()(expr)
    assert_structural_equal(got, irlib.parse_expr("add(4f, 4f)"))
    np.testing.assert_allclose(evaluate(got).numpy(), 8.0)
    func = irlib.parse_expr(f"""fn (%x: {T2}) {{ %0 = add(%x, %x); multiply(%0, %0) }}""")
    anf = transform.ToANormalForm()(func)
    back = transform.ToGraphNormalForm()(anf)
    assert_structural_equal(back, func, map_free_vars=True)


def test_gnf_keeps_recursive_binding():
    text = """fn (%n: int32) {
      let %f = fn (%i: int32) -> int32 { if (equal(%i, 0)) { %i } else { %f(subtract(%i, 1)) } };
      %f(%n)
    }"""
    got = transform.ToGraphNormalForm()(irlib.parse_expr(text))
    assert isinstance(got.body, irlib.Let)


# -- ToCPS -------------------------------------------------------------------------------------

def test_to_cps_identity_type():
    func = transform.InferType()(irlib.IRModule.from_expr(
        irlib.parse_expr(f"fn (%x: {T2}) {{ %x }}")))["main"]
    cps = transform.to_cps(func)
    assert len(cps.params) == 2 and len(cps.type_params) == 1
    answer = cps.type_params[0]
    assert cps.params[1].type_annotation == irlib.FuncType([irlib.TensorType((2,))], answer)
    back = transform.un_cps(cps)
    x = np.array([1, 2], "float32")
    np.testing.assert_allclose(evaluate(back)(x).numpy(), x)


def test_to_cps_recursion_via_nat_iterate():
    mod = irlib.IRModule()
    p = Prelude(mod)
    mod.import_from_std("nat.rly")
    iterate = mod.get_global_var("nat_iterate")
    x = irlib.var("x", shape=(2,))
    double = irlib.Function([x], x + x)
    i = irlib.var("i", shape=(2,))
    func = irlib.Function([i], iterate(double, make_nat_expr(p, 3))(i))
    mod["main"] = func
    mod = transform.InferType()(mod)
    cps = transform.to_cps(mod["main"], mod=mod)
    back = transform.un_cps(cps)
    mod["back"] = back
    mod = transform.InferType()(mod)
    out = evaluate(mod.get_global_var("back"), mod)(np.array([1, 2], "float32"))
    np.testing.assert_allclose(out.numpy(), [8, 16])


# -- ToBasicBlockNormalForm ----------------------------------------------------------------------

def test_bbnf_binds_only_what_branches_share():
    func = irlib.parse_expr(f"""fn (%x: {T2}, %c: bool) {{
      %0 = exp(%x); if (%c) {{ %0 }} else {{ log(%0) }}
    }}""")
    assert not irlib.analysis.check_basic_block_normal_form(func)
    got = transform.ToBasicBlockNormalForm()(func)
    want = irlib.parse_expr(f"""fn (%x: {T2}, %c: bool) {{
      let %y = exp(%x); if (%c) {{ %y }} else {{ log(%y) }}
    }}""")
    assert_structural_equal(got, want, map_free_vars=True)
    assert irlib.analysis.check_basic_block_normal_form(got)
    x, c = np.array([1, 2], "float32"), np.array(False)
    np.testing.assert_allclose(evaluate(got)(x, c).numpy(), x, rtol=1e-6)


def test_bbnf_keeps_sharing_inside_one_block():
    func = irlib.parse_expr(f"fn (%x: {T2}) {{ %0 = exp(%x); add(%0, %0) }}")
    got = transform.ToBasicBlockNormalForm()(func)
    assert_structural_equal(got, func, map_free_vars=True)
    mod = irlib.parse(V + f"""def @main(%x: {T2}, %c: bool) -> {T2} {{
      if (%c) {{ %0 = exp(%x); add(%0, %0) }} else {{ %x }}
    }}""")
    got = transform.ToBasicBlockNormalForm()(mod)
    assert irlib.structural_equal(got["main"], mod["main"], map_free_vars=True)


def test_inline_globalvar_without_args_in_if():
    got = transform.Inline()(typed("""
    def @g1(Inline=1) -> int32 { 1 }
    def @g2(Inline=1) -> int32 { 2 }
    def @main(%p: bool) -> int32 { (if (%p) { @g1 } else { @g2 })() }"""))
    assert_mod_equal(got, """
    def @main(%p: bool) -> int32 {
      (if (%p) { fn (Inline=1) -> int32 { 1 } } else { fn (Inline=1) -> int32 { 2 } })()
    }""")


def test_cps_then_partial_evaluation_destroys_references():
    from irlib.ir.functor import post_order

    def infer(func):
        return transform.InferType()(irlib.IRModule.from_expr(func))["main"]

    def assert_refs_destroyed(func):
        cps = infer(transform.to_cps(infer(func)))
        infer(transform.un_cps(cps))
        mod = transform.Sequential([
            transform.PartialEvaluate(),
            transform.DeadCodeElimination(inline_once=True, ignore_impurity=True),
        ])(irlib.IRModule.from_expr(cps))
        assert not any(isinstance(n, irlib.RefCreate) for n in post_order(mod["main"]))

    one, two = irlib.const(1.0), irlib.const(2.0)
    cond = irlib.var("cond", shape=(), dtype="bool")
    f_ref = irlib.var("f_ref")
    branch = irlib.If(cond, irlib.RefWrite(f_ref, irlib.Function([], one)),
                      irlib.RefWrite(f_ref, irlib.Function([], two)))
    stmt = irlib.Let(f_ref, irlib.RefCreate(irlib.Function([], irlib.const(0.0))),
                     irlib.Let(irlib.var("u"), branch, irlib.Call(irlib.RefRead(f_ref), [])))
    assert_refs_destroyed(irlib.Function([cond], stmt))
    assert_refs_destroyed(transform.gradient(infer(irlib.Function([cond],
                                                                 irlib.If(cond, one, two)))))
    x, y, z = (irlib.var(n, shape=(1, 16)) for n in "xyz")
    func = infer(irlib.Function([cond, x, y, z], irlib.add(irlib.If(cond, x, y), z)))
    assert_refs_destroyed(transform.gradient(func))
