"""irlib's graph executor vs onnxruntime on the zoo models, each engine in its own process.

Run: ``python benchmarks/vs_onnxruntime.py [--models resnet18,mobilenet] [--repeat 20]
[--threads N] [--json out.json] [--disabled-pass FuseAttention]`` (default: every model of
:data:`MODELS`; the transformers of :data:`TRANSFORMERS`, ``--models bert,gpt2,whisper``,
are torch models exported to ONNX by ``benchmarks/transformer_models.py`` and imported by
irlib with ``from_onnx``, so both engines run the same file; likewise the small models of
:data:`SMALL`, ``--models kws,vad``, from ``benchmarks/small_models.py``).

For each model (batch 1): the parent builds the zoo workload (``zoo.catalog.workload``),
exports it with ``irlib.frontend.onnx.to_onnx`` and draws seeded random inputs. Then, back to
back, one worker process per engine (this script with ``--worker``) loads the model, runs it
once to warm up (irlib's first run compiles the numba kernels, cached on disk) and
``--repeat`` timed times, and reports its times and its peak resident memory
(the whole process: interpreter, libraries, weights, buffers; see :func:`peak_rss_mib`):

* **irlib**: the zoo module built as ``irlib run`` builds it (``PassContext(opt_level=3)``,
  ``create_executor("graph", target="cpu")``, weights bound at build), called with the inputs
  (setting inputs, running the graph and copying the outputs out are timed);
* **onnxruntime**: an ``InferenceSession`` (CPU provider, ``intra_op_num_threads`` =
  ``--threads``, default graph optimizations) on the exported model, ``session.run``.

Each worker has every thread pool (numba, OpenMP, OpenBLAS, MKL) limited to ``--threads``
(default: all cores). The table gives the median ms of each engine, the ratio irlib /
onnxruntime (below 1: irlib is faster), the peak RSS of each process in MiB and the largest
difference between the two engines' first outputs relative to the largest magnitude of
onnxruntime's (a sanity check that both ran the same model), then the median CPU time
(``time.process_time``, all threads of the process) per run of each engine and its ratio.
Timings on a shared machine are noisy: compare ratios taken in one run. On a machine whose
cores other work keeps busy, wall times mostly measure how each engine's thread pool copes
with waiting for a core (onnxruntime's spinning workers suffer most); the CPU times stay
close to the work done, so read both.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

MODELS = ("mlp", "lstm", "dcgan", "squeezenet1.1", "mobilenet", "resnet18", "resnet50",
          "densenet121", "inception_v3", "vgg16")
"""The models of issue #17's table, in its order."""

TRANSFORMERS = ("bert", "gpt2", "whisper")
"""Transformer models of issue #24, written in torch and exported to ONNX
(``benchmarks/transformer_models.py``): irlib imports the same ONNX file with ``from_onnx``."""

SMALL = ("kws", "vad", "bert_int8")
"""Small and quantized models of issue #24 (``benchmarks/small_models.py``: a
keyword-spotting CNN, a silero-vad-shaped LSTM with an ``If``, a MiniLM-sized BERT quantized
by ``quantize_dynamic``), ONNX files both engines load."""

ENGINES = ("irlib", "onnxruntime")


# -- the workers (one process per engine) ------------------------------------------------------

def _load_inputs(path: str) -> list:
    """The input arrays saved by the parent, in ``main``'s parameter order."""
    with np.load(path) as data:
        return [data[f"arg{k}"] for k in range(len(data.files))]


def _irlib_call(model: str, inputs: list, threads: int, onnx_path: str = "",
                disabled: tuple = ()):
    """A callable running the model on irlib's graph executor, built as ``irlib run``: the
    zoo workload, or for a transformer the ONNX file imported with ``from_onnx``;
    ``disabled`` names passes to leave out (``--disabled-pass``)."""
    import irlib
    import interp
    if model in TRANSFORMERS or model in SMALL:
        import onnx
        from irlib.frontend.onnx import from_onnx
        mod, params = from_onnx(onnx.load(onnx_path))
    else:
        from zoo.catalog import workload
        mod, params = workload(model, 1)
    with irlib.transform.PassContext(opt_level=3, disabled_pass=list(disabled)):
        mod = irlib.transform.InferType()(mod)
        func = interp.create_executor("graph", mod=mod, device=interp.cpu(0), target="cpu",
                                      params=params).evaluate()
    return lambda: func(*inputs)


def _onnxruntime_call(onnx_path: str, inputs: list, threads: int):
    """A callable running the exported model on onnxruntime's CPU provider."""
    import onnxruntime
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(onnx_path, options,
                                           providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    if len(names) != len(inputs):
        raise SystemExit(f"the ONNX model has {len(names)} inputs, irlib's main "
                         f"{len(inputs)}")
    feed = dict(zip(names, inputs))
    return lambda: session.run(None, feed)


def _first_array(output) -> np.ndarray:
    """The first tensor of an engine's output, as numpy."""
    while isinstance(output, (list, tuple)) or hasattr(output, "fields"):
        output = output[0]
    return np.asarray(output.numpy() if hasattr(output, "numpy") else output)


def worker(args) -> int:
    """Time one engine in this process; print one JSON line (times, RSS)."""
    inputs = _load_inputs(args.inputs)
    started = time.perf_counter()
    if args.worker == "irlib":
        call = _irlib_call(args.model, inputs, args.threads, args.onnx,
                           tuple(p for p in args.disabled_pass.split(",") if p))
    else:
        call = _onnxruntime_call(args.onnx, inputs, args.threads)
    build_s = time.perf_counter() - started
    started = time.perf_counter()
    output = call()
    warmup_ms = 1e3 * (time.perf_counter() - started)
    times, cpu_times = [], []
    for _ in range(max(args.repeat, 1)):
        started, cpu_started = time.perf_counter(), time.process_time()
        call()
        times.append(1e3 * (time.perf_counter() - started))
        cpu_times.append(1e3 * (time.process_time() - cpu_started))
    np.save(args.output, _first_array(output))
    print(json.dumps({"engine": args.worker, "build_s": build_s, "warmup_ms": warmup_ms,
                      "times_ms": times, "cpu_ms": cpu_times,
                      "peak_rss_mib": peak_rss_mib()}))
    return 0


def peak_rss_mib() -> float:
    """This process's peak resident memory in MiB.

    ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` is the first choice, but Linux carries it
    over an ``exec``: a worker started from a parent that holds a model reports at least the
    parent's peak. So where ``/proc/self/status`` has ``VmHWM`` (the high-water mark of this
    process image's own memory) that is used; both figures are the same otherwise.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0          # kB
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2.0 ** 20 if sys.platform == "darwin" else peak / 1024.0  # bytes / KiB


# -- the parent ---------------------------------------------------------------------------------

def _worker_env(threads: int) -> dict:
    """The environment of a worker: every thread pool limited to ``threads``."""
    env = dict(os.environ)
    for name in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                 "MKL_NUM_THREADS"):
        env[name] = str(threads)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_worker(engine: str, model: str, workdir: str, args) -> dict:
    """Run one engine's worker process; its JSON result plus its first output array."""
    output = os.path.join(workdir, f"{engine}.npy")
    command = [sys.executable, os.path.abspath(__file__), "--worker", engine,
               "--model", model, "--inputs", os.path.join(workdir, "inputs.npz"),
               "--output", output, "--onnx", os.path.join(workdir, "model.onnx"),
               "--repeat", str(args.repeat), "--threads", str(args.threads),
               "--disabled-pass", args.disabled_pass]
    done = subprocess.run(command, capture_output=True, text=True,
                          env=_worker_env(args.threads))
    if done.returncode != 0:
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        raise RuntimeError(f"{engine} on {model} failed: "
                           f"{lines[-1] if lines else 'no output'}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["output"] = np.load(output)
    return result


def bench_model(model: str, args) -> dict:
    """Export ``model``, time both engines in their own processes; one table row."""
    row = {"model": model}
    with tempfile.TemporaryDirectory(prefix="irlib-vs-ort-") as workdir:
        if model in TRANSFORMERS:
            import transformer_models
            config = transformer_models.TINY[model] if args.tiny else None
            inputs = transformer_models.export(model, os.path.join(workdir, "model.onnx"),
                                               config, seed=args.seed)
        elif model in SMALL:
            import small_models
            inputs = small_models.export(model, os.path.join(workdir, "model.onnx"),
                                         seed=args.seed)
        else:
            inputs = _export_zoo(model, os.path.join(workdir, "model.onnx"), args.seed)
        np.savez(os.path.join(workdir, "inputs.npz"),
                 **{f"arg{k}": value for k, value in enumerate(inputs)})
        results = {engine: run_worker(engine, model, workdir, args) for engine in ENGINES}
    for engine, result in results.items():
        row[f"{engine}_ms"] = statistics.median(result["times_ms"])
        row[f"{engine}_cpu_ms"] = statistics.median(result["cpu_ms"])
        row[f"{engine}_min_ms"] = min(result["times_ms"])
        row[f"{engine}_rss_mib"] = result["peak_rss_mib"]
        row[f"{engine}_warmup_ms"] = result["warmup_ms"]
        row[f"{engine}_build_s"] = result["build_s"]
    row["ratio"] = row["irlib_ms"] / row["onnxruntime_ms"]
    row["cpu_ratio"] = row["irlib_cpu_ms"] / max(row["onnxruntime_cpu_ms"], 1e-9)
    a, b = (results[e]["output"].astype("float64") for e in ENGINES)
    row["max_abs_diff"] = float(np.max(np.abs(a - b))) if a.shape == b.shape else float("nan")
    row["max_rel_diff"] = row["max_abs_diff"] / max(float(np.max(np.abs(b))), 1e-30)
    return row


def _export_zoo(model: str, path: str, seed: int) -> list:
    """Write the zoo model's ``to_onnx`` export to ``path``; return seeded inputs."""
    import irlib
    from irlib.frontend.onnx import to_onnx
    from zoo.catalog import workload
    mod, params = workload(model, 1)
    main = irlib.transform.InferType()(mod)["main"]
    rng = np.random.default_rng(seed)
    inputs = [rng.standard_normal([int(d) for d in p.checked_type.shape])
              .astype(p.checked_type.dtype)
              for p in main.params if p.name_hint not in params]
    with open(path, "wb") as handle:
        handle.write(to_onnx(mod, params).SerializeToString())
    return inputs


def table(rows: list) -> list:
    """The lines of the Markdown table of ``rows``."""
    lines = ["| model | irlib ms | onnxruntime ms | ratio | irlib RSS MiB | "
             "onnxruntime RSS MiB | output diff | CPU ms irlib / onnxruntime | CPU ratio |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        lines.append(f"| {row['model']} | {_ms(row['irlib_ms'])} | "
                     f"{_ms(row['onnxruntime_ms'])} | {row['ratio']:.2f} | "
                     f"{row['irlib_rss_mib']:.0f} | {row['onnxruntime_rss_mib']:.0f} | "
                     f"{row['max_rel_diff']:.1g} | {_ms(row['irlib_cpu_ms'])} / "
                     f"{_ms(row['onnxruntime_cpu_ms'])} | {row['cpu_ratio']:.2f} |")
    return lines


def _ms(value: float) -> str:
    return f"{value:.3f}" if value < 1 else f"{value:.2f}" if value < 100 else f"{value:.1f}"


def main(argv=None) -> int:
    """Parse the arguments; run a worker, or the whole comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS),
                        help=f"comma-separated zoo models, transformers "
                             f"({','.join(TRANSFORMERS)}) or small models "
                             f"({','.join(SMALL)}) (default: {','.join(MODELS)})")
    parser.add_argument("--repeat", type=int, default=20,
                        help="timed runs per engine after one warm-up run (default 20)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                        help="threads each engine may use (default: all cores)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    parser.add_argument("--disabled-pass", default="",
                        help="comma-separated passes irlib's build leaves out (e.g. "
                             "FuseAttention, for the before figures)")
    parser.add_argument("--tiny", action="store_true",
                        help="the transformers at the tests' tiny sizes (a quick check)")
    parser.add_argument("--worker", choices=ENGINES, help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--inputs", help=argparse.SUPPRESS)
    parser.add_argument("--output", help=argparse.SUPPRESS)
    parser.add_argument("--onnx", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)
    if args.repeat < 20:
        print(f"note: --repeat {args.repeat} is below the 20 runs the comparison asks for",
              file=sys.stderr)
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    from zoo.catalog import names
    extra = list(TRANSFORMERS) + list(SMALL)
    unknown = [m for m in models if m not in names() and m not in extra]
    if unknown:
        parser.error(f"unknown model(s) {unknown}; known: "
                     f"{', '.join(list(names()) + extra)}")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    print(f"irlib vs onnxruntime, batch 1, {args.threads} thread(s), median of {args.repeat} "
          f"runs, each engine in its own process (load average {load})", flush=True)
    rows = []
    for model in models:
        row = bench_model(model, args)
        rows.append(row)
        print(f"  {model}: irlib {_ms(row['irlib_ms'])} ms, onnxruntime "
              f"{_ms(row['onnxruntime_ms'])} ms, ratio {row['ratio']:.2f}, RSS "
              f"{row['irlib_rss_mib']:.0f} / {row['onnxruntime_rss_mib']:.0f} MiB, irlib "
              f"warm-up {row['irlib_warmup_ms']:.0f} ms", flush=True)
    print("\n".join(table(rows)))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(rows, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
