"""``Module.jit``: weights bound, methods compiled once, torch/numpy outputs, symbolic dims at
several sizes, errors. Numbers are checked against torch and numpy written here."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import interp
import irlib
from irlib.frontend import nn
from irlib.frontend.nn import op, spec
from irlib.frontend.nn.jit import JitError
from irlib.testing.budget import examples

from ._run_nn import Dense, subroutine_chain

torch = pytest.importorskip("torch")


def _relu(t):
    return nn.wrap_nested(irlib.op.nn.relu(t._expr), "relu")


class MLP(nn.Module):
    def __init__(self):
        self.fc1 = Dense(6, 16)
        self.fc2 = Dense(16, 3)

    def forward(self, x):
        return self.fc2(_relu(self.fc1(x)))

    def both(self, x):
        hidden = self.fc1(x)
        return hidden, (self.fc2(_relu(hidden)), hidden + hidden)


class TorchMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(6, 16)
        self.fc2 = torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def _models(seed=0):
    torch.manual_seed(seed)
    reference = TorchMLP()
    model = MLP()
    model.load_state_dict(reference.state_dict())
    return model, reference


STATIC = {"forward": {"x": spec.Tensor([4, 6], "float32")}}
SYMBOLIC = {"forward": {"x": spec.Tensor(["batch", 6], "float32")},
            "both": {"x": spec.Tensor(["batch", 6], "float32")}}


@pytest.mark.parametrize("device", ["cpu", "python"])
def test_torch_output_matches_torch(device):
    model, reference = _models()
    runner = model.jit(STATIC, device=device)
    assert runner.backends == {"forward": "graph" if device == "cpu" else "interpreter"}
    x = torch.randn(4, 6)
    out = runner.forward(x)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    torch.testing.assert_close(out, reference(x).detach(), rtol=1e-5, atol=1e-5)
    # numpy and NDArray arguments work the same
    for arg in (x.numpy(), interp.nd.array(x.numpy())):
        torch.testing.assert_close(runner.forward(arg), reference(x).detach(), rtol=1e-5,
                                   atol=1e-5)


def test_numpy_output_and_results_are_not_overwritten():
    model, reference = _models(1)
    runner = model.jit(STATIC, out_format="numpy")
    x1, x2 = np.random.default_rng(0).standard_normal((2, 4, 6)).astype("float32")
    out1 = runner.forward(x1)
    out2 = runner.forward(x2)
    assert isinstance(out1, np.ndarray)
    for x, out in ((x1, out1), (x2, out2)):
        expected = reference(torch.from_numpy(x)).detach().numpy()
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@settings(max_examples=examples(5), deadline=None)
@given(sizes=st.lists(st.integers(1, 9), min_size=1, max_size=4))
def test_symbolic_dims_run_at_several_sizes(sizes):
    model, reference = _models(2)
    runner = model.jit(SYMBOLIC, out_format="numpy")
    assert runner.backends == {"forward": "graph", "both": "graph"}
    rng = np.random.default_rng(len(sizes))
    for batch in sizes:
        x = rng.standard_normal((batch, 6)).astype("float32")
        hidden_t = reference.fc1(torch.from_numpy(x))
        expected = reference(torch.from_numpy(x)).detach().numpy()
        np.testing.assert_allclose(runner.forward(x), expected, rtol=1e-5, atol=1e-5)
        hidden, (out, doubled) = runner.both(x)
        np.testing.assert_allclose(hidden, hidden_t.detach().numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(doubled, 2 * hidden, rtol=1e-6)


def test_missing_parameter_data_names_every_parameter():
    model, _ = _models()
    model.fc1.bias.data = None
    model.fc2.weight.data = None
    with pytest.raises(nn.ParameterError, match=r"fc1\.bias, fc2\.weight"):
        model.jit(STATIC)


def test_each_method_is_built_once(monkeypatch):
    builds = []
    real_build = interp.build

    def counting_build(*args, **kwargs):
        builds.append(1)
        return real_build(*args, **kwargs)

    monkeypatch.setattr(interp, "build", counting_build)
    model, reference = _models(3)
    runner = model.jit(SYMBOLIC, out_format="numpy")
    assert len(builds) == 2
    for batch in (1, 5, 2):
        x = np.ones((batch, 6), "float32") * batch
        runner.forward(x)
        runner.both(x)
    assert len(builds) == 2


def test_pipelines():
    model, reference = _models(4)
    x = torch.randn(4, 6)
    expected = reference(x).detach()
    ran = []

    def my_pass(mod):
        ran.append(sorted(gv.name_hint for gv in mod.get_global_vars()))
        return irlib.transform.FoldConstant()(mod)

    for pipeline in ("default_build", "zero", None, my_pass,
                     irlib.transform.Sequential([irlib.transform.SimplifyInference()])):
        runner = model.jit(STATIC, pipeline=pipeline)
        torch.testing.assert_close(runner.forward(x), expected, rtol=1e-5, atol=1e-5)
    assert ran == [["forward"]]


def test_bad_options_and_arguments():
    model, _ = _models()
    with pytest.raises(JitError, match="unsupported device 'cuda'"):
        model.jit(STATIC, device="cuda")
    with pytest.raises(JitError, match="unknown pipeline 'fast'"):
        model.jit(STATIC, pipeline="fast")
    with pytest.raises(JitError, match="pass"):
        model.jit(STATIC, pipeline=3)
    with pytest.raises(JitError, match="out_format 'jax'"):
        model.jit(STATIC, out_format="jax")
    runner = model.jit(SYMBOLIC, device="cpu", out_format="numpy")
    with pytest.raises(JitError, match="takes 1 argument"):
        runner.forward()
    with pytest.raises(JitError, match="argument 'x': expected dtype float32, got float64"):
        runner.forward(np.zeros((2, 6)))
    with pytest.raises(JitError, match=r"argument 'x': expected shape \['batch', 6\], got "
                                       r"\[2, 5\]"):
        runner.forward(np.zeros((2, 5), "float32"))
    assert isinstance(JitError("x"), irlib.errors.IRError)

    class Reserved(nn.Module):
        def reset_effects(self, x):
            return x

    with pytest.raises(JitError, match="clash"):
        Reserved().jit({"reset_effects": {"x": spec.Tensor([1], "float32")}})


def test_int_arguments_and_interp_cpu_device():
    class Slicer(nn.Module):
        def __init__(self):
            self.table = nn.Parameter((10, 2))

        def forward(self, n: int):
            rows = nn.wrap_nested(irlib.op.strided_slice(self.table._expr, begin=[0], end=[n],
                                                         axes=[0]), "rows")
            return rows + rows

    model = Slicer()
    table = np.arange(20, dtype="float32").reshape(10, 2)
    model.table.data = table
    for device in (interp.cpu(0), "python"):
        runner = model.jit({"forward": {"n": int}}, device=device, out_format="numpy")
        for n in (np.int64(3), 7, torch.tensor(1)):
            np.testing.assert_array_equal(runner.forward(n), 2 * table[:int(n)])
        with pytest.raises(JitError, match="expected an int"):
            runner.forward(2.5)


def test_subroutines_fall_back_to_the_interpreter():
    model = subroutine_chain(3)
    weights = [np.arange(9, dtype="float32").reshape(3, 3) + i for i in range(2)]
    for block, weight in zip(model.blocks, weights):
        block.weight.data = weight
    runner = model.jit({"forward": {"x": spec.Tensor([2, 3], "float32")}}, out_format="numpy")
    assert runner.backends == {"forward": "interpreter"}
    x = np.ones((2, 3), "float32")
    np.testing.assert_allclose(runner.forward(x), x @ weights[0] @ weights[1])


def test_packed_modes():
    model, reference = _models(5)
    x = torch.randn(4, 6)
    expected = reference(x).detach()
    for device in ("cpu", "python"):
        runner = model.jit({"forward": {"x": spec.Tensor([4, 6], "float32"),
                                        "$": {"param_mode": "packed"}}}, device=device)
        torch.testing.assert_close(runner.forward(x), expected, rtol=1e-5, atol=1e-5)


def test_tuple_inputs_and_list_arguments():
    class Pair(nn.Module):
        def forward(self, pair, scale):
            first, second = pair
            return (first + second) * scale

    runner = Pair().jit({"forward": {"pair": [spec.Tensor([2], "float32"),
                                              spec.Tensor([2], "float32")],
                                     "scale": spec.Tensor([2], "float32")}}, out_format="numpy")
    assert runner.backends == {"forward": "interpreter"}      # tuple parameter
    out = runner.forward((np.array([1, 2], "float32"), torch.tensor([3.0, 4.0])), [2, 3])
    np.testing.assert_array_equal(out, [8.0, 18.0])
    with pytest.raises(JitError, match="expected a tuple of 2 values"):
        runner.forward(np.zeros(2, "float32"), [1, 1])
