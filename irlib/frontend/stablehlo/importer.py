"""The StableHLO walk: an MLIR module -> ``IRModule`` with ``main``.

:func:`import_module` first walks every operation of the module (iteratively, regions
included) and refuses it, listing all of them with their locations, when some operation has no
converter or a variant its converter's ``check`` refuses. It then converts the public
function ``main`` (or the only public function): each MLIR SSA value maps to an irlib
expression in a :class:`Scope`; ``func.call`` of a private function converts the callee's body
in a fresh scope with its arguments bound (the call is inlined), and the regions of
``while``/``case``/``if``/``reduce``/``sort``/``scatter`` are converted by their converters
through :meth:`Context.convert_region`.

Types are tracked as the program is built by calling each op's type relation, so converters
can ask for the rank, shape and dtype of any value; a call whose arguments are all constants
is folded through the ops' numpy references. Every converted result is checked against the
MLIR result type (dtype and static dims). Integer scalars and vectors computed from tensor
shapes (``get_dimension_size`` under ``jax.export`` symbolic shapes) are also tracked as
symbolic dims (:meth:`Context.sym_dims`), so ``dynamic_broadcast_in_dim``/``dynamic_reshape``
get static attributes in the size variables.
"""

from __future__ import annotations

import numpy as np

from ...errors import IRError
from ...ir import expr as E
from ...ir.dims import Any, AnyDim, DimExpr, size_var
from ...ir.module import IRModule
from ...ir.types import TensorType, TupleType
from ...ndarray import NDArray
from ...op import frontend as _frontend_ops  # noqa: F401  (registers onnx.bitcast)
from ...op import registry as op_registry
from .._type_table import TypeTable
from . import mlir, registry
from .errors import StableHLOConversionError, StableHLOOpNotImplemented

# ops whose result must not be folded into a constant when it is this large (a broadcast of a
# scalar stays a small constant and a broadcast call).
_FOLD_LIMIT = 1 << 16
# operations that end a block (their operands are the block's results).
_TERMINATORS = frozenset({"func.return", "stablehlo.return"})
# operations that are structure, not computation.
_STRUCTURE = frozenset({"func.func", "builtin.module"})


class Scope:
    """MLIR value -> irlib expression, with a parent for enclosing regions.

    Args:
        parent: the enclosing scope (a region sees the values defined around it), or None.
    """

    def __init__(self, parent: "Scope | None" = None):
        self.parent = parent
        self.env: dict = {}

    def bind(self, value, expr) -> None:
        """Bind MLIR value ``value`` to ``expr``."""
        self.env[value] = expr

    def lookup(self, value):
        """The expression bound to ``value`` here or in an enclosing scope."""
        scope = self
        while scope is not None:
            found = scope.env.get(value)
            if found is not None:
                return found
            scope = scope.parent
        raise StableHLOConversionError(f"value {value} is used before it is defined")


class Context(TypeTable):
    """The conversion state and the helpers converters use.

    Args:
        functions: ``{symbol name: func.func operation}`` of the module.
    """

    conversion_error = StableHLOConversionError

    def __init__(self, functions: dict):
        super().__init__()
        self.functions = functions
        self.sym: dict = {}
        self.offsets: dict = {}
        self.iotas: dict = {}
        #: > 0 while an elementwise body is applied to whole tensors: results are checked
        #: against the MLIR types by dtype only.
        self.lifted = 0
        #: the largest rank among the tensors a lifted body is applied to.
        self.lifted_rank = 0
        self.scope = Scope()
        self._inlining: list = []

    # -- building ------------------------------------------------------------------------
    def const(self, value, dtype=None):
        """A typed constant (``value`` a numpy array or a Python scalar).

        Args:
            value: the value.
            dtype: the irlib dtype to convert to (default: the value's own).
        """
        array = np.asarray(value, dtype=dtype)
        node = E.Constant(NDArray(np.array(array, order="C")))
        return self.set_type(node, TensorType(array.shape, str(array.dtype)))

    def const_value(self, expr):
        """The numpy value of ``expr`` when it is a constant, else None."""
        if isinstance(expr, E.Constant):
            return expr.data.numpy()
        return None

    def emit(self, op_name: str, *args, **attrs):
        """A call of irlib op ``op_name`` on ``args`` with ``attrs``, typed, and folded into a
        constant when every argument is one (unless the result is large)."""
        op_def = op_registry.get_def(op_name)
        call = E.Call(op_def.op, tuple(args), op_def.make_attrs(attrs or None))
        ty = op_def.type_rel([self.type_of(arg) for arg in args], call.attrs)
        self.set_type(call, ty)
        if op_def.impl is not None and args and all(_constant_arg(a) for a in args) and \
                isinstance(ty, TensorType) and _small(ty):
            inputs = [tuple(f.data.numpy() for f in a.fields) if isinstance(a, E.Tuple)
                      else a.data.numpy() for a in args]
            result = op_registry.evaluate(op_name, inputs, call.attrs)
            if not isinstance(result, tuple):
                return self.const(result)
        return call

    def tuple_get(self, tup, index: int):
        """Field ``index`` of tuple ``tup`` (folded when ``tup`` is a literal tuple)."""
        if isinstance(tup, E.Tuple):
            return tup.fields[index]
        return self.set_type(E.TupleGetItem(tup, index), self.type_of(tup).fields[index])

    def make_tuple(self, fields):
        """A typed tuple of ``fields``."""
        fields = tuple(fields)
        return self.set_type(E.Tuple(fields), TupleType([self.type_of(f) for f in fields]))

    def cast(self, expr, dtype: str):
        """``expr`` cast to ``dtype`` (unchanged when it already has it)."""
        return expr if self.dtype(expr) == dtype else self.emit("cast", expr, dtype=dtype)

    def scalar(self, value, dtype: str):
        """A 0-d constant of ``dtype``.

        Args:
            value: the Python number.
            dtype: its dtype.
        """
        return self.const(np.array(value, dtype=_numpy_dtype(dtype)))

    def scalar_like(self, value, expr):
        """``value`` as a constant of ``expr``'s dtype and shape ``(1,) * rank``: it broadcasts
        like a scalar. Used for non-finite values, which the graph executor's code generator
        cannot inline as 0-d literals (``np.float32(inf)`` is not valid source)."""
        shape = (1,) * self.ndim(expr)
        return self.const(np.full(shape, value, dtype=_numpy_dtype(self.dtype(expr))))

    # -- symbolic integer values (shape computations) -------------------------------------
    def sym_dims(self, expr):
        """The elements of integer tensor ``expr`` (row-major) as dims (ints or
        size-variable expressions) when known at import time, else None."""
        if expr in self.sym:
            return self.sym[expr]
        value = self.const_value(expr)
        if value is not None and value.dtype.kind in "iu" and value.size <= 64:
            return [int(v) for v in value.reshape(-1)]  # row-major, like set_sym's lists
        return None

    def set_sym(self, expr, dims):
        """Record that integer tensor ``expr`` holds the dims ``dims``; returns ``expr``."""
        if dims is not None and not isinstance(expr, E.Constant):
            self.sym[expr] = list(dims)
        return expr

    # -- regions and functions ------------------------------------------------------------
    def convert_region(self, region, args) -> list:
        """Convert the single block of ``region`` with its arguments bound to ``args`` (in a
        child scope); returns the expressions its terminator returns."""
        blocks = list(region.blocks)
        if len(blocks) != 1:
            raise StableHLOOpNotImplemented(f"regions with {len(blocks)} blocks are not "
                                            "supported", [])
        return self.convert_block(blocks[0], args)

    def convert_block(self, block, args) -> list:
        """Convert ``block`` with its arguments bound to ``args``; returns what it returns."""
        outer = self.scope
        self.scope = Scope(outer)
        try:
            block_args = list(block.arguments)
            if len(block_args) != len(args):
                raise StableHLOConversionError(
                    f"a block with {len(block_args)} arguments given {len(args)} values")
            for value, expr in zip(block_args, args):
                self.scope.bind(value, expr)
            for operation in block.operations:
                op = operation.operation
                if op.name in _TERMINATORS:
                    return [self.scope.lookup(v) for v in op.operands]
                self.convert_op(op)
            raise StableHLOConversionError("a block ends without a return")
        finally:
            self.scope = outer

    def call_function(self, name: str, args) -> list:
        """The results of private function ``name`` on ``args`` (its body converted inline).

        Raises:
            StableHLOConversionError: for an unknown or recursive function.
        """
        function = self.functions.get(name)
        if function is None:
            raise StableHLOConversionError(f"call of unknown function @{name}")
        if name in self._inlining:
            raise StableHLOOpNotImplemented(f"recursive call of @{name}", [])
        self._inlining.append(name)
        try:
            return self.convert_region(function.regions[0], list(args))
        finally:
            self._inlining.pop()

    def convert_op(self, op) -> None:
        """Convert one operation and bind its results.

        Raises:
            StableHLOOpNotImplemented: for an unsupported variant (names the op and location).
            StableHLOConversionError: when conversion fails (names the op and location).
        """
        entry = registry.lookup(op.name)
        where = f"{op.name} at {mlir.location(op)}"
        if entry is None:
            raise StableHLOOpNotImplemented(f"{where}: no converter", [(op.name,
                                                                         mlir.location(op))])
        inputs = [self.scope.lookup(v) for v in op.operands]
        try:
            result = entry.function(self, op, inputs, mlir.attributes(op))
            results = list(result) if isinstance(result, (list, tuple)) else [result]
            if len(results) != len(op.results):
                raise StableHLOConversionError(
                    f"converter gave {len(results)} results for {len(op.results)}")
            for value, expr in zip(op.results, results):
                self._check_result(value.type, expr)
        except StableHLOOpNotImplemented as error:
            raise StableHLOOpNotImplemented(f"{where}: {error}",
                                            error.ops or [(op.name, mlir.location(op))]) \
                from error
        except StableHLOConversionError as error:
            raise StableHLOConversionError(f"{where}: {error}") from error
        except (IRError, ValueError, TypeError, IndexError, KeyError, ArithmeticError) as error:
            raise StableHLOConversionError(f"{where}: {type(error).__name__}: {error}") \
                from error
        for value, expr in zip(op.results, results):
            self.scope.bind(value, expr)

    def _check_result(self, mlir_type, expr) -> None:
        if mlir.is_tuple_type(mlir_type):
            return
        shape, dtype = mlir.tensor_info(mlir_type)
        ty = self.type_of(expr)
        if self.lifted and isinstance(ty, TensorType) and ty.dtype == dtype:
            return
        if not isinstance(ty, TensorType) or ty.dtype != dtype or len(ty.shape) != len(shape) \
                or any(s is not None and _is_int(d) and int(d) != s
                       for s, d in zip(shape, ty.shape)):
            raise StableHLOConversionError(
                f"internal: the result has type {ty}, the module says {mlir_type}")

    def result_info(self, op, index: int = 0):
        """``(shape, dtype)`` of result ``index`` of ``op`` as the module types it (None for a
        ``?`` dim)."""
        return mlir.tensor_info(op.results[index].type)


def _is_int(dim) -> bool:
    return isinstance(dim, (int, np.integer)) and not isinstance(dim, bool)


def _numpy_dtype(dtype: str):
    if dtype == "bfloat16":
        import ml_dtypes
        return ml_dtypes.bfloat16
    return np.dtype(dtype)


def _constant_arg(arg) -> bool:
    if isinstance(arg, E.Tuple):
        return all(isinstance(f, E.Constant) for f in arg.fields)
    return isinstance(arg, E.Constant)


def _small(ty: TensorType) -> bool:
    size = 1
    for dim in ty.shape:
        if not _is_int(dim):
            return False
        size *= int(dim)
    return size <= _FOLD_LIMIT


# -- the whole module ------------------------------------------------------------------------
def iter_operations(module):
    """Every operation of ``module`` (regions included), without recursion."""
    stack = [module.operation]
    while stack:
        op = stack.pop()
        yield op
        for region in reversed(list(op.regions)):
            for block in reversed(list(region.blocks)):
                stack.extend(o.operation for o in reversed(list(block.operations)))


def find_unsupported(module) -> list:
    """``[(op_name, location)]`` of every operation without a converter or whose variant
    its converter's ``check`` refuses (the reason appended to the name).

    Args:
        module: the parsed MLIR module.
    """
    missing = []
    for op in iter_operations(module):
        name = op.name
        if name in _STRUCTURE or name in _TERMINATORS:
            continue
        entry = registry.lookup(name)
        if entry is None:
            missing.append((name, mlir.location(op)))
        elif entry.check is not None:
            try:
                reason = entry.check(op)
            except (IRError, ValueError, TypeError, IndexError, KeyError) as error:
                raise StableHLOConversionError(
                    f"{name} at {mlir.location(op)}: malformed operation: "
                    f"{type(error).__name__}: {error}") from error
            if reason:
                missing.append((f"{name} ({reason})", mlir.location(op)))
    return missing


def _functions(module) -> dict:
    functions = {}
    for operation in module.body.operations:
        op = operation.operation
        if op.name == "func.func":
            attrs = mlir.attributes(op)
            functions[mlir.str_value(attrs["sym_name"])] = op
    return functions


def _entry(functions: dict):
    if "main" in functions:
        return "main", functions["main"]
    public = [name for name, op in functions.items()
              if mlir.str_value(mlir.attributes(op).get("sym_visibility"), "public") != "private"]
    if len(public) != 1:
        raise StableHLOConversionError(
            f"the module has no function @main and {len(public)} public functions")
    return public[0], functions[public[0]]


def _dim_names(functions: dict, main) -> dict:
    """``{(argument index, dim): name}`` for main's dynamic dims that ``jax.export`` names: it
    passes ``get_dimension_size(%argK, dim=d)`` to an argument marked
    ``jax.global_constant = "name"`` of the wrapped function it calls."""
    names = {}
    block = main.regions[0].blocks[0]
    arguments = list(block.arguments)
    sizes = {}
    for operation in block.operations:
        op = operation.operation
        attrs = mlir.attributes(op)
        if op.name == "stablehlo.get_dimension_size":
            source = op.operands[0]
            if source in arguments:
                sizes[op.results[0]] = (arguments.index(source),
                                        mlir.int_value(attrs.get("dimension")))
        elif op.name == "func.call":
            callee = functions.get(mlir.str_value(attrs.get("callee")))
            if callee is None:
                continue
            arg_attrs = mlir.attributes(callee).get("arg_attrs")
            if arg_attrs is None:
                continue
            ir, _ = mlir.bindings()
            for index, (operand, entry) in enumerate(zip(op.operands, ir.ArrayAttr(arg_attrs))):
                if operand in sizes:
                    dictionary = ir.DictAttr(entry)
                    if "jax.global_constant" in dictionary:
                        names[sizes[operand]] = mlir.str_value(dictionary["jax.global_constant"])
    return names


def _input_type(index, mlir_type, info, names, size_vars):
    shape, dtype = mlir.tensor_info(mlir_type)
    if info is not None:
        try:
            given_shape, given_dtype = info
        except (TypeError, ValueError) as error:
            raise StableHLOConversionError(
                f"input_info[{index}] must be (shape, dtype), got {info!r}") from error
        if len(given_shape) != len(shape):
            raise StableHLOConversionError(
                f"input_info[{index}] has rank {len(given_shape)}, main's argument {index} is "
                f"{mlir_type}")
        shape, dtype = tuple(given_shape), str(given_dtype)
    dims = []
    for axis, dim in enumerate(shape):
        if isinstance(dim, str):
            dims.append(size_vars.setdefault(dim, size_var(dim)))
        elif dim is None or isinstance(dim, AnyDim) or (_is_int(dim) and dim < 0):
            name = names.get((index, axis))
            if name is None and info is not None:
                dims.append(Any)
                continue
            name = name or f"arg{index}_d{axis}"
            dims.append(size_vars.setdefault(name, size_var(name)))
        elif isinstance(dim, DimExpr):
            dims.append(dim)
        else:
            dims.append(int(dim))
    try:
        return TensorType(tuple(dims), dtype)
    except (TypeError, ValueError) as error:
        raise StableHLOConversionError(f"input_info[{index}]: {error}") from error


def import_module(source, input_info=None) -> IRModule:
    """Convert a StableHLO module (see :func:`irlib.frontend.stablehlo.from_stablehlo`).

    Args:
        source: the module: MLIR text, bytecode, or an MLIR module object.
        input_info: ``[(shape, dtype), ...]`` per argument of the entry function, when its types
            are not static (as :func:`~irlib.frontend.stablehlo.from_stablehlo`).
    """
    module = mlir.parse_module(source)
    with module.context:
        missing = find_unsupported(module)
        if missing:
            listing = "\n".join(f"  {name} at {loc}" for name, loc in missing)
            raise StableHLOOpNotImplemented(
                f"{len(missing)} unsupported StableHLO operation(s):\n{listing}", missing)
        functions = _functions(module)
        _, main = _entry(functions)
        block = main.regions[0].blocks[0]
        arguments = list(block.arguments)
        if input_info is not None and len(input_info) != len(arguments):
            raise StableHLOConversionError(
                f"input_info has {len(input_info)} entries, main has {len(arguments)} arguments")
        names = _dim_names(functions, main)
        size_vars: dict = {}
        params = []
        for index, value in enumerate(arguments):
            info = input_info[index] if input_info is not None else None
            params.append(E.Var(f"arg{index}", _input_type(index, value.type, info, names,
                                                            size_vars)))
        context = Context(functions)
        outputs = context.convert_block(block, params)
        body = outputs[0] if len(outputs) == 1 else context.make_tuple(outputs)
        mod = IRModule()
        mod[E.GlobalVar("main")] = E.Function(tuple(params), body)
        return mod
