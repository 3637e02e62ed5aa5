"""Give the zoo's unannotated weight variables their types, the way Relay's op relations do.

The reference models create weights with bare ``relay.var("conv0_weight")`` and let type
inference find their shapes: Relay's ``Conv2DRel``, ``DenseRel``, ``BatchNormRel`` and
``BiasAddRel`` assign a type to an argument that has none, from the data's type and the
call's attributes. irlib's type relations only run once every argument type is known, so the
zoo fills those types in itself before a model leaves its builder: one post-order walk
computes the type of every dataflow node through the registry's type relations and, at a
call whose weight argument is still unknown, derives the weight's shape from the rules
below. The variables are then replaced by annotated copies of themselves (same names).

Only the dataflow fragment is walked (vars, constants, tuples, projections, op calls);
anything else (a let, a nested function) is left alone, which is why the LSTM annotates its
variables by hand as the reference does.
"""

from __future__ import annotations

from irlib.errors import IRError, TypeInferenceError
from irlib.ir import expr as E
from irlib.ir.functor import ExprMutator, post_order
from irlib.ir.types import TensorType, TupleType
from irlib.op import registry

# -- weight-shape rules: (data type, attrs) -> shapes of the other arguments -----------------


def _conv2d_weight(data: TensorType, attrs) -> tuple:
    groups = int(attrs.groups)
    in_channels = int(data.shape[attrs.data_layout.index("C")])
    sizes = {"O": int(attrs.channels), "I": in_channels // groups,
             "H": int(attrs.kernel_size[0]), "W": int(attrs.kernel_size[1])}
    return (tuple(sizes[letter] for letter in attrs.kernel_layout),)


def _conv2d_transpose_weight(data: TensorType, attrs) -> tuple:
    groups = int(attrs.groups)
    in_channels = int(data.shape[attrs.data_layout.index("C")])
    sizes = {"I": in_channels, "O": int(attrs.channels) // groups,
             "H": int(attrs.kernel_size[0]), "W": int(attrs.kernel_size[1])}
    return (tuple(sizes[letter] for letter in attrs.kernel_layout),)


def _dense_weight(data: TensorType, attrs) -> tuple:
    return ((int(attrs.units), int(data.shape[-1])),)


def _channel_vector(count: int):
    def rule(data: TensorType, attrs) -> tuple:
        return ((int(data.shape[int(attrs.axis)]),),) * count
    return rule


# Ops whose later arguments can be derived from argument 0 and the attributes; the rule
# needs the attributes that make the shape unambiguous (channels/kernel_size, units).
_RULES = {
    "nn.conv2d": (_conv2d_weight, ("channels", "kernel_size")),
    "nn.conv2d_transpose": (_conv2d_transpose_weight, ("channels", "kernel_size")),
    "nn.dense": (_dense_weight, ("units",)),
    "nn.batch_norm": (_channel_vector(4), ()),
    "nn.bias_add": (_channel_vector(1), ()),
}


def _known_type(node, types: dict):
    """The type of an already-walked node, or None."""
    if isinstance(node, E.Var):
        return types.get(node, node.type_annotation)
    return types.get(node)


def _deduce_arguments(call, types: dict, deduced: dict) -> None:
    """Record types for ``call``'s unannotated variable arguments where a rule applies."""
    rule_entry = _RULES.get(call.op.name)
    if rule_entry is None or len(call.args) < 2:
        return
    rule, needed = rule_entry
    data_type = _known_type(call.args[0], types)
    if not isinstance(data_type, TensorType) or any(call.attrs[k] is None for k in needed):
        return
    shapes = rule(data_type, call.attrs)
    for argument, shape in zip(call.args[1:], shapes):
        if isinstance(argument, E.Var) and _known_type(argument, types) is None:
            deduced[argument] = TensorType(shape, data_type.dtype)
            types[argument] = deduced[argument]


def _call_type(call, types: dict):
    arg_types = [_known_type(a, types) for a in call.args]
    if any(t is None for t in arg_types):
        return None
    try:
        return registry.get_def(call.op.name).type_rel(arg_types, call.attrs)
    except (IRError, TypeInferenceError, TypeError, ValueError, IndexError, KeyError):
        return None


def deduce_parameter_types(expr) -> dict:
    """Types for the unannotated variables of ``expr`` that feed op weights.

    Args:
        expr: an expression (usually a network body or a Function).

    Returns:
        A dict Var -> TensorType for every variable whose type a rule could derive.
    """
    types: dict = {}
    deduced: dict = {}
    for node in post_order(expr):
        kind = type(node)
        if kind is E.Constant:
            types[node] = TensorType(node.data.shape, node.data.dtype)
        elif kind is E.Tuple:
            fields = [_known_type(f, types) for f in node.fields]
            if all(f is not None for f in fields):
                types[node] = TupleType(tuple(fields))
        elif kind is E.TupleGetItem:
            tuple_type = _known_type(node.tuple_value, types)
            if isinstance(tuple_type, TupleType):
                types[node] = tuple_type.fields[node.index]
        elif kind is E.Call and isinstance(node.op, E.Op):
            _deduce_arguments(node, types, deduced)
            result = _call_type(node, types)
            if result is not None:
                types[node] = result
    return deduced


class _Annotate(ExprMutator):
    def __init__(self, deduced: dict):
        super().__init__()
        self.replacements = {old: E.Var(old.name_hint, ty) for old, ty in deduced.items()}

    def visit_var(self, node):
        return self.replacements.get(node, node)


def annotate_parameters(expr):
    """``expr`` with every derivable weight variable replaced by an annotated copy.

    Args:
        expr: an expression or Function built with the zoo's layer helpers.

    Returns:
        The same expression if nothing was missing, else a rebuilt one whose weight
        variables (same names) carry their tensor types.
    """
    deduced = deduce_parameter_types(expr)
    if not deduced:
        return expr
    return _Annotate(deduced).visit(expr)
