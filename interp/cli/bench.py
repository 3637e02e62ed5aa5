"""``irlib bench MODEL``: irlib's latency next to other engines on the same model.

Each engine runs in a process of its own (``interp.cli.bench_worker``), back to back, on the
same seeded inputs: irlib's graph executor; with ``--vs onnxruntime`` onnxruntime on the
model exported by ``irlib.frontend.onnx.to_onnx``; with ``--vs torch`` the same graph run as
PyTorch ops. The table gives each engine's median and minimum of the timed runs (after one
warm-up run, reported apart), the ratio to irlib and the largest difference of its output
from irlib's. ``--plot out.png`` draws the medians as a bar chart (matplotlib).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

from .argcheck import common_checks
from .common import CLIInputError, StageDisplay, load_model, make_inputs, typed

ENGINES = ("onnxruntime", "torch")


def add_parser(sub) -> None:
    """Register ``irlib bench`` on the subparsers ``sub``."""
    bench = sub.add_parser("bench", help="latency of irlib next to onnxruntime / torch",
                           description=__doc__.split("\n\n")[1].replace("\n", " "))
    bench.add_argument("model", help="a zoo model name, a .rly file or an .onnx file")
    bench.add_argument("--vs", action="append", default=[], choices=ENGINES,
                       help="an engine to compare with (repeatable)")
    bench.add_argument("--batch", type=int, default=1, help="batch size (default 1)")
    bench.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                       help="threads each engine may use (default: all cores)")
    bench.add_argument("--repeat", type=int, default=20,
                       help="timed runs per engine after one warm-up run (default 20)")
    bench.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    bench.add_argument("--plot", default=None, metavar="OUT.png",
                       help="save a bar chart of the median latencies (needs matplotlib)")
    bench.set_defaults(handler=bench_command)


def _worker_env(threads: int) -> dict:
    """The environment of a worker: every thread pool limited to ``threads``."""
    env = dict(os.environ)
    for name in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                 "MKL_NUM_THREADS"):
        env[name] = str(threads)
    return env


def run_engine(engine: str, args, workdir: str, onnx_path: str | None) -> dict:
    """Run one engine's worker process; its JSON result plus its output array.

    Raises:
        CLIInputError: the worker failed (its last stderr line is in the message).
    """
    output = os.path.join(workdir, f"{engine}.npy")
    command = [sys.executable, "-m", "interp.cli.bench_worker", engine, args.model,
               "--inputs", os.path.join(workdir, "inputs.npz"), "--output", output,
               "--batch", str(args.batch), "--threads", str(args.threads),
               "--repeat", str(args.repeat)]
    if onnx_path:
        command += ["--onnx", onnx_path]
    done = subprocess.run(command, capture_output=True, text=True, env=_worker_env(args.threads))
    if done.returncode != 0:
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        raise CLIInputError(f"the {engine} run failed: {lines[-1] if lines else 'no output'}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["output"] = np.load(output)
    return result


def table(results: list) -> list:
    """The lines of the latency table of ``results`` (irlib first)."""
    base = statistics.median(results[0]["times_ms"])
    lines = [f"{'engine':<12} {'median ms':>10} {'min ms':>9} {'warm-up ms':>11} "
             f"{'vs irlib':>9} {'max |diff|':>11}"]
    for result in results:
        median = statistics.median(result["times_ms"])
        diff = float(np.max(np.abs(result["output"].astype("float64")
                                   - results[0]["output"].astype("float64")))) \
            if result["output"].shape == results[0]["output"].shape else float("nan")
        lines.append(f"{result['engine']:<12} {median:>10.3f} {min(result['times_ms']):>9.3f} "
                     f"{result['warmup_ms']:>11.1f} {median / base:>8.2f}x {diff:>11.3g}")
    return lines


#: the --plot formats (matplotlib's Agg backend writes these)
PLOT_FORMATS = (".png", ".svg", ".pdf", ".jpg", ".jpeg")


def check_plot_path(path: str) -> None:
    """Raise :class:`CLIInputError` before any engine runs when ``--plot`` ``path`` has an
    extension the chart cannot be saved as, or its folder does not exist."""
    if not path.lower().endswith(PLOT_FORMATS):
        raise CLIInputError(f"--plot {path}: the format is chosen by the extension, one of "
                            f"{', '.join(PLOT_FORMATS)}")
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise CLIInputError(f"--plot {path}: no such folder: {folder}")


def plot(results: list, path: str, title: str) -> None:
    """Save a bar chart of the engines' median latencies to ``path``."""
    try:
        import matplotlib
    except ImportError:
        raise CLIInputError("--plot needs matplotlib: pip install 'irlib[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = [r["engine"] for r in results]
    medians = [statistics.median(r["times_ms"]) for r in results]
    figure, axes = plt.subplots(figsize=(1.6 + 1.4 * len(names), 3.2))
    bars = axes.bar(names, medians, color=["#2e86c1", "#e67e22", "#27ae60"][:len(names)])
    axes.bar_label(bars, labels=[f"{m:.3g} ms" for m in medians])
    axes.set_ylabel("median latency (ms)")
    axes.set_title(title)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def bench_command(args) -> int:
    """Time irlib and each ``--vs`` engine in their own processes; print the table."""
    if args.threads < 1 or args.repeat < 1 or args.batch < 1:
        raise CLIInputError("--threads, --repeat and --batch must be positive")
    common_checks(args)
    if args.plot:
        check_plot_path(args.plot)
    display = StageDisplay()
    print(f"irlib bench {args.model} (batch {args.batch}, {args.threads} thread(s), "
          f"{args.repeat} timed runs per engine)", flush=True)
    with tempfile.TemporaryDirectory(prefix="irlib-bench-") as workdir:
        with display.stage("import"):
            mod, params = load_model(args.model, args.batch)
            mod = typed(mod)
            inputs = make_inputs(mod["main"], params, {}, args.seed)
            if "torch" in args.vs:
                from .torch_engine import check_supported
                check_supported(mod["main"])     # fail before any engine runs
            np.savez(os.path.join(workdir, "inputs.npz"), **inputs)
        onnx_path = None
        if "onnxruntime" in args.vs:
            from irlib.frontend.onnx import to_onnx
            with display.stage("export", "to_onnx"):
                onnx_path = os.path.join(workdir, "model.onnx")
                with open(onnx_path, "wb") as handle:
                    handle.write(to_onnx(mod, params).SerializeToString())
        results = []
        for engine in ["irlib"] + list(dict.fromkeys(args.vs)):
            with display.stage(engine, "own process"):
                results.append(run_engine(engine, args, workdir, onnx_path))
    for line in table(results):
        print(line)
    if args.plot:
        plot(results, args.plot, f"{args.model}, batch {args.batch}, {args.threads} thread(s)")
        print(f"wrote {args.plot}")
    return 0
