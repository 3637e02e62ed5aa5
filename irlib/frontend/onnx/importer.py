"""The ONNX graph walk: model -> ``IRModule`` with ``main``.

:class:`Importer` loads and checks the model, refuses it up front when any node has no
converter (listing all of them), then walks the graph in order. Every ONNX tensor name maps to
an irlib expression in a :class:`GraphContext` (subgraphs of ``If``/``Loop``/``Scan`` get a
child context that sees the outer names). Types are tracked as the graph is built, by calling
each op's type relation on its (already typed) arguments, so converters can ask for the rank,
shape and dtype of any value; calls whose arguments are all constants are folded on the spot
through the ops' numpy references, which turns ONNX shape-computing subgraphs
(``Shape -> Gather -> Concat -> Reshape``) into the static attributes irlib ops want.
"""

from __future__ import annotations

import os
import re

import numpy as np

from ...errors import IRError, TensorTooLargeError
from ...ir import expr as E
from ...limits import check_type_size
from ...ir.dims import Any, AnyDim, size_var
from ...ir.module import IRModule
from ...ir.types import TensorType, TupleType
from ...ndarray import NDArray
from ...op import frontend as _frontend_ops  # noqa: F401  (registers the dyn.*/onnx.* ops)
from ...op import registry as op_registry
from .. import ConversionError, ModelFormatError, OpNotImplemented
from .._type_table import TypeTable
from . import registry

# ops whose value differs between runs: never folded.
_NO_FOLD = frozenset({"nn.dropout", "onnx.random_uniform_like", "onnx.random_normal_like",
                      "onnx.bernoulli", "onnx.dropout"})


_PLAIN_DTYPES = ("bool", "float16", "float32", "float64", "int8", "int16", "int32", "int64",
                 "uint8", "uint16", "uint32", "uint64", "complex64", "complex128")
# numpy arrays of these come from the ml_dtypes package (onnx depends on it).
_ML_DTYPES = ("bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
              "float8_e8m0fnu", "float4_e2m1fn", "int4", "uint4", "int2", "uint2")


def onnx_dtype(elem_type: int) -> str:
    """The irlib dtype string of ONNX ``TensorProto`` element type ``elem_type``.

    bfloat16, the float8/float4 formats and the 4- and 2-bit integers map to the dtype names
    of ``ml_dtypes`` (``"float8_e4m3fn"``, ``"int4"``, ...), whose numpy arrays carry them.

    Raises:
        OpNotImplemented: for element types irlib has no dtype for.
    """
    import onnx
    try:
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
    except Exception as error:  # onnx raises KeyError/ValueError for unknown codes
        raise OpNotImplemented(f"ONNX element type {elem_type} is not supported") from error
    if dtype.kind in "USO":
        return "string"
    name = dtype.name
    if name not in _PLAIN_DTYPES and name not in _ML_DTYPES:
        tname = onnx.TensorProto.DataType.Name(elem_type)
        raise OpNotImplemented(f"ONNX element type {tname} is not supported")
    return name


def sanitize_name(name: str) -> str:
    """``name`` made a valid irlib identifier (letters, digits, ``_``, ``.``)."""
    cleaned = re.sub(r"[^0-9A-Za-z_.]", "_", name) or "_"
    if cleaned[0].isdigit() or cleaned[0] == ".":
        cleaned = "v" + cleaned
    return cleaned


def load_model(model):
    """``model`` as a ``ModelProto``: a proto is returned as is, a path is loaded (with its
    external data).

    Raises:
        ModelFormatError: if the file cannot be read or parsed.
    """
    import onnx
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, (str, os.PathLike)):
        try:
            return onnx.load(os.fspath(model))
        except Exception as error:  # DecodeError, OSError, ...
            raise ModelFormatError(f"cannot load ONNX model {model!s}: {error}") from error
    if isinstance(model, onnx.GraphProto):
        return onnx.helper.make_model(model)
    raise ModelFormatError(f"expected an onnx.ModelProto or a path, got {type(model).__name__}")


def check_model(model) -> None:
    """Run ``onnx.checker`` on ``model``.

    Raises:
        ModelFormatError: with the checker's message (which names the node).
    """
    import onnx
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as error:
        raise ModelFormatError(f"malformed ONNX model: {error}") from error
    except Exception as error:  # UnicodeDecodeError for names that are not UTF-8, ...
        raise ModelFormatError(f"malformed ONNX model: the checker failed with "
                               f"{type(error).__name__}: {error}") from error


def tensor_array(tensor, where: str):
    """The numpy array of ONNX ``TensorProto`` ``tensor`` (an initializer or attribute).

    Args:
        tensor: the ``TensorProto``.
        where: what holds it, for the message (``"initializer 'w'"``).

    Raises:
        ModelFormatError: when the data disagrees with its dims or its element type is
            unknown (``onnx.numpy_helper`` raises ValueError/KeyError/TypeError for these).
    """
    from onnx import numpy_helper
    try:
        return numpy_helper.to_array(tensor)
    except Exception as error:
        raise ModelFormatError(f"{where}: malformed tensor data ({type(error).__name__}: "
                               f"{error})") from error


def iter_nodes(graph):
    """Every node of ``graph`` and of its subgraphs (``If`` branches, ``Loop`` bodies, ...),
    without recursion."""
    import onnx
    stack = [graph]
    while stack:
        current = stack.pop()
        for node in current.node:
            yield node
            for attribute in node.attribute:
                if attribute.type == onnx.AttributeProto.GRAPH:
                    stack.append(attribute.g)
                elif attribute.type == onnx.AttributeProto.GRAPHS:
                    stack.extend(attribute.graphs)


def opset_map(model, opset=None) -> dict:
    """``{domain: version}`` of the model's opset imports (``opset`` overrides the default
    domain's)."""
    versions = {}
    for entry in model.opset_import:
        domain = "" if entry.domain in registry.DEFAULT_DOMAINS else entry.domain
        versions[domain] = entry.version
    if opset is not None:
        versions[""] = int(opset)
    versions.setdefault("", 1)
    return versions


def find_unsupported(model, versions: dict) -> list:
    """``[(node_name, op_type, domain, opset)]`` for every node without a converter."""
    missing = []
    for node in iter_nodes(model.graph):
        domain = "" if node.domain in registry.DEFAULT_DOMAINS else node.domain
        version = versions.get(domain, 1)
        if registry.lookup(domain, node.op_type, version) is None:
            missing.append((node.name, node.op_type, domain, version))
    return missing


def attribute_values(node) -> dict:
    """The node's attributes decoded: ints/floats/strings (str), lists, tensors as numpy
    arrays, graphs kept as ``GraphProto``."""
    import onnx
    values = {}
    for attribute in node.attribute:
        if attribute.type == onnx.AttributeProto.TENSOR:
            values[attribute.name] = tensor_array(attribute.t, f"attribute {attribute.name!r}")
        elif attribute.type == onnx.AttributeProto.GRAPH:
            values[attribute.name] = attribute.g
        else:
            value = onnx.helper.get_attribute_value(attribute)
            if isinstance(value, bytes):
                value = value.decode("utf-8")
            elif isinstance(value, list) and value and isinstance(value[0], bytes):
                value = [item.decode("utf-8") for item in value]
            values[attribute.name] = value
    return values


class GraphContext:
    """Name -> expression scope of one ONNX graph, plus the helpers converters use.

    Attributes:
        importer: the :class:`Importer` (shared type table, opsets, Prelude).
        parent: the enclosing graph's context (subgraphs see outer names), or None.
        env: ``{onnx_name: Expr}`` of this graph.
        opset: the default-domain opset version.
    """

    def __init__(self, importer: "Importer", parent: "GraphContext | None" = None):
        self.importer = importer
        self.parent = parent
        self.env: dict = {}
        self.opset = importer.versions[""]
        self.num_outputs = 1  # of the node being converted

    # -- names -------------------------------------------------------------------------
    def lookup(self, name: str):
        """The expression bound to ONNX name ``name`` here or in an enclosing graph."""
        context = self
        while context is not None:
            if name in context.env:
                return context.env[name]
            context = context.parent
        raise ConversionError(f"ONNX value {name!r} is used before it is defined")

    def bind(self, name: str, value) -> None:
        """Bind ONNX name ``name`` to expression ``value``."""
        if name:
            self.env[name] = value

    # -- types: the importer's one TypeTable, shared by every graph's context ------------
    def type_of(self, expr):
        """The type of ``expr`` (built by this importer): :meth:`TypeTable.type_of`."""
        return self.importer.type_of(expr)

    def set_type(self, expr, ty):
        """Record the type of ``expr`` (for nodes whose type is not computed by a relation);
        returns ``expr``."""
        return self.importer.set_type(expr, ty)

    def shape(self, expr) -> tuple:
        """The shape of tensor ``expr`` (dims may be symbolic or ``Any``); ConversionError
        for a value that is not a tensor."""
        return self.importer.shape(expr)

    def static_shape(self, expr):
        """The shape of ``expr`` as ints, or None when a dim is not a known integer."""
        return self.importer.static_shape(expr)

    def ndim(self, expr) -> int:
        """The rank of tensor ``expr``."""
        return self.importer.ndim(expr)

    def dtype(self, expr) -> str:
        """The dtype of tensor ``expr``."""
        return self.importer.dtype(expr)

    # -- values --------------------------------------------------------------------------
    def const(self, value, dtype=None):
        """A typed constant (``value`` a numpy array or a Python scalar)."""
        array = np.asarray(value, dtype=dtype)
        node = E.Constant(NDArray(array))
        return self.set_type(node, TensorType(array.shape, _dtype_name(array.dtype)))

    def const_value(self, expr):
        """The numpy value of ``expr`` when it is known at import time, else None."""
        if isinstance(expr, E.Constant):
            return expr.data.numpy()
        return None

    def emit(self, op_name: str, *args, **attrs):
        """A call of op ``op_name`` on ``args``, typed, and folded when every argument is a
        constant.

        Returns:
            The call (or its folded constant; a ``Tuple`` of constants for tuple ops).
        """
        op_def = op_registry.get_def(op_name)
        call = E.Call(op_def.op, tuple(args), op_def.make_attrs(attrs or None))
        arg_types = [self.type_of(arg) for arg in args]
        ty = op_def.type_rel(arg_types, call.attrs) if op_def.type_rel else None
        if ty is None:
            raise ConversionError(f"cannot infer the type of {op_name}")
        self.set_type(call, ty)
        if op_name not in _NO_FOLD and op_def.impl is not None and _all_constant(args):
            check_type_size(ty, op_name)   # before numpy allocates the folded result
            inputs = [_constant_value(arg) for arg in args]
            result = op_registry.evaluate(op_name, inputs, call.attrs)
            if isinstance(result, tuple):
                fields = tuple(self.const(part) for part in result)
                return self.set_type(E.Tuple(fields), TupleType([self.type_of(f) for f in fields]))
            return self.const(result)
        return call

    def tuple_get(self, tup, index: int):
        """Field ``index`` of tuple ``tup`` (folded when ``tup`` is a literal tuple)."""
        if isinstance(tup, E.Tuple):
            return tup.fields[index]
        node = E.TupleGetItem(tup, index)
        return self.set_type(node, self.type_of(tup).fields[index])

    def make_tuple(self, fields):
        """A typed tuple of ``fields``."""
        node = E.Tuple(tuple(fields))
        return self.set_type(node, TupleType([self.type_of(f) for f in fields]))


def _dtype_name(dtype) -> str:
    dtype = np.dtype(dtype)
    return "string" if dtype.kind in "USO" else str(dtype)


def _all_constant(args) -> bool:
    for arg in args:
        if isinstance(arg, E.Tuple):
            if not all(isinstance(field, E.Constant) for field in arg.fields):
                return False
        elif not isinstance(arg, E.Constant):
            return False
    return True


def _constant_value(arg):
    if isinstance(arg, E.Tuple):
        return tuple(field.data.numpy() for field in arg.fields)
    return arg.data.numpy()


class Importer(TypeTable):
    """Converts one ONNX model (see :func:`irlib.frontend.onnx.from_onnx`).

    It is the type table of everything it builds (:class:`~irlib.frontend._type_table.
    TypeTable`, shared with the PyTorch and StableHLO importers): constants, vars and each
    emitted call are typed as they are made. What the ONNX side adds: string constants type
    as ``"string"`` tensors (numpy holds them as object/unicode arrays), and the table's
    errors are :class:`~irlib.frontend.ConversionError`.
    """

    conversion_error = ConversionError

    def __init__(self, model, shape_dict=None, dtype_dict="float32", opset=None,
                 keep_params_in_input=False, sanitize_input_names=True):
        self.model = model
        self.shape_dict = dict(shape_dict or {})
        self.dtype_dict = dtype_dict
        self.versions = opset_map(model, opset)
        self.keep_params_in_input = keep_params_in_input
        self.sanitize = sanitize_input_names
        TypeTable.__init__(self)
        self._size_vars: dict = {}
        self._prelude = None
        self.module = IRModule()

    def constant_type(self, array):
        """The type of a constant holding numpy ``array``: string arrays (object or
        unicode) are ``"string"`` tensors."""
        return TensorType(array.shape, _dtype_name(array.dtype))

    @property
    def prelude(self):
        """The Prelude loaded into the output module (on first use)."""
        if self._prelude is None:
            from ...prelude import Prelude
            self._prelude = Prelude(self.module)
        return self._prelude

    def value_type(self, type_proto, name: str = ""):
        """The irlib type of an ONNX ``TypeProto`` (tensor, sequence or optional)."""
        which = type_proto.WhichOneof("value")
        if which == "tensor_type":
            tensor = type_proto.tensor_type
            dtype = onnx_dtype(tensor.elem_type) if tensor.elem_type else self._input_dtype(name)
            if name in self.shape_dict:
                shape = tuple(Any if d is None or isinstance(d, AnyDim) or d == -1
                              else (size_var(d) if isinstance(d, str) else int(d))
                              for d in self.shape_dict[name])
            elif tensor.HasField("shape"):
                shape = tuple(self._dim(dim) for dim in tensor.shape.dim)
            else:
                raise OpNotImplemented(f"input {name!r} has unknown rank")
            return TensorType(shape, dtype)
        if which == "sequence_type":
            from ...ir.types import TypeCall
            elem = type_proto.sequence_type.elem_type
            if elem.WhichOneof("value") == "tensor_type" and name not in self.shape_dict and \
                    (not elem.tensor_type.HasField("shape") or not elem.tensor_type.shape.dim):
                # the element rank is left to type inference (from how the list is used).
                # A declared rank 0 is treated as unknown too: exporters write `seq(float[])`
                # for "some tensors of float" (onnx's loop13_seq declares scalars and inserts
                # vectors), and runtimes do not check element shapes of sequences.
                from ...ir.types import IncompleteType, TypeCall
                return TypeCall(self.prelude.mod.get_global_type_var("List"), [IncompleteType()])
            element = self.value_type(elem, name)
            if isinstance(element, TensorType):  # elements may differ in shape
                element = TensorType([Any] * len(element.shape), element.dtype)
            return TypeCall(self.prelude.mod.get_global_type_var("List"), [element])
        if which == "optional_type":
            from ...ir.types import TypeCall
            element = self.value_type(type_proto.optional_type.elem_type, name)
            return TypeCall(self.prelude.mod.get_global_type_var("Option"), [element])
        raise OpNotImplemented(f"input {name!r}: ONNX {which} values are not supported")

    def _input_dtype(self, name: str) -> str:
        if isinstance(self.dtype_dict, dict):
            return self.dtype_dict.get(name, "float32")
        return self.dtype_dict or "float32"

    def _dim(self, dim):
        if dim.HasField("dim_value"):
            # some exporters (paddle2onnx) write -1 for an unknown dim
            return int(dim.dim_value) if dim.dim_value >= 0 else Any
        if dim.HasField("dim_param") and dim.dim_param:
            # size variables are plain identifiers: no dots ('p2o.DynamicDimension.0')
            name = sanitize_name(dim.dim_param).replace(".", "_")
            if name not in self._size_vars:
                self._size_vars[name] = size_var(name)
            return self._size_vars[name]
        return Any

    # -- the walk ------------------------------------------------------------------------
    def run(self):
        """Convert the model; returns ``(mod, params)``."""
        graph = self.model.graph
        context = GraphContext(self)
        params = {}
        param_vars = []
        for init in graph.initializer:
            array = tensor_array(init, f"initializer {init.name!r}")
            params[init.name] = NDArray(np.ascontiguousarray(array))
            if self.keep_params_in_input:
                var = E.Var(self._var_name(init.name),
                            TensorType(array.shape, _dtype_name(array.dtype)))
                param_vars.append(var)
                context.bind(init.name, var)
            else:
                context.bind(init.name, context.const(array))
        input_vars = []
        for value_info in graph.input:
            if value_info.name in params:
                continue
            try:
                var = E.Var(self._var_name(value_info.name),
                            self.value_type(value_info.type, value_info.name))
            except IRError:
                raise
            except Exception as error:  # e.g. a dtype irlib's tensors cannot carry
                raise ConversionError(f"graph input {value_info.name!r}: "
                                      f"{type(error).__name__}: {error}") from error
            input_vars.append(var)
            context.bind(value_info.name, var)
        outputs = convert_graph(context, graph)
        body = outputs[0] if len(outputs) == 1 else context.make_tuple(outputs)
        attrs = None
        if self.keep_params_in_input:
            # The frontends' keep-params convention (irlib.frontend.detach_params): the real
            # inputs come first, then one parameter per weight, whose values the "params"
            # attribute lists in the same order.
            attrs = {"num_input": len(input_vars),
                     "params": [params[init.name] for init in graph.initializer]}
        main = E.Function(tuple(input_vars + param_vars), body, attrs=attrs)
        from ...ir.expr import GlobalVar
        self.module[GlobalVar("main")] = main
        if self.keep_params_in_input:
            params = {var.name_hint: params[init.name]
                      for var, init in zip(param_vars, graph.initializer)}
        return self.module, params

    def _var_name(self, name: str) -> str:
        return sanitize_name(name) if self.sanitize else name


def convert_graph(context: GraphContext, graph) -> list:
    """Convert the nodes of ``graph`` into ``context``; returns the output expressions.

    A subgraph's (an If branch, a Loop/Scan body, a FlexAttention modifier) own initializers
    become constants of its context; the main graph's are bound by :meth:`Importer.run`.
    """
    if context.parent is not None and graph.initializer:
        for init in graph.initializer:
            context.bind(init.name, context.const(tensor_array(init, f"initializer {init.name!r}")))
    for node in graph.node:
        convert_node(context, node)
    return [context.lookup(output.name) for output in graph.output]


def convert_node(context: GraphContext, node) -> None:
    """Convert one node and bind its outputs in ``context``.

    Raises:
        OpNotImplemented: for an unsupported variant of the op (names the node).
        ConversionError: when conversion fails (names the node, chains the cause).
    """
    domain = "" if node.domain in registry.DEFAULT_DOMAINS else node.domain
    version = context.importer.versions.get(domain, 1)
    function = registry.lookup(domain, node.op_type, version)
    where = f"node {node.name!r} ({node.op_type}, opset {version})"
    inputs = [context.lookup(name) if name else None for name in node.input]
    context.num_outputs = len(node.output)
    try:
        result = function(context, inputs, attribute_values(node))
    except OpNotImplemented as error:
        raise OpNotImplemented(f"{where}: {error}",
                               [(node.name, node.op_type, version)]) from error
    except TensorTooLargeError as error:
        raise TensorTooLargeError(f"{where}: {error}", error.size, error.limit) from error
    except MemoryError as error:
        raise TensorTooLargeError(f"{where}: out of memory while converting ({error}); "
                                  f"lower the tensor size limit (irlib.limits)") from error
    except ConversionError as error:
        raise ConversionError(f"{where}: {error}") from error
    except (IRError, ValueError, TypeError, IndexError, KeyError, ArithmeticError) as error:
        raise ConversionError(f"{where}: {type(error).__name__}: {error}") from error
    results = result if isinstance(result, (list, tuple)) else [result]
    for name, value in zip(node.output, results):
        context.bind(name, value)
