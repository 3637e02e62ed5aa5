"""Custom kernels and extern modules in the nn builder (irlib/frontend/nn/extern.py): C
sources compiled with the system compiler, object files, numba/Python kernels, in models run
on the interpreter, the graph executor and jit, against numpy written here; the DLTensor
layout against the C compiler's; errors."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import interp
import irlib
from irlib.frontend import nn
from irlib.frontend.nn import spec
from irlib.op.dltensor import DLTensor
from irlib.testing.budget import examples

pytestmark = pytest.mark.skipif(shutil.which("cc") is None or shutil.which("c++") is None,
                                reason="needs the system C and C++ compilers")

KERNELS = r"""
#include <irlib/extern.h>

namespace {
int scale_shift_impl(DLTensor* x, DLTensor* b, double scale, DLTensor* y) {
  if (!irlib_is_dtype(x, kDLFloat, 32) || x->ndim != 2 || b->ndim != 1) return 1;
  const int64_t rows = x->shape[0], cols = x->shape[1];
  if (b->shape[0] != cols || y->shape[0] != rows || y->shape[1] != cols) return 2;
  const float* xp = static_cast<const float*>(x->data);
  const float* bp = static_cast<const float*>(b->data);
  float* yp = static_cast<float*>(y->data);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) yp[i * cols + j] = xp[i * cols + j] * float(scale) + bp[j];
  return 0;
}
}  // namespace

IRLIB_EXTERN_C int ext_scale_shift(DLTensor* x, DLTensor* b, double scale, DLTensor* y) {
  return scale_shift_impl(x, b, scale, y);
}

IRLIB_EXTERN_C int ext_matmul(DLTensor* a, DLTensor* b, DLTensor* c) {
  const int64_t n = a->shape[0], k = a->shape[1], m = b->shape[1];
  if (b->shape[0] != k) return 3;
  const float* ap = static_cast<const float*>(a->data);
  const float* bp = static_cast<const float*>(b->data);
  float* cp = static_cast<float*>(c->data);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      float acc = 0.f;
      for (int64_t t = 0; t < k; ++t) acc += ap[i * k + t] * bp[t * m + j];
      cp[i * m + j] = acc;
    }
  return 0;
}
"""


def _infer_scale_shift(x, b, scale):
    rows, cols = x.shape
    return nn.Tensor.placeholder((rows, cols), x.dtype)


def _infer_matmul(a, b):
    n, _ = a.shape
    _, m = b.shape
    return nn.Tensor.placeholder((n, m), "float32")


SYMBOLS = {"ext_scale_shift": _infer_scale_shift, "ext_matmul": _infer_matmul}
KERNEL_MOD = nn.SourceModule(SYMBOLS, KERNELS, "cpp")


class CModel(nn.Module):
    def __init__(self, k, m, scale):
        self.bias = nn.Parameter((k,), "float32")
        self.weight = nn.Parameter((k, m), "float32")
        self.scale = scale

    def forward(self, x):
        nn.add_extern(KERNEL_MOD)
        y = KERNEL_MOD["ext_scale_shift"](x, self.bias, self.scale)
        return KERNEL_MOD["ext_matmul"](nn.op.add(y, y), self.weight)


def _export_c_model(k, m, scale, rng):
    model = CModel(k, m, scale)
    model.bias.data = rng.standard_normal(k).astype("float32")
    model.weight.data = rng.standard_normal((k, m)).astype("float32")
    mod, params, ext_mods = model.export_tvm(
        {"forward": {"x": spec.Tensor(["n", k], "float32")}}, allow_extern=True)
    return model, mod, params, ext_mods


def run_forward(mod, params, *args, executor="debug"):
    weights = [p.data.numpy() for _, p in params]
    if executor == "graph":
        func = interp.create_executor("graph", irlib.IRModule.from_expr(mod["forward"])).evaluate()
    else:
        func = interp.create_executor("debug", mod).evaluate(mod.get_global_var("forward"))
    out = func(*args, *weights)
    if isinstance(out, (list, tuple)) or hasattr(out, "fields"):
        return [np.asarray(o.numpy()) for o in out]
    return np.asarray(out.numpy())


@settings(max_examples=examples(4), deadline=None)
@given(k=st.integers(1, 6), m=st.integers(1, 5), scale=st.sampled_from([0.5, -2.0, 3.0]),
       seed=st.integers(0, 1000))
def test_source_module_in_a_model_symbolic_rows(k, m, scale, seed):
    rng = np.random.default_rng(seed)
    model, mod, params, ext_mods = _export_c_model(k, m, scale, rng)
    assert ext_mods == [KERNEL_MOD]
    forward = mod["forward"]
    assert str(forward.body.checked_type) == f"Tensor[(n, {m}), float32]"
    bias, weight = model.bias.data.numpy(), model.weight.data.numpy()
    for rows in (1, 3, 7):                     # one export, several lengths
        x = rng.standard_normal((rows, k)).astype("float32")
        y = x * np.float32(scale) + bias
        expected = (y + y) @ weight
        for executor in ("debug", "graph"):
            out = run_forward(mod, params, x, executor=executor)
            np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_exported_text_round_trips_and_jit_runs_the_c_kernels():
    rng = np.random.default_rng(1)
    model, mod, params, _ = _export_c_model(4, 3, 2.0, rng)
    text = mod.astext()
    assert 'func_name="ext_scale_shift"' in text and "out_shapes=[[n, 3]]" in text
    reparsed = irlib.transform.InferType()(irlib.parse(text))
    x = rng.standard_normal((5, 4)).astype("float32")
    np.testing.assert_allclose(run_forward(reparsed, params, x), run_forward(mod, params, x))

    y = x * 2 + model.bias.data.numpy()
    runner = model.jit({"forward": {"x": spec.Tensor(["n", 4], "float32")}}, out_format="numpy")
    np.testing.assert_allclose(runner.forward(x), (y + y) @ model.weight.data.numpy(),
                               rtol=1e-5, atol=1e-5)


def test_library_symbols_called_directly():
    lib = KERNEL_MOD.load()
    assert KERNEL_MOD.load() is lib and "ext_matmul" in lib and "nope" not in lib
    a = np.arange(6, dtype="float32").reshape(2, 3)
    b = np.arange(12, dtype="float32").reshape(3, 4)
    out = np.zeros((2, 4), "float32")
    lib["ext_matmul"](a, b, out)
    np.testing.assert_allclose(out, a @ b)
    with pytest.raises(irlib.errors.OpImplError, match="returned error status 3"):
        lib["ext_matmul"](a, a, np.zeros((2, 3), "float32"))   # k mismatch: the kernel says 3


def test_a_kernel_error_status_is_reported_at_run_time():
    class Wrong(nn.Module):
        def forward(self, x):
            nn.add_extern(KERNEL_MOD)
            return KERNEL_MOD["ext_scale_shift"](x, x, 1.0)     # b must be 1-D: status 1

    mod, params, _ = Wrong().export_tvm({"forward": {"x": spec.Tensor([2, 2], "float32")}},
                                        allow_extern=True)
    with pytest.raises(irlib.errors.IRError, match="'ext_scale_shift' returned error status 1"):
        run_forward(mod, params, np.ones((2, 2), "float32"))


# -- DLTensor layout and dtype codes, as the C compiler sees them -------------------------------

LAYOUT = r"""
#include <stddef.h>
#include <irlib/extern.h>
IRLIB_EXTERN_C int layout(DLTensor* out) {
  int64_t* o = (int64_t*)out->data;
  o[0] = sizeof(DLTensor); o[1] = offsetof(DLTensor, device); o[2] = offsetof(DLTensor, ndim);
  o[3] = offsetof(DLTensor, dtype); o[4] = offsetof(DLTensor, shape);
  o[5] = offsetof(DLTensor, strides); o[6] = offsetof(DLTensor, byte_offset);
  o[7] = sizeof(DLDataType); o[8] = sizeof(DLDevice);
  return 0;
}
IRLIB_EXTERN_C int describe(DLTensor* x, DLTensor* out) {
  int64_t* o = (int64_t*)out->data;
  o[0] = x->dtype.code; o[1] = x->dtype.bits; o[2] = x->dtype.lanes; o[3] = x->ndim;
  o[4] = x->device.device_type; o[5] = x->device.device_id; o[6] = x->strides == NULL;
  o[7] = (int64_t)x->byte_offset;
  return 0;
}
"""


def test_dltensor_layout_and_dtype_codes_match_the_c_header():
    lib = nn.SourceModule({"layout": lambda: None, "describe": lambda x: x},
                          LAYOUT, "c").load()
    out = np.zeros(9, "int64")
    lib["layout"](out)
    fields = dict(DLTensor._fields_)
    assert out.tolist() == [ctypes.sizeof(DLTensor), DLTensor.device.offset, DLTensor.ndim.offset,
                            DLTensor.dtype.offset, DLTensor.shape.offset,
                            DLTensor.strides.offset, DLTensor.byte_offset.offset,
                            ctypes.sizeof(fields["dtype"]), ctypes.sizeof(fields["device"])]
    assert out[0] == 48   # the x86-64/aarch64 size of DLPack's DLTensor
    # DLPack's codes: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBool 6; device kDLCPU = 1
    for dtype, code, bits in [("float32", 2, 32), ("float16", 2, 16), ("int64", 0, 64),
                              ("int8", 0, 8), ("uint8", 1, 8), ("bool", 6, 8)]:
        desc = np.zeros(8, "int64")
        lib["describe"](np.zeros((2, 3), dtype), desc)
        assert desc.tolist() == [code, bits, 1, 2, 1, 0, 1, 0], dtype


# -- numba / Python kernels ---------------------------------------------------------------------

def test_numba_tensor_ir_op_and_python_tensor_expr_op_in_a_model():
    numba = pytest.importorskip("numba")

    @numba.njit(cache=False)
    def row_cumsum(x, out):
        for i in range(x.shape[0]):
            acc = 0.0
            for j in range(x.shape[1]):
                acc += x[i, j]
                out[i, j] = acc

    def clip_and_count(x, low):          # two outputs, value-returning
        return np.maximum(x, low), (x > low).sum(axis=-1).astype("int64")

    class Kernels(nn.Module):
        def forward(self, x):
            n, d = x.shape
            c = nn.tensor_ir_op(row_cumsum, "row_cumsum", [x],
                                nn.Tensor.placeholder((n, d), "float32"))
            clipped, count = nn.tensor_expr_op(
                clip_and_count, "clip", [c, 0.5],
                attrs={"out": (nn.Tensor.placeholder((n, d), "float32"),
                               nn.Tensor.placeholder((n,), "int64"))})
            doubled = nn.tensor_expr_op(lambda a: a * 2, "double", [clipped],
                                        attrs={"out": clipped})   # a tensor of the same type
            return doubled, count

    mod, params = Kernels().export_tvm({"forward": {"x": spec.Tensor(["n", 4], "float32")}})
    rng = np.random.default_rng(3)
    for rows in (2, 5):
        x = rng.standard_normal((rows, 4)).astype("float32")
        c = np.cumsum(x, axis=1)
        for executor in ("debug", "graph"):
            doubled, count = run_forward(mod, params, x, executor=executor)
            np.testing.assert_allclose(doubled, np.maximum(c, 0.5) * 2, rtol=1e-6)
            np.testing.assert_array_equal(count, (c > 0.5).sum(-1))


def test_tensor_expr_op_dry_run_types_and_symbolic_inputs():
    class Static(nn.Module):
        def forward(self, x):
            return nn.tensor_expr_op(lambda a, k: np.repeat(a, k, axis=0).astype("float64"),
                                     "rep", [x, 3])

    mod, params = Static().export_tvm({"forward": {"x": spec.Tensor([2, 3], "float32")}})
    assert str(mod["forward"].body.checked_type) == "Tensor[(6, 3), float64]"
    x = np.arange(6, dtype="float32").reshape(2, 3)
    np.testing.assert_array_equal(run_forward(mod, params, x), np.repeat(x, 3, axis=0))

    class Symbolic(nn.Module):
        def forward(self, x):
            return nn.tensor_expr_op(lambda a: a, "ident", [x])

    with pytest.raises(nn.OpError, match="symbolic arguments.*attrs=\\{'out'"):
        Symbolic().export_tvm({"forward": {"x": spec.Tensor(["n"], "float32")}})


def test_extern_calls_a_registered_function_with_scalars():
    seen = {}

    @nn.register_extern_func("test_nn.fill_rows")
    def fill_rows(x, count, tag, out):
        seen["args"] = (count, tag)
        out[...] = x[:, :1] * count

    class UseExtern(nn.Module):
        def forward(self, x, k: int):
            n = x.shape[0]
            return nn.extern("test_nn.fill_rows", [x, k, "hello"],
                             nn.Tensor.placeholder((n, k), "float32"))

    mod, params = UseExtern().export_tvm(
        {"forward": {"x": spec.Tensor(["n", 2], "float32"), "k": spec.Int()}})
    x = np.array([[1, 9], [2, 9], [3, 9]], "float32")
    out = run_forward(mod, params, x, np.array(4, "int64"))
    np.testing.assert_array_equal(out, np.repeat(x[:, :1] * 4, 4, axis=1))
    assert seen["args"] == (4, "hello")


# -- object files ---------------------------------------------------------------------------------

def test_object_module_from_an_object_file_and_a_shared_object(tmp_path):
    source = tmp_path / "add.c"
    source.write_text(KERNELS_C)
    obj, shared = tmp_path / "add.o", tmp_path / "libadd.so"
    include = str(nn.SourceModule.get_includes()[0])
    subprocess.run(["cc", "-c", "-fPIC", "-O2", "-I", include, str(source), "-o", str(obj)],
                   check=True)
    subprocess.run(["cc", "-shared", "-fPIC", "-I", include, str(source), "-o", str(shared)],
                   check=True)
    a = np.arange(6, dtype="float32").reshape(2, 3)
    b = np.full((2, 3), 0.25, "float32")
    for path in (obj, shared):
        ext = nn.ObjectModule({"ext_add": lambda p, q: nn.Tensor.placeholder(p.shape, p.dtype)},
                              path)

        class Add(nn.Module):
            def forward(self, p, q):
                nn.add_extern(ext)
                return ext["ext_add"](p, q)

        mod, params, ext_mods = Add().export_tvm(
            {"forward": {"p": spec.Tensor([2, 3], "float32"),
                         "q": spec.Tensor([2, 3], "float32")}}, allow_extern=True)
        assert ext_mods == [ext]
        for executor in ("debug", "graph"):
            np.testing.assert_array_equal(run_forward(mod, params, a, b, executor=executor), a + b)


KERNELS_C = r"""
#include <irlib/extern.h>
IRLIB_EXTERN_C int ext_add(DLTensor* a, DLTensor* b, DLTensor* c) {
  int64_t n = irlib_numel(a);
  for (int64_t i = 0; i < n; ++i)
    ((float*)c->data)[i] = ((const float*)a->data)[i] + ((const float*)b->data)[i];
  return 0;
}
"""


# -- options and errors ---------------------------------------------------------------------------

def test_compile_options_and_includes():
    home = nn.SourceModule.tvm_home()
    includes = nn.SourceModule.get_includes()
    assert includes == [home / "include"]
    assert (includes[0] / "dlpack" / "dlpack.h").is_file()
    assert (includes[0] / "irlib" / "extern.h").is_file()
    options = nn.SourceModule.get_compile_options("cpp")
    assert options[:2] == ["-I", str(includes[0])] and "-std=c++17" in options
    assert "-std=c11" in nn.SourceModule.get_compile_options("c")
    with pytest.raises(nn.ExternError, match="not a folder"):
        nn.SourceModule.get_includes(["flashinfer"])
    with pytest.raises(nn.ExternError, match="'cu' needs nvcc"):
        nn.SourceModule(SYMBOLS, KERNELS, "cu")
    with pytest.raises(nn.ExternError, match="output_format 'wasm'"):
        nn.SourceModule(SYMBOLS, KERNELS, "cpp", output_format="wasm")
    with pytest.raises(nn.ExternError, match="not a file"):
        nn.ObjectModule(SYMBOLS, "/nonexistent/lib.o")


def test_compile_writes_a_shared_object_and_sources_load_from_files(tmp_path):
    target = tmp_path / "kernels.so"
    KERNEL_MOD.compile(target)
    lib = ctypes.CDLL(str(target))
    assert hasattr(lib, "ext_matmul") and hasattr(lib, "ext_scale_shift")
    source = tmp_path / "add.c"
    source.write_text(KERNELS_C)
    a, b = np.arange(4, dtype="float32"), np.ones(4, "float32")
    for given in (source, str(source)):
        module = nn.SourceModule({"ext_add": lambda p, q: p}, given, "c")
        assert module.source_code == KERNELS_C
        out = np.zeros(4, "float32")
        module.load()["ext_add"](a, b, out)
        np.testing.assert_array_equal(out, a + b)
    with pytest.raises(nn.ExternError, match="source file not found"):
        nn.SourceModule({"ext_add": lambda p, q: p}, tmp_path / "missing.c", "c")


def test_extern_calls_a_registered_ctypes_symbol_with_dltensors():
    nn.register_extern_func("test_nn.c_matmul", KERNEL_MOD.load().cdll.ext_matmul, override=True)

    class UseC(nn.Module):
        def forward(self, a, b):
            return nn.extern("test_nn.c_matmul", [a, b],
                             nn.Tensor.placeholder((a.shape[0], b.shape[1]), "float32"))

    mod, params = UseC().export_tvm({"forward": {"a": spec.Tensor(["n", 3], "float32"),
                                                 "b": spec.Tensor([3, "m"], "float32")}})
    rng = np.random.default_rng(2)
    a = rng.standard_normal((4, 3)).astype("float32")
    b = rng.standard_normal((3, 2)).astype("float32")
    for executor in ("debug", "graph"):
        np.testing.assert_allclose(run_forward(mod, params, a, b, executor=executor), a @ b,
                                   rtol=1e-5, atol=1e-5)


def test_compiler_error_shows_the_compiler_output():
    broken = nn.SourceModule({"f": lambda x: x},
                             "int f(DLTensor* x) { return undeclared_thing; }", "c")
    with pytest.raises(nn.ExternCompileError) as info:
        broken.load()
    message = str(info.value)
    assert "undeclared_thing" in message and "error" in message and "-shared" in message


def test_symbol_errors():
    with pytest.raises(nn.ExternSymbolError, match="has no symbol 'ext_nope'.*ext_matmul"):
        KERNEL_MOD["ext_nope"]
    declared_only = nn.SourceModule({"ext_matmul": _infer_matmul, "ext_missing": _infer_matmul},
                                    KERNELS, "cpp")
    with pytest.raises(nn.ExternSymbolError, match=r"\['ext_missing'\] are declared"):
        declared_only.load()


def test_symbol_registered_twice_in_one_export():
    twin = nn.SourceModule({"ext_matmul": _infer_matmul}, KERNELS, "cpp")

    class Twice(nn.Module):
        def forward(self, x):
            nn.add_extern(KERNEL_MOD)
            nn.add_extern(twin)
            return x

    with pytest.raises(nn.NNError, match=r"symbols \['ext_matmul'\] are already registered"):
        Twice().export_tvm({"forward": {"x": spec.Tensor([2], "float32")}}, allow_extern=True)


def _export_one(forward, shape=(2, 3)):
    class One(nn.Module):
        pass
    One.forward = lambda self, x: forward(x)
    return One().export_tvm({"forward": {"x": spec.Tensor(list(shape), "float32")}},
                            allow_extern=True)


@pytest.mark.parametrize("bad", [lambda a, b: (2, 3), lambda a, b: [], lambda a, b: None])
def test_inference_function_returning_the_wrong_thing(bad):
    ext = nn.SourceModule({"ext_matmul": bad}, KERNELS, "cpp")

    def forward(x):
        nn.add_extern(ext)
        return ext["ext_matmul"](x, x)

    with pytest.raises(nn.ExternInferenceError, match="ext_matmul.*must be a placeholder"):
        _export_one(forward)


def test_inference_function_raising_and_missing_add_extern():
    ext = nn.SourceModule({"ext_matmul": lambda a, b: a.shape[5]}, KERNELS, "cpp")

    def forward(x):
        nn.add_extern(ext)
        return ext["ext_matmul"](x, x)

    with pytest.raises(nn.ExternInferenceError, match="raised IndexError"):
        _export_one(forward)
    with pytest.raises(nn.ExternError, match=r"call nn.add_extern\(module\) first"):
        _export_one(lambda x: KERNEL_MOD["ext_matmul"](x, x))

    class Plain(nn.Module):
        def forward(self, x):
            nn.add_extern(KERNEL_MOD)
            return x

    with pytest.raises(nn.NNError, match="allow_extern=True"):
        Plain().export_tvm({"forward": {"x": spec.Tensor([2], "float32")}})


def test_bad_out_and_args():
    with pytest.raises(nn.OpError, match="out must be a placeholder nn.Tensor"):
        _export_one(lambda x: nn.tensor_ir_op(lambda a, o: None, "k", [x], (2, 3)))
    with pytest.raises(nn.OpError, match="argument 1 is a dict"):
        _export_one(lambda x: nn.tensor_ir_op(lambda a, o: None, "k", [x, {}],
                                              nn.Tensor.placeholder((2,), "float32")))


# -- TVM-style sources: TVM_DLL_EXPORT_TYPED_FUNC ---------------------------------------------

TVM_STYLE = r"""
#include <dlpack/dlpack.h>
#include <irlib/extern.h>

namespace {
int _scalar_add(DLTensor* a, DLTensor* b, DLTensor* c) {
  if (a->ndim != 0 || c->ndim != 0) return 1;
  *static_cast<float*>(c->data) = *static_cast<float*>(a->data) + *static_cast<float*>(b->data);
  return 0;
}

// c[i, j, k, l] = a[i, j, 0] * b[j, k, l % 5] + l, for a (x, y, 1), b (y, z, 5), c (x, y, z, 9)
void _test_sym(DLTensor* a, DLTensor* b, DLTensor* c) {
  const int64_t x = a->shape[0], y = a->shape[1], z = b->shape[1];
  const float* ap = static_cast<const float*>(a->data);
  const float* bp = static_cast<const float*>(b->data);
  float* cp = static_cast<float*>(c->data);
  for (int64_t i = 0; i < x; ++i)
    for (int64_t j = 0; j < y; ++j)
      for (int64_t k = 0; k < z; ++k)
        for (int64_t l = 0; l < 9; ++l)
          cp[((i * y + j) * z + k) * 9 + l] = ap[i * y + j] * bp[(j * z + k) * 5 + l % 5] + l;
}
}  // namespace

TVM_DLL_EXPORT_TYPED_FUNC(ext_scalar_add, _scalar_add);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(ext_test_sym, _test_sym);
"""


def _infer_scalar_add(a, b):
    return nn.Tensor.placeholder((), "float32")


def _infer_test_sym(a, b):
    x, y, _ = a.shape
    _, z, _ = b.shape
    return nn.Tensor.placeholder((x, y, z, 9), "float32")


def _tvm_style_module(ext):
    class TestModule(nn.Module):
        def scalar_add(self, a, b):
            nn.add_extern(ext)
            return ext["ext_scalar_add"](a, b)

        def test_sym(self, a, b):
            nn.add_extern(ext)
            return ext["ext_test_sym"](a, b)

    return TestModule().export_tvm(
        {"scalar_add": {"a": spec.Tensor((), "float32"), "b": spec.Tensor((), "float32")},
         "test_sym": {"a": spec.Tensor(("x", "y", 1), "float32"),
                      "b": spec.Tensor(("y", "z", 5), "float32")}}, allow_extern=True)


@pytest.mark.parametrize("kind", ["source", "object"])
def test_tvm_style_typed_func_exports(kind, tmp_path):
    symbols = {"ext_scalar_add": _infer_scalar_add, "ext_test_sym": _infer_test_sym}
    if kind == "source":
        ext = nn.SourceModule(symbols, TVM_STYLE, "cpp")
    else:
        source = tmp_path / "k.cc"
        source.write_text(TVM_STYLE)
        subprocess.run(["c++", "-std=c++17", "-c", "-fPIC", "-I",
                        str(nn.SourceModule.get_includes()[0]), str(source), "-o",
                        str(tmp_path / "k.o")], check=True)
        ext = nn.ObjectModule(symbols, tmp_path / "k.o")
    mod, _, ext_mods = _tvm_style_module(ext)
    assert ext_mods == [ext]
    assert str(mod["test_sym"].body.checked_type) == "Tensor[(x, y, z, 9), float32]"
    debug = interp.create_executor("debug", mod)
    total = debug.evaluate(mod.get_global_var("scalar_add"))(np.array(1.0, "float32"),
                                                             np.array(3.0, "float32"))
    assert float(total.numpy()) == 4.0
    rng = np.random.default_rng(4)
    for x, y, z in [(1, 2, 3), (3, 1, 2)]:
        a = rng.standard_normal((x, y, 1)).astype("float32")
        b = rng.standard_normal((y, z, 5)).astype("float32")
        expected = (a[:, :, None, :] * b[None, :, :, np.arange(9) % 5]
                    + np.arange(9, dtype="float32"))
        out = debug.evaluate(mod.get_global_var("test_sym"))(a, b).numpy()
        np.testing.assert_allclose(out, expected, rtol=1e-6)
    lib = ext.load()
    assert lib.is_packed("ext_test_sym")
    with pytest.raises(irlib.errors.OpImplError, match="wrong number of arguments"):
        lib["ext_scalar_add"](np.zeros((), "float32"))
    with pytest.raises(irlib.errors.OpImplError, match="argument of the wrong kind"):
        lib["ext_scalar_add"](np.zeros((), "float32"), 1, np.zeros((), "float32"))


# -- signatures, as relax-frontend-api.txt documents them ------------------------------------------

REFERENCE_SIGNATURES = {
    nn.tensor_ir_op: "(func, name_hint, args, out)",
    nn.tensor_expr_op: "(tensor_expr_func, name_hint, args, *, attrs=None)",
    nn.extern: "(name, args, out)",
    nn.add_extern: "(mod)",
    nn.ExternModule: "(symbols)",
    nn.ObjectModule: "(symbols, filepath)",
    nn.SourceModule: "(symbols, source_code, source_format, compile_options=None, "
                     "compiler=None, output_format='obj')",
    nn.SourceModule.compile: "(self, output_path)",
    nn.SourceModule.get_compile_options: "(source_format, tvm_pkg=None)",
    nn.SourceModule.get_includes: "(tvm_pkg=None)",
    nn.SourceModule.tvm_home: "()",
    nn.ExternModule.load: "(self)",
}


@pytest.mark.parametrize("func", list(REFERENCE_SIGNATURES), ids=lambda f: f.__qualname__)
def test_signatures_match_the_reference(func):
    import inspect
    signature = inspect.signature(func)
    plain = signature.replace(parameters=[p.replace(annotation=inspect.Parameter.empty)
                                          for p in signature.parameters.values()],
                              return_annotation=inspect.Signature.empty)
    assert str(plain) == REFERENCE_SIGNATURES[func]
    assert nn.op.tensor_ir_op is nn.tensor_ir_op and nn.op.extern is nn.extern
