"""gather/scatter, sorting, scans, shape queries, einsum, annotations and take with batch_dims:
reference vs an independent oracle (onnxruntime on a one-node model, or a direct loop on tiny
inputs), relation type vs oracle type, and gradients."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import irlib
from irlib import TensorType, size_var
from irlib.errors import TypeInferenceError
from irlib.ir.dims import Any

from op_test_helpers import OpRecord, check_gradient, check_record, rand, type_of
from ort_oracle import run_node
from helpers import tvar

RNG = np.random.default_rng(99)


def distinct(*shape, dtype="float32"):
    """Random values without ties (so every sort order is unique)."""
    return RNG.permutation(int(np.prod(shape))).reshape(shape).astype(dtype) * 0.5 - 3


def ints(high, *shape, dtype="int32"):
    return RNG.integers(0, high, size=shape).astype(dtype)


# -- oracles -----------------------------------------------------------------------------------

def gather_loop(data, indices, axis):
    out = np.empty(indices.shape, data.dtype)
    for position in np.ndindex(*indices.shape):
        source = list(position)
        source[axis] = indices[position]
        out[position] = data[tuple(source)]
    return out


def gather_nd_ort(data, indices, batch_dims=0, index_rank=None):
    return run_node("GatherND", [data, np.moveaxis(indices, 0, -1).astype("int64")],
                    {"batch_dims": batch_dims})[0]


def scatter_elements_oracle(data, indices, updates, axis=0, reduction="update"):
    if reduction == "mean":
        total = data.astype(np.float64).copy()
        count = np.ones(data.shape)
        for position in np.ndindex(*indices.shape):
            target = list(position)
            target[axis] = indices[position]
            total[tuple(target)] += updates[position]
            count[tuple(target)] += 1
        return (total / count).astype(data.dtype)
    onnx_reduction = "none" if reduction == "update" else reduction
    return run_node("ScatterElements", [data, indices.astype("int64"), updates],
                    {"axis": axis, "reduction": onnx_reduction})[0]


def one_hot_ort(indices, on_value, off_value, depth=1, axis=-1, dtype="float32"):
    values = np.array([off_value, on_value], dtype)
    return run_node("OneHot", [indices.astype("int64"), np.array([depth], "int64"), values],
                    {"axis": axis}, output_types=[dtype])[0]


def topk_ort(data, k=1, axis=-1, ret_type="both", is_ascend=False, dtype="int32"):
    k = data.shape[axis] if k < 1 else k
    values, indices = run_node("TopK", [data, np.array([k], "int64")],
                               {"axis": axis, "largest": int(not is_ascend), "sorted": 1},
                               outputs=2, output_types=[data.dtype.name, "int64"])
    indices = indices.astype(dtype)
    return {"both": (values, indices), "values": values, "indices": indices}[ret_type]


def cumsum_ort(data, axis=None, dtype="", exclusive=False):
    if axis is None:
        data, axis = data.reshape(-1), 0
    return run_node("CumSum", [data, np.array(axis, "int64")], {"exclusive": int(exclusive)})[0]


def cumprod_loop(data, axis=None, dtype="", exclusive=False):
    if axis is None:
        data, axis = data.reshape(-1), 0
    moved = np.moveaxis(data, axis, 0)
    out = np.empty_like(moved)
    running = np.ones(moved.shape[1:], data.dtype)
    for i in range(moved.shape[0]):
        if exclusive:
            out[i] = running
            running = running * moved[i]
        else:
            running = running * moved[i]
            out[i] = running
    return np.moveaxis(out, 0, axis)


def unique_ort(data, is_sorted=True, return_counts=False):
    values, indices, inverse, counts = run_node(
        "Unique", [data], {"sorted": int(is_sorted)}, outputs=4,
        output_types=[data.dtype.name, "int64", "int64", "int64"])
    n, count = data.shape[0], values.shape[0]

    def padded(array, dtype):
        out = np.zeros(n, dtype)
        out[:count] = array
        return out
    result = (padded(values, data.dtype), padded(indices, "int32"), inverse.astype("int32"),
              np.array([count], "int32"))
    return result + (padded(counts, "int32"),) if return_counts else result


def take_batch_loop(data, indices, axis=None, batch_dims=0, mode="clip"):
    out_shape = data.shape[:axis] + indices.shape[batch_dims:] + data.shape[axis + 1:]
    out = np.empty(out_shape, data.dtype)
    for position in np.ndindex(*out_shape):
        before = position[:axis]
        index_position = before[:batch_dims] + position[axis:axis + indices.ndim - batch_dims]
        after = position[axis + indices.ndim - batch_dims:]
        chosen = np.clip(indices[index_position], 0, data.shape[axis] - 1)
        out[position] = data[before + (chosen,) + after]
    return out


def meshgrid_oracle(data, indexing="ij"):
    vectors = [np.reshape(v, -1) for v in data]
    sizes = [v.size for v in vectors]
    if indexing == "xy" and len(sizes) >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    grids = []
    for i, v in enumerate(vectors):
        axis = i
        if indexing == "xy" and len(sizes) >= 2 and i < 2:
            axis = 1 - i
        shape = [1] * len(sizes)
        shape[axis] = -1
        grids.append(np.broadcast_to(v.reshape(shape), sizes).copy())
    return tuple(grids)


# -- records ---------------------------------------------------------------------------------

RECORDS = [
    OpRecord("gather", lambda d, i, axis: irlib.gather(d, axis, i),
             [([rand((3, 4)), ints(4, 3, 2)], {"axis": 1}),
              ([rand((3, 4), "int32"), ints(3, 2, 4)], {"axis": 0}),
              ([rand((2, 3, 4)), ints(3, 2, 3, 1)], {"axis": -2})],
             gather_loop),
    OpRecord("gather_nd", irlib.gather_nd,
             [([rand((4, 5, 6)), ints(4, 2, 7)], {}),
              ([rand((4, 5)), ints(4, 1, 2, 3)], {}),
              ([rand((2, 5, 6)), np.stack([ints(5, 2, 3), ints(6, 2, 3)])],
               {"batch_dims": 1})],
             gather_nd_ort),
    OpRecord("scatter_elements", irlib.scatter_elements,
             [([rand((3, 4)), np.array([[0, 3], [1, 1], [2, 0]], "int32"), rand((3, 2))],
               {"axis": 1, "reduction": reduction})
              for reduction in ("update", "add", "mul", "min", "max", "mean")]
             + [([rand((4, 2)), np.array([[3, 0], [-1, 1]], "int64"), rand((2, 2))],
                 {"axis": 0})],
             scatter_elements_oracle),
    OpRecord("one_hot", irlib.one_hot,
             [([ints(5, 2, 3), np.array(2.5, "float32"), np.array(-1.0, "float32")],
               {"depth": 5, "axis": axis}) for axis in (-1, 0, 1)]
             + [([ints(4, 3, dtype="int64"), np.array(7, "int64"), np.array(0, "int64")],
                 {"depth": 4, "dtype": "int64"})],
             one_hot_ort),
    OpRecord("reverse", irlib.reverse, [([rand((3, 4))], {"axis": 1}),
                                        ([rand((3, 4, 2))], {"axis": -3})],
             lambda data, axis: data[(slice(None),) * (axis % data.ndim) + (slice(None, None,
                                                                                 -1),)]),
    OpRecord("sort", irlib.sort, [([distinct(3, 5)], {"axis": ax, "is_ascend": asc})
                                  for ax, asc in itertools.product((0, -1), (True, False))],
             lambda data, axis=-1, is_ascend=True: topk_ort(data, 0, axis, "values",
                                                            is_ascend)),
    OpRecord("argsort", irlib.argsort, [([distinct(3, 5)], {"axis": ax, "is_ascend": asc})
                                        for ax, asc in itertools.product((0, 1),
                                                                         (True, False))],
             lambda data, axis=-1, is_ascend=True, dtype="int32": topk_ort(
                 data, 0, axis, "indices", is_ascend, dtype)),
    OpRecord("topk", lambda d, **a: irlib.topk(d, **a),
             [([distinct(4, 6)], {"k": 3}), ([distinct(4, 6)], {"k": 2, "axis": 0,
                                                                 "is_ascend": True}),
              ([distinct(4, 6)], {"k": 0, "ret_type": "values"}),
              ([distinct(4, 6)], {"k": 1, "ret_type": "indices", "dtype": "int64"})],
             topk_ort),
    OpRecord("cumsum", irlib.cumsum, [([rand((3, 4))], {"axis": 1}), ([rand((3, 4))], {}),
                                      ([rand((3, 4))], {"axis": 0, "exclusive": True}),
                                      ([rand((2, 3), "int32")], {"axis": -1})],
             cumsum_ort),
    OpRecord("cumprod", irlib.cumprod, [([rand((3, 4))], {"axis": 1}), ([rand((3, 4))], {}),
                                        ([rand((3, 4))], {"axis": 0, "exclusive": True})],
             cumprod_loop),
    OpRecord("unique", lambda d, **a: irlib.unique(d, **a).astuple(),
             [([np.array([3, 1, 3, 2, 1, 5], "int64")], {}),
              ([np.array([3.0, 1.0, 3.0, 2.0], "float32")], {"is_sorted": False,
                                                              "return_counts": True}),
              ([np.array([4, 4, 4], "int64")], {"return_counts": True})],
             unique_ort),
    OpRecord("shape_of", irlib.shape_of, [([rand((2, 3, 4))], {}),
                                          ([rand(())], {"dtype": "int64"})],
             lambda d, dtype="int32": run_node("Shape", [d], output_types=["int64"])[0]
             .astype(dtype)),
    OpRecord("ndarray_size", irlib.ndarray_size, [([rand((2, 3, 4))], {})],
             lambda d, dtype="int32": run_node("Size", [d], output_types=["int64"])[0]
             .astype(dtype)),
    OpRecord("meshgrid", lambda d, **a: irlib.meshgrid(d, **a),
             [([(rand((3,)), rand((2,)), rand((4,)))], {"indexing": "ij"}),
              ([(rand((3,)), rand((2,)))], {"indexing": "xy"})],
             meshgrid_oracle),
    OpRecord("einsum", irlib.einsum,
             [([(rand((2, 3)), rand((3, 4)))], {"equation": "ij,jk->ik"}),
              ([(rand((2, 3, 4)), rand((2, 4, 5)))], {"equation": "bij,bjk->bik"}),
              ([(rand((3, 3)),)], {"equation": "ii->i"}),
              ([(rand((2, 3)), rand((4,)))], {"equation": "ij,k->ijk"}),
              ([(rand((2, 3, 4)), rand((4, 3)))], {"equation": "...ij,ji->..."})],
             lambda data, equation: run_node("Einsum", list(data),
                                             {"equation": equation})[0], tol=1e-4),
    OpRecord("take", irlib.take,
             [([rand((2, 3, 4)), ints(4, 2, 5)], {"axis": 2, "batch_dims": 1}),
              ([rand((2, 3, 4)), ints(3, 2, 3, 2)], {"axis": 1, "batch_dims": 1}),
              ([rand((2, 3, 4)), ints(4, 2, 3)], {"axis": 2, "batch_dims": 2})],
             take_batch_loop),
]
_IDENTITY_BUILDERS = {
    "on_device": lambda d: irlib.annotation.on_device(d, "cpu"),
    "annotation.stop_fusion": irlib.annotation.stop_fusion,
    "annotation.compiler_begin": lambda d: irlib.annotation.compiler_begin(d, "ccompiler"),
    "annotation.compiler_end": lambda d: irlib.annotation.compiler_end(d, "ccompiler"),
    "annotation.checkpoint": irlib.annotation.checkpoint,
    "device_copy": lambda d: irlib.device_copy(d, "cuda", "cpu"),
}
RECORDS += [OpRecord(name, builder, [([rand((2, 3))], {}), ([rand((4,), "int32")], {})],
                     lambda d: d.copy()) for name, builder in _IDENTITY_BUILDERS.items()]

CASES = [(r, i) for r in RECORDS for i in range(len(r.cases))]


@pytest.mark.parametrize("record,case", CASES,
                         ids=[f"{r.name}-{i}" for r, i in CASES])
def test_reference_matches_oracle_and_type(record, case):
    check_record(record, case)


@pytest.mark.parametrize("condition", [rand((3, 4)) > 0, np.array([0, 2, 0, 1], "int32"),
                                       np.zeros((2, 2), "float32")])
def test_argwhere_matches_onnx_nonzero(condition):
    expr = irlib.argwhere(irlib.var("c", shape=condition.shape, dtype=condition.dtype.name))
    result = irlib.op.evaluate("argwhere", [condition])
    expected = np.transpose(run_node("NonZero", [condition], output_types=["int64"])[0])
    np.testing.assert_array_equal(result, expected)
    assert result.dtype == np.int32
    assert type_of(expr) == TensorType((Any, condition.ndim), "int32")
    nonzero = irlib.op.evaluate("transpose", [result], irlib.op.get_def("transpose")
                                .make_attrs({"axes": (1, 0)}))
    assert nonzero.shape == (condition.ndim, result.shape[0])
    assert irlib.nonzero(expr).op.name == "transpose"


def test_checkpoint_passes_tuples_through():
    pair = irlib.Tuple([irlib.var("a", shape=(2,)), irlib.var("b", shape=(3,), dtype="int32")])
    ty = type_of(irlib.annotation.checkpoint(pair))
    assert ty.fields[1] == TensorType((3,), "int32")


def test_annotation_attrs_follow_relay():
    call = irlib.annotation.on_device(irlib.var("x", shape=(2,)), "cuda",
                                      constrain_result=True)
    assert call.op.name == "on_device"
    assert call.attrs["virtual_device"] == "cuda" and call.attrs["constrain_body"] is True
    assert irlib.annotation.compiler_end(irlib.var("x", shape=(2,)),
                                         "dnnl").attrs["compiler"] == "dnnl"
    for name in _IDENTITY_BUILDERS:
        assert irlib.op.get_def(name).pattern == irlib.op.OpPattern.OPAQUE


# -- gradients ---------------------------------------------------------------------------------

def f64(*shape):
    return RNG.standard_normal(shape)


GRAD_CASES = [
    (lambda d, i: irlib.gather(d, 1, i), [f64(3, 4), ints(4, 3, 2)], {}),
    (irlib.gather_nd, [f64(3, 4), np.array([[0, 2, 0], [1, 1, 1]])], {}),
    (irlib.scatter_nd, [f64(3, 4), np.array([[0, 2]]), f64(2, 4)], {}),
    (irlib.scatter_nd, [f64(3, 4), np.array([[0, 0]]), f64(2, 4)], {"mode": "add"}),
    (irlib.scatter_elements, [f64(3, 4), np.array([[0, 2], [1, 3], [3, 0]]), f64(3, 2)],
     {"axis": 1}),
    (irlib.scatter_elements, [f64(3, 4), np.array([[0, 0], [1, 1], [3, 0]]), f64(3, 2)],
     {"axis": 1, "reduction": "add"}),
    (irlib.one_hot, [np.array([0, 2, 1]), f64(), f64()], {"depth": 4, "dtype": "float64"}),
    (irlib.reverse, [f64(3, 4)], {"axis": 0}),
    (irlib.sort, [f64(3, 4)], {"axis": 1}),
    (irlib.sort, [f64(3, 4)], {"axis": 0, "is_ascend": False}),
    (lambda d, **a: irlib.topk(d, **a).astuple(), [f64(3, 5)], {"k": 2}),
    (irlib.topk, [f64(3, 5)], {"k": 3, "axis": 0, "ret_type": "values"}),
    (irlib.cumsum, [f64(3, 4)], {"axis": 1}),
    (irlib.cumsum, [f64(3, 4)], {"exclusive": True}),
    (irlib.cumprod, [f64(3, 4)], {"axis": 0}),
    (irlib.cumprod, [f64(2, 4)], {"axis": 1, "exclusive": True}),
    (irlib.meshgrid, [(f64(3), f64(2))], {"indexing": "xy"}),
    (irlib.einsum, [(f64(3, 4), f64(4, 5))], {"equation": "ij,jk->ik"}),
    (irlib.einsum, [(f64(3, 4), f64(4, 1))], {"equation": "ij,jk->ijk"}),
    (irlib.argsort, [f64(3, 4)], {}),
    (irlib.shape_of, [f64(3, 4)], {}),
    (irlib.ndarray_size, [f64(3, 4)], {}),
] + [(builder, [f64(2, 3)], {}) for builder in _IDENTITY_BUILDERS.values()]


@pytest.mark.parametrize("builder,inputs,attrs", GRAD_CASES)
def test_gradient_matches_finite_differences(builder, inputs, attrs):
    check_gradient(builder, inputs, **attrs)


# -- relations: symbolic dims, Any, errors ------------------------------------------------------

n = size_var("n")


def test_symbolic_and_dynamic_shapes():
    assert type_of(irlib.argwhere(tvar("c", (n, 3), "bool"))) == TensorType((Any, 2), "int32")
    assert type_of(irlib.cumsum(tvar("x", (n, 3)))) == TensorType((3 * n,))
    assert type_of(irlib.shape_of(tvar("x", (n, Any)))) == TensorType((2,), "int32")
    assert type_of(irlib.gather(tvar("x", (n, 5)), 1, tvar("i", (n, 2), "int32"))) == \
        TensorType((n, 2))
    assert type_of(irlib.topk(tvar("x", (n, 5)), 2).astuple()).fields[1] == \
        TensorType((n, 2), "int32")
    assert type_of(irlib.one_hot(tvar("i", (n,), "int32"), irlib.const(1.0), irlib.const(0.0),
                                 3)) == TensorType((n, 3))
    assert type_of(irlib.einsum([tvar("a", (n, 4)), tvar("b", (4, 2))], "ij,jk->ik")) == \
        TensorType((n, 2))


@pytest.mark.parametrize("build,needle", [
    (lambda: irlib.gather(tvar("x", (3, 4)), 1, tvar("i", (3, 2), "float32")), "indices"),
    (lambda: irlib.gather(tvar("x", (3, 4)), 2, tvar("i", (3, 2), "int32")), "axis"),
    (lambda: irlib.scatter_elements(tvar("x", (3, 4)), tvar("i", (3, 2), "int32"),
                                    tvar("u", (3, 3))), "updates"),
    (lambda: irlib.scatter_elements(tvar("x", (3, 4)), tvar("i", (3, 2), "int32"),
                                    tvar("u", (3, 2)), reduction="sum"), "reduction"),
    (lambda: irlib.topk(tvar("x", (3, 4)), 5), "k=5"),
    (lambda: irlib.topk(tvar("x", (3, 4)), 2, ret_type="all"), "ret_type"),
    (lambda: irlib.one_hot(tvar("i", (3,), "int32"), tvar("a", (2,)), irlib.const(0.0), 3),
     "on_value"),
    (lambda: irlib.unique(tvar("x", (3, 4))).astuple(), "unique: data"),
    (lambda: irlib.einsum([tvar("a", (2, 3)), tvar("b", (4, 5))], "ij,jk->ik"), "subscript"),
    (lambda: irlib.einsum([tvar("a", (2, 3))], "ijk->i"), "rank"),
    (lambda: irlib.meshgrid([tvar("a", (2, 3))]), "meshgrid: data[0]"),
    (lambda: irlib.take(tvar("x", (2, 3)), tvar("i", (3, 2), "int32"), axis=1, batch_dims=1),
     "batch dimension"),
    (lambda: irlib.gather_nd(tvar("x", (2, 3)), tvar("i", (3, 4), "int32")), "rank"),
])
def test_relation_errors_name_the_op_and_argument(build, needle):
    with pytest.raises(TypeInferenceError) as info:
        type_of(build())
    message = str(info.value)
    assert needle in message
    call = build()
    call = call.astuple() if hasattr(call, "astuple") else call
    assert message.startswith(call.op.name + ":"), message


def test_device_copy_attrs_and_gradient_follow_relay():
    x = irlib.var("x", shape=(2,))
    call = irlib.device_copy(x, 2, irlib.ndarray.Device("cpu", 0))
    assert call.attrs.type_key == "relay.attrs.DeviceCopyAttrs"
    assert (call.attrs["src_virtual_device"], call.attrs["dst_virtual_device"]) == ("cuda", "cpu")
    assert irlib.device_copy(x, "gpu", "llvm").attrs["src_virtual_device"] == "cuda"
    back, = irlib.op.get_def("device_copy").grad(call, irlib.var("g", shape=(2,)))
    assert back.op.name == "device_copy"
    assert (back.attrs["src_virtual_device"], back.attrs["dst_virtual_device"]) == ("cpu", "cuda")
