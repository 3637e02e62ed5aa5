"""Whole models written in plain torch (tests/frontend/torch/_models.py) imported with from_fx
and from_exported_program: outputs equal torch eager on the interpreter and the graph
executor; keep_params_as_input + detach_params gives the same outputs."""

import numpy as np
import pytest
import torch
from torch import fx

from irlib.frontend import detach_params
from irlib.frontend.torch import from_exported_program, from_fx

from . import _models
from ._running import EXECUTORS, assert_close, check_module, eager, input_info, run

MODELS = ["resnet18", "mobilenet_v2", "squeeze_vgg", "dense_inception", "efficient_mobilev3",
          "bert", "gpt2_block", "mha", "lstm"]


@pytest.mark.parametrize("name", MODELS)
def test_model_matches_eager(name):
    model = _models.make(name)
    inputs = _models.example_inputs(name)
    check_module(model, inputs)


@pytest.mark.parametrize("name", ["resnet18", "bert", "lstm"])
def test_model_decomposed_export(name):
    """The core-ATen program (run_decompositions) converts too."""
    model = _models.make(name)
    inputs = _models.example_inputs(name)
    check_module(model, inputs, fx_path=False, decompose=True, executors=("debug",))


@pytest.mark.parametrize("name", ["resnet18", "bert", "gpt2_block"])
@pytest.mark.parametrize("path", ["fx", "export"])
def test_keep_params_as_input_and_detach(name, path):
    model = _models.make(name)
    inputs = _models.example_inputs(name)
    expected = eager(model, inputs)
    if path == "fx":
        mod = from_fx(fx.symbolic_trace(model), input_info(inputs), keep_params_as_input=True)
    else:
        mod = from_exported_program(torch.export.export(model, inputs),
                                    keep_params_as_input=True)
    main = mod["main"]
    assert main.attrs["num_input"] == len(inputs)
    weights = main.params[len(inputs):]
    state = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    assert len(weights) == len(main.attrs["params"]) > 0
    for var, value in zip(weights, main.attrs["params"]):
        shape = tuple(var.type_annotation.shape)
        assert value.numpy().shape == shape
    # every weight value is one of the model's tensors (the names tell which)
    for var, value in zip(weights, main.attrs["params"]):
        key = var.name_hint
        if path == "export" or key in state:
            assert key in state, key
            np.testing.assert_array_equal(value.numpy(), state[key].detach().numpy())
    detached, params = detach_params(mod)
    assert "params" not in detached["main"].attrs
    arrays = [t.numpy() for t in inputs] + [p.numpy() for p in params["main"]]
    for executor in EXECUTORS:
        assert_close(run(detached, arrays, executor), expected, what=f"{path}/{executor}")


def test_model_weights_folded_by_default():
    model = _models.make("resnet18")
    inputs = _models.example_inputs("resnet18")
    mod = from_fx(fx.symbolic_trace(model), input_info(inputs))
    assert len(mod["main"].params) == 1
    assert mod["main"].attrs is None or "params" not in mod["main"].attrs


@pytest.mark.parametrize("name,decompose", [("bert", False), ("gpt2_block", False),
                                            ("gpt2_block", True), ("mha", False)])
def test_transformers_with_dynamic_batch_and_sequence(name, decompose):
    """torch.export.Dim batch and sequence dims: one import runs at several sizes (causal
    masks and position ids built from the run-time sizes)."""
    model = _models.make(name)
    example = _models.example_inputs(name)
    batch = torch.export.Dim("batch", min=1, max=8)
    seq = torch.export.Dim("seq", min=2, max=16)
    program = torch.export.export(model, example,
                                  dynamic_shapes=tuple({0: batch, 1: seq} for _ in example))
    if decompose:
        program = program.run_decompositions()
    mod = from_exported_program(program)
    dims = mod["main"].params[0].type_annotation.shape
    assert not isinstance(dims[0], int) and not isinstance(dims[1], int)
    gen = torch.Generator().manual_seed(3)
    for shape in [(1, 5), (3, 9)]:
        if name == "bert":
            mask = torch.ones(shape, dtype=torch.int64)
            mask[0, -2:] = 0
            inputs = (torch.randint(0, 50, shape, generator=gen), mask)
        else:
            inputs = (torch.randn(*shape, example[0].shape[-1], generator=gen),)
        for executor in EXECUTORS:
            assert_close(run(mod, inputs, executor), eager(model, inputs),
                         what=f"{shape} {executor}")


@pytest.mark.parametrize("name", ["resnet18", "bert"])
def test_from_fx_on_a_dynamo_export_graph(name):
    """The reference's other route: ``torch._dynamo.export`` graphs (weights lifted by
    Dynamo, torch functions instead of modules) through from_fx."""
    model = _models.make(name)
    inputs = _models.example_inputs(name)
    graph_module, _ = torch._dynamo.export(model)(*inputs)
    mod = from_fx(graph_module, input_info(inputs))
    for executor in EXECUTORS:
        assert_close(run(mod, inputs, executor), eager(model, inputs), what=executor)
