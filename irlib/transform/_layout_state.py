"""The values ConvertLayout and AlterOpLayout pass around: a rewritten expression with the
layout it is in now and the layout the original program expects (:class:`_State` and its
tuple / batch-norm variants), and the transforms between the two.
"""

from __future__ import annotations

from ._typed import op, tensor_type


class _State:
    """A rewritten value: its expression, the layout it is in now and the layout the
    original program expects (both None for a value whose layout was never changed)."""

    __slots__ = ("expr", "layout", "original", "restored")

    def __init__(self, expr, layout=None, original=None):
        self.expr, self.layout, self.original, self.restored = expr, layout, original, None

    @property
    def converted(self) -> bool:
        return self.layout is not None and self.layout != self.original


def layout_rank(layout: str) -> int:
    """The number of axes of ``layout`` (``NCHW16c`` has 5)."""
    return sum(c.isalpha() for c in layout)


def _is_plain(layout: str) -> bool:
    return layout.isalpha() and layout.isupper()


def _transform(expr, source, target):
    if source == target:
        return expr
    return op("layout_transform", expr, src_layout=source, dst_layout=target)


def _restore(state: _State):
    """The value in the original program's layout (one shared transform per value)."""
    if not state.converted:
        return state.expr
    if state.restored is None:
        state.restored = _transform(state.expr, state.layout, state.original)
    return state.restored


def _in_layout(state: _State, node, layout: str, original: str):
    """``node``'s value (rewritten as ``state``) in ``layout``; ``original`` is the layout the
    unconverted value is in."""
    if state.converted:
        return _transform(state.expr, state.layout, layout)
    ty = tensor_type(node)
    full = layout_rank(original)
    rank = len(ty.shape) if ty is not None else full
    if rank == 0:
        return state.expr
    value = state.expr
    if rank < full:
        value = op("expand_dims", value, axis=0, num_newaxis=full - rank)
    return _transform(value, original, layout)


class _TupleState(_State):
    """A tuple with converted fields: ``expr`` has them restored; ``fields`` keeps their
    states for a layout-aware consumer (``concatenate``)."""

    __slots__ = ("fields",)

    def __init__(self, expr, fields):
        super().__init__(expr)
        self.fields = fields


class _BatchNormState(_State):
    """A converted ``nn.batch_norm`` call: its field 0 stays in the new layout."""

    __slots__ = ()
    batch_norm = True
    converted = False    # the tuple itself is layout-free; its consumers restore nothing
