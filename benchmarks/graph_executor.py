"""Latency of zoo models at batch 1: graph executor (cpu and python targets) vs interpreter.

Run: ``python benchmarks/graph_executor.py [model ...] [--repeat N]`` (default: mlp,
mobilenet, resnet18). Prints build time, median and min latency in ms for each engine, the
ops left on the numpy reference, and the memory plan's activation footprint.
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
from zoo.catalog import workload  # noqa: E402


def _times_ms(fn, repeat: int) -> tuple:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3, float(np.min(times)) * 1e3


def bench(name: str, repeat: int, engines) -> dict:
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
        factory = interp.build(mod, target=target, params=params)
        row[f"build_{target}_s"] = time.perf_counter() - start
        gmod = graph_executor.GraphModule(factory["default"](interp.cpu(0)))
        for index, value in enumerate(inputs):
            gmod.set_input(index, value)
        result = gmod.benchmark(interp.cpu(0), repeat=repeat, number=1)
        row[f"graph_{target}_ms"] = result.median * 1e3
        row[f"graph_{target}_min_ms"] = result.min * 1e3
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
    args = parser.parse_args()
    engines = set(args.engines.split(","))
    for name in args.models:
        row = bench(name, args.repeat, engines)
        print("  ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                        for k, v in row.items()), flush=True)


if __name__ == "__main__":
    main()
