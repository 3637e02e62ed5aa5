"""The pass manager: PassInfo, PassContext, Sequential, decorators, PrintIR, verify mode."""

import pytest

import irlib
from irlib import transform
from irlib.errors import PassError
from irlib.transform import (DeadCodeElimination, FoldConstant, FunctionPass, InferType,
                             ModulePass, Pass, PassContext, PassInfo, PrintIR, Sequential,
                             build_config, function_pass, module_pass)


def small_module():
    x = irlib.var("x", shape=(10, 20))
    return irlib.IRModule.from_expr(irlib.Function([x], irlib.log(x)))


def test_function_pass_decorating_a_class_replaces_every_function():
    @function_pass(opt_level=1)
    class TestReplaceFunc:
        def __init__(self, new_func):
            self.new_func = new_func

        def transform_function(self, func, mod, ctx):
            return self.new_func

    x = irlib.var("x", shape=(10, 20))
    f1 = irlib.Function([x], x)
    fpass = TestReplaceFunc(f1)
    assert isinstance(fpass, FunctionPass) and isinstance(fpass, Pass)
    assert fpass.info == PassInfo(1, "TestReplaceFunc")
    assert fpass.new_func is f1              # attribute access falls back to the instance
    assert TestReplaceFunc.__name__ == "TestReplaceFunc"
    res_mod = fpass(small_module())
    assert res_mod["main"] is f1


def test_function_pass_decorating_a_function():
    @function_pass(opt_level=2)
    def transform_fn(func, mod, ctx):
        return func

    assert isinstance(transform_fn, FunctionPass)
    assert transform_fn.info.opt_level == 2 and transform_fn.info.name == "transform_fn"
    mod = small_module()
    assert transform_fn(mod)["main"] is mod["main"]


def test_module_pass_decorating_a_class_bare_as_in_the_reference():
    @module_pass
    class CustomPipeline:
        def __init__(self, enable_fold):
            self.enable_fold = enable_fold
            self.dce = DeadCodeElimination()
            self.const_fold = FoldConstant()

        def transform_module(self, mod, ctx):
            mod = self.dce(mod, ctx)
            if self.enable_fold:
                mod = self.const_fold(mod, ctx)
            return mod

    pipeline = CustomPipeline(enable_fold=True)
    assert isinstance(pipeline, ModulePass)
    x = irlib.var("x", shape=(2,))
    mod = irlib.IRModule.from_expr(irlib.Function([x], x + (irlib.const(1.0) + irlib.const(2.0))))
    out = pipeline(mod)
    assert isinstance(out["main"].body.args[1], irlib.Constant)


def test_module_pass_decorating_a_function_adds_a_global():
    @module_pass(opt_level=2)
    def add_abs(mod, ctx):
        tp = irlib.TensorType((10,), "float32")
        x = irlib.var("x", tp)
        new_mod = irlib.IRModule({irlib.GlobalVar("var"): irlib.Function([x], irlib.abs(x))})
        new_mod.update(mod)
        return new_mod

    assert isinstance(add_abs, ModulePass) and add_abs.info.opt_level == 2
    mod = small_module()
    out = add_abs(mod)
    assert "var" in out and "var" not in mod


def test_decorator_argument_errors():
    with pytest.raises(ValueError, match="opt_level"):
        module_pass(name="x")
    with pytest.raises(TypeError):
        module_pass(lambda m, c: m, opt_level=1, required="InferType")
    with pytest.raises(TypeError, match="callable"):
        module_pass(42, opt_level=1)


def test_pass_context_is_a_context_manager_with_current():
    assert PassContext.current().opt_level == 2
    with PassContext(opt_level=3, disabled_pass=["FoldConstant"]) as ctx:
        assert PassContext.current() is ctx
        with build_config(opt_level=1) as inner:
            assert PassContext.current() is inner
        assert PassContext.current() is ctx
    assert PassContext.current().opt_level == 2


def test_pass_context_quirk_and_type_error():
    assert PassContext(required_pass="ab").required_pass == ["a", "b"]
    with pytest.raises(TypeError):
        PassContext(disabled_pass=3)


def test_sequential_filters_by_opt_level_and_disabled_and_traces():
    calls = []

    def trace(mod, info, is_before):
        if is_before:
            calls.append(info.name)

    seq = Sequential([InferType(), FoldConstant(), DeadCodeElimination(),
                      transform.EliminateCommonSubexpr()])
    with PassContext(opt_level=2, trace=trace):
        seq(small_module())
    assert calls == ["InferType", "FoldConstant", "DeadCodeElimination"]   # CSE is level 3
    calls.clear()
    with PassContext(opt_level=3, trace=trace, disabled_pass=["FoldConstant"]):
        seq(small_module())
    assert calls == ["InferType", "DeadCodeElimination", "EliminateCommonSubexpr"]
    calls.clear()
    with PassContext(opt_level=0, trace=trace, required_pass=["FoldConstant"]):
        seq(small_module())
    assert calls == ["InferType", "FoldConstant"]


def test_sequential_runs_required_passes_first():
    seen = []

    @module_pass(opt_level=0, required=["InferType"])
    def needs_types(mod, ctx):
        seen.append(mod["main"].checked_type)
        return mod

    Sequential([needs_types])(small_module())
    assert len(seen) == 1


def test_sequential_rejects_non_list_and_empty_is_identity():
    with pytest.raises(TypeError):
        Sequential(InferType())
    mod = small_module()
    assert Sequential([])(mod)["main"] is mod["main"]


def test_pass_error_names_the_failing_pass_and_those_before():
    @module_pass(opt_level=0)
    def broken(mod, ctx):
        raise ValueError("boom")

    with pytest.raises(PassError, match=r"'broken' failed \(ran before it: InferType, "
                                        r"FoldConstant\): ValueError: boom") as info:
        Sequential([InferType(), FoldConstant(), broken])(small_module())
    assert isinstance(info.value.__cause__, ValueError)


def test_verify_mode_names_the_pass_that_breaks_well_formedness():
    @module_pass(opt_level=0)
    def duplicate_binder(mod, ctx):
        x = irlib.var("x", shape=(2,))
        y = irlib.var("y", shape=(2,))
        body = irlib.Tuple([irlib.Let(y, x, y), irlib.Let(y, x, y)])
        new = mod.copy()
        new["main"] = irlib.Function([x], body)
        return new

    with PassContext(config={"irlib.verify": True}):
        with pytest.raises(PassError, match="duplicate_binder.*ill-formed"):
            Sequential([duplicate_binder])(small_module())
    Sequential([duplicate_binder])(small_module())   # verify mode off: no check


def test_print_ir_prints_and_returns_the_module(capsys):
    mod = small_module()
    out = PrintIR()(mod)
    assert out is mod
    text = capsys.readouterr().out
    assert "PrintIR" in text and "log(%x)" in text


def test_passes_accept_expressions():
    x = irlib.var("x", shape=(2,))
    func = irlib.Function([x], x + (irlib.const(1.0) + irlib.const(1.0)))
    out = FoldConstant()(func)
    assert isinstance(out, irlib.Function)
    body = FoldConstant()(func.body)
    assert isinstance(body.args[1], irlib.Constant)
