"""Every pass handles 100,000-node programs without recursion (deep let chains, deep calls)."""

import numpy as np
import pytest

import irlib
from irlib import Function, const, var
from irlib.transform import (DeadCodeElimination, EliminateCommonSubexpr, FoldConstant,
                             Inline, LambdaLift, RemoveUnusedFunctions, ToANormalForm,
                             ToGraphNormalForm, gradient)
from helpers import let_chain_function

DEPTH = 100_000


def deep_let_chain(depth=DEPTH):
    return let_chain_function(depth, lambda previous: previous + const(1.0))


def deep_call_nest(depth=DEPTH):
    x = var("x", shape=(2,))
    body = x
    for _ in range(depth):
        body = irlib.negative(body)
    return Function([x], body)


PASSES = [DeadCodeElimination(), DeadCodeElimination(inline_once=True),
          EliminateCommonSubexpr(), FoldConstant(), ToANormalForm(), ToGraphNormalForm(),
          Inline(), RemoveUnusedFunctions(), LambdaLift()]


@pytest.fixture(scope="module")
def programs():
    return {"let_chain": deep_let_chain(), "call_nest": deep_call_nest()}


@pytest.mark.parametrize("pass_", PASSES, ids=lambda p: repr(p))
@pytest.mark.parametrize("shape", ["let_chain", "call_nest"])
def test_pass_on_100k_nodes(pass_, shape, programs):
    out = pass_(programs[shape])
    assert isinstance(out, Function)


def test_folding_a_deep_constant_chain_gives_the_right_constant():
    body = const(np.zeros(2, "float32"))
    for _ in range(20_000):
        body = body + const(np.ones(2, "float32"))
    out = FoldConstant()(Function([], body))
    np.testing.assert_array_equal(out.body.data.numpy(), np.full(2, 20_000.0, "float32"))


def test_gradient_of_a_long_chain():
    x = var("x", shape=(2,), dtype="float64")
    body = x
    for _ in range(5_000):
        body = body * const(1.0, "float64")
    grad = gradient(Function([x], body))
    assert isinstance(grad, Function)
