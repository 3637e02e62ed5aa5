"""Helpers of the torch-frontend tests: import a torch module both ways, run the result on
the reference interpreter and the graph executor, and compare with torch eager."""

import numpy as np
import torch
from torch import fx

import interp
from irlib.frontend.torch import from_exported_program, from_fx

EXECUTORS = ("debug", "graph")


def input_info(inputs) -> list:
    """``[(shape, dtype)]`` of torch tensors, as from_fx wants it."""
    return [(tuple(t.shape), str(t.dtype).replace("torch.", "")) for t in inputs]


def run(mod, inputs, executor: str) -> list:
    """Outputs of ``mod["main"]`` on ``inputs`` (torch tensors or numpy arrays) as numpy
    arrays, flattened when main returns (nested) tuples."""
    arrays = [t.numpy() if isinstance(t, torch.Tensor) else t for t in inputs]
    if executor == "debug":
        function = interp.create_executor("debug", mod=mod).evaluate()
    else:
        function = interp.create_executor("graph", mod=mod, device=interp.cpu(0),
                                          target="cpu").evaluate()
    return flatten(function(*arrays))


def flatten(value) -> list:
    """Leaves of a nested tuple/list of arrays (NDArrays or torch tensors) as numpy arrays."""
    out, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (tuple, list)):
            stack.extend(reversed(item))
        elif item is None:
            continue
        elif isinstance(item, torch.Tensor):
            out.append(item.detach().numpy())
        else:
            out.append(np.asarray(item.numpy() if hasattr(item, "numpy") else item))
    return out


def eager(module, inputs) -> list:
    """torch's own outputs, flattened."""
    with torch.no_grad():
        return flatten(module(*inputs))


def assert_close(got, expected, rtol=1e-4, atol=1e-5, what=""):
    """Every output equal to torch's (same count, shapes, dtypes kinds and values)."""
    assert len(got) == len(expected), f"{what}: {len(got)} outputs, torch has {len(expected)}"
    for index, (g, e) in enumerate(zip(got, expected)):
        assert g.shape == e.shape, f"{what} output {index}: shape {g.shape} vs {e.shape}"
        if e.dtype == np.bool_ or np.issubdtype(e.dtype, np.integer):
            np.testing.assert_array_equal(g, e, err_msg=f"{what} output {index}")
        else:
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol,
                                       err_msg=f"{what} output {index}")


def check_module(module, inputs, *, fx_path=True, export_path=True, executors=EXECUTORS,
                 rtol=1e-4, atol=1e-5, decompose=False):
    """Import ``module`` with from_fx and from_exported_program and compare every executor's
    outputs with eager torch. Returns the imported modules."""
    module = module.eval()
    expected = eager(module, inputs)
    if type(module).__module__.startswith("torch.nn"):
        module = _Leaf(module)  # symbolic_trace keeps a torch.nn layer as a call_module
    mods = {}
    if fx_path:
        mods["fx"] = from_fx(fx.symbolic_trace(module), input_info(inputs))
    if export_path:
        program = torch.export.export(module, tuple(inputs))
        if decompose:
            program = program.run_decompositions()
        mods["export"] = from_exported_program(program)
    for path, mod in mods.items():
        for executor in executors:
            assert_close(run(mod, inputs, executor), expected, rtol, atol,
                         f"{path}/{executor}")
    return mods


class _Leaf(torch.nn.Module):
    """A model holding one torch.nn layer (traced as a ``call_module`` node)."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return self.layer(x)


class _Fn1(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


class _Fn2(_Fn1):
    def forward(self, x, y):
        return self.fn(x, y)


class _Fn3(_Fn1):
    def forward(self, x, y, z):
        return self.fn(x, y, z)


def Fn(fn, arity=None):
    """A module whose forward calls ``fn`` on its 1-3 inputs (so a lambda can be traced with
    fx.symbolic_trace and exported); the arity is read from ``fn`` unless given."""
    if arity is None:
        code = getattr(fn, "__code__", None)
        arity = code.co_argcount if code is not None else 1
    return {1: _Fn1, 2: _Fn2, 3: _Fn3}[arity](fn)
