"""For every registered op: on random valid inputs and attrs, the type relation's result
type equals the shape and dtype the reference implementation returns (an ``Any`` dim in the
relation matches any size)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import irlib
from irlib import size_var
from irlib.errors import TypeInferenceError
from irlib.ir.dims import Any, AnyDim
from irlib.ir.types import TensorType, TupleType
from irlib.op import registry
from irlib.testing.budget import examples
from irlib.testing.dataflow_eval import evaluate

import op_shape_specs_nn  # noqa: F401  (registers the nn specs)
from op_shape_specs import SPECS
from op_test_helpers import annotate, make_vars, value_type


def assert_type_matches(relation_type, value, name):
    """The relation's type describes ``value`` (Any dims match any size)."""
    if isinstance(relation_type, TupleType):
        assert isinstance(value, tuple), f"{name}: relation gave a tuple, reference did not"
        assert len(relation_type.fields) == len(value), name
        for field, item in zip(relation_type.fields, value):
            assert_type_matches(field, item, name)
        return
    assert isinstance(relation_type, TensorType), name
    value = np.asarray(value)
    assert relation_type.dtype == value.dtype.name, \
        f"{name}: relation dtype {relation_type.dtype}, reference {value.dtype.name}"
    assert len(relation_type.shape) == value.ndim, \
        f"{name}: relation shape {relation_type.shape}, reference {value.shape}"
    for dim, size in zip(relation_type.shape, value.shape):
        assert isinstance(dim, AnyDim) or dim == size, \
            f"{name}: relation shape {relation_type.shape}, reference {value.shape}"


def test_every_registered_op_has_a_spec():
    library = [n for n in irlib.op.list_ops() if not n.startswith(("dyn.", "onnx."))]  # see coverage test
    library = [n for n in library if n != "call_dps_packed"]  # tests/op/test_extern_call.py
    missing = set(library) - set(SPECS)
    assert not missing, f"ops without a shape spec: {sorted(missing)}"


@pytest.mark.parametrize("name", sorted(SPECS))
@settings(max_examples=examples(8), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_relation_agrees_with_reference(name, data):
    inputs, attrs = SPECS[name](data.draw)
    variables = make_vars(inputs)
    call = registry.make_call(name, variables, attrs)
    annotate(call)
    with np.errstate(all="ignore"):
        value = evaluate(call, dict(zip(variables, inputs)))
    assert_type_matches(call.checked_type, value, name)


N = size_var("n")


@pytest.mark.parametrize("name", sorted(SPECS))
@settings(max_examples=examples(3), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), leading=st.sampled_from(["symbolic", "any"]))
def test_relation_handles_symbolic_and_any_dims(name, data, leading):
    """With the first input's leading dim symbolic (``n``) or ``Any``, the relation either
    infers a type or refuses with a TypeInferenceError naming the op; it never crashes."""
    inputs, attrs = SPECS[name](data.draw)
    variables = []
    for i, value in enumerate(inputs):
        ty = value_type(value)
        if i == 0 and isinstance(ty, TensorType) and ty.ndim:
            ty = TensorType((N if leading == "symbolic" else Any,) + tuple(ty.shape[1:]),
                            ty.dtype)
        variables.append(irlib.var(f"in{i}", ty))
    call = registry.make_call(name, variables, attrs)
    try:
        annotate(call)
    except TypeInferenceError as error:
        assert str(error).startswith(name + ":"), str(error)
