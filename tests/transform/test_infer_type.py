"""InferType and infer_type: expected types written by hand for each language feature."""

import pytest

import irlib
from irlib import (Call, Clause, Constructor, FuncType, Function, GlobalVar, If, IRModule, Let,
                   Match, PatternConstructor, PatternVar, RefCreate, RefRead, RefType,
                   RefWrite, TensorType, Tuple, TupleGetItem, TupleType, TypeCall, TypeVar,
                   UntypedError, const, var)
from irlib.ir.functor import post_order
from irlib.ir.type_functor import iter_types
from irlib.transform import InferType, ModulePass, Pass, PassInfo, infer_type
from helpers import make_list_module

F32 = TensorType((), "float32")
I32 = TensorType((), "int32")
BOOL = TensorType((), "bool")


def tensor(*shape, dtype="float32"):
    return TensorType(shape, dtype)


def add_length(mod, list_type, cons, nil, annotated=True):
    """``@length``: the number of elements of a list, by recursion over ``match``."""
    length = GlobalVar("length")
    b = TypeVar("B")
    xs = var("xs", TypeCall(list_type, [b]) if annotated else None)
    head, tail = var("h"), var("t")
    body = Match(xs, [
        Clause(PatternConstructor(cons, [PatternVar(head), PatternVar(tail)]),
               irlib.add(const(1), Call(length, [tail]))),
        Clause(PatternConstructor(nil, []), const(0)),
    ])
    if annotated:
        mod[length] = Function([xs], body, ret_type=I32, type_params=[b])
    else:
        mod[length] = Function([xs], body)
    return length


def assert_fully_typed(expr):
    """Every node but Op/Constructor/GlobalVar has a checked_type without holes."""
    for node in post_order(expr):
        if isinstance(node, (irlib.Op, Constructor, GlobalVar)):
            continue
        for ty in iter_types(node.checked_type):
            assert not isinstance(ty, irlib.IncompleteType), node


# -- the pass object ------------------------------------------------------------------------


def test_infer_type_is_a_module_pass_with_relay_info():
    pass_ = InferType()
    assert isinstance(pass_, ModulePass) and isinstance(pass_, Pass)
    assert pass_.info == PassInfo(0, "InferType")
    assert pass_.info.required == ()


def test_pass_info_rejects_a_bare_string_for_required():
    with pytest.raises(TypeError):
        PassInfo(1, "P", "InferType")


def test_pass_rejects_non_module_input():
    with pytest.raises(TypeError, match="expects an IRModule"):
        InferType()(42)


def test_pass_on_an_expression_returns_the_typed_expression():
    x = var("x", shape=(3,))
    typed = InferType()(irlib.add(x, x))
    assert typed.checked_type == tensor(3)


# -- elementwise ops and broadcasting ----------------------------------------------------------


def test_elementwise_example_from_the_spec():
    x = var("x", shape=(3,))
    func = Function([x], irlib.add(x, const(1.0)))
    mod = IRModule.from_expr(func)
    typed = InferType()(mod)
    main = typed["main"]
    assert main.body.checked_type == tensor(3)
    assert main.checked_type == FuncType([tensor(3)], tensor(3))
    assert main.ret_type == tensor(3)
    assert typed.get_global_var("main").checked_type == FuncType([tensor(3)], tensor(3))


def test_broadcasting_with_static_shapes():
    x = var("x", shape=(4, 1, 3))
    y = var("y", shape=(5, 1))
    body = infer_type(irlib.multiply(x, y))
    assert body.checked_type == tensor(4, 5, 3)


def test_broadcasting_with_symbolic_dims():
    n = irlib.size_var("n")
    x = var("x", shape=(n, 1))
    y = var("y", shape=(3,))
    assert infer_type(irlib.subtract(x, y)).checked_type == tensor(n, 3)
    z = var("z", shape=(n + 1, 2))
    w = var("w", shape=(1 + n, 2))  # same polynomial, written differently
    assert infer_type(irlib.add(z, w)).checked_type == tensor(n + 1, 2)


def test_comparison_gives_bool_and_any_dims_broadcast():
    x = var("x", shape=(irlib.Any, 3))
    y = var("y", shape=(2, 1))
    assert infer_type(irlib.less(x, y)).checked_type == tensor(2, 3, dtype="bool")


def test_unary_chain_keeps_the_type():
    x = var("x", shape=(2, 2), dtype="float64")
    assert infer_type(irlib.exp(irlib.log(x))).checked_type == tensor(2, 2, dtype="float64")


# -- annotations filled in, input untouched ---------------------------------------------------


def test_missing_annotations_are_filled_in():
    x = var("x", shape=(3,))
    y = var("y")
    func = Function([x], Let(y, irlib.add(x, x), y))
    typed = infer_type(func)
    let = typed.body
    assert let.var.type_annotation == tensor(3)
    assert let.var.checked_type == tensor(3)
    assert typed.ret_type == tensor(3)
    assert let.body is let.var  # the use and the binder are the same new Var
    assert_fully_typed(typed)


def test_input_is_unchanged():
    x = var("x", shape=(3,))
    y = var("y")
    body = Let(y, irlib.add(x, const(2.0)), irlib.multiply(y, y))
    func = Function([x], body)
    mod = IRModule.from_expr(func)
    before = post_order(mod["main"])
    typed = InferType()(mod)
    assert typed is not mod and typed["main"] is not mod["main"]
    assert mod["main"].body is body and post_order(mod["main"]) == before
    assert y.type_annotation is None and mod["main"].ret_type is None
    for node in before:
        if isinstance(node, irlib.Op):
            continue
        with pytest.raises(UntypedError):
            node.checked_type
    assert_fully_typed(typed["main"])


def test_ops_are_shared_and_spans_kept():
    span = irlib.Span("test.rly", 3, 7)
    x = var("x", shape=(2,))
    call = Call(irlib.op.get("negative"), [x], span=span)
    typed = infer_type(Function([x], call))
    assert typed.body.op is irlib.op.get("negative")
    assert typed.body.span == span


def test_inference_is_idempotent():
    mod, list_type, cons, nil = make_list_module()
    add_length(mod, list_type, cons, nil, annotated=False)
    once = InferType()(mod)
    twice = InferType()(once)
    first, second = once["length"].checked_type, twice["length"].checked_type
    assert len(first.type_params) == len(second.type_params) == 1
    assert second.arg_types[0] == TypeCall(list_type, [second.type_params[0]])
    assert second.ret_type == first.ret_type == I32
    # the recursive call passes the inferred type parameter on, in both runs
    for typed in (once, twice):
        length = typed["length"]
        recursive_call = length.body.clauses[0].rhs.args[1]
        assert recursive_call.type_args == length.type_params


# -- polymorphism -------------------------------------------------------------------------------


def test_polymorphic_identity_instantiated_at_two_types():
    mod = IRModule()
    a = TypeVar("A")
    x = var("x", a)
    ident = GlobalVar("id")
    mod[ident] = Function([x], x, ret_type=a, type_params=[a])
    p = var("p", shape=(2, 3), dtype="int32")
    main = Function([p], Tuple([Call(ident, [const(1.5)]), Call(ident, [p])]))
    typed = infer_type(main, mod)
    first, second = typed.body.fields
    assert first.checked_type == F32 and first.type_args == (F32,)
    assert second.checked_type == tensor(2, 3, dtype="int32")
    assert second.type_args == (tensor(2, 3, dtype="int32"),)
    assert ident.checked_type == FuncType([a], a, [a])


def test_unannotated_top_level_function_is_generalised():
    x = var("x")
    typed = infer_type(Function([x], x))
    ty = typed.checked_type
    assert len(ty.type_params) == 1
    (param,) = ty.type_params
    assert ty == FuncType([param], param, [param])
    assert typed.params[0].type_annotation is param and typed.type_params == (param,)


def test_let_bound_polymorphic_function_is_instantiated_per_use():
    a = TypeVar("A")
    x = var("x", a)
    ident = var("id")
    use = Tuple([Call(ident, [const(1)]), Call(ident, [const(True)])])
    typed = infer_type(Let(ident, Function([x], x, type_params=[a]), use))
    assert typed.checked_type == TupleType([I32, BOOL])


def test_polymorphic_constructor_passed_as_a_function():
    mod, list_type, cons, nil = make_list_module()
    f = var("f", FuncType([I32, TypeCall(list_type, [I32])], TypeCall(list_type, [I32])))
    apply = Function([f], Call(f, [const(1), Call(nil, [])]))
    typed = infer_type(Call(apply, [cons]), mod)
    assert typed.checked_type == TypeCall(list_type, [I32])


# -- ADTs and match ----------------------------------------------------------------------------


def test_constructor_calls_get_type_args():
    mod, list_type, cons, nil = make_list_module()
    typed = infer_type(Call(cons, [const(1.0), Call(nil, [])]), mod)
    assert typed.checked_type == TypeCall(list_type, [F32])
    assert typed.type_args == (F32,)
    assert typed.args[1].type_args == (F32,)


def test_recursive_length_over_a_list():
    mod, list_type, cons, nil = make_list_module()
    length = add_length(mod, list_type, cons, nil)
    typed_mod = InferType()(mod)
    ty = typed_mod["length"].checked_type
    b = ty.type_params[0]
    assert ty == FuncType([TypeCall(list_type, [b])], I32, [b])
    call = Call(length, [Call(cons, [const(2.0), Call(nil, [])])])
    typed = infer_type(call, mod)
    assert typed.checked_type == I32 and typed.type_args == (F32,)
    assert_fully_typed(typed_mod["length"])


def test_unannotated_length_is_inferred_polymorphic():
    mod, list_type, cons, nil = make_list_module()
    add_length(mod, list_type, cons, nil, annotated=False)
    typed = InferType()(mod)["length"]
    (b,) = typed.checked_type.type_params
    assert typed.checked_type == FuncType([TypeCall(list_type, [b])], I32, [b])
    clause_vars = [p.var for p in typed.body.clauses[0].lhs.patterns]
    assert clause_vars[0].checked_type is b
    assert clause_vars[1].type_annotation == TypeCall(list_type, [b])


def test_nested_patterns_and_tuple_patterns_type_check():
    mod, list_type, cons, nil = make_list_module()
    xs = var("xs", TypeCall(list_type, [I32]))
    a, b = var("a"), var("b")
    pair = Tuple([xs, const(1.0)])
    body = Match(pair, [
        Clause(irlib.PatternTuple([
            PatternConstructor(cons, [PatternVar(a), irlib.PatternWildcard()]),
            PatternVar(b)]), b),
        Clause(irlib.PatternWildcard(), const(0.0)),
    ])
    typed = infer_type(Function([xs], body), mod)
    assert typed.ret_type == F32
    clause = typed.body.clauses[0]
    assert clause.lhs.patterns[0].patterns[0].var.checked_type == I32


# -- mutual recursion -------------------------------------------------------------------------


def even_odd_module(annotate_return=True):
    mod = IRModule()
    even, odd = GlobalVar("even"), GlobalVar("odd")
    ret = BOOL if annotate_return else None
    for this, other, base in ((even, odd, True), (odd, even, False)):
        n = var("n", "int32")
        body = If(irlib.equal(n, const(0)), const(base),
                  Call(other, [irlib.subtract(n, const(1))]))
        mod[this] = Function([n], body, ret_type=ret)
    return mod, even, odd


@pytest.mark.parametrize("annotate_return", [True, False])
def test_mutually_recursive_even_odd(annotate_return):
    mod, even, odd = even_odd_module(annotate_return)
    typed = InferType()(mod)
    for gvar in (even, odd):
        assert typed[gvar].checked_type == FuncType([I32], BOOL)
        assert gvar.checked_type == FuncType([I32], BOOL)
        assert typed.get_global_var(gvar.name_hint) is gvar


def test_let_bound_function_may_call_itself():
    n = var("n", "int32")
    loop = var("loop")
    body = If(irlib.less(n, const(1)), const(0), Call(loop, [irlib.subtract(n, const(1))]))
    expr = Let(loop, Function([n], body), Call(loop, [const(10)]))
    typed = infer_type(expr)
    assert typed.checked_type == I32
    assert typed.var.type_annotation == FuncType([I32], I32)


# -- closures, refs, if, tuples ----------------------------------------------------------------


def test_closure_returning_a_closure():
    x, y, z = var("x", shape=(2,)), var("y"), var("z")
    inner = Function([y], Function([z], irlib.add(irlib.add(x, y), z)))
    outer = Function([x], inner)
    a = var("a", shape=(2,))
    applied = Call(Call(Call(outer, [a]), [a]), [a])
    typed = infer_type(Function([a], applied))
    assert typed.ret_type == tensor(2)
    closure_type = typed.body.op.op.op.checked_type
    t2 = tensor(2)
    assert closure_type == FuncType([t2], FuncType([t2], FuncType([t2], t2)))


def test_references():
    r = var("r")
    write = RefWrite(r, const(2.0))
    expr = Let(r, RefCreate(const(1.0)), Tuple([write, RefRead(r)]))
    typed = infer_type(expr)
    assert typed.var.checked_type == RefType(F32)
    assert typed.body.checked_type == TupleType([TupleType([]), F32])


def test_if_unifies_branches_and_prefers_any():
    c = var("c", "bool")
    x = var("x", shape=(irlib.Any,))
    y = var("y", shape=(3,))
    typed = infer_type(If(c, y, x))
    assert typed.checked_type == tensor(irlib.Any)


def test_tuple_and_projection():
    x, y = var("x", shape=(1,)), var("y", "int32")
    t = Tuple([x, y])
    assert infer_type(TupleGetItem(t, 1)).checked_type == I32
    assert infer_type(t).checked_type == TupleType([tensor(1), I32])


def test_projection_waits_until_the_tuple_type_is_known():
    t = var("t")
    first = var("first")
    x, y = var("x", shape=(4,)), var("y", "bool")
    expr = Let(first, Function([t], TupleGetItem(t, 0)), Call(first, [Tuple([x, y])]))
    typed = infer_type(expr)
    assert typed.checked_type == tensor(4)
    assert typed.value.params[0].type_annotation == TupleType([tensor(4), BOOL])


def test_globals_referenced_by_an_expression_come_from_the_module():
    mod = IRModule()
    x = var("x", shape=(2,))
    double = GlobalVar("double")
    mod[double] = Function([x], irlib.add(x, x))
    y = var("y", shape=(2,))
    typed = infer_type(Call(double, [y]), mod)
    assert typed.checked_type == tensor(2)
    assert typed.op is double and double.checked_type == FuncType([tensor(2)], tensor(2))


def test_explicit_and_inferred_type_parameters_together():
    a = TypeVar("A")
    x, y, c = var("x", a), var("y"), var("c", "bool")
    g = GlobalVar("g")
    body = If(c, Tuple([x, y]), Call(g, [x, y, c]))
    mod = IRModule()
    mod[g] = Function([x, y, c], body, type_params=[a])
    for _ in range(2):  # a second run over the output must see the same program
        mod = InferType()(mod)
        typed = mod[g]
        a_param, b_param = typed.type_params
        assert a_param is a
        assert typed.checked_type == FuncType([a, b_param, BOOL], TupleType([a, b_param]),
                                              [a, b_param])
        assert typed.body.false_branch.type_args == (a, b_param)


def test_unannotated_mutual_recursion_is_generalised_per_function():
    f, g = GlobalVar("f"), GlobalVar("g")
    x, y = var("x"), var("y")
    mod = IRModule()
    mod[f] = Function([x], Call(g, [x]))
    mod[g] = Function([y], Call(f, [y]))
    for _ in range(2):
        mod = InferType()(mod)
        for this, other in ((f, g), (g, f)):
            typed = mod[this]
            arg_param, ret_param = typed.type_params
            assert typed.checked_type == FuncType([arg_param], ret_param, [arg_param, ret_param])
            assert typed.body.op is other
            assert typed.body.type_args == (arg_param, ret_param)
