"""Latency of the tensor-parallel transformer block at N=1 and N=2 MPI processes next to the
unsharded block, and the bytes each rank hands to MPI per step.

Run: ``python benchmarks/tensor_parallel.py [--hidden 512] [--heads 8] [--ffn 2048]
[--batch 1] [--seq 64] [--repeat 30] [--device cpu] [--nps 1,2]``.

The block is :class:`interp.distributed.tensor_parallel.TransformerBlock` (attention + MLP
with residuals); the sharded one (:class:`ShardedTransformerBlock`) cuts q/k/v and fc1 by
rows, o_proj and fc2 by columns, and makes two allreduces per step. Every configuration runs
in its own process(es) with the same seeded weights (rank 0 reads them and scatters the
shards with ``load_from_worker0``) and input; the table shows the median latency of one
forward step (rank 0's; the ranks are aligned by a barrier before each step, outside the
timed region), the threads each process may use (one, and the machine's cores split
between the ranks), the payload bytes per rank per step handed to ``MPI_Allreduce``, the
bytes a ring allreduce puts on the wire per rank (``2 (N-1)/N`` times the payload), the
mean time per step rank 0 spends inside the allreduces (waiting for the other ranks
included), and the largest difference from the unsharded output.
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

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def _weights(args) -> dict:
    from interp.distributed import tensor_parallel as tp
    full = tp.TransformerBlock(args.hidden, args.heads, args.ffn)
    rng = np.random.default_rng(0)
    return {name: (rng.standard_normal([int(d) for d in p.shape]) * 0.05).astype("float32")
            for name, p in full.named_parameters()}


def worker(args) -> None:
    """One process of a configuration: build, load, run ``--repeat`` steps, write JSON."""
    from irlib.frontend import nn
    from interp import distributed
    from interp.distributed import tensor_parallel as tp
    rank, size = distributed.rank(), distributed.world_size()
    if args.unsharded:
        model = tp.TransformerBlock(args.hidden, args.heads, args.ffn)
        with np.load(args.weights) as data:
            model.load_state_dict({key: data[key] for key in data.files})
    else:
        model = tp.ShardedTransformerBlock(args.hidden, args.heads, args.ffn, size)
        weights = None
        if rank == 0:
            with np.load(args.weights) as data:
                weights = {key: data[key] for key in data.files}
        distributed.load_from_worker0(model, weights)
    shape = [args.batch, args.seq, args.hidden]
    runner = model.jit({"forward": {"x": nn.spec.Tensor(shape, "float32")}},
                       device=args.device, out_format="numpy")
    x = np.random.default_rng(1).standard_normal(shape).astype("float32")
    comm = distributed.get_communicator()
    out = runner.forward(x)                        # warm-up (first call compiles)
    backend = distributed.collectives()
    if backend is not None:
        backend.reset_stats()
    times = []
    for _ in range(args.repeat):
        if comm is not None:
            comm.Barrier()
        start = time.perf_counter()
        out = runner.forward(x)
        times.append(time.perf_counter() - start)
    stats = backend.stats if backend is not None else {}
    if rank == 0:
        np.save(args.out + ".npy", out)
        with open(args.out + ".json", "w", encoding="utf-8") as handle:
            json.dump({"median_ms": 1000 * statistics.median(times),
                       "stats": {k: {key: value / args.repeat for key, value in v.items()}
                                 for k, v in stats.items()}}, handle)


def _child_args(args, out: str, weights: str, unsharded: bool) -> list:
    argv = [os.path.abspath(__file__), "--worker", "--out", out, "--weights", weights,
            "--hidden", str(args.hidden), "--heads", str(args.heads), "--ffn", str(args.ffn),
            "--batch", str(args.batch), "--seq", str(args.seq), "--repeat", str(args.repeat),
            "--device", args.device]
    return argv + (["--unsharded"] if unsharded else [])


def _env(threads: int) -> dict:
    env = dict(os.environ)
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                 "NUMBA_NUM_THREADS"):
        env[name] = str(threads)
    return env


def main() -> None:
    """Parse the options, run every configuration, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--ffn", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--device", default="cpu", choices=("cpu", "python"))
    parser.add_argument("--nps", default="1,2", help="process counts of the sharded runs")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--unsharded", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--weights", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    from interp import distributed
    cores = os.cpu_count() or 1
    nps = [int(n) for n in args.nps.split(",")]
    print(f"block: hidden {args.hidden}, heads {args.heads}, ffn {args.ffn}, input "
          f"[{args.batch}, {args.seq}, {args.hidden}] float32, device {args.device}, "
          f"{args.repeat} steps, {cores} cores")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        weights = os.path.join(tmp, "weights.npz")
        np.savez(weights, **_weights(args))
        # each configuration with one thread per process, and with the cores split
        configs = [("unsharded", None, 1), ("unsharded", None, cores)]
        for n in nps:
            configs += [(f"sharded N={n}", n, t) for t in sorted({1, max(1, cores // n)})]
        for label, n, threads in configs:
            out = os.path.join(tmp, f"{label.replace(' ', '_')}_{threads}")
            argv = _child_args(args, out, weights, unsharded=n is None)
            if n is None:
                done = subprocess.run([sys.executable] + argv, env=_env(threads),
                                      capture_output=True, text=True, timeout=1200)
            else:
                done = distributed.launch(argv, n, env=_env(threads), capture_output=True,
                                          timeout=1200)
            if done.returncode != 0:
                raise SystemExit(f"{label} failed:\n{done.stderr[-3000:]}")
            with open(out + ".json", encoding="utf-8") as handle:
                result = json.load(handle)
            rows.append((label, n, threads, result, np.load(out + ".npy")))
    reference = rows[1][4]
    print(f"{'configuration':<14} {'threads/proc':>12} {'median ms':>10} {'allreduce/step':>15} "
          f"{'in allreduce ms':>16} {'payload B/step':>15} {'ring wire B/step':>17} "
          f"{'max |diff|':>11}")
    for label, n, threads, result, out in rows:
        reduce = result["stats"].get("allreduce", {"calls": 0, "bytes": 0, "seconds": 0.0})
        payload = reduce["bytes"]
        wire = payload * 2 * (n - 1) / n if n else 0
        print(f"{label:<14} {threads:>12} {result['median_ms']:>10.2f} "
              f"{reduce['calls']:>15.0f} {1000 * reduce['seconds']:>16.2f} {payload:>15.0f} "
              f"{wire:>17.0f} {float(np.abs(out - reference).max()):>11.2e}")


if __name__ == "__main__":
    main()
