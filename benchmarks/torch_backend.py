"""Latency of torch models under ``torch.compile(backend=relax_dynamo())`` next to torch eager
and torch.compile's default backend (inductor), in one run.

Models (plain torch, from tests/frontend/torch/_models.py): a torchvision-layout ResNet-18
(width 64, 1x3x224x224) and a BERT-style encoder (hidden 256, 4 heads, 2 layers, batch 1,
sequence 128). Each engine runs in its own process (two thread pools in one process slow
each other down); the compile time (first call) and the median of ``--calls`` calls are
printed, one row per model and engine. Usage::

    python benchmarks/torch_backend.py [--models resnet18 bert] [--calls 30]
                                       [--engines eager,inductor,irlib]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _models_module():
    spec = importlib.util.spec_from_file_location(
        "torch_test_models", ROOT / "tests" / "frontend" / "torch" / "_models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make(name: str):
    """``(model, inputs)`` of benchmark model ``name``."""
    import torch
    models = _models_module()
    torch.manual_seed(0)
    if name == "resnet18":
        model = models._randomize_norms(models.ResNet18(width=64, num_classes=1000))
        return model, (torch.randn(1, 3, 224, 224),)
    if name == "bert":
        model = models.BertEncoder(vocab=1000, hidden=256, heads=4, inter=1024, layers=2,
                                   max_len=128).eval()
        ids = torch.randint(0, 1000, (1, 128))
        return model, (ids, torch.ones(1, 128, dtype=torch.int64))
    raise SystemExit(f"unknown model {name!r}")


def run_engine(name: str, engine: str, calls: int) -> dict:
    """Time one engine on one model in this process."""
    import torch
    model, inputs = make(name)
    if engine == "eager":
        fn = model
    elif engine == "inductor":
        fn = torch.compile(model, dynamic=False)
    elif engine == "irlib":
        from irlib.frontend.torch import relax_dynamo
        fn = torch.compile(model, backend=relax_dynamo(), dynamic=False)
    else:
        raise SystemExit(f"unknown engine {engine!r}")
    with torch.no_grad():
        start = time.perf_counter()
        fn(*inputs)
        first = time.perf_counter() - start
        for _ in range(3):
            fn(*inputs)
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            fn(*inputs)
            times.append(time.perf_counter() - start)
    times.sort()
    return {"model": name, "engine": engine, "first_call_s": round(first, 2),
            "median_ms": round(times[len(times) // 2] * 1e3, 2),
            "min_ms": round(times[0] * 1e3, 2), "threads": torch.get_num_threads()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=["resnet18", "bert"])
    parser.add_argument("--engines", default="eager,inductor,irlib")
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "ENGINE"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_engine(args.child[0], args.child[1], args.calls)))
        return
    print(f"{'model':10s} {'engine':9s} {'first call s':>12s} {'median ms':>10s} "
          f"{'min ms':>8s}")
    for name in args.models:
        for engine in args.engines.split(","):
            done = subprocess.run([sys.executable, __file__, "--child", name, engine,
                                   "--calls", str(args.calls)], capture_output=True, text=True)
            lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
            if done.returncode or not lines:
                tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
                print(f"{name:10s} {engine:9s} failed: {tail[0]}", flush=True)
                continue
            row = json.loads(lines[-1])
            print(f"{name:10s} {engine:9s} {row['first_call_s']:12.2f} "
                  f"{row['median_ms']:10.2f} {row['min_ms']:8.2f}", flush=True)


if __name__ == "__main__":
    main()
