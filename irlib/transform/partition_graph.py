"""PartitionGraph: turn each annotated region of an external compiler into a global
function (Relay's ``PartitionGraph(mod_name="default", bind_constants=True)``).

A region is what lies between ``compiler_begin(..., T)`` inputs and ``compiler_end(..., T)``
outputs (after AnnotateTarget and usually MergeCompilerRegions). For every region with
``T != "default"`` a global ``@tvmgen_<mod_name>_<T>_<function>_<id>`` (non-identifier
characters replaced by ``_``; prefix ``tvmgen_`` when ``mod_name`` is None) is added with
the attributes ``Primitive=1``, ``Inline=1``, ``Compiler=T`` and ``global_symbol``; its
parameters ``<T>_<id>_i<k>`` take the region's inputs (constant inputs are bound inside
with ``bind_constants``). A region with several outputs returns a tuple and each use
projects from one call. All remaining annotations (``default`` ones) are removed.

Before/after (``add`` annotated for ``ccompiler`` in ``@main``)::

    compiler_end(add(compiler_begin(%x, "ccompiler"), compiler_begin(%y, "ccompiler")), ...)
    def @tvmgen_default_ccompiler_main_0(%ccompiler_0_i0, %ccompiler_0_i1, Compiler="ccompiler",
                                         Primitive=1, Inline=1, global_symbol="...") { add(...) }
    def @main(%x, %y) { @tvmgen_default_ccompiler_main_0(%x, %y) }
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, Optional

from ..ir import expr as E
from ..ir.functor import children, post_order, rebuild
from .annotate_target import BEGIN, DEFAULT, END, annotation_target
from .pass_infra import ModulePass, is_skipped_function


def _sanitize(name: str) -> str:
    return re.sub(r"[^0-9A-Za-z_]", "_", name)


class _Region:
    def __init__(self, target):
        self.target = target
        self.nodes: set = set()
        self.inputs: list = []      # compiler_begin nodes, in post order
        self.outputs: list = []     # compiler_end nodes, in post order


def _find_regions(body) -> list:
    order = post_order(body)
    position = {n: i for i, n in enumerate(order)}
    owner: dict = {}
    regions: list = []
    for node in order:
        target = annotation_target(node, END)
        if target in (None, DEFAULT):
            continue
        found, stack, seen = [], [node.args[0]], set()
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            found.append(current)
            if annotation_target(current, BEGIN) is not None or isinstance(current, E.Function):
                continue
            stack.extend(children(current))
        merged = {owner[n] for n in found if n in owner and
                  annotation_target(n, BEGIN) is None}
        region = merged.pop() if merged else _Region(target)
        for other in merged:          # two outputs of one region met
            region.nodes |= other.nodes
            region.outputs += other.outputs
            regions.remove(other)
        if region not in regions:
            regions.append(region)
        region.outputs.append(node)
        for n in found:
            if annotation_target(n, BEGIN) is None:
                region.nodes.add(n)
                owner[n] = region
    for region in regions:
        begins = {n for member in region.nodes for n in children(member)
                  if annotation_target(n, BEGIN) is not None}
        region.inputs = sorted(begins, key=position.__getitem__)
        region.outputs.sort(key=position.__getitem__)
    return regions


def _strip(node):
    """``compiler_begin``/``compiler_end`` calls reduced to their argument."""
    while annotation_target(node, BEGIN) is not None or annotation_target(node, END) is not None:
        node = node.args[0]
    return node


def partition_function(func, func_name, mod_name, bind_constants, counter, new_globals):
    """``func`` with its regions replaced by calls of new globals (added to ``new_globals``).

    Args:
        func: the function.
        func_name: its global name (part of the new globals' names).
        mod_name: the module name prefix of the new globals' names, or None.
        bind_constants: inline constant arguments into the new functions.
        counter: a one-element list: the next region number, shared by the module's functions.
        new_globals: the list the new ``(GlobalVar, Function)`` pairs are added to.
    """
    regions = _find_regions(func.body)
    replacement: dict = {}
    for region in regions:
        region_id = counter[0]
        counter[0] += 1
        prefix = "tvmgen_" if mod_name is None else f"tvmgen_{mod_name}_"
        name = _sanitize(f"{prefix}{region.target}_{func_name}_{region_id}")
        params, inner, args = [], {}, []
        for begin_node in region.inputs:
            value = begin_node.args[0]
            if bind_constants and isinstance(_strip(value), E.Constant):
                inner[begin_node] = _strip(value)
                continue
            param = E.Var(f"{region.target}_{region_id}_i{len(params)}",
                          begin_node._checked_type)
            params.append(param)
            inner[begin_node] = param
            args.append(begin_node)
        for node in post_order(E.Tuple(tuple(o.args[0] for o in region.outputs))):
            if node in inner or node not in region.nodes:
                continue
            inner[node] = rebuild(node, tuple(inner.get(c, c) for c in children(node)))
        results = [inner[o.args[0]] for o in region.outputs]
        body = results[0] if len(results) == 1 else E.Tuple(tuple(results))
        attrs = {"Primitive": 1, "Inline": 1, "Compiler": region.target, "global_symbol": name}
        gvar = E.GlobalVar(name)
        new_globals.append((gvar, E.Function(params, body, None, (), attrs)))
        replacement[id(region)] = (gvar, args)
        for k, output in enumerate(region.outputs):
            replacement[output] = (id(region), k if len(results) > 1 else None)
    memo: dict = {}
    calls: dict = {}
    for node in post_order(func.body):
        if node in replacement:
            key, index = replacement[node]
            if key not in calls:
                gvar, args = replacement[key]
                calls[key] = E.Call(gvar, tuple(memo[a] for a in args))
            memo[node] = calls[key] if index is None else E.TupleGetItem(calls[key], index)
            continue
        rebuilt = rebuild(node, tuple(memo[c] for c in children(node)))
        memo[node] = _strip(rebuilt)
    return func.replace(body=memo[func.body])


@dataclass(frozen=True)
class PartitionGraph(ModulePass):
    """Lift external-compiler regions into globals (see the module docstring).

    Args:
        mod_name: the module name in the global names (None: no module part).
        bind_constants: bind constant inputs into the lifted functions.
    """

    mod_name: Optional[str] = "default"
    bind_constants: bool = True
    name: ClassVar[str] = "PartitionGraph"
    opt_level: ClassVar[int] = 0

    def transform_module(self, mod, ctx=None):
        """The partitioned, type-checked module."""
        from ..typeinf import infer_module
        mod = infer_module(mod)
        new_mod = mod.copy()
        counter, new_globals = [0], []
        for gvar, func in mod.items():
            if is_skipped_function(func):
                continue
            new_mod[gvar] = partition_function(func, gvar.name_hint, self.mod_name,
                                               self.bind_constants, counter, new_globals)
        for gvar, func in new_globals:
            new_mod[gvar] = func
        return infer_module(new_mod)
