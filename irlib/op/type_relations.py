"""Type relations shared by many ops: identity, broadcasting, reductions, axis handling.

A relation takes the argument types (all known) and the call's attrs and returns the result
type, or raises :class:`~irlib.errors.TypeInferenceError` with a message naming the problem.
Dims may be ints, symbolic :class:`~irlib.ir.dims.DimExpr` values or :data:`Any`; the helpers
here do their arithmetic through the dim operators so symbolic shapes flow through.
"""

from __future__ import annotations

from ..errors import TypeInferenceError
from ..ir.dims import Any, AnyDim
from ..ir.types import TensorType, TupleType

__all__ = ["expect_tensor", "identity_rel", "broadcast_shapes", "broadcast_rel",
           "broadcast_bool_rel", "normalize_axis", "normalize_axes", "reduce_axes",
           "reduce_rel", "static_int", "dims_equal", "dims_differ", "shape_product", "Any",
           "TupleType", "dim_add", "dim_mul", "named_rel"]


def named_rel(op_name: str, relation):
    """``relation`` with its errors prefixed by ``op_name`` (for relations shared by many
    ops, whose messages cannot name the op themselves)."""
    def named(arg_types, attrs):
        try:
            return relation(arg_types, attrs)
        except TypeInferenceError as error:
            message = str(error)
            if message.startswith(op_name + ":"):
                raise
            raise TypeInferenceError(f"{op_name}: {message}") from None
    if getattr(relation, "named_op", None) == op_name:
        return relation
    named.__name__ = getattr(relation, "__name__", "relation")
    named.__doc__ = relation.__doc__
    named.named_op = op_name
    return named


def expect_tensor(ty, what: str = "argument") -> TensorType:
    """``ty`` if it is a TensorType, else a TypeInferenceError naming ``what``."""
    if not isinstance(ty, TensorType):
        raise TypeInferenceError(f"{what} must be a tensor, got {ty}")
    return ty


def identity_rel(arg_types, attrs) -> TensorType:
    """Result has the type of the first (tensor) argument.

    Args:
        arg_types: the argument types.
        attrs: the call's attrs (unused).
    """
    return expect_tensor(arg_types[0], "data")


def dims_differ(a, b) -> bool:
    """True when two dims are provably different (Any and unequal symbols never are).

    Args:
        a: one dim.
        b: the other.
    """
    if isinstance(a, AnyDim) or isinstance(b, AnyDim):
        return False
    if isinstance(a, int) and isinstance(b, int):
        return a != b
    difference = a - b
    return isinstance(difference, int) and difference != 0


def dims_equal(a, b) -> bool:
    """True when the dims ``a`` and ``b`` are provably equal (or one of them is Any)."""
    if isinstance(a, AnyDim) or isinstance(b, AnyDim):
        return True
    return a == b


def dim_add(*dims):
    """Sum of dims (Any if any of them is Any)."""
    if any(isinstance(d, AnyDim) for d in dims):
        return Any
    total = 0
    for dim in dims:
        total = dim + total
    return total


def dim_mul(*dims):
    """Product of dims (Any if any of them is Any)."""
    return shape_product(dims)


def shape_product(dims):
    """Product of dims (1 for an empty shape; Any if any dim is Any)."""
    total = 1
    for dim in dims:
        if isinstance(dim, AnyDim):
            return Any
        total = dim * total
    return total


def broadcast_shapes(lhs_shape, rhs_shape) -> tuple:
    """numpy broadcasting of two shapes, with symbolic dims and Any.

    Equal dims stay; a 1 yields the other dim; Any against d yields d unless d is 1 (then Any);
    two different symbolic/static dims neither of which is 1 are an error.

    Args:
        lhs_shape: one shape.
        rhs_shape: the other.

    Raises:
        TypeInferenceError: if the shapes do not broadcast.
    """
    out = []
    ndim = max(len(lhs_shape), len(rhs_shape))
    lhs = (1,) * (ndim - len(lhs_shape)) + tuple(lhs_shape)
    rhs = (1,) * (ndim - len(rhs_shape)) + tuple(rhs_shape)
    for axis, (a, b) in enumerate(zip(lhs, rhs)):
        if a == b:
            out.append(a)
        elif isinstance(a, int) and a == 1:
            out.append(b)
        elif isinstance(b, int) and b == 1:
            out.append(a)
        elif isinstance(a, AnyDim):
            out.append(b)
        elif isinstance(b, AnyDim):
            out.append(a)
        else:
            raise TypeInferenceError(
                f"shapes {_shape_text(lhs_shape)} and {_shape_text(rhs_shape)} do not "
                f"broadcast (dimension {axis} of the aligned shapes: {a} vs {b})")
    return tuple(out)


def _shape_text(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def broadcast_rel(arg_types, attrs) -> TensorType:
    """Binary broadcasting op whose result dtype is the (common) input dtype.

    Args:
        arg_types: the two argument types.
        attrs: the call's attrs (unused).
    """
    lhs = expect_tensor(arg_types[0], "lhs")
    rhs = expect_tensor(arg_types[1], "rhs")
    if lhs.dtype != rhs.dtype:
        raise TypeInferenceError(f"operand dtypes differ: {lhs.dtype} vs {rhs.dtype}")
    return TensorType(broadcast_shapes(lhs.shape, rhs.shape), lhs.dtype)


def broadcast_bool_rel(arg_types, attrs) -> TensorType:
    """Binary broadcasting comparison: result dtype is bool.

    Arguments as :func:`broadcast_rel`.
    """
    out = broadcast_rel(arg_types, attrs)
    return TensorType(out.shape, "bool")


def normalize_axis(axis: int, ndim: int, what: str = "axis") -> int:
    """``axis`` in ``[0, ndim)``, counting negative axes from the end.

    Args:
        axis: the axis.
        ndim: the rank.
        what: what the axis belongs to, for the message.

    Raises:
        TypeInferenceError: if the axis is out of range.
    """
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise TypeInferenceError(f"{what} must be an int, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise TypeInferenceError(f"{what} {axis} is out of range for a tensor of rank {ndim}")
    return axis % ndim


def normalize_axes(axes, ndim: int, what: str = "axis") -> tuple:
    """Each axis normalised by :func:`normalize_axis`; a repeated axis is an error.

    Args:
        axes: the axes.
        ndim: the rank.
        what: what the axes belong to, for the message.
    """
    result = tuple(normalize_axis(a, ndim, what) for a in axes)
    if len(set(result)) != len(result):
        raise TypeInferenceError(f"{what} {tuple(axes)} repeats an axis")
    return result


def reduce_axes(ndim: int, axis, exclude: bool) -> tuple:
    """The axes a Relay reduction (``ReduceAttrs``) reduces, sorted.

    Args:
        ndim: rank of the input.
        axis: None (all axes), an int, or a sequence of ints.
        exclude: reduce every axis *except* those in ``axis``.
    """
    if axis is None:
        chosen = tuple(range(ndim))
        return () if exclude else chosen
    if isinstance(axis, int):
        axis = (axis,)
    chosen = normalize_axes(axis, ndim)
    if exclude:
        return tuple(a for a in range(ndim) if a not in chosen)
    return tuple(sorted(chosen))


def reduce_rel(arg_types, attrs) -> TensorType:
    """Relation of a ``ReduceAttrs`` reduction that keeps the input dtype.

    Args:
        arg_types: the data's type.
        attrs: the reduction's attrs (``axis``, ``keepdims``, ``exclude``).
    """
    data = expect_tensor(arg_types[0], "data")
    axes = reduce_axes(data.ndim, attrs["axis"], attrs["exclude"])
    if attrs["keepdims"]:
        shape = tuple(1 if i in axes else d for i, d in enumerate(data.shape))
    else:
        shape = tuple(d for i, d in enumerate(data.shape) if i not in axes)
    return TensorType(shape, data.dtype)


def static_int(dim, what: str) -> int:
    """``dim`` as an int, or a TypeInferenceError saying ``what`` must be static."""
    if isinstance(dim, int):
        return dim
    raise TypeInferenceError(f"{what} must be a static size, got {dim}")

