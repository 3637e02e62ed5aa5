"""Relay-compatibility tests for the pass manager and the simple rewriting passes.

Mirrors the behaviours checked by TVM's ``test_pass_manager.py``,
``test_pass_dead_code_elimination.py``, ``test_pass_eliminate_common_subexpr.py``,
``test_pass_eta_expand.py`` and the non-graph-level parts of ``test_pass_fold_constant.py``.
Expected programs are written by hand in the text format.
"""

import numpy as np
import pytest

import irlib
from irlib import transform
from irlib.ir.structural import assert_structural_equal

V = '#[version = "0.0.5"]\n'


def run_pass(expr, pass_):
    mod = irlib.IRModule.from_expr(expr)
    mod = transform.InferType()(mod)
    mod = pass_(mod)
    return mod["main"]


def infer(expr):
    """``expr`` after InferType, as TVM's tests prepare their expected programs."""
    if isinstance(expr, irlib.Function) and not irlib.analysis.free_vars(expr):
        return transform.InferType()(irlib.IRModule.from_expr(expr))["main"]
    return expr


def assert_same(got, want):
    assert_structural_equal(got, infer(want), map_free_vars=True)


# -- pass manager ------------------------------------------------------------------------------

def test_module_pass_decorator_forms():
    @transform.module_pass(opt_level=2)
    def my_pass(mod, ctx):
        return mod

    assert isinstance(my_pass, transform.ModulePass)
    assert my_pass.info.name == "my_pass" and my_pass.info.opt_level == 2

    named = transform.module_pass(lambda mod, ctx: mod, opt_level=3, name="named")
    assert named.info.name == "named" and named.info.opt_level == 3

    @transform.module_pass(opt_level=1)
    class Renamer:
        """doc"""

        def __init__(self, suffix):
            self.suffix = suffix

        def transform_module(self, mod, ctx):
            return mod

    inst = Renamer("x")
    assert isinstance(inst, transform.ModulePass)
    assert inst.suffix == "x" and Renamer.__name__ == "Renamer" and Renamer.__doc__ == "doc"
    assert inst.info.opt_level == 1

    with pytest.raises(ValueError):
        transform.module_pass(name="x")
    with pytest.raises(TypeError):
        transform.module_pass(opt_level=1, required="InferType")
    with pytest.raises(TypeError):
        transform.module_pass(opt_level=1)(3)


def test_function_pass_rewrites_every_function():
    @transform.function_pass(opt_level=1)
    def negate(func, mod, ctx):
        return irlib.Function(func.params, irlib.negative(func.body))

    x = irlib.var("x", shape=(2,))
    mod = irlib.IRModule.from_expr(irlib.Function([x], x))
    out = negate(mod)
    assert isinstance(negate, transform.FunctionPass)
    assert negate.info.name == "negate"
    want = irlib.parse_expr("fn (%x: Tensor[(2), float32]) { negative(%x) }")
    assert_structural_equal(out["main"], want, map_free_vars=True)


def test_pass_info_fields():
    info = transform.PassInfo(5, "p", ["InferType"])
    assert info.opt_level == 5 and info.name == "p" and list(info.required) == ["InferType"]


def test_sequential_defaults_and_empty():
    seq = transform.Sequential()
    # NOTE: the documented signature (relay-transform-api.txt) gives opt_level=2
    assert seq.info.opt_level == 2 and seq.info.name == "sequential"
    mod = irlib.parse(V + "def @main(%x: float32) { %x }")
    assert seq(mod) is mod or irlib.structural_equal(seq(mod), mod)
    with pytest.raises(TypeError):
        transform.Sequential(transform.InferType())


def test_sequential_filters_by_opt_level_and_required_pass():
    mod = irlib.parse(V + "def @main(%x: Tensor[(2), float32]) { add(%x, add(1f, 2f)) }")
    seq = transform.Sequential([transform.FoldConstant()])
    with transform.PassContext(opt_level=1):
        same = seq(mod)
    assert irlib.structural_equal(same["main"], mod["main"])
    with transform.PassContext(opt_level=1, required_pass=["FoldConstant"]):
        folded = seq(mod)
    want = irlib.parse_expr("fn (%x: Tensor[(2), float32]) { add(%x, 3f) }")
    assert_same(folded["main"], want)
    with transform.PassContext(opt_level=3, disabled_pass=["FoldConstant"]):
        kept = seq(mod)
    assert irlib.structural_equal(kept["main"], mod["main"])
    # calling a pass directly ignores the opt level
    with transform.PassContext(opt_level=0):
        assert_same(transform.FoldConstant()(mod)["main"], want)


def test_sequential_with_scoping():
    text = """fn (%x: Tensor[(1), float32], %y: Tensor[(1), float32]) {
      %0 = add(%x, %y);
      %1 = add(%x, %y);
      %2 = add(2f, 3f);
      subtract(add(%0, %1), %2)
    }"""
    mod = irlib.IRModule.from_expr(irlib.parse_expr(text))
    seq = transform.Sequential([transform.InferType(), transform.FoldConstant(),
                                transform.EliminateCommonSubexpr()])
    with transform.PassContext(opt_level=3):
        out = seq(mod)
    want = irlib.parse_expr("""fn (%x: Tensor[(1), float32], %y: Tensor[(1), float32]) {
      %0 = add(%x, %y);
      subtract(add(%0, %0), 5f)
    }""")
    assert_same(out["main"], want)


def test_nested_sequential_and_trace_counts():
    mod = irlib.parse(V + "def @main(%x: Tensor[(2), float32]) { add(%x, add(1f, 2f)) }")
    calls = []

    def trace(_mod, info, is_before):
        if is_before:
            calls.append(info.name)

    inner = transform.Sequential([transform.InferType(), transform.FoldConstant()])
    outer = transform.Sequential([inner, transform.DeadCodeElimination()])
    with transform.PassContext(opt_level=3, trace=trace):
        outer(mod)
    assert calls.count("FoldConstant") == 1 and calls.count("DeadCodeElimination") == 1
    assert "sequential" not in calls


def test_print_ir(caplog, capsys):
    mod = irlib.parse(V + "def @main(%x: Tensor[(2), float32]) { add(%x, %x) }")
    import logging
    with caplog.at_level(logging.INFO):
        out = transform.PrintIR()(mod)
    text = caplog.text + capsys.readouterr().out
    assert out is mod
    assert "PrintIR" in text and "add(%x, %x)" in text


def test_pass_context_quirks():
    ctx = transform.PassContext(required_pass="ab")
    assert ctx.required_pass == ["a", "b"]
    with pytest.raises(TypeError):
        transform.PassContext(disabled_pass=3)
    assert transform.PassContext.current().opt_level == 2
    with transform.PassContext(opt_level=3) as ctx:
        assert transform.PassContext.current() is ctx


# -- DeadCodeElimination -----------------------------------------------------------------------

def test_dce_let_chains():
    want = irlib.parse_expr("free_var %z; %z")
    got = transform.DeadCodeElimination()(irlib.parse_expr("free_var %z; let %x = 1; %z"))
    assert_same(got, want)
    got = transform.DeadCodeElimination()(irlib.parse_expr("free_var %b; free_var %d; let %a = %b; let %c = %d; %c"))
    assert_same(got, irlib.parse_expr("free_var %d; let %c = %d; %c"))
    got = transform.DeadCodeElimination()(irlib.parse_expr(
        "free_var %b; free_var %d; let %a = %b; let %c = %a; let %e = %c; %d"))
    assert_same(got, irlib.parse_expr("free_var %d; %d"))


def test_dce_recursion():
    live = irlib.parse(V + """def @main(%n: int32) -> int32 {
      let %f = fn (%i: int32) -> int32 { if (equal(%i, 0)) { %i } else { %f(subtract(%i, 1)) } };
      %f(%n)
    }""")
    out = transform.DeadCodeElimination()(live)
    assert irlib.structural_equal(out["main"], live["main"])
    dead = irlib.parse(V + """def @main(%n: int32) -> int32 {
      let %f = fn (%i: int32) -> int32 { if (equal(%i, 0)) { %i } else { %f(subtract(%i, 1)) } };
      %n
    }""")
    out = transform.DeadCodeElimination()(dead)
    assert_same(out["main"], irlib.parse_expr("fn (%n: int32) -> int32 { %n }"))


def test_dce_inline_once_and_tuple_getitem():
    expr = irlib.parse_expr("""fn (%x: Tensor[(2), float32]) {
      let %a = add(%x, %x); let %t = (%a, %x); let %u = %t.0; %u
    }""")
    got = run_pass(expr, transform.DeadCodeElimination(inline_once=True))
    want = irlib.parse_expr("fn (%x: Tensor[(2), float32]) { (add(%x, %x), %x).0 }")
    assert_same(got, want)


def test_dce_impurity():
    expr = irlib.parse_expr("""fn (%x: Tensor[(2), float32]) {
      let %r = ref(%x); let %w = ref_write(%r, %x); %x
    }""")
    kept = run_pass(expr, transform.DeadCodeElimination())
    assert isinstance(kept.body, irlib.Let)
    dropped = run_pass(expr, transform.DeadCodeElimination(ignore_impurity=True))
    assert_same(dropped, irlib.parse_expr("fn (%x: Tensor[(2), float32]) { %x }"))


def test_dce_keeps_non_let_code_and_dead_code_in_functions():
    expr = irlib.parse_expr("""fn (%x: Tensor[(2), float32]) {
      (fn (%y: Tensor[(2), float32]) { let %d = add(%y, %y); %y })(%x)
    }""")
    got = run_pass(expr, transform.DeadCodeElimination())
    want = irlib.parse_expr("""fn (%x: Tensor[(2), float32]) {
      (fn (%y: Tensor[(2), float32]) { %y })(%x)
    }""")
    assert_same(got, want)


# -- EliminateCommonSubexpr --------------------------------------------------------------------

def test_cse_simple():
    expr = irlib.parse_expr("""fn (%x: Tensor[(1, 16), float32]) {
      %0 = nn.relu(%x); %1 = nn.relu(%x);
      add(add(%0, 1f), add(%1, 1f))
    }""")
    got = run_pass(expr, transform.EliminateCommonSubexpr())
    want = irlib.parse_expr("""fn (%x: Tensor[(1, 16), float32]) {
      %0 = add(nn.relu(%x), 1f); add(%0, %0)
    }""")
    assert_same(got, want)


def test_cse_fskip():
    expr = irlib.parse_expr("""fn (%x: Tensor[(1, 16), float32]) {
      %0 = cast(%x, dtype="int32"); %1 = cast(%x, dtype="int32");
      add(%0, %1)
    }""")

    def fskip(e):
        return isinstance(e, irlib.Call) and getattr(e.op, "name", "") == "cast"

    got = run_pass(expr, transform.EliminateCommonSubexpr(fskip))
    assert_same(got, expr)
    merged = run_pass(expr, transform.EliminateCommonSubexpr())
    want = irlib.parse_expr("""fn (%x: Tensor[(1, 16), float32]) {
      %0 = cast(%x, dtype="int32"); add(%0, %0)
    }""")
    assert_same(merged, want)


def test_cse_tuple_getitem_and_tuple_argument():
    expr = irlib.parse_expr("""fn (%x: Tensor[(1, 16), float32]) {
      %0 = split(%x, indices_or_sections=2, axis=1);
      add(%0.0, %0.0)
    }""")
    got = run_pass(expr, transform.EliminateCommonSubexpr())
    want = irlib.parse_expr("""fn (%x: Tensor[(1, 16), float32]) {
      %0 = split(%x, indices_or_sections=2, axis=1); %1 = %0.0; add(%1, %1)
    }""")
    assert_same(got, want)
    expr = irlib.parse_expr("""fn (%x: Tensor[(1, 16), float32]) {
      %0 = concatenate((%x, %x), axis=1); %1 = concatenate((%x, %x), axis=1);
      add(%0, %1)
    }""")
    got = run_pass(expr, transform.EliminateCommonSubexpr())
    want = irlib.parse_expr("""fn (%x: Tensor[(1, 16), float32]) {
      %0 = concatenate((%x, %x), axis=1); add(%0, %0)
    }""")
    assert_same(got, want)


# -- EtaExpand ---------------------------------------------------------------------------------

def test_eta_expand_global_var():
    mod = irlib.parse(V + """
    def @aux(%x: Tensor[(), int32]) -> Tensor[(), int32] { %x }
    def @main() -> fn(Tensor[(), int32]) -> Tensor[(), int32] { @aux }""")
    out = transform.EtaExpand(expand_global_var=True)(mod)
    want = irlib.parse(V + """
    def @aux(%x: Tensor[(), int32]) -> Tensor[(), int32] { %x }
    def @main() -> fn(Tensor[(), int32]) -> Tensor[(), int32] {
      fn (%y: Tensor[(), int32]) -> Tensor[(), int32] { @aux(%y) }
    }""")
    assert irlib.structural_equal(out["main"], want["main"], map_free_vars=True)


def test_eta_expand_constructor():
    mod = irlib.parse(V + """
    type List[A] { Cons(A, List[A]), Nil }
    def @main[A]() -> fn(A, List[A]) -> List[A] { Cons }""")
    out = transform.EtaExpand(expand_constructor=True)(mod)
    body = out["main"].body
    assert isinstance(body, irlib.Function) and len(body.params) == 2
    assert isinstance(body.body, irlib.Call) and isinstance(body.body.op, irlib.Constructor)
    assert body.body.op.name_hint == "Cons"
    assert [arg for arg in body.body.args] == list(body.params)
    transform.InferType()(out)
    with pytest.raises(Exception):
        transform.EtaExpand()(mod)


# -- FoldConstant ------------------------------------------------------------------------------

def test_fold_concat_of_constants():
    c1 = irlib.const(np.array([[1.0, 2.0]], dtype="float32"))
    c2 = irlib.const(np.array([[3.0, 4.0]], dtype="float32"))
    func = irlib.Function([], irlib.concatenate([c1, c2], axis=0))
    got = run_pass(func, transform.FoldConstant())
    assert isinstance(got.body, irlib.Constant)
    np.testing.assert_array_equal(got.body.data.numpy(), [[1, 2], [3, 4]])


def test_fold_basic_let_and_tuple():
    x = irlib.var("x", shape=(2,))
    c = irlib.const(np.array([1.0, 2.0], dtype="float32"))
    func = irlib.Function([x], irlib.add(x, irlib.multiply(irlib.add(c, c), irlib.const(2.0))))
    got = run_pass(func, transform.FoldConstant())
    assert isinstance(got.body.args[1], irlib.Constant)
    np.testing.assert_array_equal(got.body.args[1].data.numpy(), [4, 8])

    # a let bound to a constant is inlined; the rest of the chain folds around it
    expr = irlib.parse_expr("""fn (%x: Tensor[(2), float32]) {
      let %t1 = 2f; let %t2 = add(%t1, %t1); let %t3 = add(%t2, %x); %t3
    }""")
    got = run_pass(expr, transform.FoldConstant())
    want = irlib.parse_expr("""fn (%x: Tensor[(2), float32]) {
      let %t3 = add(4f, %x); %t3
    }""")
    assert_same(got, want)
    # a projection of a tuple literal is the field, even when the tuple is not constant
    expr = irlib.parse_expr("""fn (%x: Tensor[(2), float32]) {
      %0 = (%x, 2f); add(add(%0.1, 2f), %0.0)
    }""")
    got = run_pass(expr, transform.FoldConstant())
    assert_same(got, irlib.parse_expr("fn (%x: Tensor[(2), float32]) { add(4f, %x) }"))
    # a let bound to a tuple of constants is not a constant: it stays
    expr = irlib.parse_expr("""fn (%x: Tensor[(2), float32]) {
      let %b = (3f, 4f); add(%x, %b.0)
    }""")
    got = run_pass(expr, transform.FoldConstant())
    assert isinstance(got.body, irlib.Let)


def test_fold_if_on_constant_and_zero_arg_call():
    expr = irlib.parse_expr("""fn (%x: Tensor[(2), float32], %y: Tensor[(2), float32]) {
      if (less(1f, 2f)) { %x } else { %y }
    }""")
    got = run_pass(expr, transform.FoldConstant())
    want = irlib.parse_expr(
        "fn (%x: Tensor[(2), float32], %y: Tensor[(2), float32]) { %x }")
    assert_same(got, want)
    zeros = irlib.Function([], irlib.zeros((2,), "float32"))
    got = run_pass(zeros, transform.FoldConstant())
    assert isinstance(got.body, irlib.Call)


def test_fold_shape_of_and_ndarray_size():
    x = irlib.var("x", shape=(2, 3, 4))
    for dtype in ("int32", "int64"):
        func = irlib.Function([x], irlib.shape_of(x, dtype))
        got = run_pass(func, transform.FoldConstant())
        assert isinstance(got.body, irlib.Constant)
        assert got.body.data.numpy().dtype == dtype
        np.testing.assert_array_equal(got.body.data.numpy(), [2, 3, 4])
        func = irlib.Function([x], irlib.ndarray_size(x, dtype))
        got = run_pass(func, transform.FoldConstant())
        assert isinstance(got.body, irlib.Constant)
        assert got.body.data.numpy().dtype == dtype and int(got.body.data.numpy()) == 24


def test_dce_inline_op_let_and_projection():
    got = transform.DeadCodeElimination(inline_once=True)(irlib.parse_expr(
        "free_var %b; free_var %d; let %a = %b; let %c = %d; %c"))
    assert_same(got, irlib.parse_expr("free_var %d; %d"))
    got = transform.DeadCodeElimination()(irlib.parse_expr("add(let %a = 1f; 3f, 2f)"))
    assert_same(got, irlib.parse_expr("add(3f, 2f)"))
    got = transform.DeadCodeElimination()(irlib.parse_expr(
        "free_var %t: (float32, float32); (let %a = 1f; %t).0"))
    assert_same(got, irlib.parse_expr("free_var %t: (float32, float32); %t.0"))


def test_dce_on_inception_keeps_the_net():
    # Relay's DCE "complexity" test; its time is measured by benchmarks/deep_programs.py
    from zoo import inception_v3
    mod = irlib.IRModule.from_expr(inception_v3.get_net(1, 1000, (3, 299, 299), "float32"))
    out = transform.DeadCodeElimination()(mod)
    assert out["main"] is mod["main"]          # nothing is dead: the same function back
