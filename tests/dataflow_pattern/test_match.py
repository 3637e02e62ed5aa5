"""Pattern matching: each pattern kind, bindings, alternatives, attributes, types, diamonds."""

import numpy as np
import pytest

import irlib
from irlib import TensorType, const, var
from irlib.dataflow_pattern import (DFPattern, dominates, has_attr, has_dtype, has_shape,
                                    has_type, is_constant, is_expr, is_if, is_let, is_op,
                                    is_tuple, is_tuple_get_item, is_var, wildcard)
from irlib.errors import UnknownNameError
from irlib.ir import expr as E
from irlib.op.registry import OpPattern
from irlib.transform import InferType

x, y, z = var("x", shape=(2, 3)), var("y", shape=(2, 3)), var("z", shape=(2, 3))


def test_leaves():
    assert wildcard().match(x) and wildcard().match(irlib.exp(x))
    assert is_var().match(x) and is_var("x").match(x) and not is_var("y").match(x)
    assert not is_var().match(irlib.exp(x))
    c = const(np.ones(3, "float32"))
    assert is_constant().match(c) and not is_constant().match(x)
    assert is_expr(const(1.0)).match(const(1.0)) and not is_expr(const(1.0)).match(const(2.0))
    with pytest.raises(UnknownNameError):
        is_op("no_such_op")


def test_calls_and_commutativity():
    pattern = is_op("add")(is_var("x"), wildcard())
    assert pattern.match(irlib.add(x, y))
    assert pattern.match(irlib.add(y, x))                    # add commutes
    assert not is_op("subtract")(is_var("x"), wildcard()).match(irlib.subtract(y, x))
    assert not pattern.match(irlib.multiply(x, y))
    assert not is_op("add")(wildcard()).match(irlib.add(x, y))   # arity
    assert (wildcard() + wildcard()).match(irlib.add(x, y))
    assert (wildcard() * wildcard()).match(irlib.multiply(x, y))
    assert (wildcard() / wildcard()).match(irlib.divide(x, y))
    assert (wildcard() - wildcard()).match(irlib.subtract(x, y))


def test_reused_pattern_binds_one_expression():
    w = wildcard()
    pattern = is_op("add")(w, w)
    assert pattern.match(irlib.add(x, x))
    assert not pattern.match(irlib.add(x, y))


def test_alternatives_and_optional():
    pattern = is_op("nn.relu")(wildcard()) | is_op("tanh")(wildcard())
    assert pattern.match(irlib.nn.relu(x)) and pattern.match(irlib.tanh(x))
    assert not pattern.match(irlib.exp(x))
    conv_like = is_op("add")(wildcard(), wildcard()).optional(lambda p: is_op("nn.relu")(p))
    assert conv_like.match(irlib.add(x, y)) and conv_like.match(irlib.nn.relu(irlib.add(x, y)))
    assert not conv_like.match(irlib.nn.relu(x))


def test_alternative_failure_forgets_bindings():
    w = wildcard()
    pattern = (is_op("add")(w, is_var("nope")) | is_op("add")(wildcard(), w))
    assert pattern.match(irlib.add(x, y))


def test_tuples_projections_if_let():
    tup = E.Tuple((x, y))
    assert is_tuple([is_var("x"), wildcard()]).match(tup)
    assert is_tuple(None).match(tup) and not is_tuple([wildcard()]).match(tup)
    assert is_tuple_get_item(wildcard(), 1).match(E.TupleGetItem(tup, 1))
    assert is_tuple_get_item(wildcard()).match(E.TupleGetItem(tup, 0))
    assert not is_tuple_get_item(wildcard(), 0).match(E.TupleGetItem(tup, 1))
    cond = var("c", shape=(), dtype="bool")
    assert is_if(is_var("c"), wildcard(), wildcard()).match(E.If(cond, x, y))
    v = var("v")
    assert is_let(wildcard(), is_op("exp")(wildcard()), wildcard()).match(
        E.Let(v, irlib.exp(x), v))


def test_attributes():
    conv = irlib.nn.conv2d(var("d", shape=(1, 3, 8, 8)), var("w", shape=(4, 3, 3, 3)),
                           padding=(1, 1))
    assert is_op("nn.conv2d")(wildcard(), wildcard()).has_attr({"data_layout": "NCHW"}) \
        .match(conv)
    assert not has_attr({"data_layout": "NHWC"}, is_op("nn.conv2d")(wildcard(), wildcard())) \
        .match(conv)
    assert has_attr({"padding": [1, 1, 1, 1]}).match(conv)
    elemwise = wildcard().has_attr({"TOpPattern": int(OpPattern.ELEMWISE)})(wildcard())
    assert elemwise.match(irlib.exp(x)) and not elemwise.match(irlib.sum(x))
    func = irlib.Function([x], x).with_attr("Composite", "id")
    assert has_attr({"Composite": "id"}).match(func)


def test_types_shapes_dtypes():
    typed = InferType()(irlib.Function([x, y], irlib.add(x, y))).body
    assert has_type(TensorType((2, 3), "float32")).match(typed)
    assert not has_type(TensorType((3,), "float32")).match(typed)
    assert has_shape((2, 3)).match(typed) and not has_shape((3, 2)).match(typed)
    assert has_dtype("float32").match(typed) and not has_dtype("int32").match(typed)
    assert is_var().has_shape((2, 3)).match(x)          # annotations count
    assert not has_shape((2, 3)).match(irlib.add(x, y))  # untyped: no type, no match


def test_dominator_diamond():
    data, weight = var("input", shape=(1, 3, 4, 4)), var("weight", shape=(3, 3, 1, 1))
    conv = irlib.nn.conv2d(data, weight)
    relu = irlib.nn.relu(irlib.nn.relu(conv))
    leaky = irlib.nn.leaky_relu(conv, alpha=0.0)
    out = relu + leaky
    is_conv = is_op("nn.conv2d")(wildcard(), wildcard())
    elemwise = wildcard().has_attr({"TOpPattern": int(OpPattern.ELEMWISE)})(wildcard())
    diamond = dominates(is_conv, elemwise, is_op("add")(wildcard(), wildcard()))
    assert diamond.match(out)
    # a path op that is not elementwise breaks the diamond
    bad = irlib.nn.relu(irlib.sum(conv, axis=[1], keepdims=True)) + leaky
    assert not diamond.match(bad)
    # the add does not post-dominate a conv that also feeds something else
    other = irlib.nn.relu(conv) + irlib.nn.relu(conv)
    root = E.Tuple((other, irlib.exp(conv)))
    assert diamond.match(other) and not diamond.match(other, root=root)
    # method form
    assert is_op("add")(wildcard(), wildcard()).dominates(is_conv, elemwise).match(out)


def test_patterns_reject_non_patterns():
    with pytest.raises(TypeError):
        is_op("add")(1, 2)
    assert isinstance(is_op("add")(x, wildcard()), DFPattern)    # expressions are wrapped


def test_match_deep_expression_is_iterative():
    chain = x
    for _ in range(50_000):
        chain = irlib.exp(chain)
    diamond = dominates(is_var("x"), is_op("exp")(wildcard()), is_op("exp")(wildcard()))
    assert diamond.match(chain)
