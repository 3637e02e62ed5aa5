"""Dynamic tensor arrays (relay_spec.md §1.6) on the reference interpreter.

Each test builds a small program in the text format over the Prelude's float32 tensor arrays
and compares the result with arrays worked out by hand.
"""

import numpy as np
import pytest

from irlib.prelude import Prelude
from tensor_array_helpers import items, run, tensor


@pytest.fixture(scope="module")
def prelude():
    return Prelude()




def assert_tensor(actual, ctor, expected):
    assert actual[0] == ctor
    np.testing.assert_array_equal(actual[1], np.array(expected, dtype="float32"))
    assert actual[1].dtype == np.float32


F2 = "Tensor[(?, ?), float32]"
F1 = "Tensor[(?), float32]"


def test_new_array_holds_nils(prelude):
    assert items(run(prelude, "@tensor_array_float32(3)")) == ["nil", "nil", "nil"]
    assert items(run(prelude, "@tensor_array_float32(0)")) == []


def test_write_then_read(prelude):
    text = f"""fn (%x: {F1}) {{
      let %ta = @tensor_array_write_float32(@tensor_array_float32(3), 1, tensor1_float32(%x));
      (@tensor_array_read_float32(%ta, 1), @tensor_array_read_float32(%ta, 0))
    }}"""
    written, untouched = run(prelude, text, np.array([1.5, -2.0], "float32"))
    assert_tensor(tensor(written), "tensor1_float32", [1.5, -2.0])
    assert tensor(untouched) == "nil"


def test_take_rows(prelude):
    x = np.array([[1, 2], [3, 4], [5, 6], [7, 8]], "float32")
    result = run(prelude, f"fn (%x: {F2}) {{ @tensor_take_float32(tensor2_float32(%x), 1, 3) }}",
                 x)
    assert_tensor(tensor(result), "tensor2_float32", [[3, 4], [5, 6]])


def test_stack(prelude):
    text = f"""fn (%a: {F1}, %b: {F1}) {{
      let %ta0 = @tensor_array_float32(2);
      let %ta1 = @tensor_array_write_float32(%ta0, 0, tensor1_float32(%a));
      let %ta2 = @tensor_array_write_float32(%ta1, 1, tensor1_float32(%b));
      @tensor_array_stack_float32(%ta2)
    }}"""
    result = run(prelude, text, np.array([1, 2, 3], "float32"), np.array([4, 5, 6], "float32"))
    assert_tensor(tensor(result), "tensor2_float32", [[1, 2, 3], [4, 5, 6]])


def test_concat(prelude):
    text = f"""fn (%a: {F2}, %b: {F2}) {{
      let %ta = Cons(tensor2_float32(%a), Cons(tensor2_float32(%b), Nil));
      @tensor_array_concat_float32(%ta)
    }}"""
    result = run(prelude, text, np.array([[1, 2]], "float32"),
                 np.array([[3, 4], [5, 6]], "float32"))
    assert_tensor(tensor(result), "tensor2_float32", [[1, 2], [3, 4], [5, 6]])


def test_concat_of_empty_and_single(prelude):
    assert tensor(run(prelude, "@tensor_array_concat_float32(Nil)")) == "nil"
    result = run(prelude, f"fn (%a: {F1}) {{ @tensor_array_concat_float32("
                          f"Cons(tensor1_float32(%a), Nil)) }}", np.array([7, 8], "float32"))
    assert_tensor(tensor(result), "tensor1_float32", [7, 8])


def test_unstack(prelude):
    x = np.array([[1, 2], [3, 4], [5, 6]], "float32")
    result = items(run(prelude, f"fn (%x: {F2}) {{ @tensor_array_unstack_tensor2_float32(%x) }}",
                       x))
    assert len(result) == 3
    for actual, row in zip(result, ([1, 2], [3, 4], [5, 6])):
        assert_tensor(actual, "tensor1_float32", row)


def test_unstack_rank1_gives_scalars(prelude):
    result = items(run(prelude, f"fn (%x: {F1}) {{ @tensor_array_unstack_tensor1_float32(%x) }}",
                       np.array([9, 8], "float32")))
    assert [name for name, _ in result] == ["tensor0_float32"] * 2
    assert [float(array) for _, array in result] == [9.0, 8.0]


def test_split(prelude):
    text = f"""fn (%x: {F2}, %lengths: Tensor[(?), int32]) {{
      @tensor_array_split_float32(@tensor_array_float32(3), tensor2_float32(%x), %lengths)
    }}"""
    x = np.array([[1, 2], [3, 4], [5, 6], [7, 8], [9, 10]], "float32")
    result = items(run(prelude, text, x, np.array([2, 3], "int32")))
    assert len(result) == 3
    assert_tensor(result[0], "tensor2_float32", [[1, 2], [3, 4]])
    assert_tensor(result[1], "tensor2_float32", [[5, 6], [7, 8], [9, 10]])
    assert result[2] == "nil"


def test_scatter(prelude):
    text = f"""fn (%a: {F1}, %b: {F1}, %indices: Tensor[(?), int32]) {{
      let %values = Cons(tensor1_float32(%a), Cons(tensor1_float32(%b), Nil));
      @tensor_array_scatter_float32(@tensor_array_float32(3), %indices, %values)
    }}"""
    result = items(run(prelude, text, np.array([1, 1], "float32"), np.array([2, 2], "float32"),
                       np.array([2, 0], "int32")))
    assert_tensor(result[0], "tensor1_float32", [2, 2])
    assert result[1] == "nil"
    assert_tensor(result[2], "tensor1_float32", [1, 1])


def test_other_dtype(prelude):
    text = """fn (%x: Tensor[(?), int32]) {
      @tensor_array_stack_int32(Cons(tensor1_int32(%x), Cons(tensor1_int32(%x), Nil)))
    }"""
    result = tensor(run(prelude, text, np.array([3, 4], "int32")))
    assert result[0] == "tensor2_int32"
    np.testing.assert_array_equal(result[1], np.array([[3, 4], [3, 4]], "int32"))
    assert result[1].dtype == np.int32


def test_gather_is_not_registered_for_dynamic_arrays(prelude):
    # relay_spec §1.6: gather exists only for static tensor arrays.
    assert "tensor_array_gather_float32" not in prelude.mod
