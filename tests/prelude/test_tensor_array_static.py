"""Static tensor arrays (relay_spec.md §1.6): scatter, split, gather, their names and types,
get_tensor_array_shape, and values of every op on the reference interpreter (expected arrays
worked out by hand)."""

import numpy as np
import pytest

import irlib
from irlib import FuncType, TensorType, TypeCall
from irlib.ir.dims import Any
from irlib.prelude import Prelude
from irlib.prelude_static import StaticTensorArrayOps, get_tensor_array_shape
from tensor_array_helpers import items, run, tensor

INT32 = TensorType((), "int32")
INDICES = TensorType((Any,), "int32")


@pytest.fixture(scope="module")
def prelude():
    p = Prelude()
    for shape, batch_dim in (((2,), None), ((4, 2), None), ((), None), ((2,), 1)):
        StaticTensorArrayOps(p, "float32", shape, batch_dim).register()
    return p


def adt(prelude, shape):
    return TypeCall(prelude.get_type_static("tensor_t", "float32", shape), [])


def ta_of(prelude, shape):
    return TypeCall(prelude.mod.get_global_type_var("List"), [adt(prelude, shape)])


def fn_type(prelude, canonical, shape, batch_dim=None):
    gvar = prelude.get_global_var_static(canonical, "float32", shape, batch_dim)
    return prelude.mod[gvar].checked_type


# -- names and types ------------------------------------------------------------------------------

def test_scatter_split_gather_types(prelude):
    shape = (4, 2)
    t, rest, grown = ta_of(prelude, shape), ta_of(prelude, (Any, 2)), adt(prelude, (Any, 4, 2))
    expected = {
        "tensor_array_scatter": FuncType([t, INDICES, t], t),
        "tensor_array_scatter_helper": FuncType([t, INT32, INT32, INDICES, t], t),
        "tensor_array_split": FuncType([rest, adt(prelude, shape), INDICES], rest),
        "ta_split_helper": FuncType(
            [rest, adt(prelude, shape), INT32, INT32, INT32, INDICES], rest),
        "tensor_array_gather": FuncType([t, INDICES], grown),
        "tensor_array_gather_helper": FuncType([t, t, INT32, INT32, INDICES], grown),
    }
    for canonical, ty in expected.items():
        actual = fn_type(prelude, canonical, shape)
        assert irlib.structural_equal(actual, ty), f"{canonical}: {actual} != {ty}"


def test_names_follow_the_static_scheme(prelude):
    names = {g.name_hint for g in prelude.mod.get_global_vars()}
    for name in ("tensor_array_scatter_float32_4_2", "tensor_array_scatter_helper_float32_4_2",
                 "tensor_array_split_float32_4_2", "ta_split_helper_float32_4_2",
                 "tensor_array_gather_float32_4_2", "tensor_array_gather_helper_float32_4_2",
                 "tensor_array_gather_float32_batch1_2", "tensor_array_split_float32_batch1_2",
                 "tensor_array_scatter_float32_scalar", "tensor_array_gather_float32_scalar"):
        assert name in names, name
    # take, concatenate, concat, unstack and split are skipped for scalars
    for canonical in ("tensor_take", "tensor_concatenate", "tensor_array_concat",
                      "tensor_array_unstack", "tensor_array_split", "ta_split_helper"):
        assert f"{canonical}_float32_scalar" not in names
    # ADTs made on demand for the changed shapes
    types = {g.name_hint for g in prelude.mod.get_global_type_vars()}
    assert {"static_tensor_float32_any_4_2_t", "static_tensor_float32_any_2_t",
            "static_tensor_float32_1_2_t", "static_tensor_float32_any_t"} <= types


def test_scatter_with_static_indices_shape(prelude):
    ops = StaticTensorArrayOps(prelude, "float32", (2,))
    ops.define_tensor_array_scatter(indices_shape=(3,))
    gvar = ops.get_global_var("tensor_array_scatter")  # the default one is untouched
    assert gvar.name_hint == "tensor_array_scatter_float32_2"
    name = ops.get_name("tensor_array_scatter", {"indices": (3,)})
    assert name == "tensor_array_scatter_float32_2_indices_3"
    t = ta_of(prelude, (2,))
    actual = prelude.mod[prelude.mod.get_global_var(name)].checked_type
    assert irlib.structural_equal(actual, FuncType([t, TensorType((3,), "int32"), t], t))
    count = len(prelude.mod)
    ops.define_tensor_array_scatter(indices_shape=(3,))
    assert len(prelude.mod) == count
    with pytest.raises(ValueError):
        ops.define_tensor_array_scatter(indices_shape=(3, 1))


def test_registering_again_changes_nothing(prelude):
    before = {g.name_hint: prelude.mod[g] for g in prelude.mod.get_global_vars()}
    StaticTensorArrayOps(prelude, "float32", (4, 2)).register()
    after = {g.name_hint: prelude.mod[g] for g in prelude.mod.get_global_vars()}
    assert before.keys() == after.keys()
    assert all(before[name] is after[name] for name in before)


def test_accessors(prelude):
    ops = StaticTensorArrayOps(prelude, "float32", (4, 2))
    assert ops.get_type().name_hint == "static_tensor_float32_4_2_t"
    assert ops.get_ctor("tensor_nil").name_hint == "tensor_nil_float32_4_2"
    assert ops.get_global_var("tensor_array_gather") is \
        prelude.get_global_var_static("tensor_array_gather", "float32", (4, 2))
    # generated definitions are also Prelude attributes, as in Relay
    assert prelude.tensor_array_gather_float32_4_2 is ops.get_global_var("tensor_array_gather")
    with pytest.raises(AttributeError):
        prelude.tensor_array_gather_float32_9_9


def test_get_tensor_array_shape(prelude):
    for shape in ((4, 2), (), (Any, 2)):
        ops = StaticTensorArrayOps(prelude, "float32", shape)
        ops.register()
        count = len(prelude.mod)
        expr = ops.get_global_var("tensor_array")(irlib.const(2))
        assert get_tensor_array_shape(expr, "float32", prelude) == shape
        assert len(prelude.mod) == count  # the module is not changed
    expr = ops.get_global_var("tensor_array")(irlib.const(2))
    assert get_tensor_array_shape(expr, "int32", prelude) is None
    dynamic = prelude.get_global_var("tensor_array", "float32")(irlib.const(2))
    assert get_tensor_array_shape(dynamic, "float32", prelude) is None
    with pytest.raises(ValueError):
        get_tensor_array_shape(irlib.const(1.0), "float32", prelude)


# -- values ---------------------------------------------------------------------------------------

def assert_tensor(actual, ctor, expected):
    assert actual[0] == ctor
    np.testing.assert_array_equal(actual[1], np.array(expected, dtype="float32"))


V2 = "Tensor[(2), float32]"
M42 = "Tensor[(4, 2), float32]"
A = np.array([1, 2], "float32")
B = np.array([3, 4], "float32")
C = np.array([5, 6], "float32")
M = np.array([[1, 2], [3, 4], [5, 6], [7, 8]], "float32")


def three(prelude):
    """The text of a static (2,) tensor array [%a, %b, %c]."""
    return ("Cons(tensor_constructor_float32_2(%a), Cons(tensor_constructor_float32_2(%b), "
            "Cons(tensor_constructor_float32_2(%c), Nil)))")


def test_write_read_and_get_data(prelude):
    text = f"""fn (%a: {V2}) {{
      let %ta = @tensor_array_write_float32_2(@tensor_array_float32_2(2), 1,
                                              tensor_constructor_float32_2(%a));
      (@tensor_get_data_float32_2(@tensor_array_read_float32_2(%ta, 1)),
       @tensor_array_read_float32_2(%ta, 0))
    }}"""
    data, nil = run(prelude, text, A)
    np.testing.assert_array_equal(data.numpy(), [1, 2])
    assert tensor(nil) == "nil"


def test_stack(prelude):
    result = run(prelude, f"fn (%a: {V2}, %b: {V2}, %c: {V2}) "
                          f"{{ @tensor_array_stack_float32_2({three(prelude)}) }}", A, B, C)
    assert_tensor(tensor(result), "tensor_constructor_float32_any_2",
                  [[1, 2], [3, 4], [5, 6]])


def test_stack_batch1(prelude):
    result = run(prelude, f"fn (%a: {V2}, %b: {V2}, %c: {V2}) "
                          f"{{ @tensor_array_stack_float32_batch1_2({three(prelude)}) }}",
                 A, B, C)
    assert_tensor(tensor(result), "tensor_constructor_float32_any_2",
                  [[1, 2], [3, 4], [5, 6]])


def test_concat(prelude):
    result = run(prelude, f"fn (%a: {V2}, %b: {V2}, %c: {V2}) "
                          f"{{ @tensor_array_concat_float32_2({three(prelude)}) }}", A, B, C)
    assert_tensor(tensor(result), "tensor_constructor_float32_any", [1, 2, 3, 4, 5, 6])
    assert tensor(run(prelude, "@tensor_array_concat_float32_2(Nil)")) == "nil"


def test_take_and_concatenate(prelude):
    text = f"""fn (%m: {M42}) {{
      let %t = tensor_constructor_float32_4_2(%m);
      (@tensor_take_float32_4_2(%t, 1, 3), @tensor_concatenate_float32_4_2(%t, %t))
    }}"""
    taken, joined = run(prelude, text, M)
    assert_tensor(tensor(taken), "tensor_constructor_float32_any_2", [[3, 4], [5, 6]])
    assert_tensor(tensor(joined), "tensor_constructor_float32_any_2",
                  [[1, 2], [3, 4], [5, 6], [7, 8]] * 2)


def test_expand_dims(prelude):
    text = (f"fn (%a: {V2}) {{ @tensor_expand_dims_float32_batch1_2("
            f"tensor_constructor_float32_2(%a)) }}")
    result = run(prelude, text, A)
    assert_tensor(tensor(result), "tensor_constructor_float32_1_2", [[1, 2]])


def test_unstack(prelude):
    result = items(run(prelude, f"fn (%m: {M42}) {{ @tensor_array_unstack_float32_4_2(%m) }}",
                       M))
    assert len(result) == 4
    for actual, row in zip(result, ([1, 2], [3, 4], [5, 6], [7, 8])):
        assert_tensor(actual, "tensor_constructor_float32_2", row)


def test_split(prelude):
    text = f"""fn (%m: {M42}, %lengths: Tensor[(?), int32]) {{
      let %ta = @tensor_array_float32_any_2(3);
      @tensor_array_split_float32_4_2(%ta, tensor_constructor_float32_4_2(%m), %lengths)
    }}"""
    result = items(run(prelude, text, M, np.array([1, 3], "int32")))
    assert len(result) == 3
    assert_tensor(result[0], "tensor_constructor_float32_any_2", [[1, 2]])
    assert_tensor(result[1], "tensor_constructor_float32_any_2", [[3, 4], [5, 6], [7, 8]])
    assert result[2] == "nil"


def test_scatter(prelude):
    text = f"""fn (%a: {V2}, %b: {V2}, %indices: Tensor[(?), int32]) {{
      let %values = Cons(tensor_constructor_float32_2(%a),
                         Cons(tensor_constructor_float32_2(%b), Nil));
      @tensor_array_scatter_float32_2(@tensor_array_float32_2(4), %indices, %values)
    }}"""
    result = items(run(prelude, text, A, B, np.array([3, 1], "int32")))
    assert result[0] == "nil" and result[2] == "nil"
    assert_tensor(result[1], "tensor_constructor_float32_2", [3, 4])
    assert_tensor(result[3], "tensor_constructor_float32_2", [1, 2])


def test_scatter_with_static_indices(prelude):
    StaticTensorArrayOps(prelude, "float32", (2,)).define_tensor_array_scatter((2,))
    text = f"""fn (%a: {V2}, %b: {V2}, %indices: Tensor[(2), int32]) {{
      let %values = Cons(tensor_constructor_float32_2(%a),
                         Cons(tensor_constructor_float32_2(%b), Nil));
      @tensor_array_scatter_float32_2_indices_2(@tensor_array_float32_2(2), %indices, %values)
    }}"""
    result = items(run(prelude, text, A, B, np.array([1, 0], "int32")))
    assert_tensor(result[0], "tensor_constructor_float32_2", [3, 4])
    assert_tensor(result[1], "tensor_constructor_float32_2", [1, 2])


def test_gather(prelude):
    text = f"""fn (%a: {V2}, %b: {V2}, %c: {V2}, %indices: Tensor[(?), int32]) {{
      @tensor_array_gather_float32_2({three(prelude)}, %indices)
    }}"""
    result = run(prelude, text, A, B, C, np.array([2, 0, 2], "int32"))
    assert_tensor(tensor(result), "tensor_constructor_float32_any_2",
                  [[5, 6], [1, 2], [5, 6]])


def test_gather_scalars(prelude):
    text = """fn (%x: float32, %y: float32, %indices: Tensor[(?), int32]) {
      let %ta = Cons(tensor_constructor_float32_scalar(%x),
                     Cons(tensor_constructor_float32_scalar(%y), Nil));
      @tensor_array_gather_float32_scalar(%ta, %indices)
    }"""
    result = run(prelude, text, np.float32(1.5), np.float32(-1.0), np.array([1, 1, 0], "int32"))
    assert_tensor(tensor(result), "tensor_constructor_float32_any", [-1.0, -1.0, 1.5])
