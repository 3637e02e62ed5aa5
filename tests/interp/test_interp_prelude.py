"""Prelude (prelude.rly, nat.rly) functions on the interpreter, expected values by hand."""

import numpy as np
import pytest

import irlib
from irlib.errors import MatchError
import interp
from interp import ConstructorValue, NDArray, TupleValue
from interp.nat import count, make_nat_value

prelude_module = pytest.importorskip("irlib.prelude")


@pytest.fixture(scope="module")
def prelude():
    p = prelude_module.Prelude()
    p.mod.import_from_std("nat.rly")
    return p


@pytest.fixture(scope="module")
def executor(prelude):
    return interp.create_executor(mod=prelude.mod)


def to_py(prelude, value):
    """Lists -> Python lists, tuples -> tuples, scalars -> numbers, nats -> ("nat", n),
    Some(x) -> ("Some", x), None -> "None", Rose(v, cs) -> ("Rose", v, cs)."""
    if isinstance(value, NDArray):
        return value.numpy().item() if value.ndim == 0 else value.numpy().tolist()
    if isinstance(value, TupleValue):
        return tuple(to_py(prelude, item) for item in value)
    assert isinstance(value, ConstructorValue), value
    name = value.constructor.name_hint
    if name in ("Cons", "Nil"):
        items = []
        while value.constructor.name_hint == "Cons":
            items.append(to_py(prelude, value.fields[0]))
            value = value.fields[1]
        return items
    if name in ("zero", "succ"):
        return ("nat", count(prelude, value))
    if name == "None":
        return "None"
    return (name,) + tuple(to_py(prelude, field) for field in value.fields)


def run(prelude, executor, text):
    expr = irlib.parse_expr(text, init_module=prelude.mod)
    return to_py(prelude, executor.evaluate(expr))


def py_list(items):
    text = "Nil"
    for item in reversed(items):
        text = f"Cons({item}, {text})"
    return text


@pytest.mark.parametrize("text, expected", [
    ("@id(5)", 5),
    ("@compose(fn (%x: int32) { %x * 2 }, fn (%y: int32) { %y + 1 })(3)", 8),
    ("@flip(fn (%a: int32, %b: int32) { %a - %b })(1, 10)", 9),
    (f"@hd({py_list([4, 5])})", 4),
    (f"@tl({py_list([4, 5])})", [5]),
    (f"@nth({py_list([4, 5, 6])}, 2)", 6),
    (f"@length({py_list([1, 2, 3])})", 3),
    ("let %e: List[int32] = Nil; @length(%e)", 0),
    (f"@update({py_list([1, 2, 3])}, 1, 9)", [1, 9, 3]),
    (f"@map(fn (%x: int32) {{ %x + 1 }}, {py_list([1, 2, 3])})", [2, 3, 4]),
    # ((10 - 1) - 2) - 3
    (f"@foldl(fn (%a: int32, %b: int32) {{ %a - %b }}, 10, {py_list([1, 2, 3])})", 4),
    # 1 - (2 - (3 - 10))
    (f"@foldr(fn (%a: int32, %b: int32) {{ %a - %b }}, 10, {py_list([1, 2, 3])})", -8),
    # 1 - (2 - 3)
    (f"@foldr1(fn (%a: int32, %b: int32) {{ %a - %b }}, {py_list([1, 2, 3])})", 2),
    (f"@sum({py_list([1, 2, 3, 4])})", 10),
    (f"@concat({py_list([1, 2])}, {py_list([3])})", [1, 2, 3]),
    (f"@filter(fn (%x: int32) {{ %x > 1 }}, {py_list([3, 1, 2, 0])})", [3, 2]),
    (f"@zip({py_list([1, 2, 3])}, {py_list([4, 5])})", [(1, 4), (2, 5)]),
    (f"@rev({py_list([1, 2, 3])})", [3, 2, 1]),
    ("let %e: List[int32] = Nil; @rev(%e)", []),
])
def test_list_functions(prelude, executor, text, expected):
    assert run(prelude, executor, text) == expected


ACC_X_X = "fn (%acc: int32, %x: int32) { (%acc + %x, %x) }"
ACC_X_SUM = "fn (%acc: int32, %x: int32) { let %s = %acc + %x; (%s, %s) }"


def test_map_accuml_outputs_come_out_reversed(prelude, executor):
    # spec example: f(acc, x) = (acc + x, x) on [1, 2, 3] from 0 gives (6, [3, 2, 1])
    assert run(prelude, executor, f"@map_accuml({ACC_X_X}, 0, {py_list([1, 2, 3])})") == \
        (6, [3, 2, 1])


def test_map_accumr_keeps_the_input_order(prelude, executor):
    # spec example: f(acc, x) = (acc + x, acc + x) on [1, 2, 3] from 0 gives (6, [6, 5, 3]):
    # 3 is seen first (acc 0 -> 3), then 2 (-> 5), then 1 (-> 6)
    assert run(prelude, executor, f"@map_accumr({ACC_X_SUM}, 0, {py_list([1, 2, 3])})") == \
        (6, [6, 5, 3])


COUNTDOWN = ("fn (%n: int32) { if (%n == 0) { None } else { Some((%n - 1, %n)) } }")


def test_unfoldr_and_unfoldl_countdown(prelude, executor):
    assert run(prelude, executor, f"@unfoldr({COUNTDOWN}, 3)") == [3, 2, 1]
    assert run(prelude, executor, f"@unfoldl({COUNTDOWN}, 3)") == [1, 2, 3]
    assert run(prelude, executor, f"@unfoldr({COUNTDOWN}, 0)") == []


def test_option_values(prelude, executor):
    assert run(prelude, executor, f"{COUNTDOWN}(2)") == ("Some", (1, 2))
    assert run(prelude, executor, f"{COUNTDOWN}(0)") == "None"


TREE = "Rose(1, Cons(Rose(2, Nil), Cons(Rose(3, Cons(Rose(4, Nil), Nil)), Nil)))"


def test_tree_functions(prelude, executor):
    assert run(prelude, executor, f"@tmap(fn (%x: int32) {{ %x * 10 }}, {TREE})") == \
        ("Rose", 10, [("Rose", 20, []), ("Rose", 30, [("Rose", 40, [])])])
    assert run(prelude, executor, f"@size({TREE})") == 4
    assert run(prelude, executor, "@size(Rose(7, Nil))") == 1


def test_iterate(prelude, executor):
    assert run(prelude, executor, "@iterate(fn (%x: int32) { %x * 2 }, 3)(1)") == 8
    assert run(prelude, executor, "@iterate(fn (%x: int32) { %x * 2 }, 0)(5)") == 5


@pytest.mark.parametrize("text", ["let %e: List[int32] = Nil; @hd(%e)",
                                  "let %e: List[int32] = Nil; @tl(%e)",
                                  "@foldr1(fn (%a: int32, %b: int32) { %a }, Nil)"])
def test_partial_functions_raise_match_error(prelude, executor, text):
    with pytest.raises(MatchError, match="matches the value Nil"):
        executor.evaluate(irlib.parse_expr(text, init_module=prelude.mod))


def nat(n):
    text = "zero"
    for _ in range(n):
        text = f"succ({text})"
    return text


@pytest.mark.parametrize("text, expected", [
    (f"@nat_add({nat(2)}, {nat(3)})", ("nat", 5)),
    (f"@nat_add(zero, {nat(4)})", ("nat", 4)),
    (f"@nat_double({nat(3)})", ("nat", 6)),
    (f"@nat_nth({py_list([7, 8, 9])}, {nat(2)})", 9),
    (f"@nat_update({py_list([1, 2, 3])}, {nat(1)}, 0)", [1, 0, 3]),
    (f"@nat_iterate(fn (%x: int32) {{ %x + 1 }}, {nat(3)})(10)", 13),
])
def test_nat_functions(prelude, executor, text, expected):
    assert run(prelude, executor, text) == expected


def test_prelude_functions_as_globals_take_values(prelude, executor):
    _, cons, nil = prelude.mod.get_type("List")
    xs = ConstructorValue(nil.tag, [], nil)
    for item in (3, 2, 1):
        xs = ConstructorValue(cons.tag, [np.array(item, "int32"), xs], cons)
    assert executor.evaluate(prelude.length)(xs).numpy().item() == 3
    assert to_py(prelude, executor.evaluate(prelude.rev)(xs)) == [3, 2, 1]


# -- 100,000-element inputs ------------------------------------------------------------------

DEPTH = 100_000


@pytest.fixture(scope="module")
def big_list(prelude):
    _, cons, nil = prelude.mod.get_type("List")
    xs = ConstructorValue(nil.tag, [], nil)
    one = NDArray(np.array(1, "int32"))
    for _ in range(DEPTH):
        xs = ConstructorValue(cons.tag, [one, xs], cons)
    return xs


def test_prelude_map_and_sum_on_100000_elements(prelude, executor, big_list):
    # map and foldr are not tail-recursive; sum is foldl (tail-recursive)
    double = executor.evaluate(irlib.parse_expr(
        "fn (%xs: List[int32]) { @map(fn (%x: int32) { %x * 2 }, %xs) }",
        init_module=prelude.mod))
    assert executor.evaluate(prelude.sum)(double(big_list)).numpy().item() == 2 * DEPTH


def test_prelude_foldr_on_100000_elements(prelude, executor, big_list):
    total_right = executor.evaluate(irlib.parse_expr(
        "fn (%xs: List[int32]) { @foldr(fn (%a: int32, %b: int32) { %a + %b }, 0, %xs) }",
        init_module=prelude.mod))
    assert total_right(big_list).numpy().item() == DEPTH


def test_prelude_nat_add_of_100000(prelude, executor):
    add = executor.evaluate(prelude.mod.get_global_var("nat_add"))
    assert count(prelude, add(make_nat_value(prelude, DEPTH), make_nat_value(prelude, 1))) \
        == DEPTH + 1
