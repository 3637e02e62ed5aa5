"""Deep programs print without recursion: 100,000-deep let chains, call chains and
constructor values, a shared node used across 100,000 nested scopes, and nested blocks deeper
than Python's recursion limit. Expected texts are built from the conventions with string
formatting in the test, line by line."""

import irlib
from irlib import Constructor, GlobalTypeVar, If, Let, TypeCall, TypeVar, const, var

N = 100_000


def test_let_chain_100k():
    variables = [var("x", "float32") for _ in range(N + 1)]
    expr = variables[-1]
    for i in range(N - 1, -1, -1):
        expr = Let(variables[i + 1], irlib.add(variables[i], const(1.0)), expr)
    expected = ["free_var %x: float32;"]
    expected.append("let %x1: float32 = add(%x, 1f);")
    expected += [f"let %x{i}: float32 = add(%x{i - 1}, 1f);" for i in range(2, N + 1)]
    expected.append(f"%x{N}")
    assert irlib.pretty_print(expr) == "\n".join(expected)


def test_call_chain_100k():
    x = var("x", shape=(1,))
    expr = x
    for _ in range(N):
        expr = irlib.exp(expr)
    expected = ["free_var %x: Tensor[(1), float32];", "%0 = exp(%x);"]
    expected += [f"%{k} = exp(%{k - 1});" for k in range(1, N - 1)]
    expected.append(f"exp(%{N - 2})")
    text = irlib.astext(expr)
    assert text == '#[version = "0.0.5"]\n' + "\n".join(expected)


def test_constructor_value_100k():
    element = TypeVar("A")
    list_type = GlobalTypeVar("List")
    cons = Constructor("Cons", [element, TypeCall(list_type, [element])], list_type)
    nil = Constructor("Nil", [], list_type)
    expr = nil()
    for value in range(N - 1, -1, -1):
        expr = cons(const(value), expr)
    # innermost first: Cons(N-1, Nil) is %0, Cons(N-2, %0) is %1, ...; the root is inline
    expected = [f"%0 = Cons({N - 1}, Nil);"]
    expected += [f"%{k} = Cons({N - 1 - k}, %{k - 1});" for k in range(1, N - 1)]
    expected.append(f"Cons(0, %{N - 2})")
    assert str(expr) == "\n".join(expected)


def test_node_shared_across_100k_nested_let_scopes_is_bound_once_at_the_top():
    start, c = var("x", shape=(1,)), var("c", shape=(1,))
    shared = irlib.exp(c)
    variables = [start] + [var("x") for _ in range(N)]
    expr = variables[-1]
    for i in range(N - 1, -1, -1):
        expr = Let(variables[i + 1], irlib.add(variables[i], shared), expr)
    expected = ["free_var %x: Tensor[(1), float32];",
                "free_var %c: Tensor[(1), float32];",
                "%0 = exp(%c);"]
    expected.append("let %x1 = add(%x, %0);")
    expected += [f"let %x{i} = add(%x{i - 1}, %0);" for i in range(2, N + 1)]
    expected.append(f"%x{N}")
    assert str(expr) == "\n".join(expected)


def pad(level):
    """The printer's indentation of a block ``level`` deep (capped: output stays linear)."""
    from irlib.text.printer import MAX_INDENT_LEVELS
    return "  " * min(level, MAX_INDENT_LEVELS)


def test_if_nesting_deeper_than_the_recursion_limit():
    depth = 1500
    c, x = var("c", "bool"), var("x", "float32")
    expr = x
    for _ in range(depth):
        expr = If(c, expr, x)
    expected = ["free_var %c: bool;", "free_var %x: float32;"]
    expected += [pad(level) + "if (%c) {" for level in range(depth)]
    expected.append(pad(depth) + "%x")
    for level in range(depth - 1, -1, -1):
        expected += [pad(level) + "} else {", pad(level + 1) + "%x", pad(level) + "}"]
    assert str(expr) == "\n".join(expected)


def test_function_nesting_deeper_than_the_recursion_limit():
    depth = 1200
    expr = const(1)
    for _ in range(depth):
        expr = irlib.Function([], expr)
    lines = str(expr).split("\n")
    assert lines[0] == "fn () {" and lines[depth - 1] == pad(depth - 1) + "fn () {"
    assert lines[depth] == pad(depth) + "1"
    assert lines[-1] == "}" and len(lines) == 2 * depth + 1
