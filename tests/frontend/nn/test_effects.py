"""nn effects: IOEffect (print_, debug_func) and KVCache, on every executor.

Printed text is compared with numpy's repr of values computed here; KV-cache attention
with a numpy implementation written here.
"""

import inspect

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import interp
import irlib
from irlib.errors import IRError
from irlib.frontend import nn
from irlib.frontend.nn import op, spec
from irlib.ir import expr as E
from irlib.ir.functor import post_order
from irlib.testing.budget import examples


def _calls_of(func, name):
    return [n for n in post_order(func.body)
            if isinstance(n, E.Call) and isinstance(n.op, E.Op) and n.op.name == name]


def _softmax_rows(t):
    return nn.wrap_nested(irlib.op.nn.softmax(t._expr, axis=-1), "softmax")


# -- print_ ----------------------------------------------------------------------------------------

class Printer(nn.Module):
    """Prints in an order that is not the data order: z (computed last) before x."""

    def forward(self, x):
        y = x * x
        z = y + x
        nn.print_(z)
        nn.print_(x)
        nn.print_(y)
        nn.print_(x)                       # the same tensor twice: printed twice
        return z


def _expected_printer_output(x):
    y = x * x
    z = y + x
    return "".join(repr(v) + "\n" for v in (z, x, y, x)), z


PRINT_SPEC = {"forward": {"x": spec.Tensor([2, 3], "float32")}}


def _x(shape=(2, 3), seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def test_print_interpreter_program_order(capsys):
    mod, params = Printer().export_tvm(PRINT_SPEC, debug=True)
    assert params == []
    f = interp.create_executor("debug", mod).evaluate(mod.get_global_var("forward"))
    init = interp.create_executor("debug", mod).evaluate(mod.get_global_var("_initialize_effect"))()
    assert int(init[0].numpy()) == 0
    x = _x()
    result, (token,) = f(x, init[0])
    expected, z = _expected_printer_output(x)
    assert capsys.readouterr().out == expected
    np.testing.assert_allclose(result.numpy(), z, rtol=1e-6)
    assert int(token.numpy()) == 4                 # one step per IO call


def test_print_graph_executor_and_python_jit(capfd):
    x = _x(seed=1)
    expected, z = _expected_printer_output(x)
    for device in ("cpu", "python"):
        runner = Printer().jit(PRINT_SPEC, device=device, out_format="numpy", debug=True)
        assert runner.backends["forward"] == ("graph" if device == "cpu" else "interpreter")
        capfd.readouterr()
        out = runner.forward(x)
        assert capfd.readouterr().out == expected, device
        np.testing.assert_allclose(out, z, rtol=1e-6)
        out = runner.forward(x)                    # prints again on every call
        assert capfd.readouterr().out == expected, device


def test_print_run_as_python(capsys):
    mod, _ = Printer().export_tvm(PRINT_SPEC, debug=True)
    x = _x(seed=2)
    token = irlib.var("io", shape=(), dtype="int64")
    data = irlib.var("x", shape=(2, 3), dtype="float32")
    call = E.Call(mod.get_global_var("forward"), [data, token])
    wrapper = irlib.Function([data, token], call)
    func = interp.run_as_python(wrapper, mod)
    capsys.readouterr()
    result = func(x, np.array(0, "int64"))
    expected, z = _expected_printer_output(x)
    assert capsys.readouterr().out == expected
    np.testing.assert_allclose(result[0].numpy(), z, rtol=1e-6)


def test_passes_keep_every_io_call(capfd):
    class ConstPrinter(nn.Module):
        def forward(self, x):
            c = nn.Tensor.from_const(np.arange(3, dtype="float32"))
            nn.print_(c + c)               # constant argument: never folded away
            nn.print_(x)
            nn.print_(x)                   # identical calls: never merged
            unused = x * x                 # dead: removed, prints stay
            del unused
            return x

    mod, _ = ConstPrinter().export_tvm({"forward": {"x": spec.Tensor([3], "float32")}},
                                       debug=True)
    assert len(_calls_of(mod["forward"], "debug_io.call")) == 3
    passes = [irlib.transform.FoldConstant(), irlib.transform.EliminateCommonSubexpr(),
              irlib.transform.DeadCodeElimination(inline_once=True),
              irlib.transform.FuseOps(fuse_opt_level=2)]
    for one in passes:
        mod = irlib.transform.InferType()(one(mod))
    found = [n for n in post_order(mod["forward"].body)
             if isinstance(n, E.Call) and isinstance(n.op, E.Op) and n.op.name == "debug_io.call"]
    assert len(found) == 3
    f = interp.create_executor("debug", mod).evaluate(mod.get_global_var("forward"))
    x = np.array([5.0, 6.0, 7.0], "float32")
    capfd.readouterr()
    f(x, np.array(0, "int64"))
    twice = np.arange(3, dtype="float32") * 2
    assert capfd.readouterr().out == repr(twice) + "\n" + (repr(x) + "\n") * 2


@settings(max_examples=examples(6), deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=0, max_size=3),
       dtype=st.sampled_from(["float32", "int32", "int64", "float64"]))
def test_print_format_is_numpy_repr(shape, dtype):
    class One(nn.Module):
        def forward(self, x):
            nn.print_(x)
            return x

    runner = One().jit({"forward": {"x": spec.Tensor(list(shape), dtype)}}, device="python",
                       out_format="numpy", debug=True)
    value = (np.arange(int(np.prod(shape)), dtype=dtype) - 3).reshape(shape)
    import io
    import contextlib
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        runner.forward(value)
    assert buffer.getvalue() == repr(value) + "\n"


# -- debug_func -----------------------------------------------------------------------------------

CALLS = []


@nn.register_debug_func("tests.nn.effects.record")
def _record(line_info, *args):
    CALLS.append((line_info, args))


class Debugged(nn.Module):
    def __init__(self):
        self.line = None

    def forward(self, x, total: int):
        y = x + x
        self.line = inspect.currentframe().f_lineno + 1
        nn.debug_func("tests.nn.effects.record", y, 7, 2.5, "tag", x.shape[0], total)
        nn.debug_func("tests.nn.effects.record", x, _line_info="custom:1")
        return y


@pytest.mark.parametrize("device", ["cpu", "python"])
def test_debug_func_gets_args_and_line_info(device):
    model = Debugged()
    runner = model.jit({"forward": {"x": spec.Tensor(["n", 2], "float32"), "total": int}},
                       device=device, out_format="numpy", debug=True)
    for n in (1, 3):
        CALLS.clear()
        x = _x((n, 2), seed=n)
        runner.forward(x, 10 + n)
        (line_info, args), (second_line, second_args) = CALLS
        assert line_info == f"{__file__}:{model.line}"
        tensor, seven, half, tag, rows, total = args
        assert isinstance(tensor, irlib.ndarray.NDArray)
        np.testing.assert_allclose(tensor.numpy(), x + x, rtol=1e-6)
        assert (seven, half, tag, rows, total) == (7, 2.5, "tag", n, 10 + n)
        assert type(seven) is int and type(half) is float and type(rows) is int
        assert second_line == "custom:1"
        np.testing.assert_array_equal(second_args[0].numpy(), x)


def test_debug_func_errors():
    class Plain(nn.Module):
        def forward(self, x):
            nn.print_(x)
            return x

    with pytest.raises(nn.NNError, match="debug=True"):
        Plain().export_tvm({"forward": {"x": spec.Tensor([2], "float32")}})

    class BadArg(nn.Module):
        def forward(self, x):
            nn.debug_func("tests.nn.effects.record", [1, 2])
            return x

    with pytest.raises(nn.OpError, match="argument 0 is a list"):
        BadArg().export_tvm({"forward": {"x": spec.Tensor([2], "float32")}}, debug=True)

    class Unknown(nn.Module):
        def forward(self, x):
            nn.debug_func("tests.nn.effects.nobody", x)
            return x

    runner = Unknown().jit({"forward": {"x": spec.Tensor([2], "float32")}}, device="python",
                           debug=True, out_format="numpy")
    with pytest.raises(IRError, match="tests.nn.effects.nobody. is not registered"):
        runner.forward(np.zeros(2, "float32"))
    with pytest.raises(ValueError, match="already registered"):
        nn.register_debug_func("tests.nn.effects.record", lambda *a: None)


def test_debug_func_exception_is_reported():
    @nn.register_debug_func("tests.nn.effects.fails", override=True)
    def _fails(line_info, x):
        raise ValueError("boom")

    class Failing(nn.Module):
        def forward(self, x):
            nn.debug_func("tests.nn.effects.fails", x)
            return x

    runner = Failing().jit({"forward": {"x": spec.Tensor([2], "float32")}}, device="python",
                           debug=True, out_format="numpy")
    with pytest.raises(IRError, match="boom"):
        runner.forward(np.zeros(2, "float32"))


# -- KVCache ----------------------------------------------------------------------------------------

HEADS, HEAD_DIM = 2, 4
MODEL_DIM = HEADS * HEAD_DIM


class CachedAttention(nn.Module):
    """Appends this call's keys/values to the caches and attends over all cached rows."""

    def __init__(self):
        self.wq = nn.Parameter((MODEL_DIM, MODEL_DIM))
        self.wk = nn.Parameter((MODEL_DIM, MODEL_DIM))
        self.wv = nn.Parameter((MODEL_DIM, MODEL_DIM))
        self.k_cache = nn.KVCache(4, [HEADS, HEAD_DIM])
        self.v_cache = nn.KVCache(4, [HEADS, HEAD_DIM])

    def forward(self, x, total_seq_len: int):
        q = op.reshape(op.matmul(x, self.wq), [-1, HEADS, HEAD_DIM])        # [n, H, D]
        k = op.reshape(op.matmul(x, self.wk), [-1, HEADS, HEAD_DIM])
        v = op.reshape(op.matmul(x, self.wv), [-1, HEADS, HEAD_DIM])
        self.k_cache.append(k)
        self.v_cache.append(v)
        keys = op.permute_dims(self.k_cache.view(total_seq_len), [1, 2, 0])   # [H, D, T]
        values = op.permute_dims(self.v_cache.view(total_seq_len), [1, 0, 2])  # [H, T, D]
        scores = op.matmul(op.permute_dims(q, [1, 0, 2]), keys)                # [H, n, T]
        scale = nn.Tensor.from_scalar(1.0 / np.sqrt(HEAD_DIM), "float32")
        probs = _softmax_rows(scores * scale)
        return op.permute_dims(op.matmul(probs, values), [1, 0, 2])          # [n, H, D]


def _numpy_attention(x, keys, values, wq):
    q = (x @ wq).reshape(len(x), HEADS, HEAD_DIM).transpose(1, 0, 2)
    scores = q @ keys.transpose(1, 2, 0) / np.sqrt(HEAD_DIM)
    scores = scores - scores.max(-1, keepdims=True)
    probs = np.exp(scores)
    probs /= probs.sum(-1, keepdims=True)
    return (probs @ values.transpose(1, 0, 2)).transpose(1, 0, 2)


def _attention_model(seed=0):
    rng = np.random.default_rng(seed)
    model = CachedAttention()
    for param in (model.wq, model.wk, model.wv):
        param.data = (rng.standard_normal((MODEL_DIM, MODEL_DIM)) / 3).astype("float32")
    return model


KV_SPEC = {"forward": {"x": spec.Tensor(["seq_len", MODEL_DIM], "float32"),
                       "total_seq_len": int}}


@pytest.mark.parametrize("device", ["cpu", "python"])
def test_kv_cache_grows_past_init_seq_len(device):
    model = _attention_model()
    wq, wk, wv = (p.data.numpy() for p in (model.wq, model.wk, model.wv))
    runner = model.jit(KV_SPEC, device=device, out_format="numpy")
    assert runner.backends["forward"] == ("graph" if device == "cpu" else "interpreter")
    rng = np.random.default_rng(1)
    keys = np.zeros((0, HEADS, HEAD_DIM), "float32")
    values = keys
    for step, n in enumerate((3, 1, 1, 2, 1)):          # 8 rows in all: past init_seq_len 4
        x = rng.standard_normal((n, MODEL_DIM)).astype("float32")
        keys = np.concatenate([keys, (x @ wk).reshape(n, HEADS, HEAD_DIM)])
        values = np.concatenate([values, (x @ wv).reshape(n, HEADS, HEAD_DIM)])
        out = runner.forward(x, len(keys))
        np.testing.assert_allclose(out, _numpy_attention(x, keys, values, wq), rtol=1e-4,
                                   atol=1e-5, err_msg=f"step {step}")
        k_state, v_state = runner.effect_states
        np.testing.assert_allclose(k_state, keys, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(v_state, values, rtol=1e-5, atol=1e-6)
    assert len(keys) > model.k_cache.init_seq_len
    runner.reset_effects()
    assert [s.shape for s in runner.effect_states] == [(0, HEADS, HEAD_DIM)] * 2
    x = rng.standard_normal((2, MODEL_DIM)).astype("float32")
    keys = (x @ wk).reshape(2, HEADS, HEAD_DIM)
    values = (x @ wv).reshape(2, HEADS, HEAD_DIM)
    np.testing.assert_allclose(runner.forward(x, 2), _numpy_attention(x, keys, values, wq),
                               rtol=1e-4, atol=1e-5)


def test_kv_cache_export_layout():
    model = _attention_model()
    mod, params = model.export_tvm(KV_SPEC)
    init = mod["_initialize_effect"]
    assert str(init.body.checked_type) == str(irlib.TupleType(
        [irlib.TensorType((0, HEADS, HEAD_DIM), "float32")] * 2))
    forward = mod["forward"]
    assert forward.attrs["num_input"] == 4
    names = [p.name_hint for p in forward.params]
    assert names == ["x", "total_seq_len", "k_cache", "v_cache", "wq", "wk", "wv"]
    k_type = forward.params[2].type_annotation
    assert str(k_type.shape[0]) == "k_cache_len" and list(k_type.shape[1:]) == [HEADS, HEAD_DIM]
    result_type, states_type = forward.body.checked_type.fields
    assert [str(t.shape[0]) for t in states_type.fields] == ["k_cache_len + seq_len",
                                                            "seq_len + v_cache_len"] or \
        [str(t.shape[0]) for t in states_type.fields] == ["k_cache_len + seq_len",
                                                          "v_cache_len + seq_len"]
    assert len(_calls_of(forward, "concatenate")) == 2
    assert len(_calls_of(forward, "strided_slice")) == 2


def test_kv_cache_view_of_whole_state_emits_no_op_and_single_rows_append():
    class Rows(nn.Module):
        def __init__(self):
            self.cache = nn.KVCache(1, [3], dtype="float32")

        def forward(self, row):
            self.cache.append(row)                    # one row of unit_shape
            whole = self.cache.view(self.cache.cache.shape[0])
            return op.multiply(whole, whole)

    mod, _ = Rows().export_tvm({"forward": {"row": spec.Tensor([3], "float32")}})
    assert not _calls_of(mod["forward"], "strided_slice")
    runner = Rows().jit({"forward": {"row": spec.Tensor([3], "float32")}}, out_format="numpy")
    rows = []
    for i in range(4):
        row = np.arange(3, dtype="float32") + i
        rows.append(row)
        np.testing.assert_array_equal(runner.forward(row), np.stack(rows) ** 2)


def test_kv_cache_errors_and_to():
    class Bad(nn.Module):
        def __init__(self, shape, dtype):
            self.cache = nn.KVCache(2, [3])
            self.shape, self.dtype_ = shape, dtype

        def forward(self, x):
            self.cache.append(x)
            return x

    with pytest.raises(nn.OpError, match="dtype 'float32'.*float16"):
        Bad([2, 3], "float16").export_tvm({"forward": {"x": spec.Tensor([2, 3], "float16")}})
    with pytest.raises(nn.OpError, match=r"rows of shape \(3,\)"):
        Bad([2, 4], "float32").export_tvm({"forward": {"x": spec.Tensor([2, 4], "float32")}})
    with pytest.raises(nn.NNError, match="inside an exported method"):
        nn.KVCache(2, [3]).view(1)
    with pytest.raises(nn.NNError, match="init_seq_len"):
        nn.KVCache(-1, [3])
    model = Bad([2, 3], "float16")
    model.to("float16")
    assert model.cache.dtype == "float16"
    mod, _ = model.export_tvm({"forward": {"x": spec.Tensor([2, 3], "float16")}})
    assert mod["forward"].params[1].type_annotation.dtype == "float16"


def test_kv_cache_shared_by_methods():
    class Two(nn.Module):
        def __init__(self):
            self.cache = nn.KVCache(2, [2], dtype="int64")

        def push(self, x):
            self.cache.append(x)
            return x

        def read(self, n: int):
            return self.cache.view(n)

    for device in ("cpu", "python"):
        runner = Two().jit({"push": {"x": spec.Tensor(["k", 2], "int64")},
                            "read": {"n": int}}, device=device, out_format="numpy")
        runner.push(np.array([[1, 2]]))
        runner.push(np.array([[3, 4], [5, 6]]))
        np.testing.assert_array_equal(runner.read(3), [[1, 2], [3, 4], [5, 6]])
        np.testing.assert_array_equal(runner.read(2), [[1, 2], [3, 4]])
