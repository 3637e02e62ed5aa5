"""If branches whose tensors differ in dims join to ``Any`` dims (irlib.typeinf.join).

Relay requires the two branches of an ``if`` to have one type; irlib keeps that for ranks,
dtypes and structure but lets dims differ, giving the ``if`` the join: ``Any`` where the
branches differ. The interpreter then runs whichever branch the condition picks.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import interp
import irlib
from irlib import Function, If, IRModule, TensorType, Tuple, TupleType, TypeInferenceError, var
from irlib.ir.dims import Any, size_var
from irlib.ir.types import IncompleteType
from irlib.testing.budget import examples
from irlib.transform import infer_type
from irlib.typeinf.join import join_types

n = size_var("n")


def _if_type(then_shape, else_shape, dtype="float32"):
    c = var("c", shape=(), dtype="bool")
    a = var("a", shape=then_shape, dtype=dtype)
    b = var("b", shape=else_shape, dtype=dtype)
    return infer_type(Function([c, a, b], If(c, a, b))).checked_type.ret_type


@pytest.mark.parametrize("then_shape,else_shape,want", [
    ((1, 4, 8), (1, 4, n), (1, 4, Any)),
    ((2, 3), (5, 3), (Any, 3)),
    ((n, 3), (n, 3), (n, 3)),
    ((Any, 3), (4, 3), (Any, 3)),
    ((n, 2 * n), (n + 1, 2 * n), (Any, 2 * n)),
])
def test_branch_dims_join(then_shape, else_shape, want):
    assert _if_type(then_shape, else_shape) == TensorType(want)


def test_tuple_branches_join_fieldwise():
    c = var("c", shape=(), dtype="bool")
    a, b = var("a", shape=(512,)), var("b", shape=(256,))
    s = var("s", shape=(2, 128))
    func = Function([c, a, b, s], If(c, Tuple([a, s]), Tuple([b, s])))
    assert infer_type(func).checked_type.ret_type == \
        TupleType([TensorType((Any,)), TensorType((2, 128))])


@pytest.mark.parametrize("then_shape,else_shape,dtypes", [
    ((1, 4), (1, 4, 1), ("float32", "float32")),
    ((3,), (3,), ("float32", "int32")),
])
def test_rank_or_dtype_mismatch_is_still_an_error(then_shape, else_shape, dtypes):
    c = var("c", shape=(), dtype="bool")
    a = var("a", shape=then_shape, dtype=dtypes[0])
    b = var("b", shape=else_shape, dtype=dtypes[1])
    with pytest.raises(TypeInferenceError, match="branches of the if have different types"):
        infer_type(Function([c, a, b], If(c, a, b)))


def test_join_types_rejects_holes_and_structure_mismatch():
    assert join_types(IncompleteType(), TensorType((3,))) is None
    assert join_types(TupleType([TensorType((3,))]),
                      TupleType([TensorType((3,)), TensorType((3,))])) is None
    nested = TupleType([TupleType([TensorType((1, 2))]), TensorType((4,), "int64")])
    other = TupleType([TupleType([TensorType((1, 5))]), TensorType((4,), "int64")])
    assert join_types(nested, other) == \
        TupleType([TupleType([TensorType((1, Any))]), TensorType((4,), "int64")])


dims = st.sampled_from([1, 2, 3, 7, Any, n, n + 1, 2 * n])


@settings(max_examples=examples(60), deadline=None)
@given(st.integers(0, 4).flatmap(lambda r: st.tuples(st.lists(dims, min_size=r, max_size=r),
                                                     st.lists(dims, min_size=r, max_size=r))))
def test_join_is_the_axiswise_agreement(shapes):
    left, right = TensorType(shapes[0]), TensorType(shapes[1])
    joined = join_types(left, right)
    assert joined == join_types(right, left)
    assert joined.shape == tuple(a if a == b else Any for a, b in zip(*shapes))
    # The join is above both: joining it again with either branch changes nothing.
    assert join_types(joined, left) == joined == join_types(right, joined)


def test_interpreter_runs_the_taken_branch_of_a_joined_if():
    """One module, chunks of two lengths: the If picks a 4-tap or a 2-tap moving sum."""
    c = var("c", shape=(), dtype="bool")
    x = var("x", shape=(1, 1, n))
    four = irlib.nn.conv1d(x, irlib.const(np.ones((1, 1, 4), "float32")), strides=4)
    two = irlib.nn.conv1d(x, irlib.const(np.ones((1, 1, 2), "float32")), strides=2)
    mod = IRModule.from_expr(Function([c, x], If(c, four, two)))
    run = interp.create_executor("debug", mod=mod).evaluate()
    rng = np.random.default_rng(0)
    for flag, length, taps in ((True, 16, 4), (False, 16, 2), (True, 8, 4), (False, 6, 2)):
        data = rng.standard_normal((1, 1, length)).astype("float32")
        want = data.reshape(1, 1, length // taps, taps).sum(-1)
        got = run(np.array(flag), data).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
