"""pattern.partition and rewrite(callbacks, expr): structure and meaning."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import interp
import irlib
from irlib import Function, IRModule, const, var
from irlib.dataflow_pattern import (DFPatternCallback, is_constant, is_op, partition, rewrite,
                                    wildcard)
from irlib.errors import IRError
from irlib.ir import expr as E
from irlib.ir.functor import post_order
from irlib.ir.structural import assert_structural_equal
from irlib.testing import strategies as irst
from irlib.testing.budget import examples

x, y, z = var("x", shape=(2, 3)), var("y", shape=(2, 3)), var("z", shape=(2, 3))


def evaluate(expr, params, values):
    mod = IRModule.from_expr(Function(params, expr))
    result = interp.create_executor("debug", mod=mod).evaluate()(*values)
    return np.asarray(result)


def test_partition_extracts_match_into_function():
    pattern = is_op("nn.relu")(is_op("add")(wildcard(), wildcard()))
    out = pattern.partition(irlib.nn.relu(irlib.add(x, y)), {"Composite": "add_relu"})
    a, b = var("FunctionVar_0_0", shape=(2, 3)), var("FunctionVar_0_1", shape=(2, 3))
    func = Function([a, b], irlib.nn.relu(irlib.add(a, b)), None, (),
                    {"PartitionedFromPattern": "add_nn.relu_", "Composite": "add_relu"})
    assert_structural_equal(out, E.Call(func, (x, y)), map_free_vars=True)


def test_partition_keeps_matched_constants_inside_and_respects_check():
    c = const(np.ones((2, 3), "float32"))
    pattern = is_op("add")(wildcard(), is_constant())
    out = pattern.partition(irlib.exp(irlib.add(x, c)))
    call = out.args[0]
    assert len(call.op.params) == 1 and isinstance(call.op.body.args[1], E.Constant)
    rejected = pattern.partition(irlib.exp(irlib.add(x, c)), check=lambda e: False)
    assert_structural_equal(rejected, irlib.exp(irlib.add(x, c)))


def test_partition_chain_and_non_overlap():
    pattern = is_op("add")(wildcard(), wildcard())
    expr = irlib.add(irlib.add(x, y), z)
    out = partition(pattern, expr)
    # outputs first: the outer add is one group; the inner add is another, fed to it
    funcs = [n for n in post_order(out) if isinstance(n, Function)]
    assert len(funcs) == 2
    values = [np.full((2, 3), v, "float32") for v in (1, 2, 3)]
    np.testing.assert_allclose(evaluate(out, [x, y, z], values), 6.0)


def test_partition_refuses_groups_with_outside_uses():
    inner = irlib.add(x, y)
    expr = E.Tuple((irlib.nn.relu(inner), inner))
    pattern = is_op("nn.relu")(is_op("add")(wildcard(), wildcard()))
    assert_structural_equal(pattern.partition(expr), expr)


def test_partition_does_not_match_inside_earlier_partitions():
    pattern = is_op("add")(wildcard(), wildcard())
    once = pattern.partition(irlib.add(x, y))
    assert_structural_equal(pattern.partition(once), once)


class DoubleToMultiply(DFPatternCallback):
    def __init__(self):
        super().__init__()
        self.operand = wildcard()
        self.pattern = is_op("add")(self.operand, self.operand)

    def callback(self, pre, post, node_map):
        return irlib.multiply(node_map[self.operand][0], const(2.0))


class DropRelu(DFPatternCallback):
    def __init__(self):
        super().__init__(rewrite_once=False)
        self.pattern = is_op("nn.relu")(is_op("nn.relu")(wildcard()))

    def callback(self, pre, post, node_map):
        return post.args[0]


def test_rewrite_replaces_matches_to_a_fixed_point():
    out = rewrite(DoubleToMultiply(), irlib.add(x, x))
    assert_structural_equal(out, irlib.multiply(x, const(2.0)))
    nested = irlib.nn.relu(irlib.nn.relu(irlib.nn.relu(irlib.nn.relu(x))))
    assert_structural_equal(rewrite(DropRelu(), nested), irlib.nn.relu(x))
    assert_structural_equal(rewrite([DropRelu(), DoubleToMultiply()],
                                    irlib.add(irlib.nn.relu(irlib.nn.relu(x)),
                                              irlib.nn.relu(irlib.nn.relu(x)))),
                            irlib.add(irlib.nn.relu(x), irlib.nn.relu(x)))


def test_rewrite_once_and_require_type():
    class Once(DropRelu):
        def __init__(self):
            super().__init__()
            self.rewrite_once = True
    nested = irlib.nn.relu(irlib.nn.relu(irlib.nn.relu(irlib.nn.relu(x))))
    out = rewrite(Once(), nested)
    assert [n.op.name for n in post_order(out) if isinstance(n, E.Call)].count("nn.relu") == 2

    class Typed(DFPatternCallback):
        def __init__(self):
            super().__init__(require_type=True)
            self.pattern = is_op("exp")(wildcard()).has_shape((2, 3))

        def callback(self, pre, post, node_map):
            return irlib.fast_exp(post.args[0])
    out = rewrite(Typed(), irlib.exp(x))
    assert out.op.name == "fast_exp"


def test_rewrite_rejects_callback_without_pattern():
    with pytest.raises(IRError, match="pattern"):
        rewrite(DFPatternCallback(), x)


@settings(max_examples=examples(25), deadline=None)
@given(program=irst.tensor_exprs(max_steps=10, dtypes=("float64",), allow_lets=False),
       data=st.data())
def test_partition_preserves_meaning(program, data):
    pattern = is_op("add")(wildcard(), wildcard()) | is_op("multiply")(wildcard(), wildcard())
    out = partition(pattern, program.expr, {"Composite": "arith"})
    inputs = data.draw(program.inputs_strategy())
    values = [inputs[p] for p in program.params]
    mod = IRModule.from_expr(Function(program.params, out))
    result = interp.create_executor("debug", mod=mod).evaluate()(*values)
    expected = program.reference(inputs)
    _assert_tree_close(result, expected)


def _assert_tree_close(result, expected):
    """Compare a (possibly nested) tuple result with the reference, leaf by leaf."""
    if isinstance(expected, tuple):
        fields = getattr(result, "fields", result)
        assert len(fields) == len(expected)
        for got, want in zip(fields, expected):
            _assert_tree_close(got, want)
        return
    got = result.numpy() if hasattr(result, "numpy") else np.asarray(result)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
