"""Types: value equality, identity of variables, dtype normalisation, text spelling."""

import numpy as np
import pytest

import irlib
from irlib.ir.types import normalize_dtype


def test_tensor_types_compare_by_value():
    assert irlib.TensorType((1, 3)) == irlib.TensorType([1, 3], "float32")
    assert hash(irlib.TensorType((1, 3))) == hash(irlib.TensorType((1, 3)))
    assert irlib.TensorType((1, 3)) != irlib.TensorType((1, 3), "int32")
    assert irlib.TensorType((np.int64(2),)).shape == (2,)


def test_type_variables_compare_by_identity():
    assert irlib.TypeVar("a") != irlib.TypeVar("a")
    a = irlib.TypeVar("a")
    assert irlib.FuncType([a], a) == irlib.FuncType([a], a)


def test_symbolic_dims_in_types():
    n = irlib.size_var("n")
    assert irlib.TensorType((n + 1 - 1, 3)) == irlib.TensorType((n, 3))
    assert irlib.TensorType((irlib.Any,)).is_dynamic()
    assert not irlib.TensorType((n,)).is_dynamic()


@pytest.mark.parametrize("spelling, canonical", [
    ("float32", "float32"), ("int", "int32"), ("bool", "bool"), (np.float16, "float16"),
    ("int8x4", "int8x4"), ("uint8", "uint8"),
])
def test_dtype_normalisation(spelling, canonical):
    assert normalize_dtype(spelling) == canonical


def test_unknown_dtype_is_rejected():
    with pytest.raises(TypeError, match="unknown dtype"):
        irlib.TensorType((1,), "float33")


def test_bad_dims_are_rejected():
    with pytest.raises(ValueError, match="negative"):
        irlib.TensorType((-1,))
    with pytest.raises(TypeError):
        irlib.TensorType((1.5,))


@pytest.mark.parametrize("ty, text", [
    (irlib.TensorType((), "float32"), "float32"),
    (irlib.TensorType((10,)), "Tensor[(10), float32]"),
    (irlib.TensorType((1, 3), "int8"), "Tensor[(1, 3), int8]"),
    (irlib.TensorType((irlib.size_var("n"), irlib.Any)), "Tensor[(n, ?), float32]"),
    (irlib.TupleType([]), "()"),
    (irlib.TupleType([irlib.TensorType((), "bool")]), "(bool,)"),
    (irlib.FuncType([irlib.TensorType(())], irlib.TensorType((), "bool")),
     "fn (float32) -> bool"),
    (irlib.RefType(irlib.TensorType(())), "ref(float32)"),
])
def test_type_text(ty, text):
    assert str(ty) == text


def test_adt_type_text():
    gtv = irlib.GlobalTypeVar("List")
    a = irlib.TypeVar("A")
    cons = irlib.Constructor("Cons", [a, irlib.TypeCall(gtv, [a])], gtv)
    nil = irlib.Constructor("Nil", [], gtv)
    data = irlib.TypeData(gtv, [a], [cons, nil])
    assert str(irlib.TypeCall(gtv, [irlib.TensorType(())])) == "List[float32]"
    assert str(data) == "type List[A] {\n  Cons(A, List[A]),\n  Nil,\n}"
