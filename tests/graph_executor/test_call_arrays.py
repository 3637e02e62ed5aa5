"""The per-inference path of create_executor("graph") (GraphRuntime.call_arrays): inputs
copied straight into storage, outputs copied out; checked against numpy."""

import numpy as np
import pytest

import irlib
import interp
from interp.graph_runtime import GraphInputError

from graph_helpers import add_module

X = np.arange(10, dtype="float32").reshape(1, 10)
Y = np.full((1, 10), 0.5, dtype="float32")


def _function(mod):
    func = interp.create_executor("graph", mod=mod, device=interp.cpu(0),
                                  target="cpu").evaluate()
    assert hasattr(func, "module"), "the add module must run on the graph executor"
    return func


def test_outputs_are_fresh_copies_and_inputs_are_not_kept():
    func = _function(add_module())
    x = X.copy()
    first = func(x, Y).numpy()
    np.testing.assert_array_equal(first, X + Y)
    x[:] = 100.0                     # the caller's array is copied, not bound
    first[:] = -1.0                  # the returned array is the caller's own
    second = func(X, X).numpy()
    np.testing.assert_array_equal(second, X + X)
    np.testing.assert_array_equal(first, -np.ones_like(X))


def test_other_values_take_the_checked_path():
    func = _function(add_module())
    np.testing.assert_array_equal(func(X.tolist(), Y.astype("float64").astype("float32"))
                                  .numpy(), X + Y)       # a list: converted by set_input
    np.testing.assert_array_equal(func(x=Y, y=X).numpy(), X + Y)
    with pytest.raises(GraphInputError, match="shape"):
        func(np.zeros((2, 10), "float32"), Y)
    with pytest.raises(GraphInputError, match="dtype"):
        func(X.astype("float64"), Y)


def test_read_only_bound_input_is_rebound_then_fast_again():
    func = _function(add_module())
    runtime = func.module._runtime
    frozen = X.copy()
    frozen.flags.writeable = False
    runtime.set_input_zero_copy("x", frozen)          # storage of x is now read-only
    np.testing.assert_array_equal(func(Y, Y).numpy(), Y + Y)     # set_input copies
    np.testing.assert_array_equal(frozen, X)                      # not written through
    np.testing.assert_array_equal(func(X, Y).numpy(), X + Y)


@pytest.mark.parametrize("index", [np.array(2, "int64"), np.array([3, 0, 3], "int32")])
def test_take_of_a_constant_index_writes_into_the_output(index):
    """A group that is one take with a constant index runs the kernel's into form (no
    op-by-op program): the LSTM converter's per-step slices."""
    from interp.graph_functions import _IntoCall
    x = irlib.var("x", shape=(4, 1, 5))
    mod = irlib.IRModule.from_expr(irlib.Function([x], irlib.take(x, irlib.const(index),
                                                                  axis=0)))
    factory = interp.build(mod, target="cpu")
    kinds = {type(c.fn).__name__ for c in factory.lib.compiled.values()}
    assert "_StepProgram" not in kinds and kinds <= {_IntoCall.__name__, "CPUDispatcher"}, kinds
    value = np.random.default_rng(0).standard_normal((4, 1, 5)).astype("float32")
    func = _function(mod)
    np.testing.assert_array_equal(func(value).numpy(), np.take(value, index, axis=0))
