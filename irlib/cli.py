"""The ``irlib`` command line.

``irlib run [MODEL]`` is the main job: it builds a model (a zoo name, default ``resnet18``,
a ``.rly`` text file or an ``.onnx`` model), optimizes and type-checks it, runs it on the given or a seeded random
input, and prints the output summary (shape, dtype, top-5 for classifiers) and the latency
(median of the repeats). Each stage — import, optimize, compile, run — is shown as it goes.
``--target cpu`` (the default) builds the model for the graph executor (fused numba kernels);
``--target python`` runs it on the reference interpreter over the numpy implementations.
``--np N`` runs it as N MPI processes (``interp.distributed``; docs/distributed.md).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from contextlib import contextmanager

import numpy as np


class StageDisplay:
    """Shows the build stages as they run: a live spinner on a terminal, plain lines else."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stdout
        self.console = None
        if self.stream.isatty():
            from rich.console import Console
            self.console = Console(file=self.stream)

    @contextmanager
    def stage(self, name: str, detail: str = ""):
        """Time one stage, showing it while it runs and its duration when done."""
        started = time.perf_counter()
        if self.console is not None:
            with self.console.status(f"[bold]{name}[/bold] {detail}"):
                yield
        else:
            yield
        elapsed = 1000 * (time.perf_counter() - started)
        line = f"  [{name:<8}] {detail + ' ' if detail else ''}{elapsed:.1f} ms"
        print(line, file=self.stream, flush=True)


def _onnx_shape_dict(path: str, batch: int, given: dict) -> dict:
    """Static input shapes for an ONNX model: from ``--input`` files, else the model's own
    dims with unknown ones set to ``batch`` (first axis) or 1."""
    import onnx
    graph = onnx.load(path, load_external_data=False).graph
    initializers = {init.name for init in graph.initializer}
    shapes = {}
    for value in graph.input:
        if value.name in initializers:
            continue
        if value.name in given:
            shapes[value.name] = tuple(np.load(given[value.name], mmap_mode="r").shape)
            continue
        dims = value.type.tensor_type.shape.dim
        shapes[value.name] = tuple(
            d.dim_value if d.HasField("dim_value") else (batch if axis == 0 else 1)
            for axis, d in enumerate(dims))
    return shapes


def load_model(model: str, batch: int, given: dict | None = None):
    """``(mod, params)`` for a zoo name, a ``.rly`` file or an ``.onnx`` file."""
    if model.endswith(".onnx"):
        from irlib.frontend.onnx import from_onnx
        # Initializers are folded into the module as constants, so no params are passed.
        mod, _ = from_onnx(model, shape_dict=_onnx_shape_dict(model, batch, given or {}))
        return mod, {}
    if model.endswith(".rly"):
        import irlib
        with open(model, encoding="utf-8") as handle:
            return irlib.parse(handle.read(), source_name=model), {}
    from zoo import catalog
    return catalog.workload(model, batch)


def make_inputs(func, params: dict, given: dict, seed: int) -> dict:
    """Values for the non-parameter inputs of ``func``: from ``given`` or seeded random."""
    rng = np.random.default_rng(seed)
    inputs = {}
    for param in func.params:
        name = param.name_hint
        if name in params or name in inputs:
            continue
        if name in given:
            inputs[name] = np.load(given[name])
            continue
        ty = param.checked_type
        shape = tuple(int(d) for d in ty.shape)
        if ty.dtype.startswith(("int", "uint")):
            inputs[name] = rng.integers(0, 10, shape).astype(ty.dtype)
        elif ty.dtype == "bool":
            inputs[name] = rng.integers(0, 2, shape).astype(bool)
        else:
            inputs[name] = rng.standard_normal(shape).astype(ty.dtype)
    unknown = set(given) - set(inputs)
    if unknown:
        raise SystemExit(f"irlib run: --input names {sorted(unknown)} are not inputs of the "
                         f"model; inputs are {sorted(inputs)}")
    return inputs


def summarize(output) -> list:
    """Lines describing a model output (tensors, tuples of tensors)."""
    if isinstance(output, (tuple, list)) or hasattr(output, "fields"):
        lines = []
        for index, item in enumerate(output):
            lines += [f"[{index}] {line}" for line in summarize(item)]
        return lines
    array = np.asarray(output)
    lines = [f"output: shape={tuple(array.shape)} dtype={array.dtype}"]
    if array.ndim == 2 and array.shape[1] > 1:
        top = np.argsort(-array[0])[:5]
        lines.append("top-5 of sample 0: " + ", ".join(f"{i}:{array[0, i]:.4f}" for i in top))
    elif array.size:
        lines.append(f"mean={array.mean():.6g} min={array.min():.6g} max={array.max():.6g}")
    return lines


def _rank_argv(args) -> list:
    """The ``irlib run`` arguments each rank of an ``--np N`` run gets (all but --np)."""
    argv = ["-m", "irlib", "run", args.model, "--batch", str(args.batch), "--target",
            args.target, "--opt-level", str(args.opt_level), "--repeat", str(args.repeat),
            "--seed", str(args.seed)]
    for item in args.input:
        argv += ["--input", item]
    return argv


def launch_ranks(args) -> int:
    """``irlib run MODEL --np N``: run the same command as N MPI processes under the
    installed ``mpiexec`` (``interp.distributed.launch``); rank 0 prints the summary."""
    from interp.distributed import DistributedError, launch
    try:
        return launch(_rank_argv(args), args.np, hostfile=args.hostfile).returncode
    except DistributedError as error:
        print(f"irlib run: {error}", file=sys.stderr)
        return 1


def run_command(args) -> int:
    """Build, optimize and run a model; print its output summary and latency."""
    import irlib
    import interp

    if getattr(args, "np", 1) != 1 and interp.distributed.launched_size() <= 1:
        return launch_ranks(args)
    if interp.distributed.rank() != 0:     # one rank of an --np run: only rank 0 reports
        sys.stdout = open(os.devnull, "w", encoding="utf-8")
    display = StageDisplay()
    print(f"irlib run {args.model} (batch {args.batch}, target {args.target}, "
          f"opt-level {args.opt_level})", flush=True)
    given = dict(item.split("=", 1) for item in args.input)
    try:
        with display.stage("import"):
            mod, params = load_model(args.model, args.batch, given)
        with display.stage("optimize", f"opt-level {args.opt_level}"):
            with irlib.transform.PassContext(opt_level=args.opt_level):
                mod = irlib.transform.InferType()(mod)
        with display.stage("compile", "graph executor" if args.target == "cpu"
                           else "reference interpreter"):
            inputs = make_inputs(mod["main"], params, given, args.seed)
            with irlib.transform.PassContext(opt_level=args.opt_level):
                if args.target == "cpu":
                    executor = interp.create_executor("graph", mod=mod, device=interp.cpu(0),
                                                      target="cpu", params=params)
                    bound = {}
                else:
                    executor = interp.create_executor("debug", mod=mod, device=interp.cpu(0),
                                                      target="python")
                    bound = params
                func = executor.evaluate()
            if args.target == "cpu":
                func(**inputs)  # first call compiles the numba kernels (cached on disk)
    except irlib.IRError as error:
        print(f"irlib run: {error}", file=sys.stderr)
        return 1
    timings, output = [], None
    with display.stage("run", f"{args.repeat} repeat(s)"):
        for _ in range(max(args.repeat, 1)):
            started = time.perf_counter()
            output = func(**inputs, **bound)
            timings.append(time.perf_counter() - started)
    for line in summarize(output):
        print(line)
    print(f"latency: median {1000 * statistics.median(timings):.2f} ms over "
          f"{len(timings)} run(s)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``irlib`` command."""
    parser = argparse.ArgumentParser(
        prog="irlib", description="irlib: a readable deep-learning IR toolkit and runtime.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = sub.add_parser("run", help="build and run a model (default: resnet18)")
    run.add_argument("model", nargs="?", default="resnet18",
                     help="a zoo model name (see `irlib models`), a .rly file or an .onnx "
                          "file (default resnet18)")
    run.add_argument("--batch", type=int, default=1, help="batch size (default 1)")
    run.add_argument("--target", choices=("cpu", "python"), default="cpu",
                     help="cpu (default): graph executor with numba kernels; python: the "
                          "reference interpreter on the numpy implementations")
    run.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                     help="an input value from a .npy file (repeatable); others are random")
    run.add_argument("--opt-level", type=int, default=3, help="optimization level (default 3)")
    run.add_argument("--repeat", type=int, default=3, help="timed runs (default 3)")
    run.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    run.add_argument("--np", type=int, default=1, metavar="N",
                     help="run as N MPI processes (mpiexec from the installed MPI; see "
                          "docs/distributed.md); the model's ccl ops connect them")
    run.add_argument("--hostfile", default=None,
                     help="with --np: spread the processes over the machines of this file")
    run.set_defaults(handler=run_command)
    models = sub.add_parser("models", help="list the model names `irlib run` accepts")
    models.set_defaults(handler=models_command)
    ops = sub.add_parser("ops", help="list the registered operators with their pattern kinds")
    ops.add_argument("--markdown", action="store_true",
                     help="print the full operator reference (the content of docs/ops.md)")
    ops.set_defaults(handler=ops_command)
    return parser


def ops_command(args) -> int:
    """Print the registered ops and pattern kinds, or with --markdown the docs/ops.md text."""
    from .op import docgen
    sys.stdout.write(docgen.ops_markdown() if args.markdown else docgen.ops_listing())
    return 0


def models_command(args) -> int:
    """Print the zoo model names, one a line."""
    from zoo import catalog
    print("\n".join(catalog.names()))
    return 0


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
