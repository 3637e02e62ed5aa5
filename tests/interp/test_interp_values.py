"""Runtime values: construction, conversion of Python arguments, readable repr."""

import pickle

import numpy as np
import pytest

from irlib import Constructor, GlobalTypeVar, TypeVar, TypeCall
from interp import (Closure, ConstructorValue, NDArray, RecClosure, RefValue, TupleValue,
                    as_value, format_value)

LIST = GlobalTypeVar("List")
A = TypeVar("A")
CONS = Constructor("Cons", [A, TypeCall(LIST, [A])], LIST)
NIL = Constructor("Nil", [], LIST)


def nil():
    return ConstructorValue(NIL.tag, [], NIL)


def test_tuple_value_is_an_indexable_iterable_tuple():
    first, second = NDArray(np.array(1)), NDArray(np.array([2.0, 3.0]))
    value = TupleValue(first, second)
    assert len(value) == 2 and value[0] is first and value[1] is second
    assert list(value) == [first, second]
    a, b = value
    assert a is first and b is second
    assert value.fields == (first, second)
    assert isinstance(value, tuple)
    assert TupleValue() == ()


def test_tuple_value_pickles_back_to_same_fields():
    value = TupleValue(1, 2)
    copy = pickle.loads(pickle.dumps(value))
    assert type(copy) is TupleValue and tuple(copy) == (1, 2)


def test_constructor_value_fields_are_converted_and_checked():
    value = ConstructorValue(CONS.tag, [np.array(1, "int32"), nil()], CONS)
    assert isinstance(value.fields[0], NDArray)
    assert value.fields[0].numpy().item() == 1
    assert value.name == "Cons"
    with pytest.raises(TypeError, match="Cons takes 2 field"):
        ConstructorValue(CONS.tag, [nil()], CONS)


def test_constructor_value_without_constructor_prints_its_tag():
    assert repr(ConstructorValue(7, [])) == "ctor<7>"


def test_repr_of_nested_list():
    value = ConstructorValue(CONS.tag, [NDArray(np.array(1, "int32")),
                                        ConstructorValue(CONS.tag, [NDArray(np.array(2, "int32")),
                                                                    nil()], CONS)], CONS)
    assert repr(value) == "Cons(1, Cons(2, Nil))"


def test_repr_of_100000_long_list_is_abbreviated_without_recursion_error():
    value = nil()
    for i in range(100_000):
        value = ConstructorValue(CONS.tag, [NDArray(np.array(i, "int32")), value], CONS)
    text = repr(value)
    assert text.startswith("Cons(99999, Cons(99998, ")
    assert "..." in text and len(text) < 2000
    assert text.endswith(")" * 60)   # 60 constructors expanded, each closed


def test_format_value_of_tensors_tuples_refs():
    assert format_value(NDArray(np.array(2.5, "float32"))) == "2.5"
    assert format_value(NDArray(np.array(True))) == "True"
    assert format_value(NDArray(np.array([1, 2, 3], "int32"))) == "[1, 2, 3]"
    assert format_value(TupleValue(NDArray(np.array(1)), TupleValue())) == "(1, ())"
    assert format_value(TupleValue(NDArray(np.array(1)))) == "(1,)"
    assert format_value(RefValue(np.array(3, "int32"))) == "ref(3)"


def test_format_value_of_closures():
    from irlib import Function, var
    x, f = var("x"), var("f")
    closure = Closure(Function([x], x), {})
    assert format_value(closure) == "<closure fn(%x)>"
    assert format_value(RecClosure(closure, f)) == "<closure %f fn(%x)>"


def test_as_value_conversions():
    assert as_value(3).dtype == "int32"
    assert as_value(2.5).dtype == "float32"
    assert as_value(True).dtype == "bool"
    assert as_value(np.int64(4)).dtype == "int32"
    assert as_value(np.float64(4)).dtype == "float32"
    assert as_value(3, dtype="float64").dtype == "float64"
    array = np.arange(4, dtype="int64")
    converted = as_value(array)
    assert converted.dtype == "int64"           # arrays keep their dtype
    array[0] = 99
    assert converted.numpy()[0] == 0            # and are copied
    nested = as_value((1, (2.0, np.zeros(2))))
    assert type(nested) is TupleValue and type(nested[1]) is TupleValue
    assert nested[1][1].shape == (2,)
    assert as_value([1, 2]).shape == (2,)
    ref = RefValue(1)
    assert as_value(ref) is ref


def test_as_value_rejects_unknown_objects():
    with pytest.raises(TypeError, match="cannot use a object"):
        as_value(object())


def test_ref_value_is_mutable():
    ref = RefValue(np.array(1, "int32"))
    ref.value = NDArray(np.array(5, "int32"))
    assert ref.value.numpy().item() == 5
