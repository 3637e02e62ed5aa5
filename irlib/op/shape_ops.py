"""Shape queries and multi-tensor constructions: ``shape_of``, ``ndarray_size``,
``meshgrid`` and ``einsum``.

Before/after in the text format::

    shape_of(%x)                         /* Tensor[(2, n), float32] */
    -> Tensor[(2), int32]
    einsum((%a, %b), equation="ij,jk->ik")
    -> Tensor[(2, 4), float32]
"""

from __future__ import annotations

import re

import numpy as np

from ..errors import GradientError, TypeInferenceError, UntypedError
from ..ir.expr import Tuple, TupleGetItem, TupleWrapper
from ..ir.types import TensorType, TupleType, normalize_dtype
from .registry import OpPattern, make_call, register_op
from .type_relations import broadcast_shapes, dims_differ, expect_tensor

__all__ = ["shape_of", "ndarray_size", "meshgrid", "einsum"]


def _expect_tuple(ty, what: str) -> TupleType:
    if not isinstance(ty, TupleType):
        raise TypeInferenceError(f"{what} must be a tuple of tensors, got {ty}")
    for i, field in enumerate(ty.fields):
        expect_tensor(field, f"{what}[{i}]")
    return ty


def _zero_grad(call, out_grad):
    return [make_call("zeros_like", (call.args[0],))]


# -- shape_of / ndarray_size -------------------------------------------------------------------

def _register_shape_query(name: str, attrs_key: str, description: str, result_shape, value):
    """Register ``name``: a property of its argument's shape, computed at run time, as an
    integer tensor of the call's ``dtype`` (no gradient flows through it).

    Args:
        name: the op name.
        attrs_key: Relay's attrs type key.
        description: the docs line.
        result_shape: ``data type -> result shape``.
        value: ``array -> the property`` (the numpy reference).
    """
    def relation(arg_types, attrs):
        data = expect_tensor(arg_types[0], f"{name}: data")
        return TensorType(result_shape(data), normalize_dtype(attrs["dtype"]))

    op = register_op(name, ("data",), attrs=(attrs_key, [("dtype", "int32")]), type_rel=relation,
                     pattern=OpPattern.INJECTIVE, description=description)
    op.def_impl(lambda data, dtype="int32": (np.array(value(data), normalize_dtype(dtype)),))
    op.def_grad(_zero_grad)
    return op


_SHAPE_OF = _register_shape_query("shape_of", "relay.attrs.ShapeOfAttrs",
                                  "the shape of data as a 1-D tensor",
                                  lambda data: (data.ndim,), lambda array: array.shape)
_NDARRAY_SIZE = _register_shape_query("ndarray_size", "relay.attrs.NdarraySizeAttrs",
                                      "the number of elements of data (a scalar)",
                                      lambda data: (), lambda array: array.size)


def shape_of(data, dtype="int32"):
    """The shape of ``data`` as a 1-D tensor (``relay.shape_of``).

    Args:
        data: the tensor.
        dtype: the result's integer dtype.

    Returns:
        A Call of ``shape_of``.
    """
    return make_call("shape_of", (data,), {"dtype": normalize_dtype(dtype)})


def ndarray_size(data, dtype="int32"):
    """The number of elements of ``data`` as a scalar (``relay.ndarray_size``).

    Arguments as :func:`shape_of`.

    Returns:
        A Call of ``ndarray_size``.
    """
    return make_call("ndarray_size", (data,), {"dtype": normalize_dtype(dtype)})


# -- meshgrid ----------------------------------------------------------------------------------

def _grid_axes(count: int, indexing: str) -> list:
    """The output axis along which input ``i`` varies."""
    axes = list(range(count))
    if indexing == "xy" and count >= 2:
        axes[0], axes[1] = 1, 0
    return axes


def _meshgrid_rel(arg_types, attrs):
    data = _expect_tuple(arg_types[0], "meshgrid: data")
    indexing = attrs["indexing"]
    if indexing not in ("ij", "xy"):
        raise TypeInferenceError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    sizes = []
    for i, field in enumerate(data.fields):
        if field.ndim > 1:
            raise TypeInferenceError(f"meshgrid: data[{i}] must be 0-D or 1-D, got {field}")
        sizes.append(field.shape[0] if field.ndim else 1)
    shape = [None] * len(sizes)
    for size, axis in zip(sizes, _grid_axes(len(sizes), indexing)):
        shape[axis] = size
    return TupleType([TensorType(shape, f.dtype) for f in data.fields])


_MESHGRID = register_op("meshgrid", ("data",),
                        attrs=("relay.attrs.MeshgridAttrs", [("indexing", "ij")]),
                        type_rel=_meshgrid_rel, pattern=OpPattern.INJECTIVE, tuple_output=True,
                        description="coordinate grids from 1-D tensors (indexing ij or xy)")


@_MESHGRID.def_impl
def _meshgrid_ref(data, indexing="ij"):
    grids = np.meshgrid(*[np.reshape(d, -1) for d in data], indexing=indexing)
    return tuple(np.ascontiguousarray(g) for g in grids)


@_MESHGRID.def_grad
def _meshgrid_grad(call, out_grad):
    data = call.args[0]
    count = len(call.checked_type.fields) if _has_type(call) else None
    if count is None:
        raise GradientError("the gradient of meshgrid needs the call's type")
    grads = []
    for i, axis in enumerate(_grid_axes(count, call.attrs["indexing"])):
        summed = make_call("sum", (TupleGetItem(out_grad, i),),
                           {"axis": [axis], "keepdims": False, "exclude": True})
        field = TupleGetItem(data, i)
        grads.append(make_call("reshape_like", (summed, field)))
    return [Tuple(grads)]


def _has_type(expr) -> bool:
    try:
        expr.checked_type
    except UntypedError:
        return False
    return True


def meshgrid(data, indexing="ij"):
    """Coordinate matrices from coordinate vectors (``relay.meshgrid``).

    Args:
        data: a list/tuple of 0-D or 1-D tensors (or a tuple expression).
        indexing: ``"ij"`` (matrix) or ``"xy"`` (Cartesian: the first two axes swapped).

    Returns:
        A TupleWrapper with one grid per input.
    """
    count = len(data) if isinstance(data, (list, tuple)) else None
    if isinstance(data, (list, tuple)):
        data = Tuple(list(data))
    call = make_call("meshgrid", (data,), {"indexing": indexing})
    return TupleWrapper(call, count) if count is not None else call


# -- einsum ------------------------------------------------------------------------------------

_TERM = re.compile(r"^[a-zA-Z]*(\.\.\.)?[a-zA-Z]*$")


def parse_einsum(equation: str, ranks: list, what: str = "einsum") -> tuple:
    """Split an einsum equation into per-operand subscripts and the output subscripts.

    Ellipses are expanded to upper-case-free placeholder letters (``0``-``9`` digits stand
    for broadcast dims). An implicit output (no ``->``) is every letter used once, sorted.

    Args:
        equation: e.g. ``"ij,jk->ik"`` or ``"...ij,...jk"``.
        ranks: the rank of each operand.
        what: op name for error messages.

    Returns:
        ``(inputs, output)``: lists of single-character labels.

    Raises:
        TypeInferenceError: on a malformed equation or a rank mismatch.
    """
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise TypeInferenceError(f"{what}: equation {equation!r} has {len(terms)} operands but "
                                 f"{len(ranks)} tensors were given")
    ellipsis_rank = 0
    for term, rank in zip(terms, ranks):
        if not _TERM.match(term):
            raise TypeInferenceError(f"{what}: malformed subscripts {term!r} in {equation!r}")
        letters = len(term.replace("...", ""))
        if "..." in term:
            ellipsis_rank = max(ellipsis_rank, rank - letters)
            if rank < letters:
                raise TypeInferenceError(f"{what}: operand {term!r} needs rank >= {letters}, "
                                         f"got {rank}")
        elif letters != rank:
            raise TypeInferenceError(f"{what}: operand {term!r} needs rank {letters}, got "
                                     f"{rank}")
    digits = "0123456789"[:ellipsis_rank]

    def expand(term, rank):
        if "..." not in term:
            return list(term)
        head, tail = term.split("...")
        own = rank - len(head) - len(tail)
        return list(head) + list(digits[ellipsis_rank - own:]) + list(tail)

    inputs = [expand(t, r) for t, r in zip(terms, ranks)]
    if arrow:
        if not _TERM.match(rhs):
            raise TypeInferenceError(f"{what}: malformed output subscripts {rhs!r}")
        output = expand(rhs, len(rhs.replace("...", "")) + ellipsis_rank)
    else:
        counts = {}
        for labels in inputs:
            for label in labels:
                counts[label] = counts.get(label, 0) + 1
        output = list(digits) + sorted(l for l, c in counts.items()
                                       if c == 1 and l not in digits)
    used = {l for labels in inputs for l in labels}
    for label in output:
        if label not in used:
            raise TypeInferenceError(f"{what}: output subscript {label!r} does not appear in "
                                     f"the inputs of {equation!r}")
    return inputs, output


def _einsum_rel(arg_types, attrs):
    data = _expect_tuple(arg_types[0], "einsum: data")
    inputs, output = parse_einsum(attrs["equation"], [f.ndim for f in data.fields])
    dtypes = {f.dtype for f in data.fields}
    if len(dtypes) > 1:
        raise TypeInferenceError(f"einsum: operand dtypes differ: {sorted(dtypes)}")
    sizes: dict = {}
    for index, (labels, field) in enumerate(zip(inputs, data.fields)):
        for label, dim in zip(labels, field.shape):
            if label not in sizes:
                sizes[label] = dim
                continue
            try:
                (sizes[label],) = broadcast_shapes((sizes[label],), (dim,))
            except TypeInferenceError:
                raise TypeInferenceError(f"einsum: subscript {label!r} has size {sizes[label]} "
                                         f"and {dim} (operand {index})") from None
            if label.isalpha() and dims_differ(sizes[label], dim) and dim != 1:
                raise TypeInferenceError(f"einsum: subscript {label!r} sizes differ")
    return TensorType([sizes[l] for l in output], data.fields[0].dtype)


_EINSUM = register_op("einsum", ("data",), attrs=("relay.attrs.EinsumAttrs",
                                                 [("equation", "")]),
                      type_rel=_einsum_rel, pattern=OpPattern.INJECTIVE,
                      description="Einstein summation over a tuple of tensors")


@_EINSUM.def_impl
def _einsum_ref(data, equation=""):
    out = np.einsum(equation, *data)
    return (np.asarray(out).astype(data[0].dtype, copy=False),)


@_EINSUM.def_grad
def _einsum_grad(call, out_grad):
    data = call.args[0]
    if not _has_type(data):
        raise GradientError("the gradient of einsum needs the argument types")
    fields = data.checked_type.fields
    inputs, output = parse_einsum(call.attrs["equation"], [f.ndim for f in fields])
    grads = []
    for k, labels in enumerate(inputs):
        if len(set(labels)) != len(labels) or any(l.isdigit() for l in labels):
            raise GradientError("the gradient of einsum with repeated subscripts or "
                                      "ellipses is not implemented")
        available = set(output).union(*[set(inputs[j]) for j in range(len(inputs)) if j != k])
        missing = [l for l in labels if l not in available]
        if missing:
            raise GradientError("the gradient of einsum with an operand-only summed "
                                      "subscript is not implemented")
        terms = [output] + [inputs[j] for j in range(len(inputs)) if j != k]
        operands = [out_grad] + [TupleGetItem(data, j) for j in range(len(inputs)) if j != k]
        equation = ",".join("".join(t) for t in terms) + "->" + "".join(labels)
        grad = einsum(operands, equation)
        # Size-1 broadcast dims of this operand collapse back.
        grads.append(make_call("collapse_sum_like", (grad, TupleGetItem(data, k))))
    return [Tuple(grads)]


def einsum(data, equation):
    """Einstein summation (``relay.einsum``).

    Args:
        data: a list/tuple of tensors (or a tuple expression).
        equation: numpy-style subscripts, e.g. ``"bij,bjk->bik"``; ``...`` broadcasts.

    Returns:
        A Call of ``einsum``.
    """
    if isinstance(data, (list, tuple)):
        data = Tuple(list(data))
    return make_call("einsum", (data,), {"equation": equation})
