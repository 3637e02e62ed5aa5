"""Multi-process runs: ``mpiexec -n 2`` on this machine (loopback), started in a subprocess
with a timeout. Each job's ranks save their results (mpi_worker.py); the expected values are
computed here with numpy from the per-rank inputs (cases.py), or by the unsharded model in
this process. The models are small and run with ``device="python"`` (the reference
interpreter) except one block on the graph executor, so a job takes about 2-4 s, mostly
process start-up and imports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

pytest.importorskip("mpi4py")

from interp import distributed  # noqa: E402
from interp.distributed import DistributedError, tensor_parallel as tp  # noqa: E402
from irlib.frontend import nn  # noqa: E402

from .cases import case_input, model_weights  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
WORKER = str(HERE / "mpi_worker.py")
TIMEOUT = 60
NP = 2

try:
    distributed.find_mpiexec()
except DistributedError as error:          # pragma: no cover - the test extra installs mpich
    pytest.skip(f"no mpiexec: {error}", allow_module_level=True)


def _launch(job: str, outdir: Path, payload) -> subprocess.CompletedProcess:
    result = distributed.launch([WORKER, job, str(outdir), json.dumps(payload)], NP,
                                timeout=TIMEOUT, capture_output=True, cwd=str(ROOT))
    return result


# -- each collective equals numpy's reduction of the per-rank inputs ------------------------------

def _expected(case: dict, rank: int) -> np.ndarray:
    inputs = [case_input(case, r) for r in range(NP)]
    op = case["op"]
    if op == "allgather":
        return np.concatenate(inputs, axis=0)
    if op == "broadcast_from_worker0":
        return inputs[0]
    if op == "scatter_from_worker0":
        return np.split(inputs[0], NP, axis=case["axis"])[rank]
    dtype = inputs[0].dtype
    wide = np.stack([x.astype(np.float64) for x in inputs])
    kind = case["op_type"]
    if kind == "avg":
        value = wide.sum(0) / NP
        return (np.trunc(value) if dtype.kind in "iu" else value).astype(dtype)
    return {"sum": wide.sum(0), "prod": wide.prod(0), "min": wide.min(0),
            "max": wide.max(0)}[kind].astype(dtype)


@st.composite
def _case(draw, seed):
    op = draw(st.sampled_from(["allreduce", "allgather", "broadcast_from_worker0",
                               "scatter_from_worker0"]))
    reducing = op == "allreduce"
    dtypes = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8"] \
        if reducing else ["float32", "int8", "bool", "float64", "bfloat16"]
    shape = list(draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=5)))
    case = {"op": op, "dtype": draw(st.sampled_from(dtypes)), "seed": seed,
            "executor": draw(st.sampled_from(["debug", "graph", "python", "to_python"]))}
    if reducing:
        case["op_type"] = draw(st.sampled_from(["sum", "prod", "min", "max", "avg"]))
    if op == "scatter_from_worker0":
        case["axis"] = draw(st.integers(0, len(shape) - 1))
        shape[case["axis"]] *= NP
    case["shape"] = shape
    return case


def _load_exact(stem: Path) -> np.ndarray:
    meta = json.loads(stem.with_suffix(".json").read_text())
    raw = np.load(stem.with_suffix(".npy"))
    return raw.view(np.dtype(meta["dtype"])).reshape(meta["shape"])


# Each example launches mpiexec: no shrinking (it would relaunch dozens of times); a failure
# names the case.
@settings(max_examples=2, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(data=st.data())
def test_each_collective_equals_numpys_reduction(tmp_path_factory, data):
    cases = [data.draw(_case(seed)) for seed in range(12)]
    outdir = tmp_path_factory.mktemp("collectives")
    result = _launch("collectives", outdir, cases)
    assert result.returncode == 0, result.stderr[-4000:]
    for index, case in enumerate(cases):
        for rank in range(NP):
            got = _load_exact(outdir / f"rank{rank}_case{index}")
            want = _expected(case, rank)
            assert got.dtype == want.dtype, case
            if want.dtype.kind == "f":
                np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=str(case))
            else:
                np.testing.assert_array_equal(got, want, err_msg=str(case))
    for rank in range(NP):      # set_communicator: alone on a split, then all ranks again
        alone_size, *alone, world, sum0, sum1, sum2 = np.load(outdir / f"rank{rank}_split.npy")
        assert alone_size == 1 and alone == [rank + 1] * 3
        assert world == NP and [sum0, sum1, sum2] == [sum(range(1, NP + 1))] * 3


def test_independent_collectives_pair_up_on_every_executor(tmp_path):
    executors = ["graph", "debug", "to_python"]
    result = _launch("order", tmp_path, {"executors": executors})
    assert result.returncode == 0, result.stderr[-4000:]
    want = []
    for k in range(8):      # rank r's k-th input is (k+1)(r+1) + k, or exp of its negation
        ys = [np.float32((k + 1) * (r + 1) + k) for r in range(NP)]
        want.append(sum(np.exp(-y) if k % 2 else y for y in ys))
    for rank in range(NP):
        for kind in executors:
            got = np.load(tmp_path / f"rank{rank}_{kind}.npy")
            for k in range(8):
                np.testing.assert_allclose(got[k], np.full((3, 4), want[k]), rtol=1e-5,
                                           err_msg=f"{kind}, allreduce {k}")


# -- sharded models equal the unsharded model on one process ----------------------------------

_SIZES = {"hidden": 16, "heads": 4, "ffn": 32, "batch": 2, "seq": 5}


def _unsharded(model: str):
    hidden, heads, ffn = _SIZES["hidden"], _SIZES["heads"], _SIZES["ffn"]
    return {"mlp": lambda: tp.MLP(hidden, ffn),
            "attention": lambda: tp.SelfAttention(hidden, heads),
            "block": lambda: tp.TransformerBlock(hidden, heads, ffn)}[model]()


@pytest.mark.parametrize("model, device", [("mlp", "python"), ("attention", "python"),
                                           ("block", "cpu")])
def test_sharded_model_matches_the_unsharded_one(tmp_path, model, device):
    seed = 7
    payload = dict(_SIZES, model=model, seed=seed, device=device)
    result = _launch("tensor_parallel", tmp_path, payload)
    assert result.returncode == 0, result.stderr[-4000:]
    full = _unsharded(model)
    full.load_state_dict(model_weights(full, seed))
    shape = [_SIZES["batch"], _SIZES["seq"], _SIZES["hidden"]]
    runner = full.jit({"forward": {"x": nn.spec.Tensor(shape, "float32")}},
                      device="python", out_format="numpy")
    # every rank's input is replaced by rank 0's (ccl_broadcast_from_worker0)
    x0 = np.random.default_rng(seed + 1).standard_normal(shape).astype("float32")
    want = runner.forward(x0)
    for rank in range(NP):
        got = np.load(tmp_path / f"rank{rank}_out.npy")
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# -- a failing rank ends the whole job ----------------------------------------------------------

@pytest.mark.parametrize("when, message", [
    ("before", "rank 1 failed on purpose before any collective"),
    ("during", "rank 1 failed on purpose between two collectives")])
def test_a_rank_that_raises_fails_the_run(tmp_path, when, message):
    result = _launch("raise", tmp_path, {"when": when})     # would hang without the abort
    assert result.returncode != 0
    assert f"RuntimeError: {message}" in result.stderr
    assert not list(tmp_path.glob("*unreachable*"))


@pytest.mark.parametrize("when, message", [
    ("during", "rank 1 failed on purpose between two collectives"),
    ("before_mpi", "rank 1 failed on purpose before MPI started")])
def test_a_plain_python_launch_aborts_through_the_hook(tmp_path, when, message):
    """Without ``-m mpi4py``: the hook interp.distributed installs when imported under an
    MPI launcher aborts the job (starting MPI first when the rank had not)."""
    command = [distributed.find_mpiexec(), "-n", str(NP), sys.executable, WORKER, "raise",
               str(tmp_path), json.dumps({"when": when})]
    result = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT,
                            cwd=str(ROOT))
    assert result.returncode != 0
    assert "[rank 1] unhandled RuntimeError; aborting the MPI job" in result.stderr
    assert message in result.stderr


def test_launch_kills_a_job_past_its_timeout():
    hang = ("import time; from interp import distributed as d\n"
            "if d.rank() == 1: time.sleep(60)\n"
            "d.broadcast_array(None if d.rank() else [1.0], (1,), 'float64')")
    with pytest.raises(DistributedError, match="ran past its timeout of 3 s"):
        distributed.launch(["-c", hang], NP, timeout=3, capture_output=True, cwd=str(ROOT))


# -- the command line -------------------------------------------------------------------------

def test_irlib_run_np_2(tmp_path):
    program = tmp_path / "tp.rly"
    program.write_text('#[version = "0.0.5"]\n'
                       'def @main(%x: Tensor[(2, 3), float32]) {\n'
                       '  ccl.allreduce(multiply(%x, 2f), op_type="sum")\n'
                       '}\n')
    data = np.arange(6, dtype="float32").reshape(2, 3)
    np.save(tmp_path / "x.npy", data)
    result = subprocess.run([sys.executable, "-m", "interp", "run", str(program), "--np", "2",
                             "--repeat", "1", "--target", "python", "--input",
                             f"x={tmp_path / 'x.npy'}"], capture_output=True, text=True,
                            timeout=TIMEOUT, cwd=str(ROOT))
    assert result.returncode == 0, result.stderr
    # only rank 0 reports; the value is 2 ranks * 2x
    assert result.stdout.count("output: shape=(2, 3) dtype=float32") == 1
    top = data[0] * 4
    assert f"top-5 of sample 0: 2:{top[2]:.4f}, 1:{top[1]:.4f}, 0:{top[0]:.4f}" in result.stdout
