"""trace_inference: the steps of type inference, in order, with holes named; the type
checker is left exactly as it was (even when inference fails)."""

import pytest

import irlib
from irlib.errors import TypeInferenceError
from irlib.testing.inference_trace import trace_inference
from irlib.typeinf import solver, unifier


def test_a_closure_parameter_is_a_hole_until_the_call():
    x = irlib.var("x", shape=(2, 3))
    a, f = irlib.var("a"), irlib.var("f")
    body = irlib.Let(f, irlib.Function([a], irlib.exp(a)), irlib.Call(f, [x]))
    typed, steps = trace_inference(irlib.IRModule.from_expr(irlib.Function([x], body)))
    texts = [str(s) for s in steps]
    assert texts[0] == "unify ?a with fn (?b) -> ?c  =>  fn (?b) -> ?c"
    assert "exp(?b)  =>  (waits for its arguments)" in texts
    solved = texts.index("exp(Tensor[(2, 3), float32])  =>  Tensor[(2, 3), float32]")
    bound = texts.index("unify ?b with Tensor[(2, 3), float32]  =>  Tensor[(2, 3), float32]")
    assert bound < solved
    assert {s.kind for s in steps} == {"unify", "relation"}
    assert str(typed["main"].checked_type) == \
        "fn (Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32]"


def test_the_checker_is_restored_even_after_an_error():
    unify, try_solve = unifier.Unifier.unify, solver.OpRelation.try_solve
    x = irlib.var("x", shape=(2, 3))
    y = irlib.var("y", shape=(4,))
    with pytest.raises(TypeInferenceError):
        trace_inference(irlib.IRModule.from_expr(irlib.Function([x, y], irlib.add(x, y))))
    assert unifier.Unifier.unify is unify and solver.OpRelation.try_solve is try_solve
