"""Expression nodes: construction, validation, builders, immutability, operator overloading."""

import dataclasses

import numpy as np
import pytest

import irlib
from irlib import errors


def test_var_builder_shapes_and_annotations():
    x = irlib.var("x", shape=(1, 3))
    assert x.name_hint == "x"
    assert x.type_annotation == irlib.TensorType((1, 3), "float32")
    assert irlib.var("n", "int32").type_annotation == irlib.TensorType((), "int32")
    assert irlib.var("z").type_annotation is None
    with pytest.raises(ValueError):
        irlib.var("bad", irlib.TensorType((1,)), shape=(1,))


def test_nodes_have_identity_equality_and_hash():
    a, b = irlib.var("x"), irlib.var("x")
    assert a != b and a == a
    assert len({a, b}) == 2
    # operator overloading must not turn == into an op call
    assert (a == b) is False


def test_nodes_are_immutable():
    x = irlib.var("x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        x.name_hint = "y"


def test_const_default_dtypes_follow_relay():
    assert irlib.const(1).data.dtype == "int32"
    assert irlib.const(1.5).data.dtype == "float32"
    assert irlib.const(True).data.dtype == "bool"
    assert irlib.const(np.ones((2, 2))).data.dtype == "float32"       # float64 -> float32
    assert irlib.const(np.arange(3)).data.dtype == "int32"            # int64 -> int32
    assert irlib.const(np.ones(2, "float16")).data.dtype == "float16"  # other dtypes kept
    assert irlib.const(1.5, "float64").data.dtype == "float64"
    assert irlib.const([1, 2, 3], "int64").data.numpy().tolist() == [1, 2, 3]
    with pytest.raises(TypeError):
        irlib.const("text")


def test_constant_data_is_read_only_copy():
    source = np.zeros(3, "float32")
    c = irlib.const(source)
    source[0] = 5
    assert c.data.numpy()[0] == 0
    with pytest.raises(ValueError):
        c.data.numpy()[0] = 1


def test_constructor_validation_messages():
    with pytest.raises(TypeError, match="Let var must be a Var"):
        irlib.Let(irlib.const(1), irlib.const(1), irlib.const(1))
    with pytest.raises(TypeError, match="Call argument must be an Expr"):
        irlib.Call(irlib.op.get("add"), [1, 2])
    with pytest.raises(TypeError, match="Function parameter must be a Var"):
        irlib.Function([irlib.const(1)], irlib.const(1))


def test_operator_overloading_builds_relay_ops():
    x, y = irlib.var("x"), irlib.var("y")
    cases = {"add": x + y, "subtract": x - y, "multiply": x * y, "divide": x / y,
             "less": x < y, "greater": x > y, "negative": -x}
    for name, call in cases.items():
        assert isinstance(call, irlib.Call) and call.op.name == name
    assert (x + y).args == (x, y)
    with pytest.raises(TypeError, match="irlib.const"):
        x + 1


def test_ops_are_interned():
    assert irlib.op.get("add") is irlib.op.get("add")
    with pytest.raises(irlib.UnknownNameError, match="did you mean"):
        irlib.op.get("ad")


def test_replace_returns_self_when_unchanged_and_keeps_span():
    span = irlib.Span("m.rly", 3, 5)
    x = irlib.var("x")
    call = irlib.Call(irlib.op.get("exp"), [x], span=span)
    assert call.replace(args=call.args) is call
    y = irlib.var("y")
    new = call.replace(args=(y,))
    assert new is not call and new.args == (y,) and new.span == span


def test_checked_type_before_inference_is_a_documented_error():
    with pytest.raises(errors.UntypedError, match="InferType"):
        irlib.var("x").checked_type


def test_function_attrs():
    x = irlib.var("x")
    f = irlib.Function([x], x)
    assert f.attrs is None
    g = f.with_attr("Primitive", 1)
    assert g.attrs["Primitive"] == 1 and g.attrs.Primitive == 1 and f.attrs is None
    assert g.get_attr("Missing", 7) == 7


def test_tuple_wrapper_projection():
    t = irlib.Tuple([irlib.var("a"), irlib.var("b")])
    wrapper = irlib.TupleWrapper(t, 2)
    assert wrapper[1].index == 1 and wrapper[-1].index == 1
    assert len(list(wrapper)) == 2
    with pytest.raises(IndexError):
        wrapper[2]


def test_empty_tuple_is_truthy():
    assert irlib.Tuple([])


def test_match_and_patterns_validate():
    gtv = irlib.GlobalTypeVar("Box")
    a = irlib.TypeVar("A")
    ctor = irlib.Constructor("MkBox", [a], gtv)
    v = irlib.var("v")
    clause = irlib.Clause(irlib.PatternConstructor(ctor, [irlib.PatternVar(v)]), v)
    m = irlib.Match(irlib.var("b"), [clause])
    assert m.complete and m.clauses[0].lhs.patterns[0].var is v
    with pytest.raises(TypeError):
        irlib.Clause(v, v)
    other = irlib.Constructor("Other", [], gtv)
    assert other.tag != ctor.tag
