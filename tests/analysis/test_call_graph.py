"""call_graph, count_ops and the normal-form checks."""

import pytest

import irlib
from irlib import Function, GlobalVar, IRModule, Let, const, var
from irlib.analysis import (CallGraph, call_graph, check_basic_block_normal_form, count_op,
                            count_ops, is_a_normal_form)
from irlib.errors import UnknownNameError


def module_with_recursion():
    n, x = var("n", "int32"), var("x", "int32")
    loop, even, odd, helper = (GlobalVar(name) for name in ("loop", "even", "odd", "helper"))
    return IRModule({
        loop: Function([n], irlib.If(n > const(0), loop(n - const(1)), n)),
        even: Function([n], irlib.If(n > const(0), odd(n - const(1)), n)),
        odd: Function([n], irlib.If(n > const(0), even(n - const(1)), n)),
        helper: Function([x], x),
        "main": Function([x], irlib.Tuple([helper(x), helper(x), loop(x), even(x)])),
    })


def test_callees_callers_and_counts():
    graph = call_graph(module_with_recursion())
    assert isinstance(graph, CallGraph)
    assert [g.name_hint for g in graph.callees("main")] == ["even", "helper", "loop"]
    assert [g.name_hint for g in graph.callers("helper")] == ["main"]
    assert graph.ref_count("helper") == 2
    assert graph.global_call_count("main") == 4
    assert "main" in str(graph)


def test_recursion_direct_and_mutual():
    graph = call_graph(module_with_recursion())
    assert graph.is_recursive("loop") and graph.is_recursive("even") and graph.is_recursive("odd")
    assert not graph.is_recursive("helper") and not graph.is_recursive("main")


def test_bottom_up_order_puts_callees_first():
    order = [g.name_hint for g in call_graph(module_with_recursion()).bottom_up_order()]
    assert order.index("helper") < order.index("main")
    assert order.index("loop") < order.index("main")
    assert {"even", "odd"} < set(order[:order.index("main")])


def test_reachability_and_errors():
    graph = call_graph(module_with_recursion())
    reached = {g.name_hint for g in graph.reachable_from(["even"])}
    assert reached == {"even", "odd"}
    with pytest.raises(UnknownNameError, match="nope"):
        graph.callees("nope")
    with pytest.raises(TypeError):
        call_graph(Function([], const(1)))


def test_count_ops_counts_each_shared_node_once():
    x = var("x", shape=(3,))
    shared = irlib.exp(x)
    expr = irlib.add(shared, shared) * irlib.exp(x)
    assert count_ops(expr) == {"exp": 2, "add": 1, "multiply": 1}
    assert count_op(expr, "exp") == 2 and count_op(expr, "log") == 0
    mod = IRModule.from_expr(Function([x], expr))
    assert count_ops(mod)["exp"] == 2
    with pytest.raises(TypeError):
        count_ops(42)


def test_basic_block_normal_form():
    x, c, y = var("x", shape=(3,)), var("c", "bool"), var("y")
    shared = irlib.exp(x)
    across_branches = Function([x, c], irlib.If(c, shared, irlib.log(shared)))
    assert not check_basic_block_normal_form(across_branches)
    bound = Function([x, c], Let(y, irlib.exp(x), irlib.If(c, y, irlib.log(y))))
    assert check_basic_block_normal_form(bound)
    same_scope = Function([x], shared + shared)
    assert check_basic_block_normal_form(same_scope)
    assert not is_a_normal_form(same_scope.body)
