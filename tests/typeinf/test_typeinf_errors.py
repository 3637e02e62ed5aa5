"""Ill-typed programs: each kind of error, its exception type and its message."""

import pytest

import irlib
from irlib import (Call, Clause, Constructor, Function, GlobalTypeVar, GlobalVar, If, IRModule,
                   Let, Match, PatternConstructor, PatternTuple, PatternVar, PatternWildcard,
                   RefRead, TensorType, Tuple, TupleGetItem, TypeCall, TypeInferenceError,
                   const, var)
from irlib.errors import TypeErrorReport
from irlib.transform import InferType, infer_type
from helpers import make_list_module


def infer_error(expr, mod=None) -> TypeInferenceError:
    with pytest.raises(TypeInferenceError) as info:
        infer_type(expr, mod)
    return info.value


def test_wrong_arity_of_an_op_call():
    x = var("x", shape=(2,))
    bad = Call(irlib.op.get("add"), [x])  # make_call would refuse; build it by hand
    error = infer_error(Function([x], bad))
    assert len(error.errors) == 1
    assert isinstance(error.errors[0], TypeErrorReport)
    assert "call to add: operator add takes 2 argument(s) (lhs, rhs) but was given 1" \
        in str(error)


def test_wrong_arity_of_a_function_call():
    x = var("x", "int32")
    f = var("f")
    expr = Let(f, Function([x], x), Call(f, [const(1), const(2)]))
    with pytest.raises(TypeInferenceError, match=r"takes 1 argument\(s\) but the call gives 2"):
        infer_type(expr)


def test_dtype_mismatch_in_an_op_call():
    x, y = var("x", shape=(3,)), var("y", shape=(3,), dtype="int32")
    error = infer_error(irlib.add(x, y))
    assert error.errors[0].message.startswith("call to add")
    assert "operand dtypes differ: float32 vs int32" in str(error)
    assert "argument types: Tensor[(3), float32], Tensor[(3), int32]" in str(error)


def test_shapes_that_do_not_broadcast():
    x, y = var("x", shape=(3,)), var("y", shape=(4,))
    with pytest.raises(TypeInferenceError, match=r"do not broadcast"):
        infer_type(irlib.multiply(x, y))


def test_dtype_mismatch_against_an_annotation():
    x = var("x", shape=(3,))
    func = Function([x], x, ret_type=TensorType((3,), "int32"))
    error = infer_error(func)
    report = error.errors[0]
    assert report.expected == "Tensor[(3), int32]" and report.actual == "Tensor[(3), float32]"
    assert "dtype int32 vs float32" in report.message


def test_non_bool_if_condition():
    c = var("c", "float32")
    error = infer_error(If(c, const(1), const(2)))
    report = error.errors[0]
    assert "the condition of an if must be a bool scalar" in report.message
    assert report.expected == "bool" and report.actual == "float32"


def test_if_branches_of_different_types():
    c = var("c", "bool")
    with pytest.raises(TypeInferenceError, match=r"branches of the if have different types"):
        infer_type(If(c, const(1), const(2.0)))


def test_projection_out_of_range():
    t = Tuple([const(1), const(2)])
    with pytest.raises(TypeInferenceError, match=r"tuple index 2 is out of range for a 2-tuple"):
        infer_type(TupleGetItem(t, 2))


def test_projection_of_a_non_tuple():
    x = var("x", shape=(3,))
    with pytest.raises(TypeInferenceError, match=r"projection \.0 needs a tuple"):
        infer_type(TupleGetItem(x, 0))


def test_projection_of_a_tuple_whose_type_is_never_known():
    t = var("t")
    g = var("g")
    # %g is never called, so the type of %t stays unknown.
    expr = Let(g, Function([t], TupleGetItem(t, 0)), const(1))
    with pytest.raises(TypeInferenceError,
                       match=r"cannot infer the type of projection \.0: the type of the tuple "
                             r"is unknown"):
        infer_type(expr)


def test_op_whose_argument_types_stay_unknown():
    x = var("x")
    y = var("y", shape=(2,))
    g = var("g")
    expr = Let(g, Function([x], irlib.add(x, x)), y)
    with pytest.raises(TypeInferenceError,
                       match=r"cannot infer type of call to add: argument types unknown"):
        infer_type(expr)


def test_all_errors_of_a_function_are_reported_at_once():
    x = var("x", shape=(2,))
    y = var("y", shape=(2,), dtype="int32")
    z = var("z", shape=(5,))
    bad1 = irlib.add(x, y)
    bad2 = irlib.multiply(x, z)
    error = infer_error(Function([x, y, z], Tuple([bad1, bad2])))
    assert len(error.errors) == 2
    text = str(error)
    assert "found 2 errors" in text
    assert "operand dtypes differ" in text and "do not broadcast" in text


def test_errors_do_not_cascade_into_cannot_infer():
    x = var("x", shape=(2,))
    bad = Call(irlib.op.get("negative"), [x, x])
    result = irlib.exp(irlib.exp(bad))  # depends on the bad call's (unknown) type
    error = infer_error(Function([x], result))
    assert len(error.errors) == 1


def test_incomplete_match_lists_missing_cases():
    mod, list_type, cons, nil = make_list_module()
    xs = var("xs", TypeCall(list_type, [TensorType((), "int32")]))
    h, t = var("h"), var("t")
    body = Match(xs, [Clause(PatternConstructor(cons, [PatternVar(h), PatternConstructor(
        cons, [PatternWildcard(), PatternWildcard()])]), h)])
    with pytest.raises(TypeInferenceError,
                       match=r"match expression does not handle the following cases: "
                             r"Cons\(_, Nil\), Nil"):
        infer_type(Function([xs], body), mod)


def test_partial_match_is_not_checked_for_coverage():
    mod, list_type, cons, nil = make_list_module()
    xs = var("xs", TypeCall(list_type, [TensorType((), "int32")]))
    h, t = var("h"), var("t")
    body = Match(xs, [Clause(PatternConstructor(cons, [PatternVar(h), PatternVar(t)]), h)],
                 complete=False)
    assert infer_type(Function([xs], body), mod).ret_type == TensorType((), "int32")


def test_pattern_of_the_wrong_type():
    mod, list_type, cons, nil = make_list_module()
    x = var("x", shape=(2,))
    body = Match(x, [Clause(PatternConstructor(nil), const(0))])
    with pytest.raises(TypeInferenceError, match=r"pattern Nil cannot match the value"):
        infer_type(Function([x], body), mod)


def test_tuple_pattern_of_the_wrong_arity():
    t = Tuple([const(1), const(2)])
    a = var("a")
    body = Match(t, [Clause(PatternTuple([PatternVar(a)]), a)])
    with pytest.raises(TypeInferenceError, match=r"a 2-tuple vs a 1-tuple"):
        infer_type(body)


def test_constructor_with_the_wrong_number_of_arguments():
    mod, list_type, cons, nil = make_list_module()
    with pytest.raises(TypeInferenceError, match=r"takes 2 argument\(s\) but the call gives 1"):
        infer_type(Call(cons, [const(1)]), mod)


def test_constructor_of_an_undefined_type():
    orphan_type = GlobalTypeVar("Orphan")
    orphan = Constructor("Lonely", [], orphan_type)
    with pytest.raises(TypeInferenceError, match=r"which the module does not define"):
        infer_type(Call(orphan, []))


def test_constructor_not_in_the_module_definition():
    mod, list_type, cons, nil = make_list_module()
    stray = Constructor("Nil", [], list_type)  # same name, but not the module's constructor
    with pytest.raises(TypeInferenceError, match=r"is not one of the constructors of type List"):
        infer_type(Call(stray, []), mod)


def test_undefined_global():
    f = GlobalVar("nowhere")
    with pytest.raises(TypeInferenceError, match=r"global @nowhere is not defined"):
        infer_type(Call(f, [const(1)]))


def test_op_used_as_a_value():
    with pytest.raises(TypeInferenceError, match=r"operator add: an operator can only be called"):
        infer_type(Tuple([irlib.op.get("add")]))


def test_calling_a_non_function():
    x = var("x", shape=(2,))
    with pytest.raises(TypeInferenceError, match=r"cannot call a value of type Tensor\[\(2\), "
                                                  r"float32\]"):
        infer_type(Call(x, [x]))


def test_reading_a_non_reference():
    with pytest.raises(TypeInferenceError, match=r"ref_read needs a reference"):
        infer_type(RefRead(const(1)))


def test_unused_lambda_parameter_cannot_be_inferred():
    z, g = var("z"), var("g")
    expr = Let(g, Function([z], z), const(1))
    with pytest.raises(TypeInferenceError,
                       match=r"variable %g: cannot infer the type of this expression "
                             r"\(only that it is fn \(_\) -> _\)"):
        infer_type(expr)


def test_recursive_type_is_rejected():
    f = var("f")
    x = var("x")
    # fn (%x) { %x(%x) }: %x would need a type containing itself
    with pytest.raises(TypeInferenceError, match=r"recursive type"):
        infer_type(Let(f, Function([x], Call(x, [x])), const(1)))


def test_errors_in_a_module_name_the_function():
    mod = IRModule()
    x = var("x", shape=(2,))
    mod["bad"] = Function([x], irlib.add(x, const(1)))  # float32 vs int32
    with pytest.raises(TypeInferenceError, match=r"type inference of @bad found 1 error"):
        InferType()(mod)


def test_error_reports_carry_the_span():
    span = irlib.Span("prog.rly", 4, 9)
    x = var("x", shape=(2,))
    bad = Call(irlib.op.get("add"), [x, const(1)], span=span)
    error = infer_error(Function([x], bad))
    assert error.errors[0].span == span
    assert "prog.rly:4:9" in str(error)


def test_type_relation_that_raises_an_unexpected_exception_is_reported():
    from irlib.op.registry import get_def
    op_def = get_def("sqrt")
    original = op_def.type_rel

    def broken(arg_types, attrs):
        raise IndexError("boom")

    op_def.type_rel = broken
    try:
        x = var("x", shape=(2,))
        with pytest.raises(TypeInferenceError, match=r"type relation of sqrt raised "
                                                      r"IndexError: boom"):
            infer_type(irlib.sqrt(x))
    finally:
        op_def.type_rel = original
