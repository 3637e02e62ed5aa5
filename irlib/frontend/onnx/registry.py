"""The converter table: ONNX ``(domain, op_type)`` -> converters by the opset they start at.

A converter module registers one function per op and per semantic version::

    @converter("Squeeze", since=1)        # axes is an attribute
    def _squeeze_v1(ctx, inputs, attrs): ...

    @converter("Squeeze", since=13)       # axes became an optional input
    def _squeeze_v13(ctx, inputs, attrs): ...

The importer picks, for a model importing opset ``v`` of the op's domain, the converter with
the largest ``since <= v`` (ONNX's own versioning rule). A converter receives the
:class:`~irlib.frontend.onnx.importer.GraphContext`, the input expressions (``None`` for an
omitted optional input) and the decoded attributes, and returns one expression or a list
(one per node output).
"""

from __future__ import annotations

_CONVERTERS: dict = {}

#: Domains treated as the default ONNX domain.
DEFAULT_DOMAINS = ("", "ai.onnx")


def _key(domain: str, op_type: str) -> tuple:
    return ("" if domain in DEFAULT_DOMAINS else domain, op_type)


def converter(op_type: str, since: int = 1, domain: str = ""):
    """Decorator registering a converter for ``op_type`` from opset ``since`` on.

    Args:
        op_type: the ONNX op type (``"Conv"``).
        since: the first opset version whose semantics this converter implements.
        domain: the operator domain (``""`` for the default domain).

    Returns:
        The decorator (it returns the function unchanged).
    """
    def register(function):
        entries = _CONVERTERS.setdefault(_key(domain, op_type), [])
        entries.append((since, function))
        entries.sort(key=lambda entry: entry[0])
        return function
    return register


def lookup(domain: str, op_type: str, opset: int):
    """The converter for ``op_type`` at ``opset``, or None when there is none.

    Args:
        domain: the node's domain.
        op_type: the node's op type.
        opset: the opset version the model imports for that domain.

    Returns:
        The converter function, or None.
    """
    entries = _CONVERTERS.get(_key(domain, op_type))
    if not entries:
        return None
    chosen = None
    for since, function in entries:
        if since <= opset:
            chosen = function
    # NOTE: a model may declare an opset older than our first entry (e.g. opset 1 models of an
    # op we first implement from 6); the oldest semantics we know are the best guess.
    return chosen if chosen is not None else entries[0][1]


def supported_ops(domain: str = "") -> list:
    """Sorted op types with a converter in ``domain``."""
    wanted = "" if domain in DEFAULT_DOMAINS else domain
    return sorted(op for dom, op in _CONVERTERS if dom == wanted)
