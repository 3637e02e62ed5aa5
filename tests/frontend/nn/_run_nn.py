"""Running an exported nn method on the interpreter or on the graph executor (for the op and
layer tests)."""

import inspect

import numpy as np

import irlib
from irlib.frontend import nn
from irlib.frontend.nn import spec


class Apply(nn.Module):
    """A module whose forward applies ``fn`` to its (one to four) inputs."""

    def __init__(self, fn):
        self.fn = fn

    def forward(self, a, b=None, c=None, d=None):
        return self.fn(*[t for t in (a, b, c, d) if t is not None])


class Dense(nn.Module):
    """``x @ weight.T + bias`` with a ``(n_out, n_in)`` weight, written with ``op`` calls (the
    core and jit tests' own linear layer, independent of ``nn.Linear``)."""

    def __init__(self, n_in, n_out):
        self.weight = nn.Parameter((n_out, n_in))
        self.bias = nn.Parameter((n_out,))

    def forward(self, x):
        return nn.op.matmul(x, nn.op.permute_dims(self.weight)) + self.bias


def subroutine_chain(size: int) -> nn.Module:
    """A model whose forward applies two ``Block`` layers in turn, each a subroutine
    (``define_subroutine``) multiplying by its own ``(size, size)`` weight."""

    class Block(nn.Module, nn.SubroutineMixin):
        define_subroutine = True

        def __init__(self):
            self.weight = nn.Parameter((size, size))

        def forward(self, x):
            return nn.op.matmul(x, self.weight)

    class Model(nn.Module):
        def __init__(self):
            self.blocks = nn.ModuleList([Block(), Block()])

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return x

    return Model()


def export(model, *specs):
    """``model.export_tvm`` with ``forward``'s inputs given as ``(shape, dtype)`` pairs."""
    names = list(inspect.signature(model.forward).parameters)
    arg_specs = {names[i]: spec.Tensor(list(shape), dtype)
                 for i, (shape, dtype) in enumerate(specs)}
    return model.export_tvm({"forward": arg_specs})


def run(mod, params, *args, executor="debug"):
    """Run ``forward`` of an exported module with its parameters' data; a numpy result.

    ``executor``: ``"debug"`` (the reference interpreter) or ``"graph"`` (the graph executor,
    with ``forward`` as ``main``).
    """
    import interp
    weights = [p.data.numpy() for _, p in params]
    if executor == "graph":
        main = irlib.IRModule.from_expr(mod["forward"])
        func = interp.create_executor("graph", main).evaluate()
    else:
        func = interp.create_executor("debug", mod).evaluate(mod.get_global_var("forward"))
    return np.asarray(func(*args, *weights).numpy())


def export_run(model, inputs, specs=None, executor="debug"):
    """Export ``model`` for ``inputs`` (numpy arrays; ``specs`` overrides their shapes, e.g.
    with symbolic dims) and run it."""
    specs = specs or [a.shape for a in inputs]
    mod, params = export(model, *[(s, str(a.dtype)) for s, a in zip(specs, inputs)])
    return run(mod, params, *inputs, executor=executor)
