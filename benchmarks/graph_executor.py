"""Latency of zoo models at batch 1: graph executor (cpu and python targets) vs interpreter.

Run: ``python benchmarks/graph_executor.py [model ...] [--repeat N] [--nodes K]
[--opt-level L]`` (default: mlp, mobilenet, resnet18; opt level 3, as ``irlib run`` builds,
which on the cpu target runs the convolutions channels-last). Prints build time, median and min latency in ms for each engine,
the ops left on the numpy reference, and the memory plan's activation footprint. With
``--nodes K`` it also prints the K slowest graph nodes of the cpu build (min over the
repeats, each node timed on its own) and the time per kind of node.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import interp  # noqa: E402
from interp import graph_executor  # noqa: E402
from irlib.transform import PassContext  # noqa: E402
from zoo.catalog import workload  # noqa: E402


def _times_ms(fn, repeat: int) -> tuple:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3, float(np.min(times)) * 1e3


def _describe(fn) -> str:
    """What a library function is: the fused group's anchor, or its op steps."""
    if getattr(fn, "anchor_op", None) is not None or hasattr(fn, "jit_fn"):
        return f"fused[{fn.anchor_op or 'elementwise'}]"
    program = getattr(fn, "program", fn)
    steps = getattr(program, "steps", None)
    if steps is not None:
        kind = "into" if program is not fn else "steps"
        return f"{kind}[{','.join(s[-1] for s in steps if s[0] == 'call')}]"
    return f"generated[{getattr(fn, '__name__', type(fn).__name__)}]"


def node_profile(gmod, repeat: int, top: int) -> None:
    """Print the ``top`` slowest nodes of a ready-to-run GraphModule and the time per kind."""
    calls = gmod._runtime.calls
    gmod.run()
    times = np.empty((repeat, len(calls)))
    for r in range(repeat):
        for k, (fn, args) in enumerate(calls):
            start = time.perf_counter()
            fn(*args)
            times[r, k] = time.perf_counter() - start
    best = times.min(axis=0) * 1e3
    print(f"  nodes: {len(calls)}, sum of per-node minima {best.sum():.3f} ms")
    for k in np.argsort(-best)[:top]:
        fn, args = calls[k]
        print(f"  {best[k]:8.3f} ms  node {k:3d}  {_describe(fn):28s} "
              f"{tuple(args[0].shape)} -> {tuple(args[-1].shape)}")
    kinds: dict = {}
    for k, (fn, _) in enumerate(calls):
        kinds[_describe(fn)] = kinds.get(_describe(fn), 0.0) + best[k]
    for kind, total in sorted(kinds.items(), key=lambda item: -item[1]):
        print(f"  {total:8.3f} ms  total of {kind}")


def bench(name: str, repeat: int, engines, nodes: int = 0, opt_level: int = 3) -> dict:
    mod, params = workload(name, 1)
    rng = np.random.default_rng(0)
    # Values of the unbound inputs in order (the lstm has one "data" input per step).
    inputs = [rng.standard_normal([int(d) for d in p.type_annotation.shape])
              .astype(p.type_annotation.dtype)
              for p in mod["main"].params if p.name_hint not in params]
    row = {"model": name}
    for target in ("cpu", "python"):
        if target not in engines:
            continue
        start = time.perf_counter()
        with PassContext(opt_level=opt_level):
            factory = interp.build(mod, target=target, params=params)
        row[f"build_{target}_s"] = time.perf_counter() - start
        gmod = graph_executor.GraphModule(factory["default"](interp.cpu(0)))
        for index, value in enumerate(inputs):
            gmod.set_input(index, value)
        result = gmod.benchmark(interp.cpu(0), repeat=repeat, number=1)
        row[f"graph_{target}_ms"] = result.median * 1e3
        row[f"graph_{target}_min_ms"] = result.min * 1e3
        if target == "cpu" and nodes:
            print(f"{name}: per-node profile (cpu)")
            node_profile(gmod, repeat, nodes)
        if target == "cpu":
            row["reference_ops"] = factory.report["reference_ops"]
            row["activation_kib"] = (factory.memory["planned_activation_bytes"] // 1024,
                                     factory.memory["unplanned_activation_bytes"] // 1024)
    if "interp" in engines:
        f = interp.create_executor("debug", mod, params=params).evaluate()
        row["interpreter_ms"], row["interpreter_min_ms"] = _times_ms(lambda: f(*inputs),
                                                                     max(repeat // 2, 3))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=["mlp", "mobilenet", "resnet18"])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--engines", default="cpu,python,interp")
    parser.add_argument("--nodes", type=int, default=0,
                        help="print the N slowest nodes of the cpu build")
    parser.add_argument("--opt-level", type=int, default=3,
                        help="PassContext opt_level of the builds (default 3)")
    args = parser.parse_args()
    engines = set(args.engines.split(","))
    for name in args.models:
        row = bench(name, args.repeat, engines, args.nodes, args.opt_level)
        print("  ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                        for k, v in row.items()), flush=True)


if __name__ == "__main__":
    main()
