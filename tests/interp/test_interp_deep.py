"""100,000-deep programs and values evaluate without RecursionError (no timing assertions)."""

import numpy as np
import pytest

import irlib
from irlib import Call, Function, IRModule, Let, TensorType, Var, const, var
import interp
from interp import Interpreter, NDArray
from interp.nat import count, make_nat_expr, make_nat_value

from adt_programs import INT, from_list_value, to_list_value

DEPTH = 100_000


@pytest.fixture(scope="module")
def big_list(program):
    _, names = program
    return to_list_value(names, range(DEPTH))


def test_length_of_100000_element_list(program, big_list):
    mod, names = program
    length = interp.create_executor(mod=mod).evaluate(names["length"])
    assert length(big_list).numpy().item() == DEPTH


def test_map_over_100000_element_list(program, big_list):
    mod, names = program
    x = var("x", INT)
    xs = Var("xs", irlib.TypeCall(names["List"], [INT]))
    expr = Function([xs], Call(names["map"], [Function([x], irlib.multiply(x, const(2))), xs]))
    doubled = interp.create_executor(mod=mod).evaluate(expr)(big_list)
    items = from_list_value(names, doubled)
    assert len(items) == DEPTH and items[:3] == [0, 2, 4] and items[-1] == 2 * (DEPTH - 1)


def test_foldl_sum_of_100000_element_list(program):
    mod, names = program
    digits = to_list_value(names, [i % 10 for i in range(DEPTH)])
    acc, x = var("acc", INT), var("x", INT)
    xs = Var("xs", irlib.TypeCall(names["List"], [INT]))
    total = Function([xs], Call(names["foldl"], [Function([acc, x], irlib.add(acc, x)),
                                                  const(0), xs]))
    result = interp.create_executor(mod=mod).evaluate(total)(digits)
    assert result.numpy().item() == 45 * (DEPTH // 10)


def test_nat_add_of_100000_values(program):
    mod, names = program
    add = interp.create_executor(mod=mod).evaluate(names["nat_add"])
    result = add(make_nat_value(mod, DEPTH), make_nat_value(mod, 3))
    assert count(mod, result) == DEPTH + 3


def test_nat_expression_of_100000(program):
    mod, names = program
    value = interp.create_executor(mod=mod).evaluate(make_nat_expr(mod, DEPTH))
    assert count(mod, value) == DEPTH


# The two tests below drive the Interpreter directly: the executor would spend most of the
# time type-checking (tests/typeinf covers that at this depth).

def test_let_chain_of_100000():
    x = var("x", shape=(2,))
    names = [x] + [var(f"v{i}") for i in range(1, DEPTH + 1)]
    body = names[DEPTH]
    for i in range(DEPTH, 0, -1):
        body = Let(names[i], irlib.add(names[i - 1], const(1.0)), body)
    result = Interpreter(IRModule()).evaluate(body, {x: NDArray(np.zeros(2, "float32"))})
    np.testing.assert_array_equal(result.numpy(), [DEPTH, DEPTH])


def test_nested_calls_100000_deep():
    x = var("x", TensorType((), "int32"))
    expr = x
    for _ in range(DEPTH):
        expr = irlib.add(expr, const(1))
    value = Interpreter(IRModule()).evaluate(expr, {x: NDArray(np.array(5, "int32"))})
    assert value.numpy().item() == DEPTH + 5
