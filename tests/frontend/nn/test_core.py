"""The nn builder's core: export, parameter naming and binding, specs, errors, subroutines,
Mutator. Numbers are checked against numpy written here."""

import numpy as np
import pytest

import irlib
from irlib.frontend import nn
from irlib.frontend.nn import op, spec
from irlib.ir.dims import DimExpr, size_var

from ._run_nn import Dense, subroutine_chain

torch = pytest.importorskip("torch")


def run_method(mod, name, *args):
    import interp
    func = interp.create_executor("debug", mod).evaluate(mod.get_global_var(name))
    out = func(*args)
    return out.numpy() if hasattr(out, "numpy") else out


class Net(nn.Module):
    def __init__(self):
        self.layers = nn.ModuleList([Dense(8, 16), Dense(16, 4)])
        self.scale = nn.Parameter((4,))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x * self.scale


def _random_params(model, seed=0):
    rng = np.random.default_rng(seed)
    for _, param in model.named_parameters():
        param.data = rng.standard_normal([int(d) for d in param.shape]).astype(param.dtype)


def _numpy_net(model, x):
    p = {name: param.data.numpy() for name, param in model.named_parameters()}
    for i in range(2):
        x = x @ p[f"layers.{i}.weight"].T + p[f"layers.{i}.bias"]
    return x * p["scale"]


def test_parameter_names_follow_attribute_paths():
    names = [name for name, _ in Net().named_parameters()]
    assert names == ["layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias",
                     "scale"]
    assert list(Net().state_dict(prefix="m.")) == ["m." + n for n in names]
    assert len(list(Net().parameters())) == 5


def test_export_puts_inputs_first_and_weights_after_and_runs():
    model = Net()
    _random_params(model)
    mod, params = model.export_tvm({"forward": {"x": spec.Tensor([3, 8], "float32")}})
    func = mod["forward"]
    assert [p.name_hint for p in func.params] == ["x"] + [n for n, _ in params]
    assert func.attrs["num_input"] == 1
    x = np.random.default_rng(1).standard_normal((3, 8)).astype("float32")
    out = run_method(mod, "forward", x, *[p.data.numpy() for _, p in params])
    np.testing.assert_allclose(out, _numpy_net(model, x), rtol=1e-5, atol=1e-5)


def test_symbolic_dims_are_shared_by_name_and_inferred_eagerly():
    seen = {}

    class Probe(nn.Module):
        def forward(self, a, b):
            seen["a"], seen["b"] = a.shape, b.shape
            return op.matmul(a, b)

    mod, _ = Probe().export_tvm({"forward": {"a": spec.Tensor(["n", "k"], "float32"),
                                             "b": spec.Tensor(["k", 5], "float32")}})
    n, k = size_var("n"), size_var("k")
    assert seen["a"] == [n, k] and seen["b"] == [k, 5]
    assert isinstance(seen["a"][0], DimExpr)
    ret = mod["forward"].checked_type.ret_type
    assert tuple(ret.shape) == (n, 5)
    for rows in (1, 4):
        a = np.ones((rows, 3), "float32")
        b = np.arange(15, dtype="float32").reshape(3, 5)
        np.testing.assert_allclose(run_method(mod, "forward", a, b), a @ b)


def test_int_spec_becomes_a_size_param():
    class Shaped(nn.Module):
        def forward(self, x, total):
            assert total == size_var("total")
            return x

    mod, _ = Shaped().export_tvm({"forward": {"x": spec.Tensor([2], "float32"), "total": int}})
    func = mod["forward"]
    assert list(func.attrs["size_params"]) == ["total"]
    assert func.params[1].type_annotation == irlib.TensorType((), "int64")


def test_tuple_inputs_and_outputs():
    class Pair(nn.Module):
        def forward(self, pair):
            a, b = pair
            return a + b, a - b

    mod, _ = Pair().export_tvm({"forward": {"pair": [spec.Tensor([2], "float32"),
                                                     spec.Tensor([2], "float32")]}})
    a, b = np.array([1, 2], "float32"), np.array([5, 7], "float32")
    import interp
    func = interp.create_executor("debug", mod).evaluate(mod.get_global_var("forward"))
    out = func((a, b))
    np.testing.assert_allclose(out[0].numpy(), a + b)
    np.testing.assert_allclose(out[1].numpy(), a - b)


def test_packed_and_none_param_modes():
    model = Net()
    _random_params(model)
    mod, params = model.export_tvm({"forward": {"x": spec.Tensor([2, 8], "float32"),
                                                "$": {"param_mode": "packed"}}})
    assert [p.name_hint for p in mod["forward"].params] == ["x", "packed_params"]
    x = np.ones((2, 8), "float32")
    out = run_method(mod, "forward", x, tuple(p.data.numpy() for _, p in params))
    np.testing.assert_allclose(out, _numpy_net(model, x), rtol=1e-5, atol=1e-5)

    class NoWeights(nn.Module):
        def forward(self, x):
            return x * 3.0

    mod, _ = NoWeights().export_tvm({"forward": {"x": spec.Tensor([2], "float32"),
                                                 "$": {"param_mode": "none"}}})
    assert len(mod["forward"].params) == 1
    with pytest.raises(nn.SpecError, match="param_mode"):
        NoWeights().export_tvm({"forward": {"x": spec.Tensor([2], "float32"),
                                            "$": {"param_mode": "bogus"}}})


def test_load_state_dict_takes_a_torch_state_dict():
    torch.manual_seed(0)
    reference = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Linear(16, 4))
    model = nn.ModuleList([Dense(8, 16), Dense(16, 4)])
    missing, unexpected = model.load_state_dict(reference.state_dict())
    assert missing == [] and unexpected == []
    mod, params = model.export_tvm({"forward": {"x": spec.Tensor([5, 8], "float32")}})
    x = torch.randn(5, 8)
    out = run_method(mod, "forward", x.numpy(), *[p.data.numpy() for _, p in params])
    np.testing.assert_allclose(out, reference(x).detach().numpy(), rtol=1e-5, atol=1e-5)


def test_load_state_dict_reports_missing_and_unexpected_keys():
    model = Dense(2, 3)
    good = {"weight": np.zeros((3, 2), "float32")}
    with pytest.raises(nn.StateDictError) as info:
        model.load_state_dict({**good, "extra": np.zeros(1, "float32")})
    assert info.value.missing_keys == ["bias"] and info.value.unexpected_keys == ["extra"]
    assert model.weight.data is None                      # nothing bound on failure
    assert model.load_state_dict(good, strict=False) == (["bias"], [])
    assert model.weight.data is not None


def test_parameter_data_is_checked():
    param = nn.Parameter((2, "n"), "float32")
    param.data = np.zeros((2, 7), "float32")               # a symbolic dim takes any size
    with pytest.raises(nn.ParameterError, match="shape"):
        param.data = np.zeros((3, 7), "float32")
    with pytest.raises(nn.ParameterError, match="dtype"):
        param.data = np.zeros((2, 7), "float64")
    with pytest.raises(nn.ParameterError, match="weight"):
        Dense(2, 3).load_state_dict({"weight": np.zeros((2, 2), "float32"),
                                     "bias": np.zeros(3, "float32")})
    param.data = torch.ones(2, 5)
    assert param.data.shape == (2, 5)
    with pytest.raises(nn.ParameterError):
        param.to("float16")
    param.data = None
    param.to("float16")
    assert param.dtype == "float16"


def test_spec_errors_name_the_argument():
    with pytest.raises(nn.SpecError, match="'y'"):
        Net().export_tvm({"forward": {"x": spec.Tensor([2, 8], "float32"),
                                      "y": spec.Tensor([2], "float32")}})
    with pytest.raises(nn.SpecError, match="'x'"):
        Net().export_tvm({"forward": {}})
    with pytest.raises(nn.SpecError, match="decode"):
        Net().export_tvm({"decode": {"x": spec.Tensor([2, 8], "float32")}})


def test_op_errors_name_the_module_path():
    class Attn(nn.Module):
        def __init__(self):
            self.q_proj = Dense(4, 4)

        def forward(self, x):
            return self.q_proj(x)

    class Block(nn.Module):
        def __init__(self):
            self.attn = Attn()

        def forward(self, x):
            return self.attn(x)

    class Model(nn.Module):
        def __init__(self):
            self.layers = nn.ModuleList([Block() for _ in range(4)])

        def forward(self, x):
            return self.layers[3](x)

    with pytest.raises(nn.OpError, match=r"model\.layers\.3\.attn\.q_proj") as info:
        Model().export_tvm({"forward": {"x": spec.Tensor([2, 4], "float16")}})
    assert "float16" in str(info.value) and "float32" in str(info.value)


def test_subroutine_layers_share_one_function():
    model = subroutine_chain(4)
    _random_params(model)
    mod, params = model.export_tvm({"forward": {"x": spec.Tensor([2, 4], "float32")}})
    assert sorted(gv.name_hint for gv in mod.get_global_vars()) == ["block", "forward"]
    x = np.ones((2, 4), "float32")
    weights = [p.data.numpy() for _, p in params]
    out = run_method(mod, "forward", x, *weights)
    np.testing.assert_allclose(out, x @ weights[0] @ weights[1], rtol=1e-5)


def test_mutator_replaces_layers():
    class Doubled(nn.Module):
        def __init__(self, inner):
            self.inner = inner

        def forward(self, x):
            return self.inner(x) * 2.0

    class Wrap(nn.Mutator):
        def visit_module(self, name, node):
            if isinstance(node, Dense):
                return Doubled(node)
            return super().visit_module(name, node)

    model = Wrap().visit("", Net())
    assert isinstance(model.layers[0], Doubled)
    assert [n for n, _ in model.named_parameters()][0] == "layers.0.inner.weight"


def test_tensor_operators_and_constants():
    shapes = {}

    class Ops(nn.Module):
        def forward(self, x):
            c = nn.Tensor.from_const(np.array([1, 2], "float32"))
            y = (2.0 * x + c - 1.0) / 2.0
            shapes["y"] = (y.shape, y.dtype, y.ndim)
            return y.reshape(1, 2).permute_dims(1, 0).astype("float64")

    mod, _ = Ops().export_tvm({"forward": {"x": spec.Tensor([2], "float32")}})
    assert shapes["y"] == ([2], "float32", 1)
    x = np.array([3, 5], "float32")
    out = run_method(mod, "forward", x)
    np.testing.assert_allclose(out, ((2 * x + [1, 2] - 1) / 2).reshape(2, 1))
    assert out.dtype == np.float64
    placeholder = nn.Tensor.placeholder(["n", 3], "int32", name="ids")
    assert placeholder.shape[1] == 3 and placeholder.dtype == "int32"
    assert nn.Tensor.from_scalar(1, "float16").dtype == "float16"
    assert nn.get_default_dtype() == "float32"


def test_a_method_using_weights_it_does_not_take_is_reported():
    with pytest.raises(nn.NNError, match=r"layers\.0\.weight.*param_mode='none'"):
        Net().export_tvm({"forward": {"x": spec.Tensor([2, 8], "float32"),
                                      "$": {"param_mode": "none"}}})
