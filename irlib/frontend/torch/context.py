"""The conversion context: typed expression building for the torch converters.

Every value a converter builds gets its type recorded at once (each op's type relation runs
on its already-typed arguments), so converters can ask for the shape and dtype of anything.
Calls whose arguments are all constants are folded through the ops' numpy references.
Weights go through :meth:`Context.weight`, which binds them as constants or, with
``keep_params_as_input``, as trailing parameters of ``main``.
"""

from __future__ import annotations

import re

import numpy as np

from ...ir import expr as E
from ...ir.dims import DimExpr
from ...ir.types import TensorType, TupleType
from ...ndarray import NDArray
from ...op import registry as op_registry
from .._type_table import TypeTable
from . import dtypes
from .errors import TorchConversionError

_NO_FOLD = frozenset({"nn.dropout"})


def _static(ty) -> bool:
    """True when every dim of ``ty`` (a tensor or tuple type) is a known integer."""
    if isinstance(ty, TupleType):
        return all(_static(field) for field in ty.fields)
    return isinstance(ty, TensorType) and all(isinstance(d, (int, np.integer))
                                               for d in ty.shape)


def sanitize(name: str) -> str:
    """``name`` made a valid irlib identifier (letters, digits, ``_`` and ``.``)."""
    cleaned = re.sub(r"[^0-9A-Za-z_.]", "_", name) or "_"
    if cleaned[0].isdigit() or cleaned[0] == ".":
        cleaned = "v" + cleaned
    return cleaned


def is_dim(value) -> bool:
    """True for a Python int (not a bool) or a symbolic size expression.

    Args:
        value: the value.
    """
    return (isinstance(value, (int, np.integer)) and not isinstance(value, bool)) or \
        isinstance(value, DimExpr)


class Context(TypeTable):
    """Typed builder shared by the converters of one import.

    Args:
        keep_params_as_input: bind weights as parameters (True) or constants (False).

    Attributes:
        weight_vars: the weight parameters in first-use order (keep mode).
        weight_values: their values (``NDArray``), in the same order.
        module_path: the qualified name of the module a ``call_module`` converter converts
            (its weights are named after it).
        node_name: the name of the node being converted (for messages).
    """

    conversion_error = TorchConversionError

    def __init__(self, keep_params_as_input: bool = False):
        super().__init__()
        self.keep_params_as_input = keep_params_as_input
        self.weight_vars: list = []
        self.weight_values: list = []
        self._weights: dict = {}
        self._var_names: set = set()
        self.size_sources: dict = {}
        self.module_path = ""
        self.node_name = ""

    # -- values --------------------------------------------------------------------------
    def const(self, value, dtype=None):
        """A typed constant (``value`` a numpy array, a torch tensor or a Python scalar).

        Args:
            value: the value.
            dtype: the irlib dtype to convert to (default: the value's own).
        """
        if hasattr(value, "detach") and hasattr(value, "numpy"):
            value = value.detach().cpu().numpy()
        array = np.asarray(value, dtype=dtype)
        if not array.flags.c_contiguous:  # (ascontiguousarray would make a scalar 1-D)
            array = array.copy(order="C")
        return self.set_type(E.Constant(NDArray(array)), TensorType(array.shape,
                                                                     str(array.dtype)))

    def const_value(self, expr):
        """The numpy value of ``expr`` when it is a constant, else None."""
        return expr.data.numpy() if isinstance(expr, E.Constant) else None

    def is_tensor(self, value) -> bool:
        """True when ``value`` is an irlib expression (a converted tensor or tuple)."""
        return isinstance(value, E.Expr)

    def weight(self, name: str, tensor):
        """The expression of weight ``name`` (a torch tensor): a constant, or a parameter of
        ``main`` when weights are kept as inputs. One weight object gives one expression."""
        key = id(tensor)
        if key in self._weights:
            return self._weights[key][1]
        array = tensor.detach().cpu().numpy().copy(order="C")
        if self.keep_params_as_input:
            var = self.new_var(name, TensorType(array.shape, str(array.dtype)))
            self.weight_vars.append(var)
            self.weight_values.append(NDArray(array))
            expr = var
        else:
            expr = self.const(array)
        self._weights[key] = (tensor, expr)  # keeps the tensor alive: ids stay unique
        return expr

    def new_var(self, name: str, ty):
        """A fresh typed variable whose name is ``name`` sanitized (and made unique).

        Args:
            name: the name wanted.
            ty: the variable's type.
        """
        base = sanitize(name)
        unique, count = base, 1
        while unique in self._var_names:
            unique, count = f"{base}_{count}", count + 1
        self._var_names.add(unique)
        return E.Var(unique, ty)

    def record_sizes(self, var) -> None:
        """Remember which axis of input ``var`` carries each of its size variables, so that
        :meth:`dim_value` can compute the variable's value at run time."""
        for axis, dim in enumerate(var.type_annotation.shape):
            if isinstance(dim, DimExpr) and len(dim.terms) == 1 and dim.terms[0][1] == 1 \
                    and len(dim.terms[0][0]) == 1 and isinstance(dim.terms[0][0][0], str):
                self.size_sources.setdefault(dim.terms[0][0][0], (var, axis))

    def dim_value(self, dim, dtype: str = "int64"):
        """A rank-0 expression of ``dtype`` holding the value of size ``dim``: a constant for
        an int, else ``shape_of``/``take`` of the inputs carrying its size variables combined
        with scalar arithmetic.

        Raises:
            TorchOpNotImplemented: when a variable is carried by no input, or ``dim`` has a
                floor division.
        """
        from .errors import TorchOpNotImplemented
        if not isinstance(dim, DimExpr):
            return self.scalar(int(dim), dtype)
        total = None
        for monomial, coeff in dim.terms:
            term = self.scalar(coeff, "int64")
            for atom in monomial:
                if not isinstance(atom, str) or atom not in self.size_sources:
                    raise TorchOpNotImplemented(f"the value of size {dim} is not available "
                                                "(no input carries it)")
                var, axis = self.size_sources[atom]
                shape = self.emit("shape_of", var, dtype="int64")
                size = self.emit("take", shape, self.scalar(axis, "int64"))
                term = self.emit("multiply", term, size)
            total = term if total is None else self.emit("add", total, term)
        return self.cast(total, dtype)

    def emit(self, op_name: str, *args, **attrs):
        """A typed call of op ``op_name`` on ``args`` (folded when all are constants)."""
        op_def = op_registry.get_def(op_name)
        call = E.Call(op_def.op, tuple(args), op_def.make_attrs(attrs or None))
        ty = op_def.type_rel([self.type_of(arg) for arg in args], call.attrs)
        self.set_type(call, ty)
        if op_name not in _NO_FOLD and op_def.impl is not None and args and \
                all(isinstance(arg, E.Constant) for arg in args) and _static(ty):
            result = op_registry.evaluate(op_name, [a.data.numpy() for a in args], call.attrs)
            if isinstance(result, tuple):
                return self.make_tuple([self.const(part) for part in result])
            return self.const(result)
        return call

    def emit_tuple_op(self, op_name: str, fields, **attrs):
        """A call of an op taking one tuple argument (``concatenate``, ``stack``, ...).

        Args:
            op_name: the op.
            fields: the expressions of the tuple argument.
            attrs: the op's attributes.
        """
        return self.emit(op_name, self.make_tuple(list(fields)), **attrs)

    def tuple_get(self, tup, index: int):
        """Field ``index`` of tuple ``tup``."""
        if isinstance(tup, E.Tuple):
            return tup.fields[index]
        return self.set_type(E.TupleGetItem(tup, index), self.type_of(tup).fields[index])

    def make_tuple(self, fields):
        """A typed tuple of ``fields``."""
        node = E.Tuple(tuple(fields))
        return self.set_type(node, TupleType([self.type_of(f) for f in fields]))

    # -- scalars and promotion ----------------------------------------------------------
    def scalar(self, value, dtype: str):
        """A rank-0 constant of ``dtype``.

        Args:
            value: the Python number.
            dtype: its dtype.
        """
        return self.const(np.asarray(value, dtype=dtype))

    def cast(self, expr, dtype: str):
        """``expr`` cast to ``dtype`` (unchanged when it already has it)."""
        return expr if self.dtype(expr) == dtype else self.emit("cast", expr, dtype=dtype)

    def binary_operands(self, lhs, rhs):
        """Both operands of a torch binary op as expressions of their common dtype.

        Python scalars become constants; tensors of different dtypes are promoted like
        torch does (a rank-0 tensor does not raise the dtype of a ranked one of the same
        category).

        Args:
            lhs: the left operand (an expression or a Python number).
            rhs: the right operand.
        """
        if self.is_tensor(lhs) and self.is_tensor(rhs):
            da, db = self.dtype(lhs), self.dtype(rhs)
            if da != db:
                ra, rb = self.ndim(lhs), self.ndim(rhs)
                if ra == 0 and rb > 0 and dtypes.category(da) <= dtypes.category(db):
                    common = db
                elif rb == 0 and ra > 0 and dtypes.category(db) <= dtypes.category(da):
                    common = da
                else:
                    common = dtypes.promote(da, db)
                lhs, rhs = self.cast(lhs, common), self.cast(rhs, common)
            return lhs, rhs
        if self.is_tensor(lhs):
            common = dtypes.scalar_result(self.dtype(lhs), rhs)
            return self.cast(lhs, common), self.scalar(rhs, common)
        common = dtypes.scalar_result(self.dtype(rhs), lhs)
        return self.scalar(lhs, common), self.cast(rhs, common)

    def tensor(self, value, like=None):
        """``value`` as an expression: tensors unchanged, Python scalars as constants (of the
        dtype ``like`` gives them, via torch's scalar rule)."""
        if self.is_tensor(value):
            return value
        if like is not None:
            return self.scalar(value, dtypes.scalar_result(self.dtype(like), value))
        if isinstance(value, bool):
            return self.scalar(value, "bool")
        return self.scalar(value, "float32" if isinstance(value, float) else "int64")
