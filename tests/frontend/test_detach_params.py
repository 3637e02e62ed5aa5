"""``irlib.frontend.detach_params`` and ``from_onnx(..., keep_params_in_input=True)``'s
``num_input`` / ``params`` attributes (the frontends' keep-params convention).

Oracles: onnxruntime (and torch) on the same model; numpy arrays written in the tests.
"""

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import interp  # noqa: E402
import irlib  # noqa: E402
from irlib.errors import IRError  # noqa: E402
from irlib.frontend import ParamsAttrError, detach_params  # noqa: E402
from irlib.frontend.onnx import from_onnx  # noqa: E402
from irlib.ndarray import NDArray  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


# -- models ---------------------------------------------------------------------------------------
def _cnn_model(rng, batch, cin, cout, kernel, size, units):
    """Conv(+bias) -> Relu -> Flatten -> Gemm(+bias) -> Relu -> Gemm, weights as initializers;
    the batch dim is the named variable "batch"."""
    out = size - kernel + 1
    inits = {
        "conv_w": rng.standard_normal((cout, cin, kernel, kernel)).astype("float32"),
        "conv_b": rng.standard_normal(cout).astype("float32"),
        "fc1_w": rng.standard_normal((units, cout * out * out)).astype("float32") * 0.1,
        "fc1_b": rng.standard_normal(units).astype("float32"),
        "fc2_w": rng.standard_normal((units, 3)).astype("float32"),
    }
    nodes = [helper.make_node("Conv", ["x", "conv_w", "conv_b"], ["c"]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Flatten", ["r"], ["f"]),
             helper.make_node("Gemm", ["f", "fc1_w", "fc1_b"], ["h"], transB=1),
             helper.make_node("Relu", ["h"], ["hr"]),
             helper.make_node("Gemm", ["hr", "fc2_w"], ["y"])]
    graph = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                     ["batch", cin, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
        [numpy_helper.from_array(value, name) for name, value in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = rng.standard_normal((batch, cin, size, size)).astype("float32")
    return model, x, inits


def _onnxruntime(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _run(mod, executor, args, params=None):
    run = interp.create_executor(executor, mod=mod, device=interp.cpu(0), target="cpu",
                                 params=params).evaluate()
    out = run(*args)
    return [o.numpy() for o in out] if isinstance(out, (tuple, list)) else [out.numpy()]


def _dense_module(with_helper=True):
    """``@main(%x, %w, %b)`` with num_input=1 and params=[w, b]; ``@helper`` without params."""
    rng = np.random.default_rng(7)
    w = rng.standard_normal((4, 3)).astype("float32")
    b = rng.standard_normal(4).astype("float32")
    x, wv, bv = irlib.var("x", shape=(2, 3)), irlib.var("w", shape=(4, 3)), \
        irlib.var("b", shape=(4,))
    main = irlib.Function([x, wv, bv], irlib.nn.bias_add(irlib.nn.dense(x, wv), bv),
                          attrs={"num_input": 1, "params": [NDArray(w), NDArray(b)]})
    mod = irlib.IRModule.from_expr(main)
    if with_helper:
        y = irlib.var("y", shape=(2, 4))
        mod["helper"] = irlib.Function([y], irlib.nn.relu(y))
    return mod, w, b


# -- the ONNX keep-then-detach pattern ------------------------------------------------------------
@settings(max_examples=4, deadline=None)
@given(batch=st.integers(1, 3), cin=st.integers(1, 3), cout=st.integers(1, 4),
       kernel=st.integers(1, 3), units=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_onnx_keep_then_detach_matches_default_import_and_onnxruntime(batch, cin, cout, kernel,
                                                                      units, seed):
    rng = np.random.default_rng(seed)
    model, x, inits = _cnn_model(rng, batch, cin, cout, kernel, 5, units)
    want = _onnxruntime(model, {"x": x})[0]

    default_mod, _ = from_onnx(model)
    kept_mod, kept_params = from_onnx(model, keep_params_in_input=True)
    main = kept_mod["main"]
    assert main.attrs["num_input"] == 1
    assert [p.name_hint for p in main.params] == ["x"] + list(inits)

    detached, params = detach_params(kept_mod)
    assert list(params) == ["main"]
    assert [a.shape for a in params["main"]] == [v.shape for v in inits.values()]
    for got, value in zip(params["main"], inits.values()):
        assert isinstance(got, NDArray)
        np.testing.assert_array_equal(got.numpy(), value)
    assert "params" not in detached["main"].attrs
    assert detached["main"].attrs["num_input"] == 1
    # what from_onnx returns today is kept: the params dict keyed by parameter name
    assert list(kept_params) == list(inits)

    base = _run(default_mod, "debug", [x])[0]
    np.testing.assert_allclose(base, want, rtol=RTOL, atol=ATOL)
    for executor in ("debug", "graph"):
        got = _run(detached, executor, [x, *params["main"]])[0]
        np.testing.assert_allclose(got, base, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_module_with_params_attribute_runs_and_builds():
    """Executors and build take the attributed module as it is: the weights as trailing
    arguments, or bound by name; the attribute survives InferType and FoldConstant."""
    rng = np.random.default_rng(3)
    model, x, inits = _cnn_model(rng, 2, 2, 3, 3, 6, 5)
    want = _onnxruntime(model, {"x": x})[0]
    # static shapes for interp.build (create_executor("graph") binds them at the call)
    mod, params = from_onnx(model, shape_dict={"x": x.shape}, keep_params_in_input=True)
    weights = list(inits.values())
    for executor in ("debug", "graph", "python"):
        np.testing.assert_allclose(_run(mod, executor, [x, *weights])[0], want,
                                   rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(_run(mod, "graph", [x], params=params)[0], want,
                               rtol=RTOL, atol=ATOL)

    lib = interp.build(mod, target="cpu")
    graph = interp.graph_executor.GraphModule(lib["default"](interp.cpu(0)))
    detached, values = detach_params(mod)
    graph.set_input("x", x)
    for param, value in zip(detached["main"].params[1:], values["main"]):
        graph.set_input(param.name_hint, value)
    graph.run()
    np.testing.assert_allclose(graph.get_output(0).numpy(), want, rtol=RTOL, atol=ATOL)

    typed = irlib.transform.FoldConstant()(irlib.transform.InferType()(mod))
    assert typed["main"].attrs["num_input"] == 1
    for got, value in zip(typed["main"].attrs["params"], weights):
        np.testing.assert_array_equal(np.asarray(got), value)


def _torch_export():
    """A conv / batch-norm / pool / linear net exported by torch.onnx.export (opset 17):
    ``(model, x, torch's own output)``."""
    torch = pytest.importorskip("torch")
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.fc = nn.Linear(4 * 4 * 4, 6)

        def forward(self, x):
            y = torch.relu(self.bn(self.conv(x)))
            y = nn.functional.max_pool2d(y, 2)
            return torch.relu(self.fc(torch.flatten(y, 1)))

    torch.manual_seed(0)
    net = Net().eval()
    with torch.no_grad():
        net.bn.running_mean.uniform_(-0.5, 0.5)
        net.bn.running_var.uniform_(0.5, 1.5)
    x = np.random.default_rng(1).standard_normal((2, 3, 8, 8)).astype("float32")
    buffer = io.BytesIO()
    torch.onnx.export(net, (torch.from_numpy(x),), buffer, opset_version=17, dynamo=False,
                      input_names=["x"], output_names=["y"])
    with torch.no_grad():
        reference = net(torch.from_numpy(x)).numpy()
    return onnx.load_from_string(buffer.getvalue()), x, reference


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")
def test_torch_exported_model_keep_then_detach():
    model, x, reference = _torch_export()
    want = _onnxruntime(model, {"x": x})[0]
    np.testing.assert_allclose(want, reference, rtol=RTOL, atol=ATOL)
    default_mod, _ = from_onnx(model)
    kept_mod, _ = from_onnx(model, keep_params_in_input=True)
    detached, params = detach_params(kept_mod)
    initializers = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    assert len(params["main"]) == len(initializers) > 0
    for got, value in zip(params["main"], initializers.values()):
        np.testing.assert_array_equal(got.numpy(), value)
    base = _run(default_mod, "debug", [x])[0]
    np.testing.assert_allclose(base, want, rtol=RTOL, atol=ATOL)
    for executor in ("debug", "graph"):
        got = _run(detached, executor, [x, *params["main"]])[0]
        np.testing.assert_allclose(got, base, rtol=RTOL, atol=ATOL)


# -- what detach_params leaves alone --------------------------------------------------------------
def test_input_module_is_unchanged_and_other_functions_untouched():
    mod, w, b = _dense_module()
    before_text = mod.astext()
    before_main, before_helper = mod["main"], mod["helper"]
    detached, params = detach_params(mod)
    assert mod["main"] is before_main and mod["helper"] is before_helper
    assert mod.astext() == before_text
    assert "params" in mod["main"].attrs
    assert list(params) == ["main"]
    assert detached["helper"] is before_helper
    assert detached["main"] is not before_main
    assert dict(detached["main"].attrs) == {"num_input": 1}
    assert detached["main"].params == before_main.params
    assert detached["main"].body is before_main.body
    np.testing.assert_array_equal(params["main"][0].numpy(), w)
    np.testing.assert_array_equal(params["main"][1].numpy(), b)

    x = np.arange(6, dtype="float32").reshape(2, 3)
    got = _run(detached, "debug", [x, *params["main"]])[0]
    np.testing.assert_allclose(got, x @ w.T + b, rtol=1e-5, atol=1e-5)


def test_module_without_params_gives_an_empty_dict():
    x = irlib.var("x", shape=(3,))
    mod = irlib.IRModule.from_expr(irlib.Function([x], irlib.nn.relu(x),
                                                  attrs={"num_input": 1}))
    detached, params = detach_params(mod)
    assert params == {}
    assert detached["main"] is mod["main"]


def test_params_survive_the_text_format():
    mod, w, b = _dense_module(with_helper=False)
    mod = irlib.transform.InferType()(mod)
    short = mod.astext(show_meta_data=False)
    assert "num_input=1, params=[meta[relay.Constant][0], meta[relay.Constant][1]]" in short
    full = mod.astext()
    assert "#[metadata]" in full and "#[metadata]" not in short
    parsed = irlib.parse(full)
    irlib.assert_structural_equal(parsed, mod)
    _, params = detach_params(parsed)
    np.testing.assert_array_equal(params["main"][0].numpy(), w)
    np.testing.assert_array_equal(params["main"][1].numpy(), b)


def test_large_weights_print_as_metadata_references():
    """A megabyte of weights adds a reference to the printed function, not its numbers."""
    x, w = irlib.var("x", shape=(1, 512)), irlib.var("w", shape=(512, 512))
    weight = np.random.default_rng(0).standard_normal((512, 512)).astype("float32")
    mod = irlib.IRModule.from_expr(irlib.Function(
        [x, w], irlib.nn.dense(x, w), attrs={"num_input": 1, "params": [NDArray(weight)]}))
    for text in (str(mod), mod.astext(show_meta_data=False)):
        assert "params=[meta[relay.Constant][0]]" in text
        assert len(text) < 400, text


def test_checked_type_is_kept():
    mod, _, _ = _dense_module(with_helper=False)
    typed = irlib.transform.InferType()(mod)
    detached, _ = detach_params(typed)
    assert irlib.structural_equal(detached["main"].checked_type, typed["main"].checked_type)


def test_numpy_values_turned_into_tuples_by_attrs_are_rebuilt_in_the_parameter_dtype():
    """A function's Attrs store a numpy array as nested tuples; detach rebuilds the array."""
    w = np.arange(12, dtype="int64").reshape(4, 3) - 5
    x, wv = irlib.var("x", shape=(2, 3), dtype="int64"), irlib.var("w", shape=(4, 3),
                                                                  dtype="int64")
    func = irlib.Function([x, wv], irlib.add(x, irlib.sum(wv, axis=[0])),
                          attrs={"num_input": 1, "params": [w]})
    assert isinstance(func.attrs["params"][0], tuple)
    _, params = detach_params(irlib.IRModule.from_expr(func))
    assert params["main"][0].dtype == "int64"
    np.testing.assert_array_equal(params["main"][0].numpy(), w)


def test_without_num_input_the_weights_are_the_last_parameters():
    x, w = irlib.var("x", shape=(2,)), irlib.var("w", shape=(2,))
    value = np.array([1.5, -2.0], "float32")
    func = irlib.Function([x, w], irlib.multiply(x, w), attrs={"params": [NDArray(value)]})
    detached, params = detach_params(irlib.IRModule.from_expr(func))
    assert detached["main"].attrs is None
    got = _run(detached, "debug", [np.array([2.0, 3.0], "float32"), *params["main"]])[0]
    np.testing.assert_array_equal(got, [3.0, -6.0])


def test_symbolic_weight_dims_match_any_size_consistently():
    n = irlib.size_var("n")
    x = irlib.var("x", shape=(n,))
    a, b = irlib.var("a", shape=(n, 2)), irlib.var("b", shape=(n + 1,))
    body = irlib.Tuple([x, a, b])

    def module(*values):
        return irlib.IRModule.from_expr(irlib.Function(
            [x, a, b], body, attrs={"num_input": 1, "params": [NDArray(v) for v in values]}))

    ones = np.ones
    _, params = detach_params(module(ones((4, 2), "float32"), ones(5, "float32")))
    assert [p.shape for p in params["main"]] == [(4, 2), (5,)]
    with pytest.raises(ParamsAttrError, match=r"@main, parameter %b \(weight 1\).*axis 0: 4 vs 5"):
        detach_params(module(ones((4, 2), "float32"), ones(4, "float32")))


# -- bad input ------------------------------------------------------------------------------------
def test_not_a_module():
    mod, _, _ = _dense_module()
    with pytest.raises(ParamsAttrError, match="expects an IRModule, got Function"):
        detach_params(mod["main"])
    assert issubclass(ParamsAttrError, IRError)


def _with_attrs(**attrs):
    mod, w, b = _dense_module()
    fields = dict(mod["main"].attrs)
    fields.update(attrs)
    fields = {k: v for k, v in fields.items() if v is not None}
    mod["main"] = mod["main"].replace(attrs=irlib.ir.attrs.Attrs(fields))
    return mod, w, b


@pytest.mark.parametrize("attrs,message", [
    ({"params": [NDArray(np.zeros((4, 3), "float32"))]},
     r"@main: the 'params' attribute holds 1 values but the function has 2 trailing "
     r"parameters after its 1 inputs \(3 parameters in all\): parameter %b has no value"),
    ({"params": [NDArray(np.zeros((4, 3), "float32"))] * 3},
     r"@main: .* holds 3 values .* 2 trailing parameters.*: value 2 has no parameter"),
    ({"num_input": 5}, r"@main: 'num_input' is 5, but the function has 3 parameters"),
    ({"num_input": "1"}, r"@main: 'num_input' must be an int, got '1'"),
    ({"num_input": None, "params": [NDArray(np.zeros(4, "float32"))] * 4},
     r"@main: the 'params' attribute holds 4 values but the function has only 3 parameters"),
    ({"params": [NDArray(np.zeros((3, 4), "float32")), NDArray(np.zeros(4, "float32"))]},
     r"@main, parameter %w \(weight 0\): the value has shape \(3, 4\), the parameter "
     r"\(4, 3\) \(axis 0: 3 vs 4\)"),
    ({"params": [NDArray(np.zeros((4, 3), "float32")), NDArray(np.zeros((4, 1), "float32"))]},
     r"@main, parameter %b \(weight 1\): the value has shape \(4, 1\), the parameter \(4\)"),
    ({"params": [NDArray(np.zeros((4, 3), "float64")), NDArray(np.zeros(4, "float32"))]},
     r"@main, parameter %w \(weight 0\): the value has dtype float64, the parameter float32"),
    ({"params": [NDArray(np.zeros((4, 3), "float32")), "weights.bin"]},
     r"@main, parameter %b \(weight 1\): the value is a str, not an array"),
    ({"params": NDArray(np.zeros((4, 3), "float32"))},
     r"@main: the 'params' attribute must be a list of arrays, got NDArray"),
])
def test_bad_params_attribute_names_function_and_parameter(attrs, message):
    mod, _, _ = _with_attrs(**attrs)
    with pytest.raises(ParamsAttrError, match=message):
        detach_params(mod)
