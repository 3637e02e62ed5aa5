"""100,000-deep programs type-check without RecursionError (no timing assertions)."""

import irlib
from irlib import Call, Function, Let, TensorType, TypeCall, const, var
from irlib.transform import InferType, infer_type
from helpers import make_list_module

DEPTH = 100_000


def test_deep_let_chain():
    x = var("x", shape=(2,))
    names = [var(f"v{i}") for i in range(DEPTH + 1)]
    names[0] = x
    body = names[DEPTH]
    for i in range(DEPTH, 0, -1):
        body = Let(names[i], irlib.add(names[i - 1], x), body)
    typed = infer_type(Function([x], body))
    assert typed.ret_type == TensorType((2,), "float32")
    # walk down the chain without recursion and check a binding near the bottom
    node = typed.body
    for _ in range(DEPTH - 1):
        node = node.body
    assert node.var.type_annotation == TensorType((2,), "float32")
    assert node.body.checked_type == TensorType((2,), "float32")


def test_deep_nested_call_chain():
    x = var("x", shape=(3, 1))
    y = var("y", shape=(4,))
    expr = irlib.add(x, y)
    for _ in range(DEPTH):
        expr = irlib.add(expr, y)
    typed = infer_type(Function([x, y], expr))
    assert typed.body.checked_type == TensorType((3, 4), "float32")


def test_deep_adt_construction():
    mod, list_type, cons, nil = make_list_module()
    expr = Call(nil, [])
    for i in range(DEPTH):
        expr = Call(cons, [const(i % 7), expr])
    mod["main"] = Function([], expr)
    typed = InferType()(mod)["main"]
    int_list = TypeCall(list_type, [TensorType((), "int32")])
    assert typed.checked_type.ret_type == int_list
    assert typed.body.type_args == (TensorType((), "int32"),)
