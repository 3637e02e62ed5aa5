"""Hypothesis draws of valid (inputs, attrs) for every registered op.

``SPECS[name](draw) -> (inputs, attrs)``: numpy inputs (a tuple for a tuple argument) and
the call's attrs. Used by test_op_shapes_hypothesis.py to check that each op's type relation
agrees with the shape/dtype its reference implementation returns.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

FLOATS = ("float32", "float64")
INTS = ("int32", "int64")


def arr(draw, shape, dtype=None, low=-2.0, high=2.0):
    """A random array (from a drawn seed, so hypothesis shrinks the seed not the values)."""
    dtype = dtype or draw(st.sampled_from(FLOATS))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if np.issubdtype(np.dtype(dtype), np.integer):
        return rng.integers(int(low), max(int(high), int(low)) + 1, size=shape).astype(dtype)
    return rng.uniform(low, high, size=shape).astype(dtype)


def shape(draw, min_dims=0, max_dims=4, min_side=1, max_side=4):
    return draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                                 max_side=max_side))


def axis_of(draw, ndim):
    return draw(st.integers(-ndim, ndim - 1))


# -- families ----------------------------------------------------------------------------------

def unary(low=0.1, high=0.9, dtypes=FLOATS):
    def spec(draw):
        return [arr(draw, shape(draw), draw(st.sampled_from(dtypes)), low, high)], {}
    return spec


def binary(dtypes=FLOATS, low=1, high=4):
    def spec(draw):
        dtype = draw(st.sampled_from(dtypes))
        shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3))
        return [arr(draw, s, dtype, low, high) for s in shapes.input_shapes], {}
    return spec


def reduction(extra=None, dtypes=FLOATS):
    def spec(draw):
        dims = shape(draw, 1)
        axis = draw(st.one_of(st.none(), st.lists(st.integers(0, len(dims) - 1), unique=True,
                                                  min_size=1)))
        attrs = {"axis": axis, "keepdims": draw(st.booleans()),
                 "exclude": draw(st.booleans())}
        attrs.update(extra or {})
        return [arr(draw, dims, draw(st.sampled_from(dtypes)))], attrs
    return spec


def identity_op(attrs):
    def spec(draw):
        return [arr(draw, shape(draw))], dict(attrs)
    return spec


UNARY_NAMES = ["negative", "abs", "sign", "ceil", "floor", "round", "trunc", "sqrt", "rsqrt",
               "exp", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos", "atan",
               "sinh", "cosh", "tanh", "asinh", "atanh", "sigmoid", "erf", "isnan", "isinf",
               "isfinite", "copy", "fast_exp", "fast_tanh", "fast_erf", "zeros_like",
               "ones_like", "nn.relu"]
BINARY_NAMES = ["add", "subtract", "multiply", "divide", "floor_divide", "trunc_divide", "mod",
                "floor_mod", "trunc_mod", "power", "maximum", "minimum", "equal", "not_equal",
                "less", "less_equal", "greater", "greater_equal"]

SPECS = {name: unary() for name in UNARY_NAMES}
SPECS["acosh"] = unary(1.1, 3.0)
SPECS["logical_not"] = unary(dtypes=("bool",))
SPECS["bitwise_not"] = unary(dtypes=INTS)
SPECS.update({name: binary() for name in BINARY_NAMES})
SPECS.update({name: binary(("bool",)) for name in ("logical_and", "logical_or",
                                                    "logical_xor")})
SPECS.update({name: binary(INTS) for name in ("bitwise_and", "bitwise_or", "bitwise_xor",
                                              "left_shift", "right_shift")})
SPECS.update({name: reduction() for name in ("sum", "mean", "prod", "max", "min")})
SPECS.update({name: reduction(dtypes=("bool",)) for name in ("all", "any")})
SPECS.update({name: reduction({"select_last_index": False}) for name in ("argmax", "argmin")})
SPECS.update({name: identity_op({}) for name in ("annotation.stop_fusion",
                                                 "annotation.checkpoint")})
SPECS["on_device"] = identity_op({"virtual_device": "cpu"})
SPECS["annotation.compiler_begin"] = identity_op({"compiler": "c"})
SPECS["annotation.compiler_end"] = identity_op({"compiler": "c"})
SPECS["device_copy"] = identity_op({"src_virtual_device": "cuda",
                                   "dst_virtual_device": "cpu"})


def spec(name):
    def register(fn):
        SPECS[name] = fn
        return fn
    return register


@spec("cast")
def _(draw):
    return [arr(draw, shape(draw))], {"dtype": draw(st.sampled_from(FLOATS + INTS))}


@spec("cast_like")
def _(draw):
    return [arr(draw, shape(draw)), arr(draw, shape(draw), draw(st.sampled_from(INTS)))], {}


@spec("clip")
def _(draw):
    return [arr(draw, shape(draw))], {"a_min": -0.5, "a_max": draw(st.floats(0, 1))}


@spec("where")
def _(draw):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3))
    c, x, y = shapes.input_shapes
    dtype = draw(st.sampled_from(FLOATS))
    return [arr(draw, c, "bool"), arr(draw, x, dtype), arr(draw, y, dtype)], {}


@spec("variance")
def _(draw):
    dims = shape(draw, 1)
    axis = draw(st.lists(st.integers(0, len(dims) - 1), unique=True, min_size=1))
    data = arr(draw, dims)
    mean = data.mean(axis=tuple(axis), keepdims=True)
    return [data, mean], {"axis": axis, "keepdims": draw(st.booleans()), "exclude": False,
                          "unbiased": draw(st.booleans())}


@spec("collapse_sum_like")
def _(draw):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=1, max_dims=3, max_side=3))
    small = shapes.input_shapes[0]
    return [arr(draw, shapes.result_shape), arr(draw, small)], {}


@spec("broadcast_to_like")
def _(draw):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=1, max_dims=3, max_side=3))
    return [arr(draw, shapes.input_shapes[0]), arr(draw, shapes.result_shape)], {}


@spec("broadcast_to")
def _(draw):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=1, max_dims=3, max_side=3))
    return [arr(draw, shapes.input_shapes[0])], {"shape": shapes.result_shape}


@spec("reshape")
def _(draw):
    dims = shape(draw, 1)
    choices = [(-1,), tuple(reversed(dims))] + ([(0, -1), (-3,) + (-2,)] if len(dims) >= 2
                                                 else [])
    return [arr(draw, dims)], {"newshape": draw(st.sampled_from(choices)), "allowzero": False}


@spec("reshape_like")
def _(draw):
    dims = shape(draw, 1)
    return [arr(draw, dims), arr(draw, (int(np.prod(dims)),))], {}


@spec("transpose")
def _(draw):
    dims = shape(draw, 1)
    return [arr(draw, dims)], {"axes": tuple(draw(st.permutations(range(len(dims)))))}


@spec("squeeze")
def _(draw):
    dims = shape(draw, 1, min_side=1, max_side=2)
    return [arr(draw, dims)], {"axis": None}


@spec("expand_dims")
def _(draw):
    dims = shape(draw)
    return [arr(draw, dims)], {"axis": draw(st.integers(-len(dims) - 1, len(dims))),
                               "num_newaxis": draw(st.integers(0, 2))}


def _tuple_of_tensors(draw, axis_size_varies):
    dims = list(shape(draw, 1, 3))
    axis = draw(st.integers(0, len(dims) - 1))
    fields = []
    for _ in range(draw(st.integers(1, 3))):
        if axis_size_varies:
            dims[axis] = draw(st.integers(1, 3))
        fields.append(arr(draw, tuple(dims), "float32"))
    return tuple(fields), axis


@spec("concatenate")
def _(draw):
    fields, axis = _tuple_of_tensors(draw, True)
    return [fields], {"axis": axis}


@spec("stack")
def _(draw):
    fields, axis = _tuple_of_tensors(draw, False)
    return [fields], {"axis": axis}


@spec("split")
def _(draw):
    dims = shape(draw, 1)
    axis = draw(st.integers(0, len(dims) - 1))
    sections = draw(st.sampled_from([1, dims[axis], [1], [0, min(2, dims[axis])]]))
    return [arr(draw, dims)], {"indices_or_sections": sections, "axis": axis}


@spec("strided_slice")
def _(draw):
    dims = shape(draw, 1)
    begin = [draw(st.integers(0, d - 1)) for d in dims]
    end = [draw(st.integers(b + 1, d)) for b, d in zip(begin, dims)]
    strides = [draw(st.integers(1, 2)) for _ in dims]
    return [arr(draw, dims)], {"begin": begin, "end": end, "strides": strides,
                               "slice_mode": "end", "axes": None}


@spec("strided_set")
def _(draw):
    dims = shape(draw, 1, 3)
    begin = [draw(st.integers(0, d - 1)) for d in dims]
    end = [draw(st.integers(b + 1, d)) for b, d in zip(begin, dims)]
    v_shape = tuple(e - b for b, e in zip(begin, end))
    return [arr(draw, dims, "float32"), arr(draw, v_shape, "float32"),
            np.array(begin, "int64"), np.array(end, "int64"), np.ones(len(dims), "int64")], {}


@spec("take")
def _(draw):
    dims = shape(draw, 1)
    axis = draw(st.one_of(st.none(), st.integers(0, len(dims) - 1)))
    size = int(np.prod(dims)) if axis is None else dims[axis]
    indices = arr(draw, shape(draw, 0, 2), "int32", -size, size + 2)
    batch_dims = 0
    if axis is not None and axis > 0 and draw(st.booleans()):
        batch_dims = 1
        indices = arr(draw, (dims[0],) + shape(draw, 0, 2), "int32", 0, size - 1)
    return [arr(draw, dims), indices], {"axis": axis, "batch_dims": batch_dims,
                                        "mode": draw(st.sampled_from(["clip", "wrap"]))}


@spec("scatter_nd")
def _(draw):
    dims = shape(draw, 1, 3)
    depth = draw(st.integers(1, len(dims)))
    rest = shape(draw, 0, 2)
    indices = np.stack([arr(draw, rest, "int64", 0, d - 1) for d in dims[:depth]])
    return [arr(draw, dims, "float32"), indices, arr(draw, rest + dims[depth:], "float32")], {
        "mode": draw(st.sampled_from(["update", "add"]))}


@spec("gather")
def _(draw):
    dims = shape(draw, 1, 3)
    axis = draw(st.integers(0, len(dims) - 1))
    index_shape = tuple(draw(st.integers(1, d)) if i != axis else draw(st.integers(1, 4))
                        for i, d in enumerate(dims))
    return [arr(draw, dims), arr(draw, index_shape, "int32", 0, dims[axis] - 1)], {"axis": axis}


@spec("gather_nd")
def _(draw):
    dims = shape(draw, 1, 3)
    batch = draw(st.integers(0, len(dims) - 1))
    depth = draw(st.integers(1, len(dims) - batch))
    rest = shape(draw, 0, 2)
    indices = np.stack([arr(draw, dims[:batch] + rest, "int32", 0, d - 1)
                        for d in dims[batch:batch + depth]])
    return [arr(draw, dims), indices], {"batch_dims": batch, "index_rank": None}


@spec("scatter_elements")
def _(draw):
    dims = shape(draw, 1, 3)
    axis = draw(st.integers(0, len(dims) - 1))
    index_shape = tuple(draw(st.integers(1, d)) for d in dims)
    return [arr(draw, dims, "float32"), arr(draw, index_shape, "int64", 0, dims[axis] - 1),
            arr(draw, index_shape, "float32")], {
        "axis": axis, "reduction": draw(st.sampled_from(["update", "add", "mul", "mean",
                                                         "min", "max"]))}


@spec("one_hot")
def _(draw):
    dims = shape(draw, 0, 3)
    depth = draw(st.integers(1, 4))
    dtype = draw(st.sampled_from(FLOATS + INTS))
    return [arr(draw, dims, "int32", 0, depth), np.array(1, dtype), np.array(0, dtype)], {
        "depth": depth, "axis": draw(st.integers(-len(dims) - 1, len(dims))), "dtype": dtype}


@spec("reverse")
def _(draw):
    dims = shape(draw, 1)
    return [arr(draw, dims)], {"axis": axis_of(draw, len(dims))}


def _sorting(extra):
    def draw_spec(draw):
        dims = shape(draw, 1)
        attrs = {"axis": axis_of(draw, len(dims)), "is_ascend": draw(st.booleans()),
                 "dtype": draw(st.sampled_from(INTS))}
        attrs.update(extra(draw, dims, attrs["axis"]) if extra else {})
        return [arr(draw, dims)], attrs
    return draw_spec


SPECS["sort"] = _sorting(None)
SPECS["argsort"] = _sorting(None)
SPECS["topk"] = _sorting(lambda draw, dims, axis: {
    "k": draw(st.integers(0, dims[axis])),
    "ret_type": draw(st.sampled_from(["both", "values", "indices"]))})


def _scan(draw):
    dims = shape(draw)
    axis = draw(st.none()) if not dims else draw(st.one_of(st.none(), st.integers(
        -len(dims), len(dims) - 1)))
    return [arr(draw, dims)], {"axis": axis, "dtype": draw(st.sampled_from(["", "float64"])),
                               "exclusive": draw(st.booleans())}


SPECS["cumsum"] = SPECS["cumprod"] = _scan


@spec("unique")
def _(draw):
    return [arr(draw, (draw(st.integers(1, 6)),), draw(st.sampled_from(INTS)), 0, 3)], {
        "sorted": draw(st.booleans()), "return_counts": draw(st.booleans())}


@spec("argwhere")
def _(draw):
    return [arr(draw, shape(draw), draw(st.sampled_from(("bool", "int32"))), 0, 1)], {}


@spec("shape_of")
def _(draw):
    return [arr(draw, shape(draw))], {"dtype": draw(st.sampled_from(INTS))}


@spec("ndarray_size")
def _(draw):
    return [arr(draw, shape(draw))], {"dtype": draw(st.sampled_from(INTS))}


@spec("meshgrid")
def _(draw):
    count = draw(st.integers(1, 3))
    return [tuple(arr(draw, shape(draw, 0, 1), "float32") for _ in range(count))], {
        "indexing": draw(st.sampled_from(["ij", "xy"]))}


@spec("einsum")
def _(draw):
    i, j, k = (draw(st.integers(1, 3)) for _ in range(3))
    equation, shapes = draw(st.sampled_from([
        ("ij,jk->ik", [(i, j), (j, k)]), ("ij->ji", [(i, j)]), ("ii->i", [(i, i)]),
        ("ij,k", [(i, j), (k,)]), ("...j,jk->...k", [(i, 2, j), (j, k)]),
        ("bij,bjk->bik", [(k, i, j), (k, j, k)])]))
    return [tuple(arr(draw, s, "float32") for s in shapes)], {"equation": equation}


@spec("tile")
def _(draw):
    dims = shape(draw)
    return [arr(draw, dims)], {"reps": tuple(draw(st.integers(1, 2)) for _ in
                                             range(draw(st.integers(1, 3))))}


@spec("repeat")
def _(draw):
    dims = shape(draw, 1)
    return [arr(draw, dims)], {"repeats": draw(st.integers(1, 3)),
                               "axis": axis_of(draw, len(dims))}


@spec("full")
def _(draw):
    return [arr(draw, ())], {"shape": shape(draw), "dtype": draw(st.sampled_from(("",) + INTS))}


@spec("full_like")
def _(draw):
    data = arr(draw, shape(draw))
    return [data, arr(draw, (), data.dtype.name)], {}


@spec("zeros")
def _(draw):
    return [], {"shape": shape(draw), "dtype": draw(st.sampled_from(FLOATS + INTS))}


SPECS["ones"] = SPECS["zeros"]


@spec("arange")
def _(draw):
    start = draw(st.integers(-3, 3))
    stop = start + draw(st.integers(0, 6))
    step = draw(st.integers(1, 3))
    given = draw(st.booleans())
    attrs = {"start": start, "stop": stop, "step": step} if given else {}
    attrs["dtype"] = "float32"
    return [np.array(v, "float32") for v in (start, stop, step)], attrs


@spec("layout_transform")
def _(draw):
    n, c, h, w = (draw(st.integers(1, 3)) for _ in range(4))
    src, dst = draw(st.sampled_from([("NCHW", "NHWC"), ("NHWC", "NCHW"),
                                     ("NCHW", "NCHW2c")]))
    if src == "NHWC":
        dims = (n, h, w, c)
    else:
        dims = (n, 2 * c, h, w)
    return [arr(draw, dims)], {"src_layout": src, "dst_layout": dst}


@spec("debug_io.call")
def _(draw):
    from irlib.op import debug_io
    if "tests.op.silent" not in debug_io.list_debug_funcs():
        debug_io.register_debug_func("tests.op.silent", lambda line_info, *args: None)
    fields = tuple(arr(draw, shape(draw, 0, 3)) for _ in range(draw(st.integers(0, 2))))
    kinds = ["tensor"] * len(fields) + ["int", "str"]
    token = np.array(draw(st.integers(0, 5)), "int64")
    return [token, fields], {"func_name": "tests.op.silent", "arg_kinds": kinds,
                             "scalars": [3, "s"]}


# Collectives (irlib/op/ccl.py): this process is a one-worker run, so num_workers is 1; the
# multi-process behaviour is tested under mpiexec in tests/distributed.
@spec("ccl.allreduce")
def _(draw):
    dtype = draw(st.sampled_from(FLOATS + INTS))
    return [arr(draw, shape(draw), dtype)], {
        "op_type": draw(st.sampled_from(["sum", "prod", "min", "max", "avg"]))}


@spec("ccl.allgather")
def _(draw):
    return [arr(draw, shape(draw, 1))], {"num_workers": 1}


@spec("ccl.broadcast_from_worker0")
def _(draw):
    return [arr(draw, shape(draw))], {}


@spec("ccl.scatter_from_worker0")
def _(draw):
    dims = shape(draw, 1)
    return [arr(draw, dims)], {"num_workers": 1, "axis": axis_of(draw, len(dims))}
