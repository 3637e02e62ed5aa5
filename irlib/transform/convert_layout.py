"""ConvertLayout: run convolutions (and what follows them) in another data layout
(Relay's ``ConvertLayout(desired_layouts)``).

``desired_layouts`` maps an op name to ``[data_layout, kernel_layout]`` (``"default"`` as the
kernel layout picks the usual one: ``OIHW`` for ``NCHW``, ``HWIO`` for ``NHWC``), or to a
single layout for ops without a kernel (pooling). Each such op gets the new layout through
its registry layout rule; its inputs get a ``layout_transform`` unless they already are in
that layout. The new layout then *flows* through layout-agnostic ops: elementwise and
broadcast ops (a lower-rank operand such as a ``(C, 1, 1)`` bias is expanded and
transformed too), ``nn.bias_add``, pooling and global pooling (through their layout rules)
and ``nn.batch_norm`` (its axis is remapped). Any other consumer, and the function result,
gets the value back in its original layout, with one shared ``layout_transform`` per value.
So a ResNet- or MobileNet-style network converted to NHWC has only two transforms on the
data path: at the input and before the classifier (weights are transformed too; bind them
as constants and FoldConstant folds those). Ops already in the desired layout are left as
they are.

Before/after with ``{"nn.conv2d": ["NCHW", "default"]}``::

    nn.relu(nn.conv2d(%x, %w, data_layout="NHWC", kernel_layout="HWIO"))
    layout_transform(nn.relu(nn.conv2d(layout_transform(%x, "NHWC", "NCHW"),
                                       layout_transform(%w, "HWIO", "OIHW"))), "NCHW", "NHWC")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import IRError, PassError
from ..ir import expr as E
from ..ir.functor import children, post_order, rebuild
from ..op.registry import OpPattern, get_def
from ._typed import rewrite_typed_module, tensor_type
from ._layout_state import (_BatchNormState, _in_layout, _is_plain, _restore, _State,
                            _transform, _TupleState, layout_rank)
from .pass_infra import ModulePass

_DEFAULT_KERNEL = {"NCHW": "OIHW", "NHWC": "HWIO", "NCDHW": "OIDHW", "NDHWC": "DHWIO"}
_SAFE_ATTRS = frozenset({"alpha", "a_min", "a_max", "dtype"})
_LAYOUT_FIELDS = ("data_layout", "layout")


class _Converter:
    def __init__(self, desired: dict, accept=None):
        self.desired = desired
        self.accept = accept
        self.states: dict = {}

    def run(self, func: E.Function) -> E.Function:
        # Nested functions are opaque here: their bodies are not converted.
        order = post_order(func.body, lambda n: () if type(n) is E.Function else children(n))
        for node in order:
            self.states[node] = self.visit(node)
        return func.replace(body=_restore(self.states[func.body]))

    def visit(self, node) -> _State:
        states = self.states
        if type(node) is E.Call and isinstance(node.op, E.Op):
            name = node.op.name
            arg_states = [states[a] for a in node.args]
            if name in self.desired and (self.accept is None or self.accept(node)):
                converted = self._desired(node, arg_states)
                if converted is not None:
                    return converted
            plain = bool(arg_states) and arg_states[0].converted and \
                _is_plain(arg_states[0].layout)
            if name == "nn.batch_norm" and plain:
                return self._batch_norm(node, arg_states)
            if name == "concatenate" and isinstance(arg_states[0], _TupleState):
                converted = self._concatenate(node, arg_states[0])
                if converted is not None:
                    return converted
            rule = get_def(name).layout_rule
            if rule is not None and plain and "kernel_layout" not in node.attrs:
                return self._follow_rule(node, arg_states, rule)
            if self._agnostic(node) and any(s.converted for s in arg_states):
                return self._elementwise(node, arg_states)
        if type(node) is E.TupleGetItem:
            inner = states[node.tuple_value]
            if getattr(inner, "batch_norm", False) and node.index == 0:
                return _State(E.TupleGetItem(inner.expr, 0), inner.layout, inner.original)
        if type(node) is E.Function:
            return _State(node)
        if type(node) is E.Tuple:
            fields = [states[f] for f in node.fields]
            rebuilt = rebuild(node, tuple(_restore(f) for f in fields))
            return _TupleState(rebuilt, fields) if any(f.converted for f in fields) \
                else _State(rebuilt)
        return _State(rebuild(node, tuple(_restore(states[c]) for c in children(node))))

    def _desired(self, node, arg_states):
        op_def = get_def(node.op.name)
        layouts = self.desired[node.op.name]
        layouts = [layouts] if isinstance(layouts, str) else list(layouts)
        if op_def.layout_rule is None:
            raise IRError(f"ConvertLayout: {node.op.name} has no layout rule")
        attrs = node.attrs
        field_name = next(f for f in _LAYOUT_FIELDS if f in attrs)
        source = attrs[field_name]
        target = layouts[0]
        kernel = layouts[1] if len(layouts) > 1 else None
        if kernel is None and "kernel_layout" in attrs:
            kernel = "default"   # ``{"nn.conv2d": ["NHWC"]}``: the usual kernel layout
        if kernel == "default":
            kernel = _DEFAULT_KERNEL.get(target)
            if kernel is None and "kernel_layout" in attrs:
                raise IRError(f"ConvertLayout: no default kernel layout for {node.op.name} "
                              f"in data layout {target!r}; give [data_layout, kernel_layout]")
            layouts = [target, kernel] if kernel is not None else layouts
        if source == target and (kernel is None or attrs.get("kernel_layout") == kernel) \
                and not arg_states[0].converted:
            return None
        new_attrs = op_def.layout_rule(attrs, layouts if kernel is not None else target)
        out_original = attrs.get("out_layout") or source
        new_args = [_in_layout(arg_states[0], node.args[0], target, source)]
        if kernel is not None and len(node.args) > 1:
            new_args.append(_transform(_restore(arg_states[1]), attrs["kernel_layout"],
                                       new_attrs["kernel_layout"]))
            rest = node.args[2:]
        else:
            rest = node.args[1:]
        new_args.extend(_restore(self.states[a]) for a in rest)
        if "out_layout" in new_attrs:
            new_attrs = new_attrs.with_changes(out_layout="")
        call = E.Call(node.op, tuple(new_args), new_attrs, span=node.span)
        return _State(call, target, out_original)

    def _follow_rule(self, node, arg_states, rule):
        data = arg_states[0]
        new_attrs = rule(node.attrs, data.layout)
        if "out_layout" in new_attrs and new_attrs["out_layout"]:
            new_attrs = new_attrs.with_changes(out_layout="")
        args = (data.expr,) + tuple(_restore(s) for s in arg_states[1:])
        return _State(E.Call(node.op, args, new_attrs, span=node.span), data.layout,
                      data.original)

    def _batch_norm(self, node, arg_states):
        data = arg_states[0]
        letter = data.original[node.attrs["axis"] % len(data.original)]
        attrs = node.attrs.with_changes(axis=data.layout.index(letter))
        args = (data.expr,) + tuple(_restore(s) for s in arg_states[1:])
        return _BatchNormState(E.Call(node.op, args, attrs, span=node.span), data.layout,
                               data.original)

    @staticmethod
    def _concatenate(node, tuple_state):
        fields = tuple_state.fields
        lead = fields[0]
        if not all(f.converted and f.layout == lead.layout and f.original == lead.original
                   for f in fields) or not _is_plain(lead.layout):
            return None
        letter = lead.original[node.attrs["axis"] % len(lead.original)]
        attrs = node.attrs.with_changes(axis=lead.layout.index(letter))
        values = E.Tuple(tuple(f.expr for f in fields))
        return _State(E.Call(node.op, (values,), attrs, span=node.span), lead.layout,
                      lead.original)

    @staticmethod
    def _agnostic(node) -> bool:
        op_def = get_def(node.op.name)
        if op_def.pattern > OpPattern.BROADCAST:
            return False
        names = set(node.attrs.keys()) if node.attrs is not None else set()
        return names <= _SAFE_ATTRS and tensor_type(node) is not None

    def _elementwise(self, node, arg_states):
        lead = next(s for s in arg_states if s.converted)
        out_type = tensor_type(node)
        if len(out_type.shape) != layout_rank(lead.original):
            return _State(rebuild(node, (node.op,) + tuple(_restore(s) for s in arg_states)))
        args = tuple(s.expr if s.converted and s.layout == lead.layout
                     else _in_layout(s, a, lead.layout, lead.original)
                     for s, a in zip(arg_states, node.args))
        return _State(node.replace(args=args), lead.layout, lead.original)


def normalize_desired(desired) -> dict:
    """``desired`` as an ``{op name: [layouts]}`` dict.

    Args:
        desired: a data layout string (``"NHWC"``: convolutions to it, kernels in the
            default layout for it) or a dict from op name to a layout or a list of layouts.

    Raises:
        PassError: for anything else (names what was given).
    """
    if isinstance(desired, str):
        return {"nn.conv2d": [desired, "default"]}
    if not isinstance(desired, dict):
        raise PassError(f"ConvertLayout: desired_layout must be a layout string or a dict of "
                        f"op name -> layouts, got {type(desired).__name__}")
    result = {}
    for op_name, layouts in desired.items():
        items = [layouts] if isinstance(layouts, str) else layouts
        if not isinstance(op_name, str) or not isinstance(items, (list, tuple)) or not items \
                or not all(isinstance(item, str) for item in items) or len(items) > 2:
            raise PassError(f"ConvertLayout: desired_layout[{op_name!r}] must be a layout or "
                            f"[data_layout, kernel_layout], got {layouts!r}")
        result[op_name] = list(items)
    return result


def convert_layout(func: E.Function, desired_layouts: dict, accept=None) -> E.Function:
    """``func`` (type-checked) converted per ``desired_layouts`` (see the module docstring).

    Args:
        func: the function.
        desired_layouts: op name -> layouts, as for :class:`ConvertLayout`.
        accept: optional ``call -> bool``; calls it rejects keep their layout (their
            inputs are transformed back if they arrive converted).
    """
    return _Converter(normalize_desired(desired_layouts), accept).run(func)


@dataclass(frozen=True)
class ConvertLayout(ModulePass):
    """Convert ops to the desired layouts and propagate them (see the module docstring).

    Args:
        desired_layout: op name -> ``[data_layout, kernel_layout]`` or a layout (Relay ≥0.7
            calls it ``desired_layouts``); a bare string (``"NHWC"``), as Relay documents,
            converts convolutions to that data layout with its default kernel layout. A
            kernel op given one layout (``{"nn.conv2d": ["NHWC"]}``) gets the default kernel
            layout too.
    """

    desired_layout: dict
    name: ClassVar[str] = "ConvertLayout"

    def __post_init__(self):
        # Relay documents ``desired_layout`` as a string (the data layout of convolutions,
        # with their default kernel layout); newer code passes the op -> layouts dict.
        object.__setattr__(self, "desired_layout", normalize_desired(self.desired_layout))
    opt_level: ClassVar[int] = 3
    required: ClassVar[tuple] = ("InferType", "CanonicalizeOps")

    def transform_module(self, mod, ctx=None):
        """The converted, type-checked copy of ``mod``."""
        return rewrite_typed_module(mod, lambda f: convert_layout(f, self.desired_layout))
