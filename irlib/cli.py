"""The ``irlib`` command line.

``irlib run [MODEL]`` is the main job: it builds a model, type-checks it, runs it on a seeded
random input through the op reference implementations and prints the output summary and the
latency. Until the model zoo and the graph executor land, MODEL is one of the built-in demo
models (:data:`DEMO_MODELS`); later issues add zoo names, ``.rly`` and ``.onnx`` files.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np


def _mlp_demo(batch: int, seed: int):
    """A 784-128-64-10 MLP with softmax, weights drawn from a seeded generator."""
    import irlib
    rng = np.random.default_rng(seed)
    data = irlib.var("data", shape=(batch, 784))
    layer, params = data, {}
    for index, (fan_in, units) in enumerate([(784, 128), (128, 64), (64, 10)], start=1):
        weight = irlib.var(f"fc{index}_weight", shape=(units, fan_in))
        bias = irlib.var(f"fc{index}_bias", shape=(units,))
        bound = np.sqrt(6.0 / (fan_in + units))
        params[weight] = rng.uniform(-bound, bound, (units, fan_in)).astype("float32")
        params[bias] = np.zeros(units, "float32")
        layer = irlib.nn.bias_add(irlib.nn.dense(layer, weight, units=units), bias)
        layer = irlib.nn.relu(layer) if index < 3 else irlib.nn.softmax(layer)
    inputs = {data: rng.standard_normal((batch, 784)).astype("float32")}
    return irlib.Function([data] + list(params), layer), params, inputs


DEMO_MODELS = {"mlp": _mlp_demo}
"""Built-in models ``irlib run`` knows: name -> builder(batch, seed) -> (func, params, inputs)."""


def _stage(name: str, started: float) -> float:
    now = time.perf_counter()
    print(f"  [{name:<8}] done in {1000 * (now - started):8.2f} ms", flush=True)
    return now


def run_command(args) -> int:
    """Build, type-check and run a model; print its output summary and latency."""
    import irlib
    from irlib.testing.dataflow_eval import evaluate

    if args.model not in DEMO_MODELS:
        print(f"irlib run: unknown model {args.model!r}; available: {', '.join(DEMO_MODELS)}",
              file=sys.stderr)
        return 2
    print(f"irlib run {args.model} (batch {args.batch}, target python)")
    started = time.perf_counter()
    func, params, inputs = DEMO_MODELS[args.model](args.batch, args.seed)
    started = _stage("import", started)
    typed = irlib.infer_type(func)
    started = _stage("optimize", started)
    env = dict(zip(func.params, [inputs.get(p, params.get(p)) for p in func.params]))
    _stage("compile", started)
    timings, output = [], None
    for _ in range(max(args.repeat, 1)):
        t0 = time.perf_counter()
        output = evaluate(func.body, env)
        timings.append(time.perf_counter() - t0)
    print(f"  [{'run':<8}] {len(timings)} run(s)")
    ret = typed.checked_type.ret_type
    print(f"output: shape={tuple(output.shape)} dtype={output.dtype} (inferred type {ret})")
    if output.ndim == 2:
        top = np.argsort(-output[0])[:5]
        print("top-5 of sample 0: " + ", ".join(f"{i}:{output[0, i]:.4f}" for i in top))
    print(f"latency: median {1000 * statistics.median(timings):.3f} ms over {len(timings)} run(s)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``irlib`` command."""
    parser = argparse.ArgumentParser(
        prog="irlib", description="irlib: a readable deep-learning IR toolkit and runtime.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = sub.add_parser("run", help="build and run a model (default: the mlp demo)")
    run.add_argument("model", nargs="?", default="mlp",
                     help=f"model to run: one of {', '.join(DEMO_MODELS)} (default mlp)")
    run.add_argument("--batch", type=int, default=1, help="batch size (default 1)")
    run.add_argument("--repeat", type=int, default=3, help="timed runs (default 3)")
    run.add_argument("--seed", type=int, default=0, help="seed of weights and input")
    run.set_defaults(handler=run_command)
    return parser


def main(argv=None) -> int:
    """Entry point of the ``irlib`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "handler", None) is None:
        parser.print_help()
        return 0
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
