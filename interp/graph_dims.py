"""Symbolic dims in the graph executor: their JSON spelling, run-time binding, evaluation.

A graph built from a function with symbolic dims (``Tensor[(1, n), int32]``) stores each
symbolic dim of an entry's shape in the graph JSON as its text-format string (``"n"``,
``"c + n"``, ``"floordiv(n, 2)"``); static dims stay ints. At run time:

* :class:`SizeBinder` binds the size variables from the inputs' shapes (the first plain
  ``n`` met, inputs in order and dims left to right, binds; every later occurrence, compound
  dims and static dims are checked) and from the scalar int inputs listed in the graph's
  ``size_params`` (each binds the variable of its own name), raising
  :class:`~interp.graph_runtime.GraphInputError` naming the input, the dim and both sizes.
  The rule is :func:`irlib.ir.dim_binding.bind_size_vars`'s; this is its fast form for one
  fixed graph (a few list lookups per call).
* :class:`ShapeEvaluator` computes every entry's shape and byte size for a binding in one
  generated Python function (``irlib.ir.dims.substitute_dim`` per dim would cost ~10 µs each;
  the generated code costs well under 1 µs per entry, and is checked against it in the
  tests).
"""

from __future__ import annotations

import ast

import numpy as np

from irlib.errors import IRError
from irlib.ir.dims import DimExpr, floordiv, format_dim, size_var
from jitkernels.codegen.dim_source import (SIZE_PREFIX, dim_source, dims_free_vars,
                                           function_size_names)

__all__ = ["dim_text", "parse_dim", "is_symbolic", "SizeBinder", "ShapeEvaluator",
           "function_size_names", "dims_free_vars"]

_MAX_DIM_TEXT = 2000


def dim_text(dim):
    """A dim as the graph JSON stores it: an int, or the text-format string of a DimExpr."""
    return format_dim(dim) if isinstance(dim, DimExpr) else int(dim)


def is_symbolic(shape) -> bool:
    """True if a dim of ``shape`` is symbolic (a DimExpr, or its JSON string)."""
    return any(isinstance(d, (DimExpr, str)) for d in shape)


def parse_dim(value, where: str = "a shape"):
    """A dim from the graph JSON: an int, or a string such as ``"2*n + 1"`` /
    ``"floordiv(n, 2)"`` parsed into a :class:`DimExpr`.

    Only integer literals, size-variable names, ``+``, ``-``, ``*``, ``//`` and
    ``floordiv(a, b)`` are accepted (the string is never executed).

    Raises:
        IRError: for anything else, naming ``where``.
    """
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    if not isinstance(value, str) or len(value) > _MAX_DIM_TEXT:
        raise IRError(f"malformed graph JSON: {where}: a dim must be an int or a size "
                      f"expression string, got {value!r}")
    try:
        tree = ast.parse(value, mode="eval")
        return _dim_of(tree.body)
    except (SyntaxError, ValueError, TypeError, ZeroDivisionError) as error:
        raise IRError(f"malformed graph JSON: {where}: bad dim {value!r} ({error})") from None


def _dim_of(node):
    """The dim an expression AST denotes (dims are short: the recursion is shallow)."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name):
        return size_var(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return 0 - _dim_of(node.operand)
    if isinstance(node, ast.BinOp):
        left, right = _dim_of(node.left), _dim_of(node.right)
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Mult):
            return left * right
        if isinstance(node.op, ast.FloorDiv):
            return floordiv(left, right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id == "floordiv" and len(node.args) == 2 and not node.keywords:
        return floordiv(_dim_of(node.args[0]), _dim_of(node.args[1]))
    raise ValueError(f"unsupported syntax {ast.dump(node)[:60]}")


class SizeBinder:
    """Binds a graph's size variables from its inputs, checking every occurrence.

    Args:
        input_names: the graph inputs' names, in order.
        input_dims: each input's dims (ints and DimExprs).
        size_params: ``{input position: variable name}`` of the scalar int inputs whose
            value binds a size variable.
        names: the size variables the graph needs, sorted (the order of :meth:`bind`'s
            result).

    Raises:
        IRError: if a variable in ``names`` is bound by no input.
    """

    def __init__(self, input_names, input_dims, size_params: dict, names):
        self.names = tuple(names)
        self.input_names = list(input_names)
        self.symbolic_inputs = [i for i, dims in enumerate(input_dims) if is_symbolic(dims)]
        self.size_params = dict(size_params)
        plan, bound = [], set()
        compound = []
        for index, dims in enumerate(input_dims):
            if index in self.size_params:
                var = self.size_params[index]
                plan.append(("value", index, None, var, var in bound))
                bound.add(var)
            if index not in self.symbolic_inputs:
                continue
            for axis, dim in enumerate(dims):
                if isinstance(dim, DimExpr) and dim.name is not None:
                    plan.append(("dim", index, axis, dim.name, dim.name in bound))
                    bound.add(dim.name)
                elif isinstance(dim, DimExpr):
                    compound.append((index, axis, dim))
        missing = set(self.names) - bound
        if missing:
            raise IRError(f"size variable(s) {', '.join(sorted(missing))} appear in the "
                          f"graph but no input binds them (a plain dim of an input's shape "
                          f"or a size_params input of that name does)")
        self.plan = plan
        self.compound = [(index, axis, dim, eval(_lambda_source(dim, self.names)))
                         for index, axis, dim in compound]
        self.input_dims = [tuple(dims) for dims in input_dims]

    def bind(self, arrays) -> tuple:
        """The size variables' values (in :attr:`names` order) for these input arrays.

        Args:
            arrays: the current array of every input (indexed like ``input_names``).

        Raises:
            GraphInputError: a rank, a static dim, a repeated variable or a compound dim
                disagrees, or a size parameter is not one integer.
        """
        from .graph_runtime import GraphInputError
        values: dict = {}
        where: dict = {}
        for kind, index, axis, var, check in self.plan:
            array = arrays[index]
            if array is None:
                raise GraphInputError(f"input {self.input_names[index]!r} was not set; its "
                                      f"shape or value gives size variable {var}")
            if kind == "value":
                size = _scalar_int(array, self.input_names[index])
                source = f"the value of input {self.input_names[index]!r}"
            else:
                size = array.shape[axis]
                source = f"dim {axis} of input {self.input_names[index]!r}"
            if not check:
                values[var] = size
                where[var] = source
            elif values[var] != size:
                raise GraphInputError(
                    f"input {self.input_names[index]!r}: {source.split(' of ')[0]} is size "
                    f"variable {var}, bound to {values[var]} by {where[var]}, but got "
                    f"{size} (shape {tuple(array.shape)})")
        result = tuple(values[name] for name in self.names)
        for index, axis, dim, evaluate in self.compound:
            expected = evaluate(*result)
            actual = arrays[index].shape[axis]
            if expected != actual:
                bound = ", ".join(f"{v}={values[v]}" for v in sorted(dim.free_vars()))
                raise GraphInputError(
                    f"input {self.input_names[index]!r}: dim {axis} is {format_dim(dim)} = "
                    f"{expected} (with {bound}), got {actual} (shape "
                    f"{tuple(arrays[index].shape)})")
        return result


def _scalar_int(array, name: str) -> int:
    from .graph_runtime import GraphInputError
    if array.size != 1 or array.dtype.kind not in "iu":
        raise GraphInputError(f"size input {name!r} must hold one integer, got an array of "
                              f"shape {tuple(array.shape)} and dtype {array.dtype}")
    return int(array.reshape(-1)[0])


def _lambda_source(dim, names) -> str:
    args = ", ".join(SIZE_PREFIX + name for name in names)
    return f"lambda {args}: {dim_source(dim)}"


class ShapeEvaluator:
    """Every entry's shape and byte size for a binding, by one generated function.

    Args:
        entry_dims: each entry's dims (ints and DimExprs).
        itemsizes: each entry's element size in bytes.
        names: the size variables, in the order :meth:`__call__` takes their values.
    """

    def __init__(self, entry_dims, itemsizes, names):
        self.names = tuple(names)
        lines = [f"def evaluate({', '.join(SIZE_PREFIX + n for n in self.names)}):"]
        compound = sorted({d for dims in entry_dims for d in dims
                           if isinstance(d, DimExpr) and d.name is None}, key=format_dim)
        self.compound = compound
        for dim in compound:             # e.g. c - 1 with c = 0: no shape to run with
            lines.append(f"    if {dim_source(dim)} < 0:")
            lines.append(f"        return None")
        shape_items, byte_items = [], []
        for entry, (dims, itemsize) in enumerate(zip(entry_dims, itemsizes)):
            texts = [dim_source(d) for d in dims]
            lines.append(f"    s{entry} = ({''.join(t + ', ' for t in texts)})")
            shape_items.append(f"s{entry}")
            byte_items.append(" * ".join([str(int(itemsize))] +
                                         [f"s{entry}[{k}]" for k in range(len(dims))
                                          if not isinstance(dims[k], int)]
                                         + [str(_static_product(dims))]))
        lines.append(f"    return ({''.join(s + ', ' for s in shape_items)}), "
                     f"({''.join(b + ', ' for b in byte_items)})")
        namespace: dict = {}
        exec(compile("\n".join(lines) + "\n", "<irlib graph shapes>", "exec"), namespace)
        self._evaluate = namespace["evaluate"]

    def __call__(self, *values) -> tuple:
        """``(shapes, nbytes)``: a tuple of int shapes and of byte sizes, one per entry.

        Raises:
            GraphInputError: if a dim of some entry is negative for these values.
        """
        result = self._evaluate(*values)
        if result is None:
            from .graph_runtime import GraphInputError
            bindings = dict(zip(self.names, values))
            bad = [format_dim(d) for d in self.compound if d.substitute(bindings) < 0]
            raise GraphInputError(
                f"size variables {', '.join(f'{k}={v}' for k, v in bindings.items())} give "
                f"a negative dim {bad[0]} in the graph")
        return result


def _static_product(dims) -> int:
    product = 1
    for dim in dims:
        if isinstance(dim, int):
            product *= dim
    return product
