"""FuseOps: group operator calls into ``Primitive=1`` functions (Relay's ``FuseOps``).

The grouping is Relay's (see :mod:`irlib.transform._fusion_graph`): elementwise, broadcast
and injective chains fuse into a following injective op or reduction and into a preceding
OUT_ELEMWISE_FUSABLE anchor (``nn.conv2d``, ``nn.dense``, pooling) over the post-dominator
tree; opaque ops (and ``annotation.stop_fusion``, which is removed) are barriers; a group
holds at most ``relay.FuseOps.max_depth`` (PassContext config, default 256) nodes. With
fusion level 0 every op call gets a function of its own.

Each group becomes a function ``fn (%p0, %p1, ..., Primitive=1) { ... }`` called at the
group's place with the values flowing in. Its parameters are named ``p0, p1, ...`` in the
order the arguments are first met (left to right, depth first); scalar constants of simple
dtypes fused into the group stay inside, every other input is a parameter. A group of
reshape-like ops only also gets ``relay.reshape_only=1``. Existing ``Primitive`` (and
``Compiler``) functions are left as they are, so running the pass twice changes nothing.

Before/after::

    fn (%x) { squeeze(exp(add(%x, 1f))) }
    fn (%x) {
      %0 = fn (%p0, Primitive=1) { squeeze(exp(add(%p0, 1f))) };
      %0(%x)
    }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import expr as E
from ..ir.functor import children, post_order, rebuild
from ..ir.module import IRModule
from ..op.registry import get_def
from ._fusion_graph import build_graph, is_opaque_function
from ._fusion_partition import partition
from .pass_infra import ModulePass, PassContext, is_skipped_function, module_is_typed

MAX_DEPTH_KEY = "relay.FuseOps.max_depth"
_RESHAPE_OPS = frozenset({"reshape", "squeeze", "expand_dims", "contrib_reverse_reshape",
                          "reverse_reshape"})
_STOP_FUSION = "annotation.stop_fusion"


class _GroupInfo:
    __slots__ = ("params", "arguments", "slot", "ops")

    def __init__(self):
        self.params, self.arguments, self.slot, self.ops = [], [], {}, []

    def param_for(self, value, ty) -> E.Var:
        param = self.slot.get(value)
        if param is None:
            param = E.Var(f"p{len(self.params)}", ty)
            self.slot[value] = param
            self.params.append(param)
            self.arguments.append(value)
        return param


def _is_non_computational(op: E.Op) -> bool:
    return bool(get_def(op.name).get_attr("TNonComputational", False))


class _FuseMutator:
    """Rewrites an expression given the group of every node (memoised, no recursion).

    The walk is :func:`~irlib.ir.functor.post_order` over the expression with one extra
    item per argument edge of a grouped node, ``("arg", node, index, argument)``, whose only
    child is the argument: so a group's parameter for argument i is created right after
    argument i's subtree is rewritten and before argument i + 1's is entered, which is
    Relay's parameter order (a plain bottom-up mutator would see every argument rewritten
    before it could create the first parameter).
    """

    def __init__(self, graph, groups):
        self.group_of = {node: groups[i] for i, node in enumerate(graph.nodes)}
        self.info: dict = {}
        self.memo: dict = {}
        self.pending: dict = {}

    def group(self, node):
        return self.group_of[node].find_root()

    def _is_grouped(self, node) -> bool:
        kind = type(node)
        if kind is E.Call:
            return isinstance(node.op, E.Op) and not _is_non_computational(node.op)
        if kind is E.Tuple:
            # A tuple that is the result of its own group stays a plain tuple.
            return self.graph_nodes[self.group(node).root_index] is not node
        return kind is E.TupleGetItem

    def _steps(self, item) -> tuple:
        """The items to finish before ``item`` (an expression node or an argument edge)."""
        if type(item) is tuple:
            return (item[3],)
        kind = type(item)
        if kind is E.Function and is_opaque_function(item) or kind is E.Op:
            return ()
        if kind is E.Call and isinstance(item.op, E.Op) and item.op.name == _STOP_FUSION:
            return (item.args[0],)
        if self._is_grouped(item):
            operands = item.args if kind is E.Call else children(item)
            return tuple(("arg", item, index, arg) for index, arg in enumerate(operands))
        return children(item)

    def run(self, expr, graph_nodes):
        self.graph_nodes = graph_nodes
        memo, pending = self.memo, self.pending
        for item in post_order(expr, children_of=self._steps):
            if type(item) is tuple:
                _, node, _, arg = item
                pending.setdefault(node, []).append(self._new_argument(arg, self.group(node)))
                continue
            node, kind = item, type(item)
            if kind is E.Function and is_opaque_function(node) or kind is E.Op:
                memo[node] = node
            elif kind is E.Call and isinstance(node.op, E.Op) and node.op.name == _STOP_FUSION:
                memo[node] = memo[node.args[0]]
            elif self._is_grouped(node):
                memo[node] = self._finish(node, pending.pop(node, []))
            else:
                memo[node] = rebuild(node, tuple(memo[c] for c in children(node)))
        return memo[expr]

    def _new_argument(self, arg, group):
        new_arg = self.memo[arg]
        arg_group = self.group_of.get(arg)
        if arg_group is not None and arg_group.find_root() is group:
            return new_arg
        info = self.info.setdefault(group, _GroupInfo())
        return info.param_for(new_arg, arg._checked_type)

    def _finish(self, node, new_args):
        group = self.group(node)
        kind = type(node)
        if kind is E.Call:
            new_node = node.replace(args=tuple(new_args))
            self.info.setdefault(group, _GroupInfo()).ops.append(node.op.name)
        elif kind is E.Tuple:
            new_node = node.replace(fields=tuple(new_args))
        else:
            new_node = node.replace(tuple_value=new_args[0])
        if self.graph_nodes[group.root_index] is not node:
            return new_node
        if kind is E.TupleGetItem and self.group(node.tuple_value) is not group:
            # An isolated projection of an opaque multi-output op stays outside any function.
            return node.replace(tuple_value=self.memo[node.tuple_value])
        return self._make_function(group, node, new_node)

    def _make_function(self, group, original, body):
        info = self.info.setdefault(group, _GroupInfo())
        attrs = {"Primitive": 1 if info.ops else 0}
        if info.ops and all(name in _RESHAPE_OPS for name in info.ops):
            attrs["relay.reshape_only"] = 1
        func = E.Function(tuple(info.params), body, original._checked_type, (), attrs)
        return E.Call(func, tuple(info.arguments), span=original.span)


def fuse_expr(expr: E.Expr, opt_level: int = 2, max_depth: int = 256) -> E.Expr:
    """``expr`` (typed) with its op calls grouped into ``Primitive`` functions.

    Args:
        expr: a type-checked expression (usually a function).
        opt_level: the fusion level (0: one op per function).
        max_depth: the most nodes in one group.

    Returns:
        The rewritten expression (untyped where it changed).
    """
    graph = build_graph(expr)
    groups = partition(graph, opt_level, max_depth)
    return _FuseMutator(graph, groups).run(expr, graph.nodes)


@dataclass(frozen=True)
class FuseOps(ModulePass):
    """Fuse operators into ``Primitive=1`` functions (see the module docstring).

    Args:
        fuse_opt_level: the fusion level; -1 (the default) takes the PassContext's opt_level.
    """

    fuse_opt_level: int = -1
    name: ClassVar[str] = "FuseOps"
    opt_level: ClassVar[int] = 0
    required: ClassVar[tuple] = ("InferType",)

    def transform_module(self, mod: IRModule, ctx=None) -> IRModule:
        """The fused, type-checked copy of ``mod``."""
        from ..typeinf import infer_module
        ctx = ctx if ctx is not None else PassContext.current()
        level = self.fuse_opt_level if self.fuse_opt_level >= 0 else ctx.opt_level
        max_depth = int(ctx.config.get(MAX_DEPTH_KEY, 256))
        if not module_is_typed(mod):
            mod = infer_module(mod)
        new_mod = mod.copy()
        changed = False
        for gvar, func in mod.items():
            if is_skipped_function(func) or func.get_attr("Primitive") is not None:
                continue
            new_func = fuse_expr(func, level, max_depth)
            if new_func is not func:
                new_mod[gvar] = new_func
                changed = True
        return infer_module(new_mod) if changed else new_mod
