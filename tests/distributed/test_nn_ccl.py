"""nn.ccl_allreduce / nn.ccl_broadcast_from_worker0, the tensor-parallel example layers and
the sharding and launch helpers, in one process (world size 1)."""

from __future__ import annotations

import inspect
import math
import os

import numpy as np
import pytest
import torch

import interp
from interp import distributed
from interp.distributed import DistributedError, tensor_parallel as tp
from irlib.frontend import nn
from irlib.ir import expr as E
from irlib.ir.functor import post_order

from .cases import model_weights


def _ops(func):
    return [n.op.name for n in post_order(func.body)
            if isinstance(n, E.Call) and isinstance(n.op, E.Op)]


class TwoCollectives(nn.Module):
    def forward(self, x):
        y = nn.ccl_broadcast_from_worker0(x)
        return nn.ccl_allreduce(y * y, "max", name="biggest")


def test_signatures_follow_the_reference():
    assert str(inspect.signature(nn.ccl_allreduce)) == \
        "(x: 'Tensor', op_type: 'str' = 'sum', name='ccl_allreduce') -> 'Tensor'"
    assert str(inspect.signature(nn.ccl_broadcast_from_worker0)) == \
        "(x: 'Tensor', name='broadcast_from_worker') -> 'Tensor'"


def test_export_emits_the_ops_with_their_name_hints():
    mod, _ = TwoCollectives().export_tvm({"forward": {"x": nn.spec.Tensor(["n", 3],
                                                                        "float32")}})
    func = mod["forward"]
    assert _ops(func) == ["ccl.broadcast_from_worker0", "multiply", "ccl.allreduce"]
    text = mod.astext()
    assert "%broadcast_from_worker" in text and "%biggest" in text
    assert 'op_type="max"' in text


@pytest.mark.parametrize("device", ["python", "cpu"])
def test_jit_on_one_process_is_the_identity(device):
    runner = TwoCollectives().jit({"forward": {"x": nn.spec.Tensor([2, 3], "float32")}},
                                  device=device, out_format="numpy")
    x = np.arange(6, dtype="float32").reshape(2, 3) - 2
    np.testing.assert_array_equal(runner.forward(x), x * x)


def test_bad_arguments_raise_op_errors_naming_the_module():
    class Bad(nn.Module):
        def __init__(self, kind):
            self.kind = kind

        def forward(self, x):
            if self.kind == "op_type":
                return nn.ccl_allreduce(x, "mean")
            if self.kind == "bool":
                return nn.ccl_allreduce(x > x)
            return nn.ccl_broadcast_from_worker0(np.ones(3))
    spec = {"forward": {"x": nn.spec.Tensor([3], "float32")}}
    for kind, message in (("op_type", "model: ccl_allreduce: op_type must be one of"),
                          ("bool", "bool tensors cannot be reduced"),
                          ("tensor", "broadcast_from_worker: x must be an nn.Tensor")):
        with pytest.raises(nn.OpError, match=message):
            Bad(kind).export_tvm(spec)


# -- the tensor-parallel example on one process ------------------------------------------------

def _gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def _numpy_mlp(w, x):
    h = _gelu(x @ w["fc1.weight"].T + w["fc1.bias"])
    return h @ w["fc2.weight"].T + w["fc2.bias"]


def _torch_attention(w, x, heads):
    t = {k: torch.from_numpy(v) for k, v in w.items()}
    xt = torch.from_numpy(x)
    b, s, hidden = x.shape

    def proj(name):
        y = xt @ t[f"{name}.weight"].T + t[f"{name}.bias"]
        return y.reshape(b, s, heads, hidden // heads).transpose(1, 2)
    out = torch.nn.functional.scaled_dot_product_attention(proj("q_proj"), proj("k_proj"),
                                                           proj("v_proj"), is_causal=True)
    out = out.transpose(1, 2).reshape(b, s, hidden)
    return (out @ t["o_proj.weight"].T + t["o_proj.bias"]).numpy()


def _run(model, weights, x, device="python"):
    model.load_state_dict(weights)
    runner = model.jit({"forward": {"x": nn.spec.Tensor(list(x.shape), "float32")}},
                       device=device, out_format="numpy")
    return runner.forward(x)


def test_unsharded_layers_match_independent_oracles():
    x = np.random.default_rng(0).standard_normal((2, 5, 8)).astype("float32")
    mlp = tp.MLP(8, 16)
    w = model_weights(mlp, 1)
    np.testing.assert_allclose(_run(mlp, w, x), _numpy_mlp(w, x), rtol=1e-5, atol=1e-6)
    attn = tp.SelfAttention(8, 2)
    w = model_weights(attn, 2)
    np.testing.assert_allclose(_run(attn, w, x), _torch_attention(w, x, 2), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("make_full, make_sharded", [
    (lambda: tp.MLP(8, 16), lambda: tp.ShardedMLP(8, 16, 1)),
    (lambda: tp.SelfAttention(8, 2), lambda: tp.ShardedSelfAttention(8, 2, 1)),
    (lambda: tp.TransformerBlock(8, 2, 16), lambda: tp.ShardedTransformerBlock(8, 2, 16, 1)),
])
def test_one_shard_equals_the_unsharded_layer(make_full, make_sharded):
    full, sharded = make_full(), make_sharded()
    w = model_weights(full, 3)
    assert sorted(dict(sharded.named_parameters())) == sorted(w)   # names match
    assert set(sharded.shard_plan()) == set(w)
    x = np.random.default_rng(4).standard_normal((1, 6, 8)).astype("float32")
    distributed.load_from_worker0(sharded, w)
    runner = sharded.jit({"forward": {"x": nn.spec.Tensor([1, 6, 8], "float32")}},
                         device="python", out_format="numpy")
    np.testing.assert_allclose(runner.forward(x), _run(full, w, x), rtol=1e-5, atol=1e-6)
    mod, _ = sharded.export_tvm({"forward": {"x": nn.spec.Tensor([1, 6, 8], "float32")}})
    expected = 2 if isinstance(sharded, tp.ShardedTransformerBlock) else 1
    assert _ops(mod["forward"]).count("ccl.allreduce") == expected


def test_sharded_shapes_and_plan_for_two_shards():
    mlp = tp.ShardedMLP(8, 16, 2)
    shapes = {name: tuple(p.shape) for name, p in mlp.named_parameters()}
    assert shapes == {"fc1.weight": (8, 8), "fc1.bias": (8,), "fc2.weight": (8, 8),
                      "fc2.bias": (8,)}
    attn = tp.ShardedSelfAttention(8, 4, 2)
    assert tuple(attn.q_proj.weight.shape) == (4, 8) and attn.local_heads == 2
    assert tuple(attn.o_proj.weight.shape) == (8, 4)
    with pytest.raises(DistributedError, match="ffn = 10 does not divide into 4 shards"):
        tp.ShardedMLP(8, 10, 4)
    with pytest.raises(DistributedError, match="num_heads = 3 does not divide into 2"):
        tp.ShardedSelfAttention(6, 3, 2)


# -- sharding helpers on one process -------------------------------------------------------------

def test_shard_takes_the_numpy_slices():
    a = np.arange(24).reshape(4, 6)
    np.testing.assert_array_equal(distributed.shard(a, 1, 2, 3), a[:, 4:6])
    np.testing.assert_array_equal(distributed.shard(a, 0, 1, 2), a[2:4])
    assert distributed.shard(a, None, 1, 2) is a
    with pytest.raises(DistributedError, match="cannot take part 0 of 5"):
        distributed.shard(a, 1, 0, 5)


def test_load_from_worker0_errors():
    mlp = tp.ShardedMLP(8, 16, 1)
    with pytest.raises(DistributedError, match="rank 0 has no weight 'fc1.weight'"):
        distributed.load_from_worker0(mlp, {})
    w = model_weights(tp.MLP(8, 16), 0)
    w["fc2.bias"] = w["fc2.bias"].astype("float64")
    with pytest.raises(DistributedError, match=r"float64\[8\], expected float32\[8\]"):
        distributed.load_from_worker0(mlp, w)
    with pytest.raises(DistributedError, match=r"axis 3 is out of range for shape \(2, 3\)"):
        distributed.scatter_array(np.zeros((2, 3)), 3, (2, 3), "float64")
    with pytest.raises(DistributedError, match="rank 0 must give the data"):
        distributed.broadcast_array(None, (2,), "float32")


def test_one_process_rank_and_size():
    assert (distributed.rank(), distributed.world_size()) == (0, 1)
    assert distributed.collectives() is None


# -- launch helpers -----------------------------------------------------------------------------

def test_mpiexec_command_and_lookup(tmp_path, monkeypatch):
    fake = tmp_path / "mpiexec"
    fake.write_text("#!/bin/sh\necho HYDRA build details\n")
    fake.chmod(0o755)
    monkeypatch.setenv("IRLIB_MPIEXEC", str(fake))
    assert distributed.find_mpiexec() == str(fake)
    command = distributed.mpiexec_command(["run.py", "--x"], 3, hostfile="hosts.txt",
                                          python="/usr/bin/python3")
    assert command == [str(fake), "-n", "3", "-f", "hosts.txt", "/usr/bin/python3", "-m",
                       "mpi4py", "run.py", "--x"]
    assert distributed.mpiexec_command(["-m", "m"], 2, hosts=["a", "b"])[3:5] == \
        ["-hosts", "a,b"]
    with pytest.raises(DistributedError, match="positive int"):
        distributed.mpiexec_command(["run.py"], 0)
    with pytest.raises(DistributedError, match="not both"):
        distributed.mpiexec_command(["run.py"], 2, hostfile="h", hosts=["a"])
    monkeypatch.setenv("IRLIB_MPIEXEC", str(tmp_path / "missing"))
    with pytest.raises(DistributedError, match="not an executable file"):
        distributed.find_mpiexec()


def test_open_mpi_gets_its_own_options(tmp_path, monkeypatch):
    fake = tmp_path / "mpirun"
    fake.write_text("#!/bin/sh\necho 'mpirun (Open MPI) 5.0.5'\n")
    fake.chmod(0o755)
    command = distributed.mpiexec_command(["run.py"], 2, hostfile="hosts", mpiexec=str(fake))
    assert command[3:5] == ["--hostfile", "hosts"]


def test_no_mpiexec_anywhere_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("IRLIB_MPIEXEC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("sys.executable", str(tmp_path / "python"))
    with pytest.raises(DistributedError, match=r"pip install 'irlib\[mpi\]'"):
        distributed.find_mpiexec()
    assert os.environ["PATH"] == str(tmp_path)


def test_interp_exposes_distributed():
    assert interp.distributed.rank is distributed.rank
