"""to_onnx: zoo models (small sizes) pass onnx.checker, onnxruntime agrees with the
reference interpreter, and from_onnx(to_onnx(m)) runs to the same result."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

import interp  # noqa: E402
from irlib import Function, Var  # noqa: E402
from irlib.frontend import OpNotImplemented  # noqa: E402
from irlib.frontend.onnx import from_onnx  # noqa: E402
from irlib.frontend.onnx.exporter import to_onnx  # noqa: E402
from irlib.ir.types import TensorType  # noqa: E402
from irlib.op.registry import make_call  # noqa: E402
from zoo import dcgan, lstm, mlp, mobilenet, resnet, squeezenet, vgg  # noqa: E402

# every zoo family at a small size (densenet and inception_v3 need their full image sizes,
# so they run only with IRLIB_SLOW=1)
ZOO = {
    "mlp": lambda: mlp.get_workload(2),
    "mobilenet": lambda: mobilenet.get_workload(1, num_classes=10, image_shape=(3, 32, 32)),
    "squeezenet1.0": lambda: squeezenet.get_workload(1, num_classes=10, version="1.0",
                                                     image_shape=(3, 64, 64)),
    "squeezenet1.1": lambda: squeezenet.get_workload(1, num_classes=10, version="1.1",
                                                     image_shape=(3, 64, 64)),
    "dcgan": lambda: dcgan.get_workload(1, oshape=(3, 64, 64), ngf=4, random_len=10),
    "lstm": lambda: lstm.get_workload(2, 8, batch_size=1),
    "resnet18": lambda: resnet.get_workload(1, num_classes=10, num_layers=18,
                                            image_shape=(3, 32, 32)),
    "vgg11_bn": lambda: vgg.get_workload(1, num_classes=10, image_shape=(3, 32, 32),
                                         num_layers=11, batch_norm=True),
}


def _slow_zoo():
    from zoo import densenet, inception_v3
    return {"densenet121": lambda: densenet.get_workload(121, classes=10, batch_size=1),
            "inception_v3": lambda: inception_v3.get_workload(1, num_classes=10)}


def _interpret(mod, args):
    result = interp.create_executor("debug", mod=mod).evaluate()(*args)
    return [r.numpy() for r in result] if isinstance(result, tuple) else [result.numpy()]


def _check(build):
    ort = pytest.importorskip("onnxruntime")
    mod, params = build()
    model = to_onnx(mod, params)
    onnx.checker.check_model(model)
    main = mod["main"]
    rng = np.random.default_rng(0)
    free = [p for p in main.params if p.name_hint not in params]
    values = [rng.random([int(d) for d in p.type_annotation.shape]).astype("float32")
              for p in free]
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    got = session.run(None, {i.name: v for i, v in zip(model.graph.input, values)})
    feed = iter(values)
    want = _interpret(mod, [params[p.name_hint].numpy() if p.name_hint in params
                            else next(feed) for p in main.params])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    back, _ = from_onnx(model)
    for g, w in zip(_interpret(back, values), want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_model_round_trips(name):
    _check(ZOO[name])


@pytest.mark.parametrize("name", ["densenet121", "inception_v3"])
def test_zoo_model_round_trips_full_size(name):
    import os
    if not os.environ.get("IRLIB_SLOW"):
        pytest.skip("full-size models: set IRLIB_SLOW=1")
    _check(_slow_zoo()[name])


def test_unsupported_ops_are_listed_at_once():
    x = Var("x", TensorType((2, 2), "float32"))
    body = make_call("sort", (make_call("cumsum", (x,), {"axis": 0}),))
    with pytest.raises(OpNotImplemented) as info:
        to_onnx(Function((x,), body))
    assert "cumsum" in str(info.value) and "sort" in str(info.value)
