"""The reference interpreter and ``run_as_python`` against hand-written Python.

Run ``python benchmarks/interp_bench.py`` (``--repeat N`` for more samples). Cases:

(a) sum a 10,000-element Prelude list with ``@foldl``;
(b) ``@nat_add`` of 1,000 + 1,000;
(c) ``@map`` of ``x + 1`` over a 10,000-element list;
(d) a chain of 50 elementwise ops on 4x4 float32 tensors.

Every version takes and returns the same values (NDArrays, ConstructorValues). The
hand-written versions are what a Python programmer would write on those values: loops over
the cons cells and nats, numpy for the arithmetic, a new NDArray per tensor result. Times are
the best of ``--repeat`` calls of an already built callable: ``create_executor().evaluate()``
and ``run_as_python(...)`` run once, outside the timing (type checking and conversion are
not measured). Targets: run_as_python within 3x of hand-written Python on (a)-(c), the
interpreter within 30x.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout too

import irlib  # noqa: E402
import interp  # noqa: E402
from interp import ConstructorValue, NDArray  # noqa: E402
from interp.nat import count, make_nat_value  # noqa: E402
from irlib.testing.adt_strategies import prelude_module  # noqa: E402

SIZE = 10_000
NAT = 1_000
CHAIN = 50
_OPS = ("add", "multiply", "tanh", "subtract", "sigmoid")


def _list_value(mod, values):
    _, cons, nil = mod.get_type("List")
    value = ConstructorValue(nil.tag, [], nil)
    for item in reversed(values):
        value = ConstructorValue(cons.tag, [NDArray(np.array(item, dtype="int32")), value],
                                 cons)
    return value


def _parse_main(text):
    mod = irlib.parse('#[version = "0.0.5"]\n' + text, init_module=prelude_module())
    return mod


def case_foldl():
    mod = _parse_main("""def @main(%xs: List[int32]) -> int32 {
      @foldl(fn (%acc: int32, %x: int32) -> int32 { %acc + %x }, 0, %xs) }""")
    _, cons, _ = mod.get_type("List")
    cons_tag = cons.tag

    def hand(xs):
        acc = NDArray(np.array(0, dtype="int32"))
        while xs.tag == cons_tag:
            x, xs = xs.fields
            acc = NDArray(np.add(acc.numpy(), x.numpy()))
        return acc

    def check(result):
        assert result.numpy().item() == SIZE * (SIZE - 1) // 2
    return mod, hand, [_list_value(mod, list(range(SIZE)))], check


def case_nat_add():
    mod = prelude_module()
    mod["main"] = irlib.parse_expr(
        "fn (%a: nat, %b: nat) -> nat { @nat_add(%a, %b) }", init_module=mod)
    _, _, succ = mod.get_type("nat")
    succ_tag = succ.tag

    def hand(a, b):
        depth = 0
        while a.tag == succ_tag:
            a = a.fields[0]
            depth += 1
        for _ in range(depth):
            b = ConstructorValue(succ_tag, (b,), succ)
        return b

    def check(result):
        assert count(mod, result) == 2 * NAT
    return mod, hand, [make_nat_value(mod, NAT), make_nat_value(mod, NAT)], check


def case_map():
    mod = _parse_main("""def @main(%xs: List[int32]) -> List[int32] {
      @map(fn (%x: int32) -> int32 { %x + 1 }, %xs) }""")
    _, cons, nil = mod.get_type("List")
    cons_tag = cons.tag
    one = np.array(1, dtype="int32")

    def hand(xs):
        mapped = []
        while xs.tag == cons_tag:
            x, xs = xs.fields
            mapped.append(NDArray(np.add(x.numpy(), one)))
        out = ConstructorValue(nil.tag, (), nil)
        for item in reversed(mapped):
            out = ConstructorValue(cons_tag, (item, out), cons)
        return out

    def check(result):
        assert result.fields[0].numpy().item() == 1
    return mod, hand, [_list_value(mod, list(range(SIZE)))], check


def case_tensor_graph():
    x = irlib.var("x", shape=(4, 4))
    y = irlib.var("y", shape=(4, 4))
    node = x
    for index in range(CHAIN):
        op = _OPS[index % len(_OPS)]
        if op in ("tanh", "sigmoid"):
            node = getattr(irlib, op)(node)
        else:
            node = getattr(irlib, op)(node, y)
    mod = irlib.IRModule.from_expr(irlib.Function([x, y], node))
    numpy_ops = {"add": np.add, "multiply": np.multiply, "subtract": np.subtract,
                 "tanh": np.tanh, "sigmoid": lambda v: 1 / (1 + np.exp(-v))}

    def hand(a, b):
        result, other = a, b.numpy()
        for index in range(CHAIN):
            op = _OPS[index % len(_OPS)]
            function = numpy_ops[op]
            value = result.numpy()
            value = function(value) if op in ("tanh", "sigmoid") else function(value, other)
            result = NDArray(value.astype("float32"))
        return result

    rng = np.random.default_rng(0)
    inputs = [NDArray(rng.uniform(-1, 1, (4, 4)).astype("float32")) for _ in range(2)]
    expected = hand(*inputs).numpy()

    def check(result):
        np.testing.assert_allclose(result.numpy(), expected, rtol=1e-5, atol=1e-6)
    return mod, hand, inputs, check


CASES = (("(a) foldl sum, 10,000 elements", case_foldl),
         ("(b) nat_add 1,000 + 1,000", case_nat_add),
         ("(c) map x+1, 10,000 elements", case_map),
         ("(d) 50-op tensor graph, 4x4", case_tensor_graph))


def best_time(function, args, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        function(*args)
        best = min(best, time.perf_counter() - start)
    return best


def measure(repeat: int = 5) -> list:
    """Rows ``(case, hand seconds, run_as_python seconds, interpreter seconds)``."""
    rows = []
    for label, make in CASES:
        mod, hand, args, check = make()
        interpreted = interp.create_executor(mod=mod).evaluate()
        python = interp.run_as_python(mod.get_global_var("main"), mod)
        for function in (hand, interpreted, python):
            check(function(*args))
        rows.append((label, best_time(hand, args, repeat), best_time(python, args, repeat),
                     best_time(interpreted, args, repeat)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    rows = measure(options.repeat)
    print(f"{'case':34} {'hand ms':>9} {'python ms':>10} {'interp ms':>10} "
          f"{'python/hand':>12} {'interp/hand':>12}")
    for label, hand, python, interpreted in rows:
        print(f"{label:34} {hand * 1e3:9.2f} {python * 1e3:10.2f} {interpreted * 1e3:10.2f} "
              f"{python / hand:11.2f}x {interpreted / hand:11.2f}x")
    print("targets: python/hand <= 3x and interp/hand <= 30x on (a)-(c)")


if __name__ == "__main__":
    main()
