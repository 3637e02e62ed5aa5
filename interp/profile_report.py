"""The debug executor's profile: per-node records, FLOP counts and the printed table.

:class:`NodeProfile` is one executed graph node (its fused group's op kinds, output shapes,
median time, share of the total and, for groups that contain a convolution, a dense layer
or a matrix product, the FLOPs of those ops and the rate reached). :class:`ProfileReport`
holds the rows of one profiled graph; ``str(report)`` / :meth:`ProfileReport.table` is the
text table, :meth:`ProfileReport.records` the same as plain dicts (JSON-ready) and
:meth:`ProfileReport.by_op` the time per anchor op kind.

:func:`group_flops` counts the multiply-adds (2 FLOPs each) of the conv / dense / matmul
calls in a primitive function from the types of their arguments, with symbolic dims
substituted by the run's sizes. Elementwise epilogues (bias, ReLU, residual add) are not
counted: the rate is that of the GEMM-shaped work, comparable with a BLAS's GFLOP/s.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from irlib.ir import expr as E
from irlib.ir.dims import substitute_dim
from irlib.ir.functor import post_order

__all__ = ["NodeProfile", "ProfileReport", "group_flops", "group_ops", "FLOP_OPS"]

_CONV_OPS = {"nn.conv1d": "OIW", "nn.conv2d": "OIHW", "nn.conv3d": "OIDHW"}
_CONV_T_OPS = {"nn.conv1d_transpose": "IOW", "nn.conv2d_transpose": "IOHW",
               "nn.conv3d_transpose": "IODHW"}
_MATMUL_OPS = {"nn.dense", "nn.matmul", "nn.batch_matmul", "matmul"}
# A Winograd convolution counts the FLOPs of the direct 3x3 convolution it replaces (so its
# GFLOP/s is the effective rate, comparable with a GEMM-based conv of the same layer).
_WINOGRAD_OPS = {"nn.contrib_conv2d_winograd_without_weight_transform"}
FLOP_OPS = (frozenset(_CONV_OPS) | frozenset(_CONV_T_OPS) | frozenset(_MATMUL_OPS)
            | frozenset(_WINOGRAD_OPS))
"""The ops whose FLOPs :func:`group_flops` counts (convolutions, dense, matrix products)."""


def group_ops(func) -> tuple:
    """The op names called in a primitive function, in execution order.

    Args:
        func: an :class:`~irlib.ir.expr.Function` (a fused group), or None.

    Returns:
        A tuple of op names (``()`` for None or a function without op calls).
    """
    if func is None:
        return ()
    return tuple(node.op.name for node in post_order(func.body)
                 if isinstance(node, E.Call) and isinstance(node.op, E.Op))


def _shape(ty, bindings: dict) -> tuple | None:
    """The concrete shape of a tensor type (symbolic dims bound), or None if unknown."""
    shape = getattr(ty, "shape", None)
    if shape is None:
        return None
    dims = []
    for dim in shape:
        value = substitute_dim(dim, bindings)
        if not isinstance(value, (int, np.integer)):
            return None
        dims.append(int(value))
    return tuple(dims)


def _type_of(node):
    return getattr(node, "_checked_type", None) or getattr(node, "checked_type", None)


def _extent(shape: tuple, layout: str, letter: str) -> int:
    """The total extent of axis ``letter`` in ``layout`` (with its blocked sub-axis, as in
    ``OIHW16o``), or the first axis when the layout does not fit the shape."""
    axes = [c for c in layout if c.isalpha()]
    if len(axes) != len(shape) or letter not in axes:
        return shape[0]
    extent = shape[axes.index(letter)]
    if letter.lower() in axes:
        extent *= shape[axes.index(letter.lower())]
    return extent


def _call_flops(call, bindings: dict) -> float | None:
    """FLOPs (2 per multiply-add) of one conv / dense / matmul call, or None if a shape
    is unknown."""
    name = call.op.name
    attrs = call.attrs if call.attrs is not None else {}
    out = _shape(_type_of(call), bindings)
    data = _shape(_type_of(call.args[0]), bindings)
    weight = _shape(_type_of(call.args[1]), bindings)
    if out is None or data is None or weight is None or not weight:
        return None
    if name in _CONV_OPS:
        layout = attrs.get("kernel_layout") or _CONV_OPS[name]
        per_output = int(np.prod(weight)) // max(_extent(weight, layout, "O"), 1)
        return 2.0 * float(np.prod(out)) * per_output
    if name in _WINOGRAD_OPS:          # weight (a, a, O, I), or (a, a, I, O) for HWIO
        channels = weight[3] if (attrs.get("kernel_layout") or "OIHW") == "OIHW" else weight[2]
        return 2.0 * float(np.prod(out)) * 9 * channels
    if name in _CONV_T_OPS:
        layout = attrs.get("kernel_layout") or _CONV_T_OPS[name]
        per_input = int(np.prod(weight)) // max(_extent(weight, layout, "I"), 1)
        return 2.0 * float(np.prod(data)) * per_input
    if not data:
        return None
    transpose_a = bool(attrs.get("transpose_a", False)) if name != "nn.dense" else False
    depth = data[-2] if transpose_a and len(data) >= 2 else data[-1]
    return 2.0 * float(np.prod(out)) * depth


def group_flops(func, bindings: dict | None = None) -> float | None:
    """FLOPs of the convolutions, dense layers and matrix products in a fused group.

    Args:
        func: the primitive :class:`~irlib.ir.expr.Function` (type-checked), or None.
        bindings: ``{size variable name: int}`` for a graph with symbolic dims.

    Returns:
        The FLOP count (a multiply-add counts 2), or None when the group has none of the
        :data:`FLOP_OPS` or one of their shapes cannot be made concrete.
    """
    if func is None:
        return None
    total, found = 0.0, False
    for node in post_order(func.body):
        if isinstance(node, E.Call) and isinstance(node.op, E.Op) \
                and node.op.name in FLOP_OPS and len(node.args) >= 2:
            flops = _call_flops(node, bindings or {})
            if flops is None:
                return None
            total += flops
            found = True
    return total if found else None


@dataclass
class NodeProfile:
    """One executed graph node in a profile.

    Attributes:
        index: the node's index in the graph JSON's ``nodes`` (what ``debug_get_output``
            takes).
        name: the node name.
        func_name: the library function it calls.
        ops: the op kinds of its fused group, in execution order (empty when the library
            does not carry the IR, e.g. a dict of Python callables).
        shapes: the shape of each output (at the run's sizes for a symbolic graph).
        time_ms: the median of its wall times over the profiled runs, in ms.
        percent: ``time_ms`` as a percentage of the sum over all nodes.
        flops: FLOPs of its conv / dense / matmul ops (None if it has none).
    """

    index: int
    name: str
    func_name: str
    ops: tuple
    shapes: tuple
    time_ms: float
    percent: float = 0.0
    flops: float | None = None
    times_ms: list = field(default_factory=list, repr=False)

    @property
    def gflops(self) -> float | None:
        """The rate of the counted FLOPs (GFLOP/s) at the median time, or None."""
        if self.flops is None or self.time_ms <= 0:
            return None
        return self.flops / (self.time_ms * 1e6)

    @property
    def anchor(self) -> str:
        """The group's main op: its first FLOP-counted op, else its last op (or the
        function name when the ops are unknown)."""
        for op in self.ops:
            if op in FLOP_OPS:
                return op
        return self.ops[-1] if self.ops else self.func_name


@dataclass
class ProfileReport:
    """The per-node profile of a graph (what ``GraphModuleDebug.profile`` returns).

    Attributes:
        rows: one :class:`NodeProfile` per executed node, in execution order.
        repeat: the number of profiled runs each median is taken over.
        run_ms: the median wall time of a whole profiled run (the node loop, timing
            overhead included), in ms.
    """

    rows: list
    repeat: int
    run_ms: float

    @property
    def total_ms(self) -> float:
        """The sum of the nodes' median times, in ms."""
        return float(sum(row.time_ms for row in self.rows))

    @property
    def total_flops(self) -> float:
        """The sum of the counted FLOPs over the nodes."""
        return float(sum(row.flops or 0.0 for row in self.rows))

    def records(self) -> list:
        """The rows as dicts (``index``, ``name``, ``func_name``, ``ops``, ``shapes``,
        ``time_ms``, ``percent``, ``flops``, ``gflops``), ready for JSON."""
        out = []
        for row in self.rows:
            record = asdict(row)
            record.pop("times_ms")
            record["ops"] = list(row.ops)
            record["shapes"] = [list(s) for s in row.shapes]
            record["gflops"] = row.gflops
            out.append(record)
        return out

    def by_op(self) -> list:
        """``(anchor op, number of nodes, total ms, percent)`` per anchor op kind, slowest
        kind first."""
        kinds: dict = {}
        for row in self.rows:
            count, total = kinds.get(row.anchor, (0, 0.0))
            kinds[row.anchor] = (count + 1, total + row.time_ms)
        whole = self.total_ms or 1.0
        return sorted(((op, n, t, 100.0 * t / whole) for op, (n, t) in kinds.items()),
                      key=lambda item: -item[2])

    def table(self, top: int | None = None, sort: bool = False) -> str:
        """The profile as a text table.

        Args:
            top: print only this many rows (the slowest when ``sort``), then a count of
                the rest.
            sort: order the rows by time, slowest first (default: execution order).

        Returns:
            The table: one line per node (index, name, op kinds, output shape, time, %,
            GFLOP/s), a total line, and the time per anchor op kind.
        """
        rows = sorted(self.rows, key=lambda r: -r.time_ms) if sort else list(self.rows)
        shown = rows if top is None else rows[:top]
        lines = [f"{'#':>4}  {'node':<44} {'ops':<34} {'shape':<20} {'ms':>9} "
                 f"{'%':>6} {'GFLOP/s':>8}"]
        for row in shown:
            ops = ",".join(op.replace("nn.", "") for op in row.ops) or "-"
            shape = " ".join("x".join(str(d) for d in s) or "scalar" for s in row.shapes)
            rate = f"{row.gflops:8.1f}" if row.gflops is not None else f"{'-':>8}"
            lines.append(f"{row.index:>4}  {_cut(row.name, 44):<44} {_cut(ops, 34):<34} "
                         f"{_cut(shape, 20):<20} {row.time_ms:>9.4f} {row.percent:>6.2f} "
                         f"{rate}")
        if len(shown) < len(rows):
            lines.append(f"      ... {len(rows) - len(shown)} more node(s)")
        flops = self.total_flops
        rate = f", {flops / (self.total_ms * 1e6):.1f} GFLOP/s on {flops / 1e9:.4g} " \
               f"GFLOP" if flops and self.total_ms > 0 else ""
        lines.append(f"total: {len(self.rows)} node(s), {self.total_ms:.4f} ms summed "
                     f"(whole run {self.run_ms:.4f} ms, median of {self.repeat}){rate}")
        for op, count, total, percent in self.by_op():
            lines.append(f"  {op:<28} {count:>4} node(s) {total:>10.4f} ms {percent:>6.2f} %")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."
