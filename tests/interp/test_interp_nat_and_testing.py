"""interp.nat helpers and the interp.testing facade."""

import collections

import numpy as np
import pytest

import irlib
from irlib import Call, Function, TensorType, var
from irlib.errors import InterpreterError
import interp
from interp import ConstructorValue, NDArray, testing
from interp.nat import count, make_nat_expr, make_nat_value

from adt_programs import list_module, to_list_value


class FakePrelude:
    """Anything with a ``.mod`` works, as Relay's helpers only read ``prelude.mod``."""

    def __init__(self, mod):
        self.mod = mod


def test_make_nat_value_shape(program):
    mod, names = program
    three = make_nat_value(FakePrelude(mod), 3)
    assert repr(three) == "succ(succ(succ(zero)))"
    assert three.tag == names["succ"].tag and three.constructor is names["succ"]
    assert make_nat_value(mod, 0).tag == names["zero"].tag


def test_make_nat_expr_shape(program):
    mod, names = program
    expr = make_nat_expr(mod, 2)
    assert isinstance(expr, Call) and expr.op is names["succ"]
    assert expr.args[0].op is names["succ"]
    assert expr.args[0].args[0].op is names["zero"] and expr.args[0].args[0].args == ()


def test_count_round_trips_100000(program):
    mod, _ = program
    assert count(mod, make_nat_value(mod, 100_000)) == 100_000
    assert count(FakePrelude(mod), make_nat_value(mod, 0)) == 0


def test_nat_helpers_reject_bad_input(program):
    mod, names = program
    with pytest.raises(ValueError, match="n >= 0"):
        make_nat_value(mod, -1)
    with pytest.raises(ValueError, match="n >= 0"):
        make_nat_expr(mod, -1)
    with pytest.raises(InterpreterError, match="got a Nil constructor"):
        count(mod, to_list_value(names, []))
    with pytest.raises(InterpreterError, match="expects a nat value"):
        count(mod, NDArray(np.array(1)))


def test_testing_facade_reexports_nat_helpers():
    assert testing.count is count
    assert testing.make_nat_value is make_nat_value
    assert testing.make_nat_expr is make_nat_expr


def test_run_infer_type_and_run_opt_pass():
    x = var("x", shape=(2, 3))
    typed = testing.run_infer_type(Function([x], irlib.exp(x)))
    assert typed.checked_type.ret_type == TensorType((2, 3), "float32")
    body = testing.run_infer_type(irlib.exp(x))
    assert body.checked_type == TensorType((2, 3), "float32")
    assert isinstance(testing.run_opt_pass(irlib.exp(x), irlib.transform.InferType()),
                      irlib.Call)


def test_rand():
    value = testing.rand("float32", 2, 5)
    assert isinstance(value, NDArray) and value.shape == (2, 5) and value.dtype == "float32"
    assert ((value.numpy() >= 0) & (value.numpy() < 1)).all()


def test_count_ops_counts_shared_nodes_once():
    x = var("x", shape=(2,))
    shared = irlib.exp(x)
    expr = irlib.add(shared, irlib.multiply(shared, irlib.exp(x)))
    assert testing.count_ops(expr) == collections.Counter(exp=2, add=1, multiply=1)
    with pytest.raises(TypeError, match="only op calls"):
        testing.count_ops(Call(Function([x], x), [x]))


def test_constructor_value_repr_in_values_module():
    assert isinstance(make_nat_value(list_module()[0], 1), ConstructorValue)
    assert interp.testing is testing
