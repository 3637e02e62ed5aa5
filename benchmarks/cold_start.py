"""Cold and warm start of the graph executor: the time to a model's first result in a fresh
process, with every kernel cache empty (cold) and then filled (warm). Issue #17 item 5.

Run: ``python benchmarks/cold_start.py [--models resnet18,resnet50] [--repeat 1]
[--json out.json]``.

For each model and repetition the parent makes an empty temporary directory and runs this
script with ``--worker`` twice in a row, both times with ``IRLIB_CACHE_DIR`` (the generated
fused kernels' sources and, next to them, numba's cache of their machine code) and
``NUMBA_CACHE_DIR`` (numba's cache of the ``jitkernels`` kernels, otherwise in
``jitkernels/*/__pycache__``) pointing into it: the first run starts cold, the second warm.
A worker does what ``irlib run MODEL --repeat 1`` does up to its first result: imports
irlib, builds the zoo workload (``zoo.catalog.workload``), builds it for the graph executor
under ``PassContext(opt_level=3)`` (optimisation, fusion, code generation), makes the
executor (which compiles or loads every generated kernel: :mod:`interp.kernel_compile`) and
runs it once (the anchor kernels, conv, pool..., compile on this first call). It reports the
wall time of each stage, its CPU time (user + system; less sensitive than wall time to other
work on a shared machine) and how many kernels numba really compiled (``numba:compile``
events: one per function and argument types), of which how many were generated fused
kernels.

The table: model, cold s and warm s (wall time of the whole worker process, interpreter
start-up included: the time a user waits), cold CPU s, kernels compiled cold (generated
ones in brackets), and the cold time split into build / kernel compile / first run. With
``--repeat N`` each figure is the median of N cold/warm pairs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MODELS = ("resnet18", "resnet50")
"""The models issue #17 names."""


def worker(model: str) -> dict:
    """Build and run ``model`` once in this process; the stage times and compile counts."""
    started = time.perf_counter()
    from numba.core import event

    class _Count(event.Listener):
        def __init__(self):
            self.count = 0

        def on_start(self, event_):
            # numba's own overload implementations compile nested inside; count the
            # irlib kernels (generated or jitkernels) only
            module = getattr(event_.data["dispatcher"].py_func, "__module__", "") or ""
            if not module.startswith("numba."):
                self.count += 1

        def on_end(self, event_):
            pass

    counter = _Count()
    event.register("numba:compile", counter)
    import numpy as np

    import interp
    import irlib
    from interp.graph_executor import GraphModule
    from zoo import catalog
    imported = time.perf_counter()
    mod, params = catalog.workload(model, 1)
    with irlib.transform.PassContext(opt_level=3):
        factory = interp.build(mod, target="cpu", params=params)
    built = time.perf_counter()
    executor = factory["default"](interp.cpu(0))
    created = time.perf_counter()
    gmod = GraphModule(executor)
    shapes, dtypes = gmod.get_input_info()
    rng = np.random.default_rng(0)
    for name, shape in shapes.items():
        gmod.set_input(name, rng.standard_normal(shape).astype(dtypes[name]))
    gmod.run()
    gmod.get_output(0).numpy()
    done = time.perf_counter()
    cpu = os.times()
    stats = executor.compile_stats
    return {"model": model, "import_s": imported - started, "build_s": built - imported,
            "compile_s": created - built, "first_run_s": done - created,
            "in_process_s": done - started, "cpu_s": cpu.user + cpu.system,
            "numba_compiles": counter.count, "generated_compiled": stats.compiled,
            "generated_kernels": stats.kernels}


def _run_worker(model: str, cache: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["IRLIB_CACHE_DIR"] = cache
    env["NUMBA_CACHE_DIR"] = os.path.join(cache, "numba")
    env["IRLIB_PROGRESS"] = "0"
    started = time.perf_counter()
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", model],
                         capture_output=True, text=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - started
    if out.returncode != 0:
        raise RuntimeError(f"worker for {model} failed:\n{out.stderr}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["process_s"] = wall
    return result


def measure(model: str) -> dict:
    """One cold then one warm worker on a fresh cache directory."""
    with tempfile.TemporaryDirectory(prefix="irlib-cold-") as cache:
        cold = _run_worker(model, cache)
        warm = _run_worker(model, cache)
    return {"cold": cold, "warm": warm}


def _median(runs: list, phase: str, key: str) -> float:
    return statistics.median(run[phase][key] for run in runs)


def table(rows: dict) -> str:
    """The markdown table of ``{model: [measure(), ...]}``."""
    lines = ["| model | cold s | warm s | cold CPU s | warm CPU s | kernels compiled cold "
             "(generated) | cold: build / kernel compile / first run s |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for model, runs in rows.items():
        split = " / ".join(f"{_median(runs, 'cold', k):.1f}"
                           for k in ("build_s", "compile_s", "first_run_s"))
        lines.append(
            f"| {model} | {_median(runs, 'cold', 'process_s'):.1f} | "
            f"{_median(runs, 'warm', 'process_s'):.1f} | {_median(runs, 'cold', 'cpu_s'):.1f} | "
            f"{_median(runs, 'warm', 'cpu_s'):.1f} | "
            f"{int(_median(runs, 'cold', 'numba_compiles'))} "
            f"({int(_median(runs, 'cold', 'generated_compiled'))}) | {split} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    """Command-line entry point (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS),
                        help="comma-separated zoo model names (default resnet18,resnet50)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="cold/warm pairs per model; the table gives medians (default 1)")
    parser.add_argument("--json", default=None, help="also write every measurement here")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker)))
        return 0
    with open("/proc/loadavg") if os.path.exists("/proc/loadavg") else open(os.devnull) as f:
        load = f.read().split()[:3]
    print(f"cold start, {os.cpu_count()} cores, load average {' '.join(load) or 'n/a'}")
    rows = {}
    for model in args.models.split(","):
        rows[model] = [measure(model) for _ in range(max(args.repeat, 1))]
        runs = rows[model]
        print(f"  {model}: cold {[round(r['cold']['process_s'], 1) for r in runs]} s, warm "
              f"{[round(r['warm']['process_s'], 1) for r in runs]} s", flush=True)
    print(table(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
