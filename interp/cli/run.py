"""``irlib run [MODEL]``: build a model, run it once to warm up, then time the runs.

The model is a zoo name (default ``resnet18``), a ``.rly`` text file or an ``.onnx`` model.
Stages (import, optimize, compile, warm-up, run) are shown as they go. On ``--target cpu``
the compile stage compiles the fused kernels with numba (cached on disk; a cold cache shows
``compiling kernels 12/31`` on a terminal) and the warm-up run (on a cold cache it compiles
the conv, pool... kernels) is reported on its own line; the latency is the median of the
``--repeat`` timed runs after it. ``--np N`` runs the same
command as N MPI processes (``interp.distributed``; docs/distributed.md). ``--profile`` adds
the debug executor's per-node table (:mod:`interp.debug_executor`).
"""

from __future__ import annotations

import os
import statistics
import sys
import time

from .argcheck import at_least, common_checks
from .common import StageDisplay, load_model, make_inputs, parse_input_options, summarize


def add_parser(sub) -> None:
    """Register ``irlib run`` on the subparsers ``sub``."""
    run = sub.add_parser("run", help="build and run a model (default: resnet18)",
                         description=__doc__.split("\n\n")[1].replace("\n", " "))
    run.add_argument("model", nargs="?", default="resnet18",
                     help="a zoo model name (see `irlib models`), a .rly file or an .onnx "
                          "file (default resnet18)")
    run.add_argument("--batch", type=int, default=1, help="batch size (default 1)")
    run.add_argument("--target", choices=("cpu", "python"), default="cpu",
                     help="cpu (default): graph executor with numba kernels; python: the "
                          "reference interpreter on the numpy implementations")
    run.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                     help="an input value from a .npy file (repeatable); others are random")
    run.add_argument("--params", default=None, metavar="FILE.params",
                     help="weights of a .rly model (from `irlib convert ... x.params`)")
    run.add_argument("--opt-level", type=int, default=3, help="optimization level (default 3)")
    run.add_argument("--repeat", type=int, default=3,
                     help="timed runs after the warm-up run (default 3)")
    run.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    run.add_argument("--np", type=int, default=1, metavar="N",
                     help="run as N MPI processes (mpiexec from the installed MPI; see "
                          "docs/distributed.md); the model's ccl ops connect them")
    run.add_argument("--hostfile", default=None,
                     help="with --np: spread the processes over the machines of this file")
    run.add_argument("--profile", action="store_true",
                     help="after the timed runs, print the per-node profile (the debug "
                          "executor: time, share and GFLOP/s of each fused group; cpu target)")
    run.set_defaults(handler=run_command)


def _rank_argv(args) -> list:
    """The ``irlib run`` arguments each rank of an ``--np N`` run gets (all but --np)."""
    argv = ["-m", "interp", "run", args.model, "--batch", str(args.batch), "--target",
            args.target, "--opt-level", str(args.opt_level), "--repeat", str(args.repeat),
            "--seed", str(args.seed)] + (["--profile"] if args.profile else [])
    if args.params:
        argv += ["--params", args.params]
    for item in args.input:
        argv += ["--input", item]
    return argv


def launch_ranks(args) -> int:
    """``irlib run MODEL --np N``: run the same command as N MPI processes under the
    installed ``mpiexec`` (``interp.distributed.launch``); rank 0 prints the summary.
    A launch failure (no mpiexec) propagates as a DistributedError (one line, exit 1)."""
    from interp.distributed import launch
    return launch(_rank_argv(args), args.np, hostfile=args.hostfile).returncode


def run_command(args) -> int:
    """Build, optimize and run a model; print its output summary, the warm-up time and the
    median latency of the timed runs."""
    import irlib
    import interp

    common_checks(args)
    at_least(args, 1, "np")
    if args.np != 1 and interp.distributed.launched_size() <= 1:
        return launch_ranks(args)
    if interp.distributed.rank() != 0:     # one rank of an --np run: only rank 0 reports
        sys.stdout = open(os.devnull, "w", encoding="utf-8")
    display = StageDisplay()
    print(f"irlib run {args.model} (batch {args.batch}, target {args.target}, "
          f"opt-level {args.opt_level})", flush=True)
    given = parse_input_options(args.input)
    with display.stage("import"):
        mod, params = load_model(args.model, args.batch, given, params_file=args.params)
    with display.stage("optimize", f"opt-level {args.opt_level}"):
        with irlib.transform.PassContext(opt_level=args.opt_level):
            mod = irlib.transform.InferType()(mod)
    inputs = make_inputs(mod["main"], params, given, args.seed)
    with display.stage("compile", "graph executor" if args.target == "cpu"
                       else "reference interpreter"):
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
    detail = "first call" + (", compiles anchor kernels if not cached"
                             if args.target == "cpu" else "")
    started = time.perf_counter()
    with display.stage("warm-up", detail):
        func(**inputs, **bound)
    warm_up = time.perf_counter() - started
    timings, output = [], None
    with display.stage("run", f"{max(args.repeat, 1)} timed run(s)"):
        for _ in range(max(args.repeat, 1)):
            started = time.perf_counter()
            output = func(**inputs, **bound)
            timings.append(time.perf_counter() - started)
    for line in summarize(output):
        print(line)
    print(f"latency: median {1000 * statistics.median(timings):.2f} ms over "
          f"{len(timings)} run(s) (min {1000 * min(timings):.2f} ms); warm-up run "
          f"{1000 * warm_up:.2f} ms, not counted")
    if args.profile:
        _print_profile(func, args)
    return 0


def _print_profile(func, args) -> None:
    """The per-node profile of the graph the timed runs used (inputs already set)."""
    module = getattr(func, "module", None)
    if module is None:
        print("profile: only graphs on the graph executor are profiled (use --target cpu; "
              "this model runs on the interpreter)")
        return
    from interp.debug_executor import GraphModuleDebug
    report = GraphModuleDebug(module).profile(repeat=max(args.repeat, 1), warmup=0)
    print(report.table(top=20, sort=True))
