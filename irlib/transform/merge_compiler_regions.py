"""MergeCompilerRegions: merge neighbouring regions of the same external compiler (Relay's
``MergeCompilerRegions``), on the output of AnnotateTarget.

An *annotated node* is a call (or tuple, projection) whose operands are
``compiler_begin(..., t)``. Two annotated nodes of the same non-default target joined by a
``compiler_begin(compiler_end(producer, t), t)`` edge are merged into one region unless that
would create a cycle: a dependency path from one region to the other through anything
outside both. Merging removes the ``compiler_end``/``compiler_begin`` pair between them.

Before/after::

    %0 = compiler_end(abs(compiler_begin(%x, "t")), "t");
    compiler_end(nn.relu(compiler_begin(%0, "t")), "t")
    compiler_end(nn.relu(abs(compiler_begin(%x, "t"))), "t")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import expr as E
from ..ir.functor import children, post_order, rebuild
from ._rewrite import map_functions
from .annotate_target import BEGIN, DEFAULT, END, annotation_target
from .pass_infra import ModulePass


def _operands(node):
    if type(node) is E.Call:
        return node.args
    if type(node) is E.Tuple:
        return node.fields
    if type(node) is E.TupleGetItem:
        return (node.tuple_value,)
    return ()


def _node_target(node):
    """The target of an annotated node (all operands begin with one compiler), else None."""
    operands = _operands(node)
    if not operands or annotation_target(node, BEGIN) or annotation_target(node, END):
        return None
    targets = {annotation_target(o, BEGIN) for o in operands}
    return targets.pop() if len(targets) == 1 and None not in targets else None


class _Regions:
    def __init__(self, body):
        self.order = post_order(body)
        self.users = {n: [] for n in self.order}
        for node in self.order:
            for child in children(node):
                self.users[child].append(node)
        self.target = {n: _node_target(n) for n in self.order}
        self.parent = {n: n for n in self.order if self.target[n] not in (None, DEFAULT)}
        self.members = {n: {n} for n in self.parent}

    def find(self, node):
        while self.parent[node] is not node:
            self.parent[node] = self.parent[self.parent[node]]
            node = self.parent[node]
        return node

    def creates_cycle(self, a, b) -> bool:
        inside = self.members[a] | self.members[b]
        stack = [(n, False) for n in self.members[a]]
        seen = set()
        while stack:
            node, outside = stack.pop()
            if (node, outside) in seen:
                continue
            seen.add((node, outside))
            for user in self.users[node]:
                wrapper = annotation_target(user, BEGIN) is not None or \
                    annotation_target(user, END) is not None
                if user in inside:
                    if outside and user in self.members[b]:
                        return True
                    stack.append((user, outside))
                else:
                    stack.append((user, outside or not wrapper))
        return False

    def merge_all(self):
        for node in self.order:
            target = self.target[node]
            if target in (None, DEFAULT):
                continue
            for operand in _operands(node):
                producer = _producer(operand, target)
                if producer is None or self.target.get(producer) != target:
                    continue
                a, b = self.find(producer), self.find(node)
                if a is b or self.creates_cycle(a, b) or self.creates_cycle(b, a):
                    continue
                self.parent[b] = a
                self.members[a] |= self.members.pop(b)

    def same_region(self, producer, node) -> bool:
        return producer in self.parent and node in self.parent and \
            self.find(producer) is self.find(node)


def _producer(operand, target):
    """``p`` for an operand ``compiler_begin(compiler_end(p, target), target)``."""
    if annotation_target(operand, BEGIN) != target:
        return None
    inner = operand.args[0]
    return inner.args[0] if annotation_target(inner, END) == target else None


def merge_compiler_regions(func: E.Function) -> E.Function:
    """``func`` (annotated) with neighbouring same-target regions merged."""
    regions = _Regions(func.body)
    regions.merge_all()
    memo: dict = {}
    for node in regions.order:
        target = regions.target[node]
        new_children = []
        for child in children(node):
            producer = _producer(child, target) if target not in (None, DEFAULT) else None
            if producer is not None and regions.same_region(producer, node):
                new_children.append(memo[producer])
            else:
                new_children.append(memo[child])
        memo[node] = rebuild(node, tuple(new_children))
    return func.replace(body=memo[func.body])


@dataclass(frozen=True)
class MergeCompilerRegions(ModulePass):
    """Merge neighbouring regions of one compiler (see the module docstring)."""

    name: ClassVar[str] = "MergeCompilerRegions"
    opt_level: ClassVar[int] = 0

    def transform_module(self, mod, ctx=None):
        """The merged, type-checked copy of ``mod``."""
        from ..typeinf import infer_module
        return infer_module(map_functions(mod, merge_compiler_regions))
