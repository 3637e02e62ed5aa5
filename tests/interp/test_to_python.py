"""to_python / run_as_python: the generated source, each construct, effect order, errors.

Expected values are worked out by hand; the generated source is checked against text
written out here (a snapshot, reviewed by reading it).
"""

import ast
import builtins
import keyword
import sys

import numpy as np
import pytest

import irlib
import interp
from interp import ConstructorValue, NDArray, RefValue, TupleValue
from irlib.errors import InterpreterError, IRError, MatchError
from irlib.testing.adt_strategies import prelude_module

HEADER = '#[version = "0.0.5"]\n'


def parse(text):
    return irlib.parse(HEADER + text, init_module=prelude_module())


def run_main(text, *args):
    """run_as_python on @main of ``text`` (parsed over the Prelude), checked against the
    interpreter for the kind of value and its printed form."""
    mod = parse(text)
    result = interp.run_as_python(mod.get_global_var("main"), mod)(*args)
    expected = interp.create_executor(mod=mod).evaluate()(*args)
    assert type(result) is type(expected)
    assert interp.format_value(result) == interp.format_value(expected)
    return result


def scalar(value):
    assert type(value) is NDArray and value.shape == ()
    return value.numpy().item()


def py_list(value):
    items = []
    while value.fields:
        items.append(scalar(value.fields[0]))
        value = value.fields[1]
    return items


# -- the generated source -------------------------------------------------------------------

def test_foldl_source_is_a_loop():
    mod = prelude_module()
    source = ast.unparse(interp.to_python(mod.get_global_var("foldl"), mod))
    assert source == """\
from interp.py_runtime import NDArray, TupleValue, ConstructorValue, RefValue, MatchError, \
numpy, constructor, op_caller, make_ref, no_match
Cons = constructor(_objects[0])
Nil = constructor(_objects[1])

def foldl(f, acc, xs):
    while True:
        if xs.tag == Cons.tag:
            x, rest = xs.fields
            f, acc, xs = (f, f(acc, x), rest)
            continue
        elif xs.tag == Nil.tag:
            return acc
        else:
            raise no_match('`match` at prelude.rly:91:3', xs)
_py_out = foldl"""


def test_lets_are_assignments_and_ops_go_through_callers():
    x = irlib.var("x", shape=(2,))
    y = irlib.var("y")
    z = irlib.var("z")
    func = irlib.Function([x], irlib.Let(y, irlib.add(x, x),
                                         irlib.Let(z, irlib.multiply(y, irlib.const(2.0)),
                                                   irlib.Tuple([y, z]))))
    source = ast.unparse(interp.to_python(func))
    body = source.split("\n", 1)[1]
    assert body == """\
add = op_caller('add', {}, 'float32')
const = NDArray(numpy.array(2.0, dtype='float32'))
multiply = op_caller('multiply', {}, 'float32')

def main(x):
    y = add(x, x)
    z = multiply(y, const)
    return TupleValue(y, z)
_py_out = main"""


def test_generated_code_uses_modern_ast_and_no_assert():
    mod = parse("def @main(%xs: List[int32]) { match? (%xs) { Cons(%x, Nil) => %x } }")
    tree = interp.to_python(mod.get_global_var("main"), mod)
    kinds = {type(node).__name__ for node in ast.walk(tree)}
    assert "Assert" not in kinds
    assert not kinds & {"Num", "Str", "NameConstant", "Bytes", "Ellipsis", "Index"}
    assert "Raise" in kinds


def test_names_avoid_keywords_and_builtins():
    names = [irlib.var(n, shape=()) for n in ("class", "print", "x.1", "2x", "_py_out")]
    func = irlib.Function(names, irlib.Tuple([irlib.add(n, n) for n in names]))
    tree = interp.to_python(func)
    params = [a.arg for a in tree.body[-2].args.args]
    assert len(set(params)) == 5
    for name in params:
        assert name.isidentifier() and not keyword.iskeyword(name)
        assert name not in dir(builtins) and name != "_py_out"
    out = interp.run_as_python(func)(*[np.float32(i) for i in range(5)])
    assert [scalar(v) for v in out] == [0.0, 2.0, 4.0, 6.0, 8.0]


def test_option_none_constructor_gets_a_safe_name():
    out = run_main("def @main() { (Some(1), None) }")
    assert [v.name for v in out] == ["Some", "None"]


# -- constructs ----------------------------------------------------------------------------------

def test_let_if_tuple_projection():
    text = """def @main(%x: int32) {
      let %t = (%x, %x + 1);
      if (%t.0 < 3) { %t.1 * 10 } else { let %y = %t.0 - 3; %y }
    }"""
    assert scalar(run_main(text, 2)) == 30
    assert scalar(run_main(text, 7)) == 4


def test_if_with_statements_in_branches():
    text = """def @main(%x: int32) {
      let %r = if (%x > 0) { let %a = %x * 2; %a + 1 } else { 0 };
      %r + 100
    }"""
    assert scalar(run_main(text, 5)) == 111
    assert scalar(run_main(text, -5)) == 100


def test_closures_capture_values():
    text = """def @main(%x: int32) {
      let %add_x = fn (%y: int32) { %x + %y };
      let %twice = fn (%f: fn (int32) -> int32, %v: int32) { %f(%f(%v)) };
      %twice(%add_x, 1)
    }"""
    assert scalar(run_main(text, 10)) == 21


def test_local_recursive_function_is_a_loop_and_still_correct():
    text = """def @main(%n: int32) {
      let %loop = fn (%i: int32, %acc: int32) -> int32 {
        if (%i == 0) { %acc } else { %loop(%i - 1, %acc + %i) }
      };
      %loop(%n, 0)
    }"""
    mod = parse(text)
    assert "while True" in ast.unparse(interp.to_python(mod.get_global_var("main"), mod))
    total = 100000 * 100001 // 2
    assert scalar(run_main(text, 100000)) == (total + 2**31) % 2**32 - 2**31   # int32 wraps


def test_tail_recursion_creating_closures_is_not_a_loop():
    # each closure must keep its own %n; a loop would rebind it
    text = """def @main() {
      let %loop = fn (%n: int32, %fs: List[fn () -> int32]) -> List[fn () -> int32] {
        if (%n == 0) { %fs } else { let %g = fn () -> int32 { %n }; %loop(%n - 1, Cons(%g, %fs)) }
      };
      @map(fn (%g: fn () -> int32) -> int32 { %g() }, %loop(3, Nil))
    }"""
    assert py_list(run_main(text)) == [1, 2, 3]


def test_references_alias_and_write_returns_unit():
    text = """def @main() {
      let %r = ref(1);
      let %s = %r;
      let %u = ref_write(%s, 5);
      (%u, ref_read(%r))
    }"""
    unit, value = run_main(text)
    assert unit == TupleValue() and scalar(value) == 5


def test_effects_happen_in_the_interpreters_order():
    # Relay's test: (r, (w(2); r), (w(3); r), f((w(4); r), (w(5); r)), r) gives 1..5
    text = """def @main() {
      let %r = ref(1);
      let %f = fn (%a: int32, %b: int32) { (%a, %b) };
      (ref_read(%r),
       { let %u2 = ref_write(%r, 2); ref_read(%r) },
       { let %u3 = ref_write(%r, 3); ref_read(%r) },
       %f({ let %u4 = ref_write(%r, 4); ref_read(%r) },
          { let %u5 = ref_write(%r, 5); ref_read(%r) }),
       ref_read(%r))
    }"""
    a, b, c, (d, e), f = run_main(text)
    assert [scalar(v) for v in (a, b, c, d, e, f)] == [1, 2, 3, 4, 5, 5]


def test_arguments_are_evaluated_before_the_callee():
    text = """def @main() {
      let %r = ref(0);
      ({ let %u = ref_write(%r, 10); fn (%x: int32) { %x + ref_read(%r) } })
        ({ let %v = ref_write(%r, 1); ref_read(%r) })
    }"""
    assert scalar(run_main(text)) == 11     # argument 1 first, then the callee writes 10


def test_ref_holding_a_function():
    text = """def @main() {
      let %r = ref(fn (%x: int32) { %x + 1 });
      let %u = ref_write(%r, fn (%x: int32) { %x * 2 });
      ref_read(%r)(21)
    }"""
    assert scalar(run_main(text)) == 42


def test_match_nested_tuple_and_wildcard_patterns():
    text = """def @main(%xs: List[int32], %ys: List[int32]) {
      match ((%xs, %ys)) {
        (Cons(%a, Cons(%b, _)), Cons(%c, _)) => %a * 100 + %b * 10 + %c,
        (Cons(%a, _), _) => %a,
        _ => -1,
      }
    }"""
    mod = prelude_module()
    _, cons, nil = mod.get_type("List")

    def lst(*items):
        value = ConstructorValue(nil.tag, [], nil)
        for item in reversed(items):
            value = ConstructorValue(cons.tag, [np.int32(item), value], cons)
        return value
    assert scalar(run_main(text, lst(1, 2, 3), lst(4))) == 124
    assert scalar(run_main(text, lst(7), lst(4))) == 7
    assert scalar(run_main(text, lst(), lst(4))) == -1


def test_incomplete_match_raises_match_error():
    mod = prelude_module()
    hd = interp.run_as_python(mod.get_global_var("hd"), mod)
    _, _, nil = mod.get_type("List")
    with pytest.raises(MatchError, match="no clause of `match` at prelude.rly.* matches the "
                                         "value Nil"):
        hd(ConstructorValue(nil.tag, [], nil))


def test_constructor_and_global_as_values():
    text = """def @main() {
      let %xs = @concat(Cons(1, Nil), Cons(2, Nil));
      let %t = Rose(1, Cons(Rose(2, Nil), Cons(Rose(3, Nil), Nil)));
      (%xs, @size(%t), @map(@size, Cons(%t, Nil)))
    }"""
    xs, size, sizes = run_main(text)
    assert py_list(xs) == [1, 2] and scalar(size) == 3 and py_list(sizes) == [3]


def test_non_function_expression_and_returned_function():
    assert scalar(interp.run_as_python(irlib.add(irlib.const(1), irlib.const(2)))) == 3
    x = irlib.var("x", shape=(2,), dtype="int32")
    f = interp.run_as_python(irlib.Function([x], irlib.multiply(x, x)))
    assert f(np.array([3, 4], "int32")).numpy().tolist() == [9, 16]
    ref = interp.run_as_python(irlib.RefCreate(irlib.const(1.5)))
    assert type(ref) is RefValue and scalar(ref.value) == 1.5


def test_identity_annotation_ops_pass_values_through():
    x = irlib.var("x", shape=(2,))
    names = {op if isinstance(op, str) else op.name for op in irlib.op.registry.list_ops()}
    assert "annotation.stop_fusion" in names
    call = irlib.op.registry.make_call("annotation.stop_fusion", [x])
    f = interp.run_as_python(irlib.Function([x], call))
    assert f(np.ones(2, "float32")).numpy().tolist() == [1.0, 1.0]


def test_shared_subexpressions_are_computed_once():
    x = irlib.var("x", shape=())
    shared = irlib.exp(x)
    func = irlib.Function([x], irlib.add(shared, shared))
    source = ast.unparse(interp.to_python(func))
    assert source.count("exp(x)") == 1
    assert scalar(interp.run_as_python(func)(np.float32(0))) == 2.0


# -- errors -------------------------------------------------------------------------------

def test_free_variables_are_rejected():
    with pytest.raises(IRError, match="free variables"):
        interp.to_python(irlib.var("x", shape=()))


def test_op_as_value_is_rejected():
    x = irlib.var("x", shape=())
    f = irlib.var("f")
    expr = irlib.Let(f, irlib.exp(x).op, irlib.Call(f, [x]))
    with pytest.raises(IRError, match="operator exp.*can only be called"):
        interp.to_python(irlib.Function([x], expr))


def test_unknown_target_is_rejected():
    with pytest.raises(IRError, match="unknown target"):
        interp.to_python(irlib.const(1), target="vulkan")


def test_recursion_limit_is_an_irlib_error(monkeypatch):
    from interp import py_runtime
    monkeypatch.setattr(py_runtime, "RECURSION_LIMIT", 2000)
    limit = sys.getrecursionlimit()
    mod = prelude_module()
    length = interp.run_as_python(mod.get_global_var("length"), mod)
    _, cons, nil = mod.get_type("List")
    value = ConstructorValue(nil.tag, [], nil)
    for _ in range(20000):
        value = ConstructorValue(cons.tag, [np.int32(1), value], cons)
    with pytest.raises(InterpreterError, match="recursed deeper than 2000 frames"):
        length(value)
    assert sys.getrecursionlimit() == limit


def test_a_failing_op_is_reported_once_and_never_run_again(monkeypatch):
    """A failing reference implementation raises the located OpImplError and is not called
    a second time (ops such as prints and collectives have effects)."""
    from irlib.errors import IRError
    from irlib.op import registry

    calls = []

    def failing_exp(data):
        calls.append(data.shape)
        raise ValueError("refused on purpose")

    monkeypatch.setattr(registry.get_def("exp"), "impl", failing_exp)
    x = irlib.var("x", shape=(3,))
    mod = irlib.IRModule.from_expr(irlib.Function([x], irlib.exp(x)))
    with pytest.raises(IRError, match="exp: refused on purpose"):
        interp.run_as_python(mod["main"], mod)(np.ones(3, "float32"))
    assert calls == [(3,)]
