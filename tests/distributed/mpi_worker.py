"""Worker of the multi-process tests, run as ``mpiexec -n N python -m mpi4py mpi_worker.py
JOB OUTDIR ARGS_JSON``. Every rank writes its results to ``OUTDIR/rank<r>_*.npy``; the test
process checks them against numpy.

Jobs:

* ``collectives``: ARGS is a list of cases (see cases.py plus ``op``, ``executor``,
  ``op_type``, ``axis``); each case runs one ccl op on rank r's input on the named executor
  (``debug``/``graph``/``python`` kinds of ``create_executor``, or ``to_python``); then one
  allreduce on a communicator split by rank (``set_communicator``) and one on COMM_WORLD.
* ``tensor_parallel``: ARGS has ``model`` (``"mlp"``, ``"attention"`` or ``"block"``),
  sizes, ``seed`` and ``device``; rank 0 holds the unsharded weights, every rank gets its
  shard with ``load_from_worker0``, and the sharded model runs on ``ccl_broadcast_from_worker0``
  of a rank-dependent input.
* ``order``: ARGS has ``executors``; eight independent allreduces in one program.
* ``raise``: ARGS has ``when`` (``"before"`` any collective, or ``"during"``: rank 0 waits
  in an allreduce while rank 1 raises).
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import irlib  # noqa: E402
import interp  # noqa: E402
from interp import distributed  # noqa: E402
from irlib.op import ccl  # noqa: E402

from cases import case_input, model_weights  # noqa: E402


def save_exact(path: str, array: np.ndarray) -> None:
    """Save ``array``'s bytes and its dtype name (``np.save`` drops ml_dtypes' bfloat16)."""
    array = np.ascontiguousarray(array)
    np.save(path + ".npy", array.reshape(-1).view(np.uint8))
    with open(path + ".json", "w", encoding="utf-8") as handle:
        json.dump({"dtype": str(array.dtype), "shape": list(array.shape)}, handle)


def _call(case: dict, x, size: int):
    op = case["op"]
    if op == "allreduce":
        return ccl.allreduce(x, case["op_type"])
    if op == "allgather":
        return ccl.allgather(x, size)
    if op == "broadcast_from_worker0":
        return ccl.broadcast_from_worker0(x)
    return ccl.scatter_from_worker0(x, size, case["axis"])


def collectives(outdir: str, cases: list) -> None:
    """Run each case's op on this rank's input; save the result."""
    rank, size = distributed.rank(), distributed.world_size()
    for index, case in enumerate(cases):
        data = case_input(case, rank)
        x = irlib.var("x", irlib.TensorType(data.shape, str(data.dtype)))
        func = irlib.Function([x], _call(case, x, size))
        kind = case["executor"]
        if kind == "to_python":
            run = interp.run_as_python(func)
        else:
            target = "cpu" if kind == "graph" else "python"
            run = interp.create_executor(kind, mod=irlib.IRModule.from_expr(func),
                                         target=target).evaluate()
        save_exact(os.path.join(outdir, f"rank{rank}_case{index}"), np.asarray(run(data)))
    # a communicator the user passes: each rank alone (a split by rank), then COMM_WORLD again
    from mpi4py import MPI
    x = irlib.var("x", irlib.TensorType((3,), "float32"))
    run = interp.create_executor("debug", mod=irlib.IRModule.from_expr(
        irlib.Function([x], ccl.allreduce(x)))).evaluate()
    mine = np.full(3, rank + 1, "float32")
    distributed.set_communicator(MPI.COMM_WORLD.Split(color=rank, key=0))
    alone = (distributed.world_size(), np.asarray(run(mine)))
    distributed.set_communicator(None)
    together = (distributed.world_size(), np.asarray(run(mine)))
    np.save(os.path.join(outdir, f"rank{rank}_split.npy"),
            np.concatenate([[alone[0]], alone[1], [together[0]], together[1]]))


def tensor_parallel(outdir: str, args: dict) -> None:
    """Run the sharded model on this rank; save its output."""
    from irlib.frontend import nn
    from interp.distributed import tensor_parallel as tp
    rank, size = distributed.rank(), distributed.world_size()
    hidden, heads, ffn = args["hidden"], args["heads"], args["ffn"]
    if args["model"] == "mlp":
        full, sharded = tp.MLP(hidden, ffn), tp.ShardedMLP(hidden, ffn, size)
    elif args["model"] == "attention":
        full, sharded = tp.SelfAttention(hidden, heads), tp.ShardedSelfAttention(hidden, heads, size)
    else:
        full = tp.TransformerBlock(hidden, heads, ffn)
        sharded = tp.ShardedTransformerBlock(hidden, heads, ffn, size)

    class FromWorker0(nn.Module):
        def __init__(self, inner):
            self.inner = inner

        def forward(self, x):
            return self.inner(nn.ccl_broadcast_from_worker0(x))

    weights = model_weights(full, args["seed"]) if rank == 0 else None
    distributed.load_from_worker0(sharded, weights)
    model = FromWorker0(sharded)
    shape = [args["batch"], args["seq"], hidden]
    runner = model.jit({"forward": {"x": nn.spec.Tensor(shape, "float32")}},
                       device=args["device"], out_format="numpy")
    x = np.random.default_rng(args["seed"] + 1 + rank).standard_normal(shape).astype("float32")
    np.save(os.path.join(outdir, f"rank{rank}_out.npy"), runner.forward(x))


def order(outdir: str, args: dict) -> None:
    """Eight independent allreduces (of ``(k+1) x + k``, every other one through fused
    elementwise ops) in one program on each executor; each rank's hash seed differs, so a
    node order that depended on it would pair different tensors across ranks."""
    rank = distributed.rank()
    x = irlib.var("x", irlib.TensorType((3, 4), "float32"))
    outs = []
    for k in range(8):
        y = irlib.op.add(irlib.op.multiply(x, irlib.const(np.float32(k + 1))),
                         irlib.const(np.float32(k)))
        outs.append(ccl.allreduce(irlib.op.exp(irlib.op.negative(y)) if k % 2 else y))
    func = irlib.Function([x], irlib.Tuple(outs))
    data = np.full((3, 4), rank + 1, "float32")
    for kind in args["executors"]:
        run = interp.run_as_python(func) if kind == "to_python" else interp.create_executor(
            kind, mod=irlib.IRModule.from_expr(func), target="cpu").evaluate()
        result = np.stack([np.asarray(out) for out in run(data)])
        np.save(os.path.join(outdir, f"rank{rank}_{kind}.npy"), result)


def fail(outdir: str, args: dict) -> None:
    """Rank 1 raises: before MPI starts in it (``before_mpi``; rank from the launcher's
    environment), before any collective, or while rank 0 waits in one."""
    if args["when"] == "before_mpi" and os.environ.get("PMI_RANK") == "1":
        assert "mpi4py.MPI" not in sys.modules
        raise RuntimeError("rank 1 failed on purpose before MPI started")
    rank = distributed.rank()
    if args["when"] == "before" and rank == 1:
        raise RuntimeError("rank 1 failed on purpose before any collective")
    x = irlib.var("x", irlib.TensorType((3,), "float32"))
    mod = irlib.IRModule.from_expr(irlib.Function([x], ccl.allreduce(x)))
    run = interp.create_executor("debug", mod=mod).evaluate()
    run(np.ones(3, "float32"))
    if rank == 1:
        raise RuntimeError("rank 1 failed on purpose between two collectives")
    run(np.ones(3, "float32"))      # rank 0 waits here for a rank that is gone
    np.save(os.path.join(outdir, f"rank{rank}_unreachable.npy"), np.zeros(1))


if __name__ == "__main__":
    job, out, payload = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    {"collectives": collectives, "tensor_parallel": tensor_parallel, "order": order,
     "raise": fail}[job](out, payload)
