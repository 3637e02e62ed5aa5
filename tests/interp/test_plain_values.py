"""interp.plain_values: irlib.testing's plain values (Adt, Ref, tuples, arrays) as interpreter
values, and the runtime value strategy over the Prelude's types."""

import numpy as np
import pytest
from hypothesis import given, settings

import interp
from interp import ConstructorValue, RefValue, TupleValue
from interp.plain_values import adt_values, runtime_value
from interp.values import ValueConversionError
from irlib.testing.adt_strategies import plain_adt_values, prelude_module
from irlib.testing.runners import Adt, Ref, plain

MOD = prelude_module()


def test_constructor_values_get_the_modules_constructors():
    value = runtime_value(Adt("Cons", (np.int32(3), Adt("Nil", ()))), MOD)
    _, cons, nil = MOD.get_type("List")
    assert type(value) is ConstructorValue and value.constructor is cons
    assert value.fields[1].constructor is nil and value.fields[0].numpy() == 3


def test_tuples_refs_and_arrays():
    array = np.arange(3, dtype="float32")
    value = runtime_value((array, Ref(Adt("None", ()))), MOD)
    assert type(value) is TupleValue and type(value[1]) is RefValue
    assert value[1].value.constructor.name_hint == "None"
    np.testing.assert_array_equal(value[0].numpy(), array)
    assert runtime_value(array, MOD) is array               # arrays pass through


def test_a_long_list_converts_without_recursion():
    value = Adt("Nil", ())
    for i in range(50_000):
        value = Adt("Cons", (np.int32(i % 7), value))
    converted = runtime_value(value, MOD)
    length = 0
    while converted.fields:
        length, converted = length + 1, converted.fields[1]
    assert length == 50_000


def test_unknown_constructor_and_wrong_arity_are_conversion_errors():
    with pytest.raises(ValueConversionError, match="cannot make a Leaf value"):
        runtime_value(Adt("Leaf", ()), MOD)
    with pytest.raises(ValueConversionError, match="cannot make a Cons value"):
        runtime_value(Adt("Cons", (np.int32(1),)), MOD)


@settings(max_examples=20, deadline=None)
@given(value=plain_adt_values("tree"))
def test_plain_and_runtime_forms_round_trip(value):
    assert plain(runtime_value(value, MOD)) == plain(value)


@settings(max_examples=10, deadline=None)
@given(value=adt_values("list"))
def test_adt_values_run_on_the_interpreter(value):
    length = interp.create_executor(mod=MOD).evaluate(MOD.get_global_var("length"))(value)
    count = 0
    while value.fields:
        count, value = count + 1, value.fields[1]
    assert length.numpy() == count
