"""from_fx / from_exported_program as API: the options, dynamic dims as size variables,
and the errors (every unsupported node listed at once, bad arguments)."""

import numpy as np
import pytest
import torch
from torch import fx, nn

import irlib
from irlib.errors import IRError
from irlib.frontend import OpNotImplemented
from irlib.frontend.torch import (TorchConversionError, TorchOpNotImplemented,
                                  from_exported_program, from_fx)
from irlib.ir import expr as E
from irlib.ir.dims import size_var

from ._running import assert_close, eager, run


class TwoOutputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 2)

    def forward(self, x):
        y = self.linear(x)
        return y.relu(), y.sigmoid()


class OneTuple(nn.Module):
    def forward(self, x):
        return (x * 2,)


def _body_kind(mod):
    return type(mod["main"].body).__name__


def test_return_tuple_bound_by_default_and_unbound_on_request():
    model = TwoOutputs().eval()
    gm = fx.symbolic_trace(model)
    bound = from_fx(gm, [((4, 3), "float32")])
    unbound = from_fx(gm, [((4, 3), "float32")], no_bind_return_tuple=True)
    assert isinstance(bound["main"].body, E.Let)
    assert isinstance(bound["main"].body.value, E.Tuple)
    assert isinstance(unbound["main"].body, E.Tuple)
    x = torch.randn(4, 3)
    for mod in (bound, unbound):
        for executor in ("debug", "graph"):
            assert_close(run(mod, [x], executor), eager(model, [x]))


def test_unwrap_unit_return_tuple():
    gm = fx.symbolic_trace(OneTuple())
    kept = irlib.transform.InferType()(from_fx(gm, [((2,), "float32")]))
    unwrapped = irlib.transform.InferType()(
        from_fx(gm, [((2,), "float32")], unwrap_unit_return_tuple=True))
    assert isinstance(kept["main"].checked_type.ret_type, irlib.TupleType)
    assert isinstance(unwrapped["main"].checked_type.ret_type, irlib.TensorType)
    # a tuple of two is never unwrapped
    two = irlib.transform.InferType()(from_fx(fx.symbolic_trace(TwoOutputs()),
                                              [((1, 3), "float32")],
                                              unwrap_unit_return_tuple=True))
    assert len(two["main"].checked_type.ret_type.fields) == 2


def test_exported_program_returns_tuple_unless_unwrapped():
    program = torch.export.export(nn.Sequential(nn.Linear(3, 2)).eval(),
                                  (torch.randn(1, 3),))
    mod = irlib.transform.InferType()(from_exported_program(program))
    assert isinstance(mod["main"].checked_type.ret_type, irlib.TupleType)
    mod = irlib.transform.InferType()(from_exported_program(program,
                                                            unwrap_unit_return_tuple=True))
    assert isinstance(mod["main"].checked_type.ret_type, irlib.TensorType)


def test_input_names_and_types():
    class Model(nn.Module):
        def forward(self, tokens, scale):
            return tokens.float() * scale

    mod = from_fx(fx.symbolic_trace(Model()), [((2, 3), "int64"), ((), torch.float32)])
    params = mod["main"].params
    assert [p.name_hint for p in params] == ["tokens", "scale"]
    assert params[0].type_annotation == irlib.TensorType((2, 3), "int64")
    assert params[1].type_annotation == irlib.TensorType((), "float32")


def test_from_fx_symbolic_dims_from_input_info():
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU()).eval()
    mod = from_fx(fx.symbolic_trace(model), [(("n", 4), "float32")])
    assert mod["main"].params[0].type_annotation.shape[0] == size_var("n")
    for batch in (1, 5):
        x = torch.randn(batch, 4)
        assert_close(run(mod, [x], "debug"), eager(model, [x]))


class Dynamic(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 6)
        self.norm = nn.LayerNorm(6)

    def forward(self, x):
        b, t, _ = x.shape
        h = self.norm(self.linear(x)).view(b, t, 2, 3).transpose(1, 2)
        return h.reshape(b * 2, t * 3).softmax(-1), x[:, -1]


def test_exported_dynamic_dims_become_size_vars():
    model = Dynamic().eval()
    batch, seq = torch.export.Dim("batch", min=1, max=16), torch.export.Dim("seq", min=2, max=9)
    program = torch.export.export(model, (torch.randn(2, 3, 4),),
                                  dynamic_shapes={"x": {0: batch, 1: seq}})
    mod = from_exported_program(program, unwrap_unit_return_tuple=True)
    dims = mod["main"].params[0].type_annotation.shape
    assert all(isinstance(d, type(size_var("a"))) for d in dims[:2]) and dims[2] == 4
    assert dims[0] != dims[1]
    checked = irlib.transform.InferType()(mod)
    ret = checked["main"].checked_type.ret_type
    assert ret.fields[0].shape[0] == dims[0] * 2
    for shape in [(1, 2, 4), (3, 5, 4)]:
        x = torch.randn(*shape)
        assert_close(run(mod, [x], "debug"), eager(model, [x]), what=str(shape))


def test_exported_dynamic_dims_on_graph_executor():
    model = nn.Sequential(nn.Linear(4, 3), nn.GELU()).eval()
    program = torch.export.export(model, (torch.randn(2, 4),),
                                  dynamic_shapes=({0: torch.export.Dim("batch")},))
    mod = from_exported_program(program)
    for batch in (1, 6):
        x = torch.randn(batch, 4)
        assert_close(run(mod, [x], "graph"), eager(model, [x]), what=f"batch {batch}")


class ManyUnsupported(nn.Module):
    def __init__(self):
        super().__init__()
        self.shuffle = nn.PixelShuffle(2)

    def forward(self, x):
        y = torch.linalg.det(x[0, :2, :2, :2])
        z = self.shuffle(x)
        w = torch.fft.fft(x).real
        return y, z.relu(), w


def test_unsupported_ops_are_all_listed():
    gm = fx.symbolic_trace(ManyUnsupported())
    with pytest.raises(TorchOpNotImplemented) as info:
        from_fx(gm, [((1, 4, 2, 2), "float32")])
    error = info.value
    assert isinstance(error, OpNotImplemented) and isinstance(error, IRError)
    names = dict(error.nodes)
    assert names == {"linalg_det": "torch.linalg.det", "shuffle": "torch.nn.PixelShuffle",
                     "fft_fft": "torch.fft.fft"}
    message = str(error)
    for node_name in names:
        assert f"node {node_name}:" in message
    assert "3 node(s)" in message


def test_unsupported_aten_ops_are_all_listed():
    class Model(nn.Module):
        def forward(self, x):
            return torch.linalg.det(x), torch.special.bessel_j0(x).sum()

    program = torch.export.export(Model(), (torch.randn(3, 3),))
    with pytest.raises(TorchOpNotImplemented) as info:
        from_exported_program(program)
    targets = [target for _, target in info.value.nodes]
    assert any("det" in t for t in targets) and any("bessel_j0" in t for t in targets)


def test_unsupported_variant_names_the_node():
    class Model(nn.Module):
        def forward(self, x):
            return torch.nn.functional.interpolate(x, scale_factor=2, mode="bicubic")

    with pytest.raises(TorchOpNotImplemented, match="interpolate.*bicubic"):
        from_fx(fx.symbolic_trace(Model()), [((1, 1, 2, 2), "float32")])


def test_conversion_error_names_the_node():
    class Model(nn.Module):
        def forward(self, x, y):
            return torch.matmul(x, y)

    with pytest.raises(TorchConversionError, match="node matmul"):
        from_fx(fx.symbolic_trace(Model()), [((2, 3), "float32"), ((4, 5), "float32")])


def test_bad_arguments():
    gm = fx.symbolic_trace(nn.Sequential(nn.ReLU()))
    with pytest.raises(TorchConversionError, match="input_info has 2 entries"):
        from_fx(gm, [((1,), "float32"), ((1,), "float32")])
    with pytest.raises(TorchConversionError, match="input_info\\[0\\]"):
        from_fx(gm, [(3, "float32")])
    with pytest.raises(TorchOpNotImplemented, match="dtype"):
        from_fx(gm, [((1,), "qint8")])
    with pytest.raises(TorchConversionError, match="GraphModule"):
        from_fx(nn.ReLU(), [((1,), "float32")])
    with pytest.raises(TorchConversionError, match="ExportedProgram"):
        from_exported_program(gm)


def test_training_dropout_is_refused():
    class Model(nn.Module):
        def forward(self, x):
            return torch.nn.functional.dropout(x, 0.5, training=True)

    with pytest.raises(TorchOpNotImplemented, match="dropout"):
        from_fx(fx.symbolic_trace(Model()), [((2,), "float32")])


def test_torch_assert_on_sizes():
    class Model(nn.Module):
        def forward(self, x):
            torch._assert(x.shape[1] == 3, "three features")
            return x * 2

    gm = fx.symbolic_trace(Model())
    x = torch.randn(2, 3)
    assert_close(run(from_fx(gm, [((2, 3), "float32")]), [x], "debug"), eager(Model(), [x]))
    with pytest.raises(TorchConversionError, match="three features"):
        from_fx(gm, [((2, 4), "float32")])
