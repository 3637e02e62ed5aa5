"""The ccl ops in one process: type relations, the one-worker reference semantics on every
executor, the provider hook, the passes that must leave collectives alone, and irlib running
without mpi4py. (Under ``mpiexec -n 2``: test_mpi_runs.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import interp
import irlib
from irlib.errors import IRError, TypeInferenceError
from irlib.ir import expr as E
from irlib.ir.functor import post_order
from irlib.op import ccl

ROOT = Path(__file__).resolve().parents[2]
OPS = ("ccl.allreduce", "ccl.allgather", "ccl.broadcast_from_worker0",
       "ccl.scatter_from_worker0")


def _type_of(call, *params):
    return irlib.infer_type(irlib.Function(list(params), call)).body.checked_type


def _count(expr, name):
    return sum(1 for n in post_order(expr) if isinstance(n, E.Call)
               and isinstance(n.op, E.Op) and n.op.name == name)


class FakeTwoWorkers:
    """A stand-in backend: this process is rank 0 of two; the other worker's input is
    ``10 * x`` (so every result is computable by hand). Counts the collectives it makes."""

    world_size, rank = 2, 0

    def __init__(self):
        self.calls = []

    def allreduce(self, array, op_type):
        self.calls.append("allreduce")
        both = np.stack([array, array * 10])
        return {"sum": both.sum(0), "max": both.max(0)}[op_type].astype(array.dtype)

    def allgather(self, array):
        self.calls.append("allgather")
        return np.concatenate([array, array * 10])

    def broadcast_from_worker0(self, array):
        self.calls.append("broadcast")
        return array.copy()

    def scatter_from_worker0(self, array, axis):
        self.calls.append("scatter")
        return np.split(array, 2, axis)[0].copy()


@pytest.fixture
def fake_two_workers():
    saved = ccl.get_collectives_provider()
    backend = FakeTwoWorkers()
    ccl.set_collectives_provider(lambda: backend)
    yield backend
    ccl.set_collectives_provider(saved)


# -- type relations ------------------------------------------------------------------------------

def test_registered_opaque_and_stateful():
    for name in OPS:
        op_def = irlib.op.get_def(name)
        assert op_def.pattern == irlib.op.OpPattern.OPAQUE
        assert op_def.get_attr("TOpIsStateful") is True


@settings(max_examples=20, deadline=None)
@given(shape=hnp.array_shapes(min_dims=1, max_dims=4, max_side=6),
       workers=st.integers(1, 4), data=st.data())
def test_relations_match_the_definitions(shape, workers, data):
    dtype = data.draw(st.sampled_from(["float32", "int64", "float16", "uint8"]))
    x = irlib.var("x", shape=shape, dtype=dtype)
    assert _type_of(ccl.allreduce(x, "avg"), x) == irlib.TensorType(shape, dtype)
    assert _type_of(ccl.broadcast_from_worker0(x), x) == irlib.TensorType(shape, dtype)
    assert _type_of(ccl.allgather(x, workers), x) == \
        irlib.TensorType((shape[0] * workers,) + shape[1:], dtype)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    whole = list(shape)
    whole[axis] *= workers
    y = irlib.var("y", shape=tuple(whole), dtype=dtype)
    assert _type_of(ccl.scatter_from_worker0(y, workers, axis), y) == \
        irlib.TensorType(shape, dtype)


def test_relations_with_symbolic_dims():
    n = irlib.size_var("n")
    x = irlib.var("x", shape=(n, 6), dtype="float32")
    assert _type_of(ccl.allgather(x, 2), x).shape == (2 * n, 6)
    assert _type_of(ccl.scatter_from_worker0(x, 3, 1), x).shape == (n, 2)
    y = irlib.var("y", shape=(4 * n,), dtype="float32")
    assert _type_of(ccl.scatter_from_worker0(y, 4), y).shape == (n,)


@pytest.mark.parametrize("call, message", [
    (lambda x: ccl.allreduce(x, "mean"), "op_type must be one of"),
    (lambda x: ccl.allgather(x, 0), "num_workers must be a positive int"),
    (lambda x: ccl.scatter_from_worker0(x, 4, 1), "axis 1 of x has size 6, which "
                                                  "num_workers=4 does not divide"),
    (lambda x: ccl.scatter_from_worker0(x, 2, 2), "out of range"),
])
def test_relation_errors_name_the_op_and_the_problem(call, message):
    x = irlib.var("x", shape=(2, 6), dtype="float32")
    with pytest.raises(TypeInferenceError, match=message) as info:
        _type_of(call(x), x)
    assert "ccl." in str(info.value)


def test_bool_and_scalar_inputs_are_refused():
    flags = irlib.var("f", shape=(3,), dtype="bool")
    with pytest.raises(TypeInferenceError, match="bool tensors cannot be reduced"):
        _type_of(ccl.allreduce(flags), flags)
    assert _type_of(ccl.broadcast_from_worker0(flags), flags).dtype == "bool"
    scalar = irlib.var("s", shape=(), dtype="float32")
    with pytest.raises(TypeInferenceError, match="ccl.allgather: x must have at least one"):
        _type_of(ccl.allgather(scalar), scalar)


def test_text_format_round_trip():
    x = irlib.var("x", shape=(irlib.size_var("n"), 4), dtype="float32")
    body = E.Tuple([ccl.allreduce(x, "max"), ccl.allgather(x, 1),
                    ccl.broadcast_from_worker0(x), ccl.scatter_from_worker0(x, 1, 1)])
    mod = irlib.transform.InferType()(irlib.IRModule.from_expr(irlib.Function([x], body)))
    text = mod.astext()
    assert 'ccl.allreduce(%x, op_type="max")' in text
    assert irlib.structural_equal(irlib.parse(text)["main"], mod["main"])


# -- one worker: the reference semantics ------------------------------------------------------

@settings(max_examples=8, deadline=None)
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=5),
       dtype=st.sampled_from(["float32", "float64", "int32", "int8"]),
       op_type=st.sampled_from(ccl.REDUCE_OPS),
       kind=st.sampled_from(["debug", "graph", "python", "to_python"]))
def test_one_worker_collectives_are_the_identity_on_every_executor(shape, dtype, op_type,
                                                                     kind):
    value = (np.arange(np.prod(shape)).reshape(shape) % 7 - 3).astype(dtype)
    x = irlib.var("x", shape=shape, dtype=dtype)
    body = E.Tuple([ccl.allreduce(x, op_type), ccl.allgather(x, 1),
                    ccl.broadcast_from_worker0(x), ccl.scatter_from_worker0(x, 1, -1)])
    func = irlib.Function([x], body)
    if kind == "to_python":
        run = interp.run_as_python(func)
    else:
        run = interp.create_executor(kind, mod=irlib.IRModule.from_expr(func),
                                     target="cpu" if kind == "graph" else "python").evaluate()
    for out in run(value):
        got = np.asarray(out)
        assert got.dtype == value.dtype
        np.testing.assert_array_equal(got, value)


@pytest.mark.parametrize("build", [lambda x: ccl.allgather(x, 2),
                                   lambda x: ccl.scatter_from_worker0(x, 2)])
def test_num_workers_other_than_the_world_size_fails_when_it_runs(build):
    x = irlib.var("x", shape=(4,), dtype="float32")
    mod = irlib.IRModule.from_expr(irlib.Function([x], build(x)))
    run = interp.create_executor("debug", mod=mod).evaluate()
    with pytest.raises(IRError, match=r"num_workers=2 but the run has 1 worker\(s\)"):
        run(np.zeros(4, "float32"))


def test_one_worker_results_are_copies():
    value = np.ones(3, "float32")
    out = irlib.op.evaluate("ccl.allreduce", [value], irlib.op.get_def("ccl.allreduce")
                            .make_attrs({"op_type": "sum"}))
    out[0] = 5
    assert value[0] == 1


# -- the provider hook --------------------------------------------------------------------------

def test_ops_route_through_the_installed_backend(fake_two_workers):
    x = irlib.var("x", shape=(2, 4), dtype="float32")
    body = E.Tuple([ccl.allreduce(x, "sum"), ccl.allreduce(x, "max"), ccl.allgather(x, 2),
                    ccl.broadcast_from_worker0(x), ccl.scatter_from_worker0(x, 2, 1)])
    mod = irlib.IRModule.from_expr(irlib.Function([x], body))
    value = np.arange(8, dtype="float32").reshape(2, 4)
    runs = [interp.create_executor(kind, mod=mod, target="python").evaluate()
            for kind in ("debug", "graph")] + [interp.run_as_python(mod["main"])]
    for run in runs:
        total, top, gathered, same, part = run(value)
        np.testing.assert_array_equal(np.asarray(total), value * 11)
        np.testing.assert_array_equal(np.asarray(top), value * 10)
        np.testing.assert_array_equal(np.asarray(gathered), np.vstack([value, value * 10]))
        np.testing.assert_array_equal(np.asarray(same), value)
        np.testing.assert_array_equal(np.asarray(part), value[:, :2])
    # num_workers is checked against the backend's world size
    one = irlib.IRModule.from_expr(irlib.Function([x], ccl.allgather(x, 1)))
    with pytest.raises(IRError, match=r"num_workers=1 but the run has 2 worker"):
        interp.create_executor("debug", mod=one).evaluate()(value)


def test_passes_neither_fold_nor_merge_collectives(fake_two_workers):
    const = irlib.const(np.array([1.0, 2.0], "float32"))
    body = E.Tuple([ccl.allreduce(const), ccl.allreduce(const),       # twins, constant input
                    ccl.broadcast_from_worker0(const)])
    mod = irlib.IRModule.from_expr(irlib.Function([], body))
    for one in (irlib.transform.FoldConstant(), irlib.transform.EliminateCommonSubexpr(),
                irlib.transform.DeadCodeElimination(inline_once=True),
                irlib.transform.FuseOps(fuse_opt_level=2)):
        mod = irlib.transform.InferType()(one(irlib.transform.InferType()(mod)))
    assert fake_two_workers.calls == []                 # nothing ran at compile time
    assert _count(mod["main"], "ccl.allreduce") == 2
    assert _count(mod["main"], "ccl.broadcast_from_worker0") == 1
    for kind in ("debug", "graph"):             # the graph executor's build folds none
        del fake_two_workers.calls[:]
        first, second, third = interp.create_executor(kind, mod=mod).evaluate()()
        assert fake_two_workers.calls == ["allreduce", "allreduce", "broadcast"]
        np.testing.assert_array_equal(np.asarray(second), [11.0, 22.0])


def test_provider_must_be_callable():
    with pytest.raises(ValueError, match="not callable"):
        ccl.set_collectives_provider(3)


def test_interp_installs_its_provider():
    assert ccl.get_collectives_provider() is interp.distributed.collectives


# -- irlib without mpi4py ----------------------------------------------------------------------

_ONE_WORKER_RUN = """
import sys
{block}
import numpy as np, irlib, interp
from irlib.op import ccl
x = irlib.var("x", shape=(3,), dtype="float32")
mod = irlib.IRModule.from_expr(irlib.Function([x], ccl.allreduce(ccl.broadcast_from_worker0(x))))
out = interp.create_executor("graph", mod=mod).evaluate()(np.ones(3, "float32"))
print(np.asarray(out).tolist(), interp.distributed.rank(), interp.distributed.world_size(),
      "mpi4py" in sys.modules)
"""


def _run_python(code: str, **env_extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")}
    env.update(env_extra)
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env=env)


def test_one_process_runs_never_import_mpi4py():
    out = _run_python(_ONE_WORKER_RUN.format(block=""))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[1.0,", "1.0,", "1.0]", "0", "1", "False"]


def test_runs_without_mpi4py_installed():
    blocked = "sys.modules['mpi4py'] = None   # import mpi4py now raises ImportError"
    out = _run_python(_ONE_WORKER_RUN.format(block=blocked))
    assert out.returncode == 0, out.stderr
    # ... but a process an MPI launcher started as one of two cannot go on without it
    out = _run_python(_ONE_WORKER_RUN.format(block=blocked), PMI_SIZE="2", PMI_RANK="0")
    assert out.returncode != 0
    assert "DistributedError" in out.stderr and "pip install 'irlib[mpi]'" in out.stderr
