"""Differential tests: graph executor == independent numpy oracle / the interpreter.

Generated dataflow programs are checked against their own numpy oracle (written in
``irlib.testing.generator_ops``, not through the op registry); every zoo model at a small
size is checked against the reference interpreter (rtol 1e-4).
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import interp
import zoo
from irlib.testing import strategies as irst

from graph_helpers import flatten, graph_module, outputs


def _tolerance(dtype):
    return dict(rtol=1e-4, atol=1e-5) if dtype in ("float32", "float16") else \
        dict(rtol=1e-9, atol=0)


@pytest.mark.parametrize("target", ["python", "cpu"])
@settings(max_examples=30, deadline=None)
@given(program=irst.tensor_exprs(), data=st.data())
def test_generated_programs_match_oracle(target, program, data):
    inputs = data.draw(program.inputs_strategy())
    expected = flatten(program.reference(inputs))
    gmod, _ = graph_module(program.module(), target)
    gmod.run(**{p.name_hint: inputs[p] for p in program.params})
    actual = outputs(gmod)
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, **_tolerance(str(want.dtype)))


SMALL = {
    "mlp": lambda: zoo.mlp.get_workload(2),
    "resnet18": lambda: zoo.resnet.get_workload(num_classes=10, image_shape=(3, 32, 32)),
    "resnet18_nhwc": lambda: zoo.resnet.get_workload(num_classes=10, image_shape=(32, 32, 3),
                                                     layout="NHWC"),
    "resnet20_cifar": lambda: zoo.resnet.get_workload(2, 10, 20, image_shape=(3, 16, 16)),
    "mobilenet": lambda: zoo.mobilenet.get_workload(num_classes=10, image_shape=(3, 32, 32)),
    "dcgan": lambda: zoo.dcgan.get_workload(2, ngf=4, random_len=10),
    "lstm": lambda: zoo.lstm.get_workload(3, 4, batch_size=2),
    "inception_v3": lambda: zoo.inception_v3.get_workload(num_classes=10),
    "squeezenet1.0": lambda: zoo.squeezenet.get_workload(num_classes=10,
                                                         image_shape=(3, 32, 32)),
    "squeezenet1.1": lambda: zoo.squeezenet.get_workload(num_classes=10, version="1.1",
                                                         image_shape=(3, 32, 32)),
    "vgg11_bn": lambda: zoo.vgg.get_workload(1, num_classes=10, image_shape=(3, 32, 32),
                                             batch_norm=True),
    "densenet121": lambda: zoo.densenet.get_workload(classes=10, batch_size=1),
}


def _random_inputs(mod, params, rng):
    """Values of the unbound parameters of main, in order (names may repeat: lstm)."""
    values = []
    for param in mod["main"].params:
        if param.name_hint in params:
            continue
        ty = param.type_annotation
        values.append(rng.standard_normal([int(d) for d in ty.shape]).astype(ty.dtype))
    return values


def _randomised(params, rng):
    # Non-trivial batch-norm statistics, so folding them has something to get wrong.
    out = {}
    for name, value in params.items():
        value = value.numpy()
        if name.endswith(("_gamma", "_moving_var")):
            value = rng.uniform(0.5, 1.5, value.shape).astype(value.dtype)
        elif name.endswith(("_beta", "_moving_mean", "_bias")):
            value = rng.uniform(-0.2, 0.2, value.shape).astype(value.dtype)
        out[name] = value
    return out


@pytest.mark.parametrize("name", sorted(SMALL))
def test_zoo_model_matches_interpreter(name):
    rng = np.random.default_rng(0)
    mod, params = SMALL[name]()
    params = _randomised(params, rng)
    inputs = _random_inputs(mod, params, rng)
    expected = flatten(interp.create_executor("debug", mod, params=params).evaluate()(*inputs)
                       .numpy())
    for target in ("cpu",) if name not in ("mlp", "lstm") else ("cpu", "python"):
        gmod, _ = graph_module(mod, target, params)
        for index, value in enumerate(inputs):
            gmod.set_input(index, value)
        gmod.run()
        for got, want in zip(outputs(gmod), expected):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@settings(max_examples=25, deadline=None)
@given(program=irst.programs(), data=st.data())
def test_create_executor_graph_on_general_programs(program, data):
    # Dataflow mains run on the graph executor; the rest fall back to the interpreter.
    inputs = data.draw(program.inputs_strategy())
    expected = flatten(program.reference(inputs))
    ex = interp.create_executor("graph", program.module())
    result = ex.evaluate()(*program.input_list(inputs))
    actual = flatten(result.numpy() if hasattr(result, "numpy") else
                     _to_numpy(result))
    for got, want in zip(actual, expected):
        np.testing.assert_allclose(got, want, **_tolerance(str(want.dtype)))


def _to_numpy(value):
    if isinstance(value, tuple):
        return tuple(_to_numpy(v) for v in value)
    return value.numpy()
