"""One test (or a few) per expression kind, with expected values worked out by hand."""

import numpy as np
import pytest

import irlib
from irlib import (Call, Function, If, IRModule, Let, RefCreate, RefRead, RefType, RefWrite,
                   Span, TensorType, Tuple, TupleGetItem, Var, const, var)
from irlib.errors import InterpreterError
import interp
from interp import Interpreter, NDArray, RefValue, TupleValue

INT = TensorType((), "int32")


def run(expr, mod=None):
    return interp.create_executor(mod=mod).evaluate(expr)


def scalar(value):
    assert isinstance(value, NDArray), value
    return value.numpy().item()


def seq(first, then):
    """``first; then`` as the parser builds it."""
    return Let(Var(""), first, then)


def test_constant_and_arithmetic():
    assert scalar(run(irlib.add(const(2), irlib.multiply(const(3), const(4))))) == 14


def test_tuple_and_projection():
    value = run(Tuple([const(1), Tuple([const(2.5), const(True)])]))
    assert type(value) is TupleValue and len(value) == 2
    assert scalar(value[0]) == 1 and scalar(value[1][0]) == 2.5 and scalar(value[1][1]) is True
    assert scalar(run(TupleGetItem(Tuple([const(1), const(2)]), 1))) == 2


def test_empty_tuple():
    assert run(Tuple([])) == ()


def test_let_binds_and_shadows():
    x1, x2 = var("x"), var("x")
    # let x = 1; let x' = x + 10; x' * 2  ->  22
    expr = Let(x1, const(1), Let(x2, irlib.add(x1, const(10)), irlib.multiply(x2, const(2))))
    assert scalar(run(expr)) == 22


def test_if_takes_only_the_chosen_branch():
    r = var("r")
    # let r = ref(0); (if (1 < 2) { r := 1 } else { r := 2 }); r!  ->  1
    expr = Let(r, RefCreate(const(0)),
               seq(If(irlib.less(const(1), const(2)), RefWrite(r, const(1)),
                      RefWrite(r, const(2))), RefRead(r)))
    assert scalar(run(expr)) == 1
    expr = If(irlib.greater(const(1), const(2)), const(10), const(20))
    assert scalar(run(expr)) == 20


def test_if_on_non_bool_condition_is_an_interpreter_error():
    with pytest.raises(InterpreterError, match="bool scalar"):
        Interpreter(IRModule()).evaluate(If(const(1), const(1), const(2)))


def test_closure_captures_values_at_creation():
    x, y, f, x2 = var("x"), var("y"), var("f"), var("x2")
    # let x = 1; let f = fn (y) { x + y }; let x2 = 10; f(5)  ->  6
    expr = Let(x, const(1), Let(f, Function([y], irlib.add(x, y)),
                                Let(x2, const(10), Call(f, [const(5)]))))
    assert scalar(run(expr)) == 6


def test_closure_returning_closure():
    a, b, add = var("a", INT), var("b", INT), var("add")
    # let add = fn (a) { fn (b) { a - b } }; add(10)(3)  ->  7
    curried = Function([a], Function([b], irlib.subtract(a, b)))
    assert scalar(run(Let(add, curried, Call(Call(add, [const(10)]), [const(3)])))) == 7


def test_higher_order_compose():
    f, g, z, x = var("f"), var("g"), var("z", INT), var("x", INT)
    compose = Function([f, g], Function([z], Call(f, [Call(g, [z])])))
    double = Function([x], irlib.multiply(x, const(2)))
    y = var("y", INT)
    inc = Function([y], irlib.add(y, const(1)))
    c = var("c")
    # compose(double, inc)(5) = double(inc(5)) = 12
    expr = Let(c, compose, Call(Call(c, [double, inc]), [const(5)]))
    assert scalar(run(expr)) == 12


def test_letrec_loop_sums_1_to_100():
    n, acc, loop = var("n", INT), var("acc", INT), var("loop")
    body = If(irlib.equal(n, const(0)), acc,
              Call(loop, [irlib.subtract(n, const(1)), irlib.add(acc, n)]))
    expr = Let(loop, Function([n, acc], body), Call(loop, [const(100), const(0)]))
    assert scalar(run(expr)) == 5050


def test_three_with_ref():
    r = var("r")
    # let r = ref(1); let _ = r!; r := 3; r!  ->  3
    expr = Let(r, RefCreate(const(1)), seq(RefRead(r), seq(RefWrite(r, const(3)), RefRead(r))))
    assert scalar(run(expr)) == 3


def test_ref_write_returns_empty_tuple():
    assert run(RefWrite(RefCreate(const(1)), const(2))) == ()


def test_refs_alias():
    r, s = var("r"), var("s")
    # let r = ref(0); let s = r; s := 5; r!  ->  5 (both name the same cell)
    expr = Let(r, RefCreate(const(0)), Let(s, r, seq(RefWrite(s, const(5)), RefRead(r))))
    assert scalar(run(expr)) == 5


def test_closure_sees_later_writes_through_a_captured_ref():
    r, f, counter = var("r"), var("f"), var("unused")
    # let r = ref(1); let f = fn () { r! }; r := 7; f()  ->  7
    expr = Let(r, RefCreate(const(1)),
               Let(f, Function([], RefRead(r)), seq(RefWrite(r, const(7)), Call(f, []))))
    assert scalar(run(expr)) == 7
    del counter


def test_ref_value_passed_in_is_mutated_in_place():
    r = var("r", RefType(INT))
    func = Function([r], RefWrite(r, irlib.add(RefRead(r), const(1))))
    ref = RefValue(np.array(41, "int32"))
    interp.create_executor().evaluate(func)(ref)
    assert scalar(ref.value) == 42


def test_fields_are_evaluated_left_to_right():
    r = var("r")
    # let r = ref(0); ((r := 1; r!), (r := 2; r!))  ->  (1, 2)
    expr = Let(r, RefCreate(const(0)),
               Tuple([seq(RefWrite(r, const(1)), RefRead(r)),
                      seq(RefWrite(r, const(2)), RefRead(r))]))
    value = run(expr)
    assert (scalar(value[0]), scalar(value[1])) == (1, 2)


def test_call_evaluates_arguments_before_the_callee():
    r, a = var("r"), var("a", INT)
    identity = Function([a], a)
    # let r = ref(0); ((r := 1; id)((r := 2; r!)), r!)  ->  (2, 1):
    # the argument (writing 2) runs first, then the callee expression (writing 1).
    call = Call(seq(RefWrite(r, const(1)), identity), [seq(RefWrite(r, const(2)), RefRead(r))])
    value = run(Let(r, RefCreate(const(0)), Tuple([call, RefRead(r)])))
    assert (scalar(value[0]), scalar(value[1])) == (2, 1)


def test_shared_node_is_evaluated_once():
    r = var("r")
    # %0 = (r := r! + 1; r!) used twice: evaluated once (as in A-normal form)
    bump = seq(RefWrite(r, irlib.add(RefRead(r), const(1))), RefRead(r))
    value = run(Let(r, RefCreate(const(0)), Tuple([bump, bump, RefRead(r)])))
    assert [scalar(v) for v in value] == [1, 1, 1]


def test_tuple_output_op_gives_tuple_value():
    x = var("x", shape=(4,))
    func = Function([x], irlib.split(x, 2).astuple())
    value = interp.create_executor().evaluate(func)(np.arange(4, dtype="float32"))
    assert type(value) is TupleValue
    np.testing.assert_array_equal(value[0].numpy(), [0, 1])
    np.testing.assert_array_equal(value[1].numpy(), [2, 3])


def test_op_result_has_the_inferred_dtype():
    x = var("x", shape=(2, 3))
    value = interp.create_executor().evaluate(Function([x], irlib.shape_of(x)))(
        np.zeros((2, 3), "float32"))
    assert value.dtype == "int32"
    np.testing.assert_array_equal(value.numpy(), [2, 3])


def test_op_failure_names_node_and_span():
    x, y = var("x", shape=(irlib.Any,)), var("y", shape=(irlib.Any,))
    call = Call(irlib.op.get("add"), [x, y], span=Span("model.rly", 12, 5))
    body = Let(var("z"), call, var("z"))
    body = Let(body.var, call, body.var)
    func = interp.create_executor().evaluate(Function([x, y], body))
    with pytest.raises(InterpreterError) as info:
        func(np.ones(3, "float32"), np.ones(4, "float32"))
    message = str(info.value)
    assert "while evaluating `%z = add(%x, %y)` at model.rly:12:5" in message
    assert "add:" in message and "(3,)" in message
    assert isinstance(info.value.__cause__, irlib.OpImplError)


def test_unbound_variable_is_an_interpreter_error():
    x = var("x")
    with pytest.raises(InterpreterError, match="variable %x has no value"):
        Interpreter(IRModule()).evaluate(irlib.add(x, x))


def test_bare_op_is_an_interpreter_error():
    with pytest.raises(InterpreterError, match="used as a value"):
        Interpreter(IRModule()).evaluate(irlib.op.get("add"))


def test_calling_a_non_function_is_an_interpreter_error():
    with pytest.raises(InterpreterError, match="not a function"):
        Interpreter(IRModule()).evaluate(Call(const(1), []))


def test_interpreter_evaluate_with_frame():
    x = var("x")
    value = Interpreter(IRModule()).evaluate(irlib.add(x, x), {x: NDArray(np.array(2.0))})
    assert scalar(value) == 4.0


def test_function_result_is_a_python_callable_closure():
    x, y = var("x", INT), var("y", INT)
    adder = interp.create_executor().evaluate(Function([x], Function([y], irlib.add(x, y))))
    add5 = adder(5)
    assert isinstance(add5, interp.Closure)
    assert scalar(add5(3)) == 8


def test_annotation_ops_pass_any_value_through():
    r = var("r")
    stop = irlib.op.get("annotation.stop_fusion")
    # annotation.stop_fusion(ref(3)) is the same cell: write through it, read the original
    expr = Let(r, RefCreate(const(3)), seq(RefWrite(Call(stop, [r]), const(4)), RefRead(r)))
    assert scalar(run(expr)) == 4
