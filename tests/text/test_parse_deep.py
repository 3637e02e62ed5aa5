"""The parser keeps a constant Python stack depth: 100,000-deep nesting parses."""

import sys

import irlib
from irlib.ir import expr as E

N = 100_000


def depth_of(node, step) -> int:
    depth = 0
    while True:
        inner = step(node)
        if inner is None:
            return depth
        node, depth = inner, depth + 1


def test_recursion_limit_is_the_default():
    assert sys.getrecursionlimit() <= 10_000 < N


def test_nested_calls():
    text = "fn (%x: float32) { " + "negative(" * N + "%x" + ")" * N + " }"
    func = irlib.parse_expr(text)
    assert depth_of(func.body, lambda n: n.args[0] if isinstance(n, E.Call) else None) == N


def test_nested_parentheses_and_one_tuples():
    assert isinstance(irlib.parse_expr("(" * N + "1" + ")" * N), E.Constant)
    nested = irlib.parse_expr("(" * N + "1" + ",)" * N)
    assert depth_of(nested, lambda n: n.fields[0] if isinstance(n, E.Tuple) else None) == N


def test_let_chain():
    text = "".join(f"let %x{i} = {i};\n" for i in range(N)) + "%x0"
    expr = irlib.parse_expr(text)
    assert depth_of(expr, lambda n: n.body if isinstance(n, E.Let) else None) == N


def test_graph_binding_chain():
    depth = 50_000
    text = "free_var %x: float32;\n%0 = exp(%x);\n" + "".join(
        f"%{i} = exp(%{i - 1});\n" for i in range(1, depth)) + f"%{depth - 1}"
    expr = irlib.parse_expr(text)
    assert depth_of(expr, lambda n: n.args[0] if isinstance(n, E.Call) else None) == depth


def test_nested_blocks():
    assert isinstance(irlib.parse_expr("{ " * N + "1" + " }" * N), E.Constant)


def test_nested_ifs():
    depth = 30_000   # each level is five grammar rules; blocks above cover 100,000
    text = "if (True) { " * depth + "1" + " } else { 2 }" * depth
    expr = irlib.parse_expr(text)
    assert depth_of(expr, lambda n: n.true_branch if isinstance(n, E.If) else None) == depth


def test_deep_list_value_in_a_module():
    depth = 20_000
    text = ('#[version = "0.0.5"]\ntype List[A] {\n  Cons(A, List[A]),\n  Nil,\n}\n'
            "def @main() { " + "Cons(1, " * depth + "Nil" + ")" * depth + " }")
    mod = irlib.parse(text)
    body = mod["main"].body
    assert depth_of(body, lambda n: n.args[1] if n.args else None) == depth


def test_deep_types_and_patterns():
    depth = 20_000
    annotation = "(" * depth + "float32," + ")" * depth
    func = irlib.parse_expr(f"fn (%x: {annotation}) {{ %x }}")
    assert func.params[0].type_annotation is not None
    pattern = "(" * depth + "%y," + ")" * depth
    expr = irlib.parse_expr(f"fn (%x: {annotation}) {{ match (%x) {{ {pattern} => %y }} }}")
    assert isinstance(expr.body, E.Match)
