"""dynamo_capture_subgraphs (one function per graph break) and the relax_dynamo
torch.compile backend, against torch eager."""

import numpy as np
import pytest
import torch
from torch import nn

import interp
from irlib.frontend import detach_params
from irlib.frontend.torch import (TorchOpNotImplemented, dynamo_capture_subgraphs,
                                  relax_dynamo)

from . import _models
from ._running import assert_close, eager


class Branchy(nn.Module):
    """A data-dependent branch: Dynamo breaks the graph at the ``if``."""

    def __init__(self):
        super().__init__()
        self.first = nn.Linear(4, 4)
        self.second = nn.Linear(4, 3)

    def forward(self, x):
        y = torch.relu(self.first(x))
        if y.sum() > 1.0:
            y = y * 2
        else:
            y = y - 1
        return self.second(y).softmax(-1)


def _call(mod, name, *args):
    run = interp.create_executor("debug", mod=mod).evaluate(mod.get_global_var(name))
    out = run(*args)
    return [o.numpy() for o in out]


@pytest.mark.parametrize("keep", [False, True])
def test_graph_break_gives_two_subgraphs(keep):
    torch.manual_seed(0)
    model = Branchy().eval()
    x = torch.randn(3, 4)
    mod = dynamo_capture_subgraphs(model, x, keep_params_as_input=keep)
    names = sorted(g.name_hint for g in mod.get_global_vars())
    assert names == ["subgraph_0", "subgraph_1"]
    if keep:
        mod, params = detach_params(mod)
        extra0, extra1 = params["subgraph_0"], params["subgraph_1"]
        assert len(extra0) == 2 and len(extra1) == 2  # each Linear's weight and bias
    else:
        extra0 = extra1 = []
    # subgraph_0 computes the branch condition and y; subgraph_1 the taken branch's rest
    with torch.no_grad():
        y = torch.relu(model.first(x))
        condition, y_got = _call(mod, "subgraph_0", x.numpy(), *extra0)
        assert bool(condition) == bool(y.sum() > 1.0)
        np.testing.assert_allclose(y_got, y.numpy(), rtol=1e-5, atol=1e-6)
        branch = y * 2 if bool(condition) else y - 1
        # the second graph (the branch taken while capturing) starts from y
        (out,) = _call(mod, "subgraph_1", y.numpy(), *extra1)
        np.testing.assert_allclose(out, model.second(branch).softmax(-1).numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_unsupported_op_in_a_captured_graph():
    class Model(nn.Module):
        def forward(self, x):
            return torch.linalg.det(x) + 1

    with pytest.raises(TorchOpNotImplemented, match="det"):
        dynamo_capture_subgraphs(Model(), torch.randn(3, 3))


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "bert", "gpt2_block", "lstm"])
def test_torch_compile_backend_matches_eager(name):
    model = _models.make(name)
    inputs = _models.example_inputs(name)
    expected = eager(model, inputs)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend=relax_dynamo(), dynamic=False)
    with torch.no_grad():
        got = compiled(*inputs)
    got = list(got) if isinstance(got, tuple) else [got]
    assert all(isinstance(g, torch.Tensor) for g in got)
    assert_close([g.numpy() for g in got], expected)
    torch._dynamo.reset()


def test_torch_compile_backend_with_graph_break_and_pipeline():
    import irlib
    torch.manual_seed(0)
    model = Branchy().eval()
    passes = []

    def pipeline(mod):
        passes.append(mod)
        return irlib.transform.FoldConstant()(mod)

    torch._dynamo.reset()
    compiled = torch.compile(model, backend=relax_dynamo(pipeline), dynamic=False)
    with torch.no_grad():
        for scale in (1.0, -1.0):  # both branches
            x = torch.randn(3, 4, generator=torch.Generator().manual_seed(1)) * scale
            assert_close([compiled(x).numpy()], eager(model, [x]))
    assert len(passes) >= 2  # each captured graph went through the pipeline
    torch._dynamo.reset()


def test_compiled_results_are_fresh_tensors_each_call():
    """Results are written into new tensors: a later call does not overwrite earlier ones."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 2)).eval()
    torch._dynamo.reset()
    compiled = torch.compile(model, backend=relax_dynamo(), dynamic=False)
    x1, x2 = torch.randn(3, 4), torch.randn(3, 4)
    with torch.no_grad():
        first = compiled(x1)
        kept = first.clone()
        second = compiled(x2)
        assert torch.equal(first, kept)
        assert_close([first.numpy(), second.numpy()], eager(model, [x1]) + eager(model, [x2]))
        # weights updated in place are seen by the next call (their memory is bound)
        model[0].bias.add_(1.0)
        assert_close([compiled(x1).numpy()], eager(model, [x1]))
    torch._dynamo.reset()
