"""How each pass scales with program size: 10^3, 10^4 and 10^5 nodes.

Run ``python benchmarks/pass_scaling.py``. The programs mix let bindings, graph sharing,
constants, tuples and a conditional, so every pass has work to do. The table shows seconds
per pass and the growth factor per 10x size; a linear pass grows about 10x (the issue allows
up to ~12x), a quadratic one 100x. No RecursionError may occur. The first row is a bare
iterative walk over the nodes: the growth it shows (memory and cache effects of CPython
dicts at these sizes) is the floor every linear pass shares.
"""

from __future__ import annotations

import gc
import random
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, __file__.rsplit("/benchmarks/", 1)[0])

import irlib  # noqa: E402
from irlib import Function, Let, const, var  # noqa: E402
from irlib.ir.functor import post_order  # noqa: E402
from irlib.transform.gradient_higher_order import higher_order_gradient  # noqa: E402
from irlib.transform import (DeadCodeElimination, EliminateCommonSubexpr,  # noqa: E402
                             FoldConstant, InferType, Inline, LambdaLift, LazyGradientInit,
                             PartialEvaluate, RemoveUnusedFunctions, ToANormalForm, ToCPS,
                             ToGraphNormalForm, gradient)

SIZES = (1_000, 10_000, 100_000)


def make_program(nodes: int, seed: int = 0) -> Function:
    """A function of about ``nodes`` expression nodes: a let chain with sharing."""
    rng = random.Random(seed)
    x = var("x", shape=(4,))
    live = [x]
    bindings = []
    count = 0
    while count < nodes:
        a, b = rng.choice(live[-8:]), rng.choice(live)
        kind = rng.randrange(4)
        if kind == 0:
            value = irlib.add(a, b)
        elif kind == 1:
            value = irlib.multiply(a, const(np.float32(0.5)) + const(np.float32(0.5)))
        elif kind == 2:
            shared = irlib.negative(a)
            value = irlib.TupleGetItem(irlib.Tuple([shared, shared]), 1)
        else:
            value = irlib.subtract(a, b)
        v = var(f"v{len(bindings)}")
        bindings.append((v, value))
        live.append(v)
        count += 4
    body = live[-1]
    for v, value in reversed(bindings):
        body = Let(v, value, body)
    return Function([x], body)


def passes():
    return [("baseline: post_order walk", "walk"),
            ("DeadCodeElimination", DeadCodeElimination()),
            ("DCE(inline_once)", DeadCodeElimination(inline_once=True)),
            ("EliminateCommonSubexpr", EliminateCommonSubexpr()),
            ("FoldConstant", FoldConstant()),
            ("ToANormalForm", ToANormalForm()),
            ("ToGraphNormalForm", ToGraphNormalForm()),
            ("Inline", Inline()),
            ("RemoveUnusedFunctions", RemoveUnusedFunctions()),
            ("LambdaLift", LambdaLift()),
            ("InferType", InferType()),
            ("ToCPS", ToCPS()),
            ("PartialEvaluate", PartialEvaluate()),
            ("LazyGradientInit", LazyGradientInit()),
            ("gradient(first_order)", None),
            ("gradient(higher_order, refs)", "higher_order")]


def time_pass(pass_, func, repeat: int = 3) -> float:
    """Best of ``repeat`` runs, with the cyclic GC off while timing (as ``timeit`` does)."""
    best = float("inf")
    mod = irlib.IRModule.from_expr(func)
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            if pass_ == "walk":
                post_order(func)
            elif pass_ is None:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)
                    gradient(func, mode="first_order")
            elif pass_ == "higher_order":
                higher_order_gradient(func)
            else:
                pass_(mod)
            best = min(best, time.perf_counter() - start)
        finally:
            gc.enable()
    return best


def main() -> None:
    programs = {size: make_program(size) for size in SIZES}
    actual = {size: len(post_order(p)) for size, p in programs.items()}
    header = "| pass | " + " | ".join(f"{actual[s]:,} nodes (s)" for s in SIZES) + \
        " | x (last 10x) |"
    print(header)
    print("|" + "---|" * (len(SIZES) + 2))
    for name, pass_ in passes():
        times = [time_pass(pass_, programs[size]) for size in SIZES]
        growth = times[-1] / times[-2] if times[-2] > 0 else float("nan")
        cells = " | ".join(f"{t:.3f}" for t in times)
        print(f"| {name} | {cells} | {growth:.1f} |")


if __name__ == "__main__":
    main()
