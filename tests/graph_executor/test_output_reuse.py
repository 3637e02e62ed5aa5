"""GraphRuntime.call_arrays' output arrays: an array returned by the previous call is written
again only when nothing outside the runtime refers to it (no page faults for a large output
allocated and freed per call), never while the caller, or a view of it, still holds it.
Values are checked against numpy."""

import gc

import numpy as np

import interp

from graph_helpers import add_module

X = np.arange(10, dtype="float32").reshape(1, 10)
Y = np.full((1, 10), 0.5, dtype="float32")


def _function():
    func = interp.create_executor("graph", mod=add_module(), device=interp.cpu(0),
                                  target="cpu").evaluate()
    assert hasattr(func, "module"), "the add module must run on the graph executor"
    return func


def test_held_results_are_never_overwritten():
    func = _function()
    results = [func(X * k, Y).numpy() for k in range(4)]
    for k, result in enumerate(results):
        np.testing.assert_array_equal(result, X * k + Y)
    assert len({id(r) for r in results}) == 4


def test_dropped_result_is_reused_with_the_new_values():
    func = _function()
    runtime = func.module._runtime
    first = runtime.call_arrays([X, Y])[0]
    address = first.__array_interface__["data"][0]
    del first
    gc.collect()
    second = runtime.call_arrays([X, X])[0]
    np.testing.assert_array_equal(second, X + X)
    assert second.__array_interface__["data"][0] == address     # the same memory again
    np.testing.assert_array_equal(func(Y, Y).numpy(), Y + Y)


def test_a_view_or_a_read_only_flag_keeps_the_result_out_of_reuse():
    func = _function()
    runtime = func.module._runtime
    first = runtime.call_arrays([X, Y])[0]
    view = first[:, 2:5]
    del first
    second = runtime.call_arrays([X, X])[0]
    np.testing.assert_array_equal(view, (X + Y)[:, 2:5])          # untouched
    np.testing.assert_array_equal(second, X + X)
    second.flags.writeable = False
    del second
    third = runtime.call_arrays([Y, Y])[0]
    np.testing.assert_array_equal(third, Y + Y)
    fourth = runtime.call_arrays([X, X])[0]
    np.testing.assert_array_equal(fourth, X + X)
    np.testing.assert_array_equal(third, Y + Y)                   # still held: not reused
