"""Calling one registered op directly in tests: its numpy implementation and its relation."""

from __future__ import annotations

from irlib.op.registry import evaluate, get_def


def run(name, *inputs, **attrs):
    """``evaluate`` op ``name`` on numpy ``inputs`` with keyword attributes."""
    return evaluate(name, list(inputs), get_def(name).make_attrs(attrs))


def relation(name, arg_types, **attrs):
    """The result type op ``name``'s type relation gives for ``arg_types``."""
    op_def = get_def(name)
    return op_def.type_rel(arg_types, op_def.make_attrs(attrs))
