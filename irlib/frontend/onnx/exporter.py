"""``to_onnx(mod, params=None, opset=17) -> ModelProto``: the dataflow subset of irlib as ONNX.

``main`` must be a dataflow function: variables, constants, calls of ops, tuples, tuple
projections and ``let`` bindings (no control flow, closures or ADTs). The module is
type-checked first; every node gets one ONNX value name (a tuple gets one per field). Each
op is exported by a rule in :data:`_RULES`; parameters of ``main`` found in ``params`` become
initializers, the rest graph inputs, in ``main``'s parameter order (size variables become
``dim_param`` names, ``?`` dims stay unnamed; repeated name hints get ``_1``, ``_2``, ...).

Raises :class:`~irlib.frontend.OpNotImplemented` listing every op without a rule, and
:class:`~irlib.frontend.ConversionError` for constructs outside the dataflow subset.
"""

from __future__ import annotations

import numpy as np

from ...ir import expr as E
from ...ir.dims import AnyDim
from ...ir.functor import post_order
from ...ir.types import TensorType, TupleType
from .. import ConversionError, OpNotImplemented

_RULES: dict = {}


def _rule(*names):
    def register(function):
        for name in names:
            _RULES[name] = function
        return function
    return register


class _Graph:
    """The ONNX graph being built: nodes, initializers and fresh names."""

    def __init__(self):
        from onnx import helper, numpy_helper
        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes, self.initializers = [], []
        self._count = 0

    def fresh(self, hint="v"):
        self._count += 1
        return f"{hint}_{self._count}"

    def node(self, op_type, inputs, outputs=None, **attrs):
        """Add a node; returns its output names (one fresh name unless ``outputs``)."""
        outputs = outputs or [self.fresh(op_type.lower())]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(self.helper.make_node(op_type, list(inputs), list(outputs),
                                                name=outputs[0], **attrs))
        return outputs

    def constant(self, array, hint="const"):
        """An initializer holding ``array``; returns its name."""
        name = self.fresh(hint)
        self.initializers.append(self.numpy_helper.from_array(np.asarray(array), name))
        return name


def _dims(ty):
    return [int(d) for d in ty.shape]


def _tensor_info(helper, name, ty):
    from onnx import helper as onnx_helper
    shape = []
    for dim in ty.shape:
        if isinstance(dim, (int, np.integer)):
            shape.append(int(dim))
        elif isinstance(dim, AnyDim):
            shape.append(None)
        else:
            shape.append(str(dim))
    elem = onnx_helper.np_dtype_to_tensor_dtype(np.dtype(ty.dtype))
    return helper.make_tensor_value_info(name, elem, shape)


def to_onnx(mod, params=None, opset: int = 17, graph_name: str = "irlib"):
    """Export ``mod["main"]`` (a dataflow function) as an ONNX model.

    Args:
        mod: an ``IRModule`` (or a ``Function``, taken as ``main``).
        params: ``{param_name: NDArray or numpy array}`` bound to ``main``'s parameters of
            those names; they become initializers.
        opset: the default-domain opset to target (13 or newer).
        graph_name: the ONNX graph's name.

    Returns:
        An ``onnx.ModelProto`` that passes ``onnx.checker.check_model``.

    Raises:
        OpNotImplemented: listing every op of ``main`` without an export rule.
        ConversionError: for expressions outside the dataflow subset.
    """
    import onnx
    from onnx import helper
    from ...ir.module import IRModule
    from ...transform import InferType
    if isinstance(mod, E.Function):
        mod = IRModule.from_expr(mod)
    if opset < 13:
        raise ConversionError("to_onnx targets opset 13 or newer")
    missing = sorted({n.op.name for n in post_order(mod["main"].body)
                      if isinstance(n, E.Call) and isinstance(n.op, E.Op)
                      and n.op.name not in _RULES})
    if missing:
        raise OpNotImplemented(f"{len(missing)} op(s) have no ONNX export rule: "
                               f"{', '.join(missing)}", [("", name, opset) for name in missing])
    mod = InferType()(mod)
    main = mod["main"]
    nodes = list(post_order(main.body))
    graph = _Graph()
    params = {k: (v.numpy() if hasattr(v, "numpy") else np.asarray(v))
              for k, v in (params or {}).items()}
    names = _Names({n.var: n.value for n in nodes if isinstance(n, E.Let)})
    inputs = []
    used = set()
    for param in main.params:
        ty = param.checked_type
        # distinct parameters may share a name hint; ONNX names must be unique
        name, suffix = param.name_hint, 0
        while name in used:
            suffix += 1
            name = f"{param.name_hint}_{suffix}"
        used.add(name)
        if not isinstance(ty, TensorType):
            raise ConversionError(f"parameter %{param.name_hint}: only tensors export, got {ty}")
        if param.name_hint in params:
            graph.initializers.append(graph.numpy_helper.from_array(
                np.asarray(params[param.name_hint], dtype=ty.dtype), name))
        else:
            inputs.append(_tensor_info(helper, name, ty))
        names[param] = name
    inside = _function_bodies(nodes)
    for node in nodes:
        if node in names or node in names.lets or node in inside:
            continue
        names[node] = _export(graph, node, names, opset)
    result = _flatten(names[main.body], main.body.checked_type)
    outputs = []
    for index, (name, ty) in enumerate(result):
        out_name = f"output_{index}"
        graph.node("Identity", [name], [out_name])
        outputs.append(_tensor_info(helper, out_name, ty))
    onnx_graph = helper.make_graph(graph.nodes, graph_name, inputs, outputs,
                                   graph.initializers)
    model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="irlib")
    model.ir_version = 8  # opset 13-17 models; onnxruntime reads it
    onnx.checker.check_model(model)
    return model


def _export(graph, node, names, opset):
    """ONNX value names for ``node`` (whose children are already exported)."""
    if isinstance(node, (E.Op, E.Function, E.GlobalVar)):
        if isinstance(node, (E.Op, E.Function)):
            return ()  # exported where called
        raise ConversionError(f"to_onnx: {type(node).__name__} is outside the dataflow subset")
    if isinstance(node, E.Var):
        raise ConversionError(f"to_onnx: free variable %{node.name_hint}")
    if isinstance(node, E.Constant):
        return graph.constant(node.data.numpy())
    if isinstance(node, E.Tuple):
        return tuple(names[field] for field in node.fields)
    if isinstance(node, E.TupleGetItem):
        return names[node.tuple_value][node.index]
    if isinstance(node, E.Let):
        return names[node.body]
    if isinstance(node, E.Call) and isinstance(node.op, E.Op):
        args = [names[arg] for arg in node.args]
        outputs = _RULES[node.op.name](graph, node, args, dict(node.attrs or {}), opset)
        return outputs[0] if len(outputs) == 1 and not isinstance(
            node.checked_type, TupleType) else tuple(outputs)
    if isinstance(node, E.Call) and isinstance(node.op, E.Function):
        return _inline(graph, node, names, opset)
    raise ConversionError(f"to_onnx: {type(node).__name__} is outside the dataflow subset")


class _Names(dict):
    """Expression -> ONNX value names; a let-bound variable reads its value's names, and a
    scope for an inlined function body falls back to the enclosing one."""

    def __init__(self, lets, parent=None):
        super().__init__()
        self.lets = lets
        self.parent = parent

    def __getitem__(self, expr):
        while expr in self.lets:
            expr = self.lets[expr]
        if dict.__contains__(self, expr) or self.parent is None:
            return dict.__getitem__(self, expr)
        return self.parent[expr]


def _function_bodies(nodes) -> set:
    """Nodes that belong to function literals (exported where the function is called)."""
    inside = set()
    for node in nodes:
        if isinstance(node, E.Function):
            inside.update(node.params)
            inside.update(post_order(node.body))
    return inside


def _inline(graph, call, names, opset):
    """A call of a function literal: its body exported with the params bound to the args."""
    function = call.op
    body_nodes = list(post_order(function.body))
    local = _Names({n.var: n.value for n in body_nodes if isinstance(n, E.Let)}, names)
    for param, arg in zip(function.params, call.args):
        local[param] = names[arg]
    inside = _function_bodies(body_nodes)
    for node in body_nodes:
        if dict.__contains__(local, node) or node in local.lets or node in inside:
            continue
        local[node] = _export(graph, node, local, opset)
    return local[function.body]


def _flatten(value, ty) -> list:
    """``[(name, TensorType)]`` of a (nested) tuple value, fields in order."""
    out, stack = [], [(value, ty)]
    while stack:
        value, ty = stack.pop()
        if isinstance(ty, TupleType):
            stack.extend(reversed(list(zip(value, ty.fields))))
        else:
            out.append((value, ty))
    return out


# -- rules ------------------------------------------------------------------------------------

_ELEMENTWISE = {"add": "Add", "subtract": "Sub", "multiply": "Mul", "divide": "Div",
                "power": "Pow", "maximum": "Max", "minimum": "Min", "nn.relu": "Relu",
                "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp", "log": "Log",
                "sqrt": "Sqrt", "negative": "Neg", "abs": "Abs", "erf": "Erf",
                "floor": "Floor", "ceil": "Ceil", "equal": "Equal", "less": "Less",
                "greater": "Greater", "logical_and": "And", "logical_or": "Or",
                "logical_not": "Not", "where": "Where", "copy": "Identity", "sin": "Sin",
                "cos": "Cos"}


def _elementwise_rule(op_type):
    def rule(graph, call, args, attrs, opset):
        return graph.node(op_type, list(args))
    return rule


for _name, _onnx in _ELEMENTWISE.items():
    _RULES[_name] = _elementwise_rule(_onnx)


def _shape_const(graph, values):
    return graph.constant(np.asarray(values, "int64"), "shape")


@_rule("nn.dense")
def _dense(graph, call, args, attrs, opset):
    data_ty = call.args[0].checked_type
    if len(data_ty.shape) == 2:
        return graph.node("Gemm", [args[0], args[1]], transB=1)
    weight_t = graph.node("Transpose", [args[1]], perm=[1, 0])
    return graph.node("MatMul", [args[0], weight_t[0]])


@_rule("nn.matmul")
def _matmul(graph, call, args, attrs, opset):
    a, b = args[0], args[1]
    if attrs.get("transpose_a"):
        a = graph.node("Transpose", [a], perm=_swap_last(call.args[0]))[0]
    if attrs.get("transpose_b"):
        b = graph.node("Transpose", [b], perm=_swap_last(call.args[1]))[0]
    return graph.node("MatMul", [a, b])


def _swap_last(expr):
    rank = len(expr.checked_type.shape)
    return list(range(rank - 2)) + [rank - 1, rank - 2]


@_rule("nn.bias_add")
def _bias_add(graph, call, args, attrs, opset):
    rank = len(call.args[0].checked_type.shape)
    axis = attrs.get("axis", 1) % rank
    bias = args[1]
    if axis != rank - 1:
        bias = graph.node("Reshape", [bias, _shape_const(graph, [-1] + [1] * (rank - axis - 1))])[0]
    return graph.node("Add", [args[0], bias])


def _require_layout(attrs, key, wanted):
    if attrs.get(key, wanted) not in (wanted, ""):
        raise ConversionError(f"to_onnx: {key}={attrs[key]!r} is not supported (only {wanted})")


@_rule("nn.conv1d", "nn.conv2d", "nn.conv3d")
def _conv(graph, call, args, attrs, opset):
    rank = len(call.args[0].checked_type.shape) - 2
    _require_layout(attrs, "data_layout", {1: "NCW", 2: "NCHW", 3: "NCDHW"}[rank])
    _require_layout(attrs, "kernel_layout", {1: "OIW", 2: "OIHW", 3: "OIDHW"}[rank])
    kernel = _dims(call.args[1].checked_type)[2:]
    return graph.node("Conv", [args[0], args[1]], kernel_shape=kernel,
                      strides=list(attrs["strides"]), pads=_pads(attrs["padding"], rank),
                      dilations=list(attrs["dilation"]), group=int(attrs["groups"]))


def _pads(padding, rank):
    padding = list(padding)
    if len(padding) == rank:
        return padding + padding
    if len(padding) == 1:
        return padding * (2 * rank)
    return padding


@_rule("nn.conv1d_transpose", "nn.conv2d_transpose", "nn.conv3d_transpose")
def _conv_transpose(graph, call, args, attrs, opset):
    rank = len(call.args[0].checked_type.shape) - 2
    _require_layout(attrs, "data_layout", {1: "NCW", 2: "NCHW", 3: "NCDHW"}[rank])
    _require_layout(attrs, "kernel_layout", {1: "IOW", 2: "IOHW", 3: "IODHW"}[rank])
    kernel = _dims(call.args[1].checked_type)[2:]
    return graph.node("ConvTranspose", [args[0], args[1]], kernel_shape=kernel,
                      strides=list(attrs["strides"]), pads=_pads(attrs["padding"], rank),
                      dilations=list(attrs["dilation"]), group=int(attrs["groups"]),
                      output_padding=list(attrs["output_padding"]))


def _pool(op_type):
    def rule(graph, call, args, attrs, opset):
        rank = len(call.args[0].checked_type.shape) - 2
        _require_layout(attrs, "layout", {1: "NCW", 2: "NCHW", 3: "NCDHW"}[rank])
        extra = {}
        if op_type == "AveragePool":
            extra["count_include_pad"] = int(bool(attrs.get("count_include_pad", False)))
        if any(d != 1 for d in attrs.get("dilation", [1])):
            extra["dilations"] = list(attrs["dilation"])
        return graph.node(op_type, [args[0]], kernel_shape=list(attrs["pool_size"]),
                          strides=list(attrs["strides"]), pads=_pads(attrs["padding"], rank),
                          ceil_mode=int(bool(attrs.get("ceil_mode", False))), **extra)
    return rule


for _rank in (1, 2, 3):
    _RULES[f"nn.max_pool{_rank}d"] = _pool("MaxPool")
    _RULES[f"nn.avg_pool{_rank}d"] = _pool("AveragePool")


@_rule("nn.global_avg_pool2d", "nn.global_max_pool2d")
def _global_pool(graph, call, args, attrs, opset):
    _require_layout(attrs, "layout", "NCHW")
    kind = "GlobalAveragePool" if call.op.name == "nn.global_avg_pool2d" else "GlobalMaxPool"
    return graph.node(kind, [args[0]])


@_rule("nn.batch_flatten")
def _batch_flatten(graph, call, args, attrs, opset):
    return graph.node("Flatten", [args[0]], axis=1)


@_rule("nn.batch_norm")
def _batch_norm(graph, call, args, attrs, opset):
    if attrs.get("axis", 1) != 1:
        raise ConversionError("to_onnx: nn.batch_norm exports with axis=1 only")
    data, gamma, beta, mean, var = args
    if not attrs.get("scale", True):
        gamma = graph.node("Identity", [graph.constant(np.ones(
            _dims(call.args[1].checked_type), call.args[1].checked_type.dtype))])[0]
    if not attrs.get("center", True):
        beta = graph.node("Identity", [graph.constant(np.zeros(
            _dims(call.args[2].checked_type), call.args[2].checked_type.dtype))])[0]
    out = graph.node("BatchNormalization", [data, gamma, beta, mean, var],
                     epsilon=float(attrs.get("epsilon", 1e-5)))
    return [out[0], mean, var]  # inference: the moving statistics pass through


@_rule("nn.dropout")
def _dropout(graph, call, args, attrs, opset):
    out = graph.node("Identity", [args[0]])
    mask_ty = call.checked_type.fields[1]
    mask = graph.constant(np.ones(_dims(mask_ty), mask_ty.dtype), "mask")
    return [out[0], mask]


@_rule("nn.softmax", "nn.log_softmax")
def _softmax(graph, call, args, attrs, opset):
    kind = "Softmax" if call.op.name == "nn.softmax" else "LogSoftmax"
    return graph.node(kind, [args[0]], axis=int(attrs.get("axis", -1)))


@_rule("nn.leaky_relu")
def _leaky_relu(graph, call, args, attrs, opset):
    return graph.node("LeakyRelu", [args[0]], alpha=float(attrs["alpha"]))


@_rule("concatenate")
def _concatenate(graph, call, args, attrs, opset):
    return graph.node("Concat", list(args[0]), axis=int(attrs["axis"]))


def _static_out_shape(call):
    ty = call.checked_type
    if all(isinstance(d, (int, np.integer)) for d in ty.shape):
        return [int(d) for d in ty.shape]
    return None


@_rule("reshape")
def _reshape(graph, call, args, attrs, opset):
    shape = _static_out_shape(call)
    if shape is None:
        shape = [int(v) for v in attrs["newshape"]]
        if any(v < -1 for v in shape):
            raise ConversionError("to_onnx: reshape with special codes needs a static result")
    return graph.node("Reshape", [args[0], _shape_const(graph, shape)])


@_rule("transpose")
def _transpose(graph, call, args, attrs, opset):
    axes = attrs.get("axes")
    return graph.node("Transpose", [args[0]], perm=list(axes) if axes else None)


@_rule("expand_dims", "squeeze")
def _expand_squeeze(graph, call, args, attrs, opset):
    shape = _static_out_shape(call)
    if shape is None:
        raise ConversionError(f"to_onnx: {call.op.name} needs a static result shape")
    return graph.node("Reshape", [args[0], _shape_const(graph, shape)])


@_rule("split")
def _split(graph, call, args, attrs, opset):
    data_ty = call.args[0].checked_type
    axis = int(attrs["axis"]) % len(data_ty.shape)
    sizes = [int(field.shape[axis]) for field in call.checked_type.fields]
    outputs = [graph.fresh("split") for _ in sizes]
    return graph.node("Split", [args[0], _shape_const(graph, sizes)], outputs, axis=axis)


@_rule("zeros", "ones", "full")
def _filled(graph, call, args, attrs, opset):
    ty = call.checked_type
    if call.op.name == "full":
        return graph.node("Expand", [args[0], _shape_const(graph, _dims(ty))])
    value = 0 if call.op.name == "zeros" else 1
    return [graph.constant(np.full(_dims(ty), value, ty.dtype))]


@_rule("cast")
def _cast(graph, call, args, attrs, opset):
    from onnx import helper
    to = helper.np_dtype_to_tensor_dtype(np.dtype(call.checked_type.dtype))
    return graph.node("Cast", [args[0]], to=int(to))


@_rule("clip")
def _clip(graph, call, args, attrs, opset):
    dtype = call.checked_type.dtype
    low = graph.constant(np.asarray(attrs["a_min"], dtype))
    high = graph.constant(np.asarray(attrs["a_max"], dtype))
    return graph.node("Clip", [args[0], low, high])


def _reduce(op_type):
    def rule(graph, call, args, attrs, opset):
        rank = len(call.args[0].checked_type.shape)
        axes = attrs.get("axis")
        axes = list(range(rank)) if axes is None else [int(a) % rank for a in axes]
        if attrs.get("exclude"):
            axes = [a for a in range(rank) if a not in axes]
        keep = int(bool(attrs.get("keepdims", False)))
        if op_type == "ReduceSum" or opset >= 18:
            return graph.node(op_type, [args[0], _shape_const(graph, axes)], keepdims=keep)
        return graph.node(op_type, [args[0]], axes=axes, keepdims=keep)
    return rule


for _name, _onnx in (("sum", "ReduceSum"), ("mean", "ReduceMean"), ("max", "ReduceMax"),
                     ("min", "ReduceMin"), ("prod", "ReduceProd")):
    _RULES[_name] = _reduce(_onnx)
