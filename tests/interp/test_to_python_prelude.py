"""run_as_python on the Prelude's functions (values worked out by hand) and on deep inputs:
tail-recursive functions over 100,000 elements, 100,000-deep let chains and nat expressions."""


import numpy as np
import irlib
import interp
from interp import ConstructorValue
from interp.nat import count, make_nat_expr, make_nat_value
from irlib.testing.adt_strategies import prelude_module

MOD = prelude_module()
_, CONS, NIL = MOD.get_type("List")
_, SOME, NONE = MOD.get_type("Option")


def gv(name):
    return MOD.get_global_var(name)


def py(name):
    return interp.run_as_python(gv(name), MOD)


def lst(items):
    value = ConstructorValue(NIL.tag, [], NIL)
    for item in reversed(items):
        value = ConstructorValue(CONS.tag, [np.int32(item), value], CONS)
    return value


def items(value):
    out = []
    while value.tag == CONS.tag:
        out.append(value.fields[0].numpy().item())
        value = value.fields[1]
    return out


def run_text(text):
    mod = irlib.parse('#[version = "0.0.5"]\n' + text, init_module=prelude_module())
    return interp.run_as_python(mod.get_global_var("main"), mod)()


def test_list_functions():
    assert items(run_text("def @main() { @map(fn (%x: int32) { %x * 2 }, "
                          "Cons(1, Cons(2, Cons(3, Nil)))) }")) == [2, 4, 6]
    assert py("sum")(lst([1, 2, 3, 4])).numpy().item() == 10
    assert py("length")(lst([5, 6, 7])).numpy().item() == 3
    assert items(py("rev")(lst([1, 2, 3]))) == [3, 2, 1]
    assert items(py("concat")(lst([1, 2]), lst([3]))) == [1, 2, 3]
    assert py("nth")(lst([4, 5, 6]), 2).numpy().item() == 6
    assert items(py("update")(lst([4, 5, 6]), 1, np.int32(9))) == [4, 9, 6]
    assert py("hd")(lst([8, 9])).numpy().item() == 8
    assert items(py("tl")(lst([8, 9]))) == [9]


def test_folds_filter_zip_iterate():
    # foldr(f, 0, [1, 2, 3]) with f(x, acc) = x - acc: 1 - (2 - (3 - 0)) = 2
    assert run_text("def @main() { @foldr(fn (%x: int32, %a: int32) { %x - %a }, 0, "
                    "Cons(1, Cons(2, Cons(3, Nil)))) }").numpy().item() == 2
    # foldl: ((0 - 1) - 2) - 3 = -6
    assert run_text("def @main() { @foldl(fn (%a: int32, %x: int32) { %a - %x }, 0, "
                    "Cons(1, Cons(2, Cons(3, Nil)))) }").numpy().item() == -6
    assert items(run_text("def @main() { @filter(fn (%x: int32) { %x > 1 }, "
                          "Cons(1, Cons(2, Cons(3, Nil)))) }")) == [2, 3]
    pairs = run_text("def @main() { @zip(Cons(1, Cons(2, Nil)), Cons(5, Nil)) }")
    assert pairs.tag == CONS.tag and [v.numpy().item() for v in pairs.fields[0]] == [1, 5]
    assert pairs.fields[1].tag == NIL.tag
    # iterate(f, 3)(1) with f(x) = 2x gives 8
    assert run_text("def @main() { @iterate(fn (%x: int32) { %x * 2 }, 3)(1) }") \
        .numpy().item() == 8


def test_unfold_and_accumulating_maps():
    countdown = """fn (%n: int32) -> Option[(int32, int32)] {
      if (%n == 0) { None } else { Some((%n - 1, %n)) } }"""
    assert items(run_text(f"def @main() {{ @unfoldr({countdown}, 3) }}")) == [3, 2, 1]
    assert items(run_text(f"def @main() {{ @unfoldl({countdown}, 3) }}")) == [1, 2, 3]
    acc, out = run_text("def @main() { @map_accumr(fn (%a: int32, %x: int32) "
                        "{ (%a + %x, %a + %x) }, 0, Cons(1, Cons(2, Cons(3, Nil)))) }")
    assert acc.numpy().item() == 6 and items(out) == [6, 5, 3]


def test_trees_and_options():
    tree = "Rose(1, Cons(Rose(2, Nil), Cons(Rose(3, Cons(Rose(4, Nil), Nil)), Nil)))"
    assert run_text(f"def @main() {{ @size({tree}) }}").numpy().item() == 4
    doubled = run_text(f"def @main() {{ @tmap(fn (%x: int32) {{ %x * 10 }}, {tree}) }}")
    assert doubled.fields[0].numpy().item() == 10
    assert doubled.fields[1].fields[1].fields[0].fields[1].fields[0].fields[0].numpy() == 40
    some = run_text("def @main() { match (Some(3)) { Some(%x) => %x + 1, None => 0 } }")
    assert some.numpy().item() == 4


def test_nat_functions():
    assert count(MOD, py("nat_add")(make_nat_value(MOD, 3), make_nat_value(MOD, 4))) == 7
    assert count(MOD, py("nat_double")(make_nat_value(MOD, 5))) == 10
    assert py("nat_nth")(lst([7, 8, 9]), make_nat_value(MOD, 1)).numpy().item() == 8
    assert items(py("nat_update")(lst([7, 8, 9]), make_nat_value(MOD, 2), np.int32(0))) \
        == [7, 8, 0]
    result = run_text("def @main() { @nat_iterate(fn (%x: int32) { %x + 3 }, "
                      "succ(succ(zero)))(1) }")
    assert result.numpy().item() == 7


# -- deep inputs ---------------------------------------------------------------------------------

N = 100_000


def test_tail_recursive_prelude_functions_run_on_100000_elements():
    big = lst(list(range(N)))
    assert py("sum")(big).numpy().item() == (N * (N - 1) // 2 + 2**31) % 2**32 - 2**31
    assert py("nth")(big, N - 1).numpy().item() == N - 1
    assert py("nat_nth")(big, make_nat_value(MOD, N - 2)).numpy().item() == N - 2


def test_non_tail_recursion_runs_100000_deep():
    big = lst([1] * N)
    assert py("length")(big).numpy().item() == N
    assert count(MOD, py("nat_add")(make_nat_value(MOD, N), make_nat_value(MOD, 2))) == N + 2
    assert len(items(py("map")(interp.run_as_python(
        irlib.parse_expr("fn (%x: int32) { %x + 1 }")), big))) == N


def test_100000_deep_let_chain_converts_and_runs():
    variables = [irlib.var(f"v{i}") for i in range(N)]
    body = variables[-1]
    for index in range(N - 1, -1, -1):
        previous = variables[index - 1] if index else irlib.const(0)
        body = irlib.Let(variables[index], irlib.add(previous, irlib.const(1)), body)
    # (its time is measured by benchmarks/deep_programs.py)
    assert interp.run_as_python(body).numpy().item() == N


def test_100000_deep_nat_expression():
    mod = prelude_module()
    assert count(mod, interp.run_as_python(make_nat_expr(mod, N), mod)) == N


def test_closure_results_are_callable():
    f = run_text("def @main() { fn (%x: int32) { %x + 1 } }")
    assert f is not None and callable(f)
