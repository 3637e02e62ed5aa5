"""Regression (issue #19): executors take Python lists/tuples/None for List/Option/tuple
parameters (interp.values.from_python_value) and results convert back (to_python_value)."""

import numpy as np
import pytest

import interp
import irlib
from interp.values import (ConstructorValue, ValueConversionError, from_python_value,
                           to_python_value)
from irlib.errors import IRError
from irlib.prelude import Prelude

SOURCE = '''#[version = "0.0.5"]
def @sum_list(%l: List[Tensor[(2), float32]]) -> Tensor[(2), float32] {
  match (%l) {
    Cons(%h, %t) => add(%h, @sum_list(%t)),
    Nil => zeros(shape=[2], dtype="float32"),
  }
}
def @main(%l: List[Tensor[(2), float32]], %o: Option[float32], %p: (int32, float32))
    -> Tensor[(2), float32] {
  match (%o) {
    Some(%v) => add(add(%v, @sum_list(%l)), %p.1),
    None => multiply(@sum_list(%l), -1f),
  }
}
def @echo(%l: List[Option[int32]]) -> List[Option[int32]] { %l }
'''


@pytest.fixture(scope="module")
def mod():
    return irlib.parse(SOURCE, init_module=Prelude(irlib.IRModule()).mod)


@pytest.mark.parametrize("kind", ["debug", "python"])
def test_lists_none_and_tuples_as_arguments(mod, kind):
    run = interp.create_executor(kind, mod=mod).evaluate()
    items = [np.array([1, 2], "float32"), np.array([10, 20], "float32")]
    out = run(items, 0.5, (1, 2.0))
    np.testing.assert_allclose(np.asarray(out.numpy() if hasattr(out, "numpy") else out),
                               np.array([13.5, 24.5], "float32"))
    out = run(tuple(items), None, [0, 0.0])
    np.testing.assert_allclose(np.asarray(out.numpy() if hasattr(out, "numpy") else out),
                               np.array([-11, -22], "float32"))
    out = run([], None, (0, 0.0))
    np.testing.assert_allclose(np.asarray(out.numpy() if hasattr(out, "numpy") else out),
                               np.zeros(2, "float32"))


def test_results_back_to_python(mod):
    run = interp.create_executor("debug", mod=mod).evaluate(mod.get_global_var("echo"))
    result = run([1, None, 3])
    assert isinstance(result, ConstructorValue)
    python = to_python_value(result)
    assert [None if v is None else int(np.asarray(v)) for v in python] == [1, None, 3]
    assert np.asarray(python[0]).dtype == np.int32 and np.asarray(python[0]).shape == ()


def test_long_list_round_trip(mod):
    ty = mod["echo"].params[0].type_annotation
    value = from_python_value(list(range(20000)), ty, mod)
    assert [int(np.asarray(v)) for v in to_python_value(value)] == list(range(20000))


def test_bad_arguments_are_irlib_errors(mod):
    run = interp.create_executor("debug", mod=mod).evaluate()
    with pytest.raises(ValueConversionError, match="%l"):
        run(5, None, (0, 0.0))
    with pytest.raises(IRError, match="tuple of 2"):
        run([], None, (0,))
    x = irlib.var("x", shape=(2,))
    simple = irlib.IRModule.from_expr(irlib.Function([x], irlib.add(x, x)))
    with pytest.raises(IRError, match="NoneType"):
        interp.create_executor("debug", mod=simple).evaluate()(None)
    with pytest.raises(ValueConversionError):
        from_python_value([1], mod["echo"].params[0].type_annotation, None)
