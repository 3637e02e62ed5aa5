"""Relay-compatibility tests for automatic differentiation and the passes built on it.

Mirrors the behaviours checked by TVM's ``test_pass_gradient.py``, ``test_op_grad_level*.py``
(through ``check_grad``), ``test_pass_lazy_gradient_init.py`` and
``test_pass_partial_eval.py``. Expected values are derived by hand.
"""

import numpy as np
import pytest

import irlib
from irlib import transform
from irlib.ir.structural import assert_structural_equal
from irlib.prelude import Prelude
from interp import create_executor
from interp.check_grad import check_grad
from interp.nat import make_nat_expr

V = '#[version = "0.0.5"]\n'


def infer(func, mod=None):
    mod = mod if mod is not None else irlib.IRModule()
    mod["main"] = func
    return transform.InferType()(mod)["main"]


def run(func, *args, mod=None):
    return create_executor(mod=mod).evaluate(func)(*args)


def grads_of(value):
    forward, grads = value
    return forward, [g.numpy() for g in grads]


# -- gradient ----------------------------------------------------------------------------------

def test_temp_add_and_sub():
    func = infer(irlib.parse_expr(
        "fn (%x: Tensor[(3), float32]) { %0 = add(%x, %x); add(%0, %0) }"))
    x = np.array([1, 2, 3], "float32")
    forward, (dx,) = grads_of(run(transform.gradient(func), x))
    np.testing.assert_allclose(forward.numpy(), 4 * x)
    np.testing.assert_allclose(dx, [4, 4, 4])
    func = infer(irlib.parse_expr("fn (%x: Tensor[(3), float32]) { subtract(%x, %x) }"))
    forward, (dx,) = grads_of(run(transform.gradient(func), x))
    np.testing.assert_allclose(forward.numpy(), 0 * x)
    np.testing.assert_allclose(dx, [0, 0, 0])


def test_broadcast_add_and_subtract():
    for op, sign in (("add", 1.0), ("subtract", -1.0)):
        func = infer(irlib.parse_expr(f"""fn (%x: Tensor[(3, 4, 1), float32],
            %y: Tensor[(1, 5), float32]) {{ {op}(%x, %y) }}"""))
        x = np.random.default_rng(0).random((3, 4, 1), dtype="float32")
        y = np.random.default_rng(1).random((1, 5), dtype="float32")
        forward, (dx, dy) = grads_of(run(transform.gradient(func), x, y))
        np.testing.assert_allclose(forward.numpy(), x + sign * y, rtol=1e-6)
        np.testing.assert_allclose(dx, np.full((3, 4, 1), 5.0))
        np.testing.assert_allclose(dy, np.full((1, 5), 12.0 * sign))


def test_tuple_let():
    func = infer(irlib.parse_expr("""fn (%x: Tensor[(2), float32], %y: Tensor[(2), float32],
        %z: Tensor[(2), float32]) {
      let %t = (%x, %y, %z); subtract(add(%t.0, %t.1), %t.2)
    }"""))
    ones = np.ones(2, "float32")
    forward, grads = grads_of(run(transform.gradient(func), ones, 2 * ones, 4 * ones))
    np.testing.assert_allclose(forward.numpy(), -ones)
    for got, want in zip(grads, (1, 1, -1)):
        np.testing.assert_allclose(got, want * ones)


def test_pow_through_nat_iterate():
    mod = irlib.IRModule()
    p = Prelude(mod)
    mod.import_from_std("nat.rly")
    x = irlib.var("x", shape=(2,))
    double = irlib.Function([x], x + x)
    i = irlib.var("i", shape=(2,))
    func = irlib.Function([i], mod.get_global_var("nat_iterate")(double, make_nat_expr(p, 3))(i))
    func = infer(func, mod)
    back = transform.gradient(func, mod=mod)
    value = np.array([1, 2], "float32")
    forward, (di,) = grads_of(run(back, value, mod=mod))
    np.testing.assert_allclose(forward.numpy(), 8 * value)
    np.testing.assert_allclose(di, [8, 8])


def test_ref():
    func = infer(irlib.parse_expr("""fn (%x: Tensor[(2), float32]) {
      let %r = ref(%x); let %u = ref_write(%r, multiply(ref_read(%r), ref_read(%r)));
      ref_read(%r)
    }"""))
    x = np.array([2, 3], "float32")
    forward, (dx,) = grads_of(run(transform.gradient(func), x))
    np.testing.assert_allclose(forward.numpy(), x * x)
    np.testing.assert_allclose(dx, 2 * x)


def test_square_second_order():
    func = infer(irlib.parse_expr("fn (%x: Tensor[(2), float32]) { multiply(%x, %x) }"))
    back = infer(transform.gradient(func))
    x = irlib.var("x", shape=(2,))
    first = infer(irlib.Function([x], irlib.TupleGetItem(
        irlib.TupleGetItem(back(x), 1), 0)))
    second = transform.gradient(first)
    forward, (dx,) = grads_of(run(second, np.array([1, 5], "float32")))
    np.testing.assert_allclose(forward.numpy(), [2, 10])
    np.testing.assert_allclose(dx, [2, 2])


def test_if_and_global_function():
    func = infer(irlib.parse_expr("""fn (%x: Tensor[(2), float32], %y: Tensor[(2), float32],
        %c: bool) {
      if (%c) { multiply(%x, %y) } else { %y }
    }"""))
    x, y = np.array([2, 3], "float32"), np.array([5, 7], "float32")
    _, (dx, dy, _) = grads_of(run(transform.gradient(func), x, y, np.array(True)))
    np.testing.assert_allclose(dx, y)
    np.testing.assert_allclose(dy, x)
    mod = irlib.parse(V + """
    def @double(%x: Tensor[(2), float32]) -> Tensor[(2), float32] { add(%x, %x) }
    def @main(%y: Tensor[(2), float32]) -> Tensor[(2), float32] { @double(@double(%y)) }""")
    mod = transform.InferType()(mod)
    back = transform.gradient(mod.get_global_var("main"), mod=mod)
    forward, (dy,) = grads_of(run(back, y, mod=mod))
    np.testing.assert_allclose(forward.numpy(), 4 * y)
    np.testing.assert_allclose(dy, [4, 4])


def test_tuple_output_seeds_first_leaf_only():
    func = infer(irlib.parse_expr("""fn (%x: Tensor[(2), float32]) {
      %0 = add(%x, %x); (add(%0, %0), %0)
    }"""))
    anf = transform.ToANormalForm()(irlib.IRModule.from_expr(func))["main"]
    _, (dx,) = grads_of(run(transform.gradient(infer(anf)), np.ones(2, "float32")))
    np.testing.assert_allclose(dx, [4, 4])


def test_concat_runs():
    func = infer(irlib.parse_expr("""fn (%x: Tensor[(2, 3), float32]) {
      concatenate((%x, %x), axis=0)
    }"""))
    forward, (dx,) = grads_of(run(transform.gradient(func), np.ones((2, 3), "float32")))
    assert forward.numpy().shape == (4, 3)
    np.testing.assert_allclose(dx, np.full((2, 3), 2.0))


# -- check_grad on ops of levels 1-4 and 10 -------------------------------------------------------

UNARY = ["log", "exp", "sigmoid", "tanh", "sqrt", "negative", "nn.relu", "sin", "cos",
         "abs", "erf", "rsqrt"]


@pytest.mark.parametrize("name", UNARY)
def test_check_grad_unary(name):
    x = irlib.var("x", shape=(2, 3), dtype="float64")
    func = irlib.Function([x], irlib.op.make_call(name, [x]))
    data = np.random.default_rng(3).uniform(0.5, 1.5, (2, 3))
    check_grad(func, inputs=[data], eps=1e-5, atol=1e-4)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "maximum",
                                  "minimum", "power"])
def test_check_grad_binary(name):
    x = irlib.var("x", shape=(2, 3), dtype="float64")
    y = irlib.var("y", shape=(3,), dtype="float64")
    func = irlib.Function([x, y], irlib.op.make_call(name, [x, y]))
    rng = np.random.default_rng(4)
    check_grad(func, inputs=[rng.uniform(0.5, 1.5, (2, 3)), rng.uniform(0.6, 1.4, (3,))],
               eps=1e-5, atol=1e-4)


def test_check_grad_levels_2_3_4_10():
    cases = [
        ("nn.softmax", {}, [(2, 5)]),
        ("nn.log_softmax", {}, [(2, 5)]),
        ("nn.dense", {}, [(2, 3), (4, 3)]),
        ("nn.batch_flatten", {}, [(2, 3, 2)]),
        ("transpose", {"axes": [1, 0]}, [(2, 3)]),
        ("reshape", {"newshape": [3, 2]}, [(2, 3)]),
        ("sum", {"axis": [1]}, [(2, 3)]),
        ("mean", {"axis": [0]}, [(2, 3)]),
        ("max", {"axis": [1]}, [(2, 3)]),
        ("nn.max_pool2d", {"pool_size": [2, 2]}, [(1, 1, 4, 4)]),
        ("nn.avg_pool2d", {"pool_size": [2, 2]}, [(1, 1, 4, 4)]),
        ("nn.conv2d", {"padding": [1, 1]}, [(1, 2, 4, 4), (3, 2, 3, 3)]),
        ("broadcast_to", {"shape": [2, 3]}, [(1, 3)]),
        ("clip", {"a_min": 0.2, "a_max": 0.8}, [(2, 3)]),
    ]
    rng = np.random.default_rng(5)
    for name, attrs, shapes in cases:
        params = [irlib.var(f"p{i}", shape=s, dtype="float64") for i, s in enumerate(shapes)]
        func = irlib.Function(params, irlib.op.make_call(name, params, attrs))
        data = [rng.uniform(0.0, 1.0, s) for s in shapes]
        check_grad(func, inputs=data, eps=1e-5, atol=1e-4)


# -- LazyGradientInit ---------------------------------------------------------------------------

def test_lazy_gradient_init_keeps_type_and_value():
    func = infer(irlib.parse_expr("""fn (%x: Tensor[(3), float32], %y: Tensor[(3), float32]) {
      (add(%x, zeros_like(%x)), multiply(%y, ones_like(%y)), add(%x, %y))
    }"""))
    mod = transform.LazyGradientInit()(irlib.IRModule.from_expr(func))
    mod = transform.InferType()(mod)
    assert mod["main"].checked_type == func.checked_type
    x, y = np.array([1, 2, 3], "float32"), np.array([4, 5, 6], "float32")
    out = run(mod.get_global_var("main"), x, y, mod=mod)
    np.testing.assert_allclose(out[0].numpy(), x)
    np.testing.assert_allclose(out[1].numpy(), y)
    np.testing.assert_allclose(out[2].numpy(), x + y)


def test_lazy_gradient_init_after_reverse_ad():
    func = infer(irlib.parse_expr(
        "fn (%x: Tensor[(3), float32]) { multiply(%x, %x) }"))
    back = infer(transform.gradient(func))
    mod = transform.LazyGradientInit()(irlib.IRModule.from_expr(back))
    mod = transform.InferType()(mod)
    assert mod["main"].checked_type == back.checked_type
    x = np.array([1, 2, 3], "float32")
    forward, (dx,) = grads_of(run(mod.get_global_var("main"), x, mod=mod))
    np.testing.assert_allclose(forward.numpy(), x * x)
    np.testing.assert_allclose(dx, 2 * x)


# -- PartialEvaluate ---------------------------------------------------------------------------

def _pe(func, mod=None):
    mod = mod if mod is not None else irlib.IRModule()
    mod["main"] = func
    mod = transform.InferType()(mod)
    mod = transform.PartialEvaluate()(mod)
    mod = transform.DeadCodeElimination(inline_once=True)(mod)
    return transform.InferType()(mod)["main"]


def _typed(expr):
    return transform.InferType()(irlib.IRModule.from_expr(expr))["main"]


def test_pe_tuple_constant_and_ref():
    got = _pe(irlib.parse_expr("fn (%x: Tensor[(2), float32]) { (4f, %x).1 }"))
    assert_structural_equal(got, _typed(irlib.parse_expr(
        "fn (%x: Tensor[(2), float32]) { %x }")), map_free_vars=True)
    got = _pe(irlib.parse_expr("fn () { (fn (%d: float32) { add(%d, %d) })(4f) }"))
    assert isinstance(got.body, irlib.Constant) and float(got.body.data.numpy()) == 8.0
    got = _pe(irlib.parse_expr("""fn (%d: float32) {
      let %r = ref(%d); let %u = ref_write(%r, multiply(ref_read(%r), ref_read(%r)));
      ref_read(%r)
    }"""))
    assert_structural_equal(got, _typed(irlib.parse_expr(
        "fn (%d: float32) { multiply(%d, %d) }")), map_free_vars=True)


def test_pe_if_on_static_and_loop():
    got = _pe(irlib.parse_expr("""fn (%x: float32) {
      let %r = ref(1f);
      let %u = if (less(1f, 2f)) { ref_write(%r, 3f) } else { () };
      add(ref_read(%r), %x)
    }"""))
    assert_structural_equal(got, _typed(irlib.parse_expr(
        "fn (%x: float32) { add(3f, %x) }")), map_free_vars=True)
    # a let-bound recursive function on static arguments runs to the end
    got = _pe(irlib.parse_expr("""fn () {
      let %f = fn (%x: int32) -> int32 {
        if (equal(%x, 0)) { 0 } else { add(%x, %f(subtract(%x, 1))) }
      };
      %f(10)
    }"""))
    assert isinstance(got.body, irlib.Constant) and int(got.body.data.numpy()) == 55
    # a global that loops without progress is residualised as a call
    mod = irlib.parse(V + "def @loop[t](%x: t) -> t { @loop(%x) }")
    got = _pe(irlib.Function([], irlib.Call(mod.get_global_var("loop"), [irlib.const(1)])), mod)
    call = got.body.value if isinstance(got.body, irlib.Let) else got.body
    assert isinstance(call, irlib.Call) and call.op.name_hint == "loop"
    assert int(call.args[0].data.numpy()) == 1


def test_pe_prelude_map_and_nat():
    mod = irlib.IRModule()
    p = Prelude(mod)
    mod.import_from_std("nat.rly")
    x = irlib.var("x", shape=(), dtype="float32")
    ctors = {c.name_hint: c for c in mod[mod.get_global_type_var("List")].constructors}
    items = ctors["Nil"]()
    for v in (3.0, 2.0, 1.0):
        items = ctors["Cons"](irlib.const(v), items)
    double = irlib.Function([x], x + x)
    func = irlib.Function([], mod.get_global_var("map")(double, items))
    got = _pe(func, mod)
    values = []
    node = got.body
    while isinstance(node, irlib.Call) and node.op.name_hint == "Cons":
        values.append(float(node.args[0].data.numpy()))
        node = node.args[1]
    assert values == [2.0, 4.0, 6.0]
    double_nat = mod.get_global_var("nat_double")
    got = _pe(irlib.Function([], double_nat(make_nat_expr(p, 2))), mod)
    depth, node = 0, got.body
    while isinstance(node, irlib.Call) and node.op.name_hint == "succ":
        depth, node = depth + 1, node.args[0]
    assert depth == 4 and node.op.name_hint == "zero"


def _nat_module():
    mod = irlib.IRModule()
    p = Prelude(mod)
    mod.import_from_std("nat.rly")
    data = mod[mod.get_global_type_var("nat")]
    ctors = {c.name_hint: c for c in data.constructors}
    return mod, p, mod.get_global_type_var("nat")(), ctors["zero"], ctors["succ"]


def test_pe_swap_loop_stops_at_the_original_call():
    mod, p, nat, _, _ = _nat_module()
    x, y = irlib.var("x", nat), irlib.var("y", nat)
    loop = irlib.GlobalVar("loop")
    mod[loop] = irlib.Function([x, y], loop(y, x), nat)
    prog = loop(make_nat_expr(p, 1), make_nat_expr(p, 2))
    got = _pe(irlib.Function([], prog), mod)
    assert irlib.structural_equal(got.body, prog)


def test_pe_abs_diff_and_nat_identities():
    mod, p, nat, zero, succ = _nat_module()
    x, y, xp, yp = (irlib.var(n, nat) for n in ("x", "y", "xp", "yp"))
    diff = irlib.GlobalVar("diff")
    on_y = irlib.Match(y, [irlib.Clause(irlib.PatternConstructor(zero, []), x),
                           irlib.Clause(irlib.PatternConstructor(succ, [irlib.PatternVar(yp)]),
                                        diff(yp, xp))])
    mod[diff] = irlib.Function([x, y], irlib.Match(x, [
        irlib.Clause(irlib.PatternConstructor(zero, []), y),
        irlib.Clause(irlib.PatternConstructor(succ, [irlib.PatternVar(xp)]), on_y)]))
    got = _pe(irlib.Function([], diff(make_nat_expr(p, 7), make_nat_expr(p, 3))), mod)
    assert irlib.structural_equal(got.body, make_nat_expr(p, 4))
    n, m = irlib.var("n", nat), irlib.var("m", nat)
    same = irlib.Match(n, [irlib.Clause(irlib.PatternConstructor(zero, []), zero()),
                           irlib.Clause(irlib.PatternConstructor(succ, [irlib.PatternVar(m)]),
                                        succ(m))])
    nat_id = irlib.GlobalVar("nat_id")
    mod[nat_id] = irlib.Function([n], same)
    got = _pe(irlib.Function([], nat_id(make_nat_expr(p, 3))), mod)
    assert irlib.structural_equal(got.body, make_nat_expr(p, 3))
    got = _pe(irlib.Function([], mod.get_global_var("nat_double")(make_nat_expr(p, 3))), mod)
    assert irlib.structural_equal(got.body, make_nat_expr(p, 6))


def test_pe_head_cons_map_and_empty_ad():
    mod = irlib.IRModule()
    Prelude(mod)
    ctors = {c.name_hint: c for c in mod[mod.get_global_type_var("List")].constructors}
    cons, nil = ctors["Cons"], ctors["Nil"]
    t = irlib.TypeVar("t")
    x = irlib.var("x", t)
    got = _pe(irlib.Function([x], mod.get_global_var("hd")(cons(x, nil())), None, [t]), mod)
    assert irlib.structural_equal(got, irlib.Function([x], x, t, [t]), map_free_vars=True)
    ident = irlib.GlobalVar("ident")
    a = irlib.var("a", t)
    mod[ident] = irlib.Function([a], a, t, [t])
    items = cons(irlib.const(1), cons(irlib.const(2), cons(irlib.const(3), nil())))
    got = _pe(irlib.Function([], mod.get_global_var("map")(ident, items)), mod)
    mod["expected"] = irlib.Function([], items)
    assert irlib.structural_equal(got.body, transform.InferType()(mod)["expected"].body)
    d = irlib.var("d", shape=(10, 10))
    got = _pe(transform.gradient(infer(irlib.Function([d], d))))
    want = infer(irlib.Function([d], irlib.Tuple([d, irlib.Tuple([irlib.ones_like(d)])])))
    assert_structural_equal(got, want, map_free_vars=True)
