"""gradient(mode="higher_order") on closures, recursion, match and references: the
reference-cell/backpropagator transformation, checked against finite differences."""

import numpy as np
import pytest

import irlib
from irlib import Function, Let, const, var
from irlib.errors import IRError
from irlib.ir import expr as E
from irlib.ir.functor import post_order
from irlib.ir.types import TensorType
from irlib.prelude import Prelude
from irlib.transform import InferType, gradient
from interp.check_grad import check_grad
from helpers import run, to_numpy as plain

F64 = "float64"
T3 = TensorType((3,), F64)
V = np.array([0.5, -1.25, 2.0])


def numeric_grads(mod, inputs, eps=1e-6):
    """Two-sided differences of sum(first output leaf) of mod's main (independent oracle)."""
    def total(args):
        out = plain(run(mod, *args))
        while isinstance(out, tuple):
            out = out[0]
        return float(np.sum(out))
    grads = []
    for index, x in enumerate(inputs):
        g = np.zeros_like(x)
        for i in np.ndindex(x.shape):
            plus = [a.copy() for a in inputs]
            minus = [a.copy() for a in inputs]
            plus[index][i] += eps
            minus[index][i] -= eps
            g[i] = (total(plus) - total(minus)) / (2 * eps)
        grads.append(g)
    return grads


def smooth_near(mod, inputs, delta=1e-4, seed=1) -> bool:
    """Whether sum(first output leaf) of mod's main looks twice differentiable at
    ``inputs``: its second difference along a random direction is within what a smooth
    function gives. At an ``if``'s switching point (a jump or a kink) finite differences
    do not estimate the gradient, so such inputs are no test of it."""
    rng = np.random.default_rng(seed)
    direction = [rng.standard_normal(np.shape(x)) for x in inputs]

    def along(t):
        out = plain(run(mod, *[x + t * d for x, d in zip(inputs, direction)]))
        while isinstance(out, tuple):
            out = out[0]
        return float(np.sum(out))
    centre = along(0.0)
    second = along(delta) - 2 * centre + along(-delta)
    return abs(second) <= 1e-6 * (1 + abs(centre))


def assert_tree_close(actual, expected):
    if isinstance(expected, tuple):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_tree_close(a, e)
        return
    np.testing.assert_allclose(actual, expected, rtol=1e-10)


def check_module_grad(mod, inputs):
    """gradient of mod's main against finite differences, evaluated in (a copy of) mod."""
    work = mod.copy()
    grad = gradient(work["main"], mod=work)
    work["grad"] = grad
    InferType()(work)
    grad_mod = work.copy()
    grad_mod["main"] = grad
    forward, grads = plain(run(grad_mod, *inputs))
    expected_forward = plain(run(mod, *inputs))
    assert_tree_close(forward, expected_forward)
    for g, n in zip(grads, numeric_grads(mod, inputs)):
        np.testing.assert_allclose(g, n, rtol=1e-5, atol=1e-6)
    return grad, work


def test_closure_applied_twice():
    x, y, f = var("x", T3), var("y", T3), var("f")
    func = Function([x], Let(f, Function([y], y * x), f(f(x))))
    grad = gradient(func)
    assert any(type(n) is E.RefCreate for n in post_order(grad))
    forward, (dx,) = plain(run(irlib.IRModule.from_expr(grad), V))
    np.testing.assert_allclose(forward, V ** 3)
    np.testing.assert_allclose(dx, 3 * V ** 2)
    check_grad(func, inputs=[V.copy()])


def test_higher_order_function_argument():
    x, y, f, g = var("x", T3), var("y", T3), var("f", irlib.FuncType([T3], T3)), var("g")
    apply_twice = Function([f, y], f(f(y)))
    body = Let(g, apply_twice, g(Function([var("z", T3)], irlib.tanh(var("z", T3))), x))
    z = var("z", T3)
    body = Let(g, apply_twice, g(Function([z], irlib.tanh(z) * x), x))
    check_grad(Function([x], body), inputs=[V.copy()])


def test_let_bound_recursive_loop():
    x, i, acc, loop = var("x", T3), var("i", "int32"), var("acc", T3), var("loop")
    step = irlib.If(i > const(0, "int32"),
                    loop(i - const(1, "int32"), irlib.sin(acc) * x), acc)
    func = Function([x], Let(loop, Function([i, acc], step, ret_type=T3),
                             loop(const(3, "int32"), x)))
    check_grad(func, inputs=[V.copy()])


def test_references_are_differentiated():
    x, r = var("x", T3), var("r")
    body = Let(r, E.RefCreate(x),
               Let(var("u"), E.RefWrite(r, E.RefRead(r) * E.RefRead(r)),
                   Let(var("u2"), E.RefWrite(r, irlib.exp(E.RefRead(r))), E.RefRead(r))))
    check_grad(Function([x], body), inputs=[V.copy() * 0.3])


def test_match_on_a_tuple_and_if():
    x, a, b = var("x", T3), var("a", T3), var("b", T3)
    pair = E.Tuple([x * x, irlib.exp(x)])
    body = E.Match(pair, [E.Clause(E.PatternTuple([E.PatternVar(a), E.PatternVar(b)]),
                                   irlib.If(irlib.sum(x) > const(0.0, F64), a * b, a + b))])
    check_grad(Function([x], body), inputs=[V.copy()])
    check_grad(Function([x], body), inputs=[-V.copy()])


def nat_module():
    p = Prelude()
    mod = p.mod
    mod.import_from_std("nat.rly")
    return p, mod


def test_recursive_global_over_a_nat():
    p, mod = nat_module()
    zero, succ = mod.lookup_constructor("zero"), mod.lookup_constructor("succ")
    nat = mod.get_global_type_var("nat")
    x, n, m = var("x", T3), var("n", irlib.TypeCall(nat, [])), var("m")
    power = irlib.GlobalVar("power")
    body = E.Match(n, [E.Clause(E.PatternConstructor(zero, []), irlib.ones_like(x)),
                       E.Clause(E.PatternConstructor(succ, [E.PatternVar(m)]),
                                x * power(x, m))])
    mod[power] = Function([x, n], body, ret_type=T3)
    y = var("y", T3)
    three = E.Call(succ, (E.Call(succ, (E.Call(succ, (E.Call(zero, ()),)),)),))
    mod["main"] = Function([y], power(y, three))
    grad, work = check_module_grad(mod, [V.copy()])
    assert "power_grad_ho" in [g.name_hint for g in work.get_global_vars()]
    _, (dy,) = plain(run(_with_main(work, grad), V))
    np.testing.assert_allclose(dy, 3 * V ** 2)


def _with_main(mod, func):
    out = mod.copy()
    out["main"] = func
    return out


def test_recursive_global_over_a_list():
    p = Prelude()
    mod = p.mod
    lst = irlib.TypeCall(p.l, [T3])
    xs, h, t = var("xs", lst), var("h", T3), var("t", lst)
    total = irlib.GlobalVar("total")
    body = E.Match(xs, [E.Clause(E.PatternConstructor(p.cons, [E.PatternVar(h), E.PatternVar(t)]),
                                 irlib.sin(h) + total(t) * h),
                        E.Clause(E.PatternConstructor(p.nil, []),
                                 const(np.ones(3), F64))])
    mod[total] = Function([xs], body, ret_type=T3)
    a, b = var("a", T3), var("b", T3)
    items = E.Call(p.cons, (a, E.Call(p.cons, (b * a, E.Call(p.cons, (b, E.Call(p.nil, ())),)))))
    mod["main"] = Function([a, b], total(items))
    check_module_grad(mod, [V.copy(), np.array([0.3, 0.7, -0.2])])


def test_tuple_result_seeds_only_the_first_leaf():
    x, f, y = var("x", T3), var("f"), var("y", T3)
    z = x + x
    func = Function([x], Let(f, Function([y], y), irlib.Tuple([f(z + z), z])))
    _, (dx,) = plain(run(irlib.IRModule.from_expr(gradient(func)), V))
    np.testing.assert_allclose(dx, np.full(3, 4.0))


def test_restrictions_are_reported():
    t = var("t", irlib.TupleType([T3, T3]))
    f, y = var("f"), var("y", T3)
    with pytest.raises(IRError, match="must be a tensor"):
        gradient(Function([t], Let(f, Function([y], y), f(E.TupleGetItem(t, 0)))))


def test_first_order_code_still_gets_the_static_backward_pass():
    x = var("x", T3)
    grad = gradient(Function([x], x * x))
    assert not any(type(n) is E.RefCreate for n in post_order(grad))


# -- generated programs --------------------------------------------------------------------------

from hypothesis import assume, given, settings  # noqa: E402

from irlib.testing import strategies as irst  # noqa: E402
from irlib.testing.budget import examples  # noqa: E402

SMOOTH = ("add", "subtract", "multiply", "tanh", "sin", "cos", "negative", "less", "greater")


@settings(max_examples=examples(15), deadline=None)
@given(program=irst.programs(max_steps=8, dtypes=("float64",), ops=SMOOTH,
                             allow_shape_ops=False))
def test_check_grad_on_generated_programs_with_closures_and_loops(program):
    """Generated programs with if, closures, higher-order functions and recursive loops."""
    mod = program.module()
    func = InferType()(mod)["main"]
    inputs = program.input_list(program.random_inputs())
    assume(smooth_near(mod, inputs))
    if any(type(n) is E.GlobalVar for n in post_order(func)):
        check_module_grad(mod, inputs)
    else:
        grad = gradient(func)
        irlib.analysis.check_well_formed(grad)
        InferType()(irlib.IRModule.from_expr(grad))     # the gradient type-checks
        check_grad(func, inputs=inputs, rtol=1e-4, atol=1e-5)
