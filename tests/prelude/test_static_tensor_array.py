"""Static tensor arrays: the naming scheme (relay_spec.md §1.6) and the registered ops."""

import pytest

import irlib
from irlib import FuncType, TensorType, TypeCall
from irlib.ir.dims import Any
from irlib.prelude import Prelude
from irlib.prelude_static import StaticTensorArrayOps, get_name_static

INT32 = TensorType((), "int32")


@pytest.mark.parametrize("args, name", [
    (("tensor_t", "float32", (2, 3)), "static_tensor_float32_2_3_t"),
    (("tensor_constructor", "float32", (2, 3)), "tensor_constructor_float32_2_3"),
    (("tensor_nil", "float32", (2, 3), 1), "tensor_nil_float32_2_3"),
    (("tensor_array_read", "float32", (Any, 3)), "tensor_array_read_float32_any_3"),
    (("tensor_take", "float32", ()), "tensor_take_float32_scalar"),
    (("tensor_array_read", "int8", (4,), 1), "tensor_array_read_int8_batch1_4"),
    (("tensor_array_read", "int8", (4,), 2), "tensor_array_read_int8_4"),
    (("tensor_array_scatter", "float32", (2,), None, {"indices": (Any,)}),
     "tensor_array_scatter_float32_2_indices_any"),
])
def test_static_names(args, name):
    assert get_name_static(*args) == name


@pytest.fixture(scope="module")
def prelude():
    p = Prelude()
    StaticTensorArrayOps(p, "float32", (2, 3)).register()
    return p


def test_registered_adt(prelude):
    t = prelude.get_type_static("tensor_t", "float32", (2, 3))
    assert t.name_hint == "static_tensor_float32_2_3_t"
    ctor = prelude.get_tensor_ctor_static("tensor_constructor", "float32", (2, 3))
    assert ctor.inputs == (TensorType((2, 3), "float32"),)
    nil = prelude.get_ctor_static("tensor_t", "tensor_nil", "float32", (2, 3))
    assert nil.inputs == ()


def test_registered_function_types(prelude):
    mod = prelude.mod

    def adt(shape):
        return TypeCall(prelude.get_type_static("tensor_t", "float32", shape), [])

    t, rest, grown = adt((2, 3)), adt((Any, 3)), adt((Any, 2, 3))
    ta = TypeCall(mod.get_global_type_var("List"), [t])
    expected = {
        "tensor_get_data": FuncType([t], TensorType((2, 3), "float32")),
        "tensor_array": FuncType([INT32], ta),
        "tensor_array_read": FuncType([ta, INT32], t),
        "tensor_array_write": FuncType([ta, INT32, t], ta),
        "tensor_expand_dims": FuncType([t], grown),
        "tensor_take": FuncType([t, INT32, INT32], rest),
        "tensor_concatenate": FuncType([t, t], rest),
        "tensor_array_concat": FuncType([ta], rest),
        "tensor_array_stack": FuncType([ta], grown),
        "tensor_array_unstack": FuncType(
            [TensorType((2, 3), "float32")],
            TypeCall(mod.get_global_type_var("List"), [adt((3,))])),
    }
    for canonical, ty in expected.items():
        gvar = prelude.get_global_var_static(canonical, "float32", (2, 3))
        actual = mod[gvar].checked_type
        assert irlib.structural_equal(actual, ty), f"{canonical}: {actual} != {ty}"


def test_register_is_idempotent_and_batch1_names(prelude):
    count = len(prelude.mod)
    StaticTensorArrayOps(prelude, "float32", (2, 3)).register()
    assert len(prelude.mod) == count
    ops = StaticTensorArrayOps(prelude, "int32", (), batch_dim=1)
    ops.register()
    assert ops.get_global_var("tensor_array_read").name_hint == \
        "tensor_array_read_int32_batch1_scalar"
    expanded = prelude.mod[ops.get_global_var("tensor_expand_dims")].checked_type.ret_type
    ctor = prelude.mod.get_type(expanded.func.name_hint)[2]
    assert ctor.inputs == (TensorType((1,), "int32"),)
