"""``create_executor`` / ``evaluate``: Relay's executor API (spec section 4.1)."""

import numpy as np
import pytest

import irlib
from irlib import Function, GlobalVar, IRModule, TensorType, const, var
from irlib.errors import InterpreterError, IRError, TypeInferenceError
import interp
from interp import NDArray


def add_module():
    x, y = var("x", shape=(3,)), var("y", shape=(3,))
    return IRModule.from_expr(Function([x, y], irlib.subtract(x, y)))


A = np.array([5, 7, 9], "float32")
B = np.array([1, 2, 3], "float32")


@pytest.mark.parametrize("kind", ["debug", "graph", "vm", "aot", "python"])
def test_every_kind_evaluates_main(kind):
    f = interp.create_executor(kind, mod=add_module(), device=interp.cpu(0), target="llvm")
    np.testing.assert_array_equal(f.evaluate()(A, B).numpy(), [4, 5, 6])


def test_unknown_kind_and_target():
    with pytest.raises(IRError, match="unknown execution strategy 'jit'"):
        interp.create_executor("jit")
    with pytest.raises(IRError, match="unknown target 'tpu'"):
        interp.create_executor(target="tpu")


def test_keyword_arguments():
    f = interp.create_executor(mod=add_module()).evaluate()
    np.testing.assert_array_equal(f(y=B, x=A).numpy(), [4, 5, 6])
    np.testing.assert_array_equal(f(A, y=B).numpy(), [4, 5, 6])
    with pytest.raises(InterpreterError, match="duplicate argument 'x'"):
        f(A, x=B)
    with pytest.raises(InterpreterError, match="missing argument %y"):
        f(A)
    with pytest.raises(InterpreterError, match="no parameter named 'z'"):
        f(A, z=B)
    with pytest.raises(InterpreterError, match="takes 2 argument"):
        f(A, B, B)


def test_arguments_are_checked_against_parameter_types():
    f = interp.create_executor(mod=add_module()).evaluate()
    with pytest.raises(InterpreterError, match=r"%x of main expects Tensor\[\(3\), float32\]"):
        f(np.ones(4, "float32"), B)
    with pytest.raises(InterpreterError, match="dtype float64"):
        f(np.ones(3), B)


def test_accepts_ndarrays_and_python_scalars():
    x = var("x", TensorType((), "float64"))
    f = interp.create_executor().evaluate(Function([x], irlib.multiply(x, x)))
    value = f(3)                       # a Python int takes the parameter's dtype
    assert value.dtype == "float64" and value.numpy().item() == 9.0
    assert f(interp.nd.array(np.array(2.0))).numpy().item() == 4.0


def test_params_bind_main_parameters_by_name():
    ex = interp.create_executor(mod=add_module(), params={"y": B})
    np.testing.assert_array_equal(ex.evaluate()(A).numpy(), [4, 5, 6])
    # Names that are not parameters are ignored, as Relay's bind_params_by_name does; the
    # parameter they do not bind is then an argument like any other.
    f = interp.create_executor(mod=add_module(), params={"w": B}).evaluate()
    np.testing.assert_array_equal(f(A, B).numpy(), [4, 5, 6])
    with pytest.raises(InterpreterError, match="missing argument %y"):
        f(A)


def test_global_var_gives_callable_and_other_globals_stay_visible():
    mod = add_module()
    x = var("x", shape=(3,))
    mod["twice"] = Function([x], irlib.add(x, x))
    ex = interp.create_executor(mod=mod)
    np.testing.assert_array_equal(ex.evaluate(mod.get_global_var("twice"))(B).numpy(), [2, 4, 6])
    call = irlib.Call(mod.get_global_var("main"), [const(A), const(B)])
    np.testing.assert_array_equal(ex.evaluate(call).numpy(), [4, 5, 6])


def test_binds_supply_free_variables():
    x = var("x", shape=(3,))
    ex = interp.create_executor()
    np.testing.assert_array_equal(ex.evaluate(irlib.add(x, x), binds={x: B}).numpy(), [2, 4, 6])
    with pytest.raises(InterpreterError, match=r"free variables \(%x\)"):
        ex.evaluate(irlib.add(x, x))


def test_ill_typed_expression_is_rejected_before_running():
    with pytest.raises(TypeInferenceError):
        interp.create_executor().evaluate(irlib.add(const(np.ones(3, "float32")),
                                                    const(np.ones(4, "float32"))))


def test_missing_main_is_an_unknown_name_error():
    with pytest.raises(irlib.UnknownNameError, match="main"):
        interp.create_executor().evaluate()


def test_nd_module():
    array = interp.nd.array([1, 2, 3])
    assert isinstance(array, NDArray) and array.device == interp.cpu(0)
    assert interp.nd.empty((2, 3), "int8").shape == (2, 3)
    assert interp.nd.NDArray is NDArray


def test_evaluate_closed_function_returns_callable():
    x = var("x", shape=(3,))
    f = interp.create_executor().evaluate(Function([x], irlib.negative(x)))
    np.testing.assert_array_equal(f(B).numpy(), [-1, -2, -3])
    assert "BoundFunction" in repr(f)


def test_unused_global_var_name_lookup():
    with pytest.raises(irlib.UnknownNameError):
        interp.create_executor().evaluate(GlobalVar("nope"))


def test_binds_with_a_function_give_a_callable_closing_over_them():
    k, x = var("k", shape=(3,)), var("x", shape=(3,))
    f = interp.create_executor().evaluate(Function([x], irlib.multiply(x, k)), binds={k: B})
    np.testing.assert_array_equal(f(A).numpy(), [5, 14, 27])


def test_closures_inside_results_are_callable():
    x, y = var("x", shape=(3,)), var("y", shape=(3,))
    pair = irlib.Tuple([Function([y], irlib.add(x, y)), x])
    result = interp.create_executor().evaluate(Function([x], pair))(A)
    adder, same = result
    np.testing.assert_array_equal(adder(B).numpy(), [6, 9, 12])
    np.testing.assert_array_equal(same.numpy(), A)


def test_interp_testing_facade_mirrors_relay_testing():
    import interp.testing as testing
    import zoo
    assert testing.resnet is zoo.resnet and testing.create_workload is zoo.create_workload
    assert callable(testing.check_grad) and callable(testing.gradient)
    targets = testing.enabled_targets()
    assert targets[0][0] == "cpu" and all(len(pair) == 2 for pair in targets)
