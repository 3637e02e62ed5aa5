"""Loop nests of generated kernels: the text of the ``for`` headers around a loop body.

The emitter (:mod:`jitkernels.codegen.generator`) writes the body of a fused group for one
output element, as ``t<k> = ...`` lines and a final store that read the loop indices
``i0, i1, ...``; this module wraps such bodies in loops:

* :func:`loop_nest`: one nest over a whole output, the leading dims collapsed into a
  ``prange`` when the output is large (:func:`is_parallel`);
* :func:`hoisted_nest`: a serial nest with each body line placed in the outermost loop where
  the indices it reads are bound (loop-invariant code motion done on the source);
* :func:`split_nest`: one nest whose loops over the dims before ``axis`` are shared and
  which, inside them, runs one sub-nest per *part* of ``axis`` (a range of it with its own
  body). A concatenation along ``axis`` is written this way, one part per field, so each
  part's body reads one field with no per-element choice and its inner loop is a
  contiguous run that vectorises.

Every function returns source lines indented for a function body (depth 1 is 4 spaces).
"""

from __future__ import annotations

import math
import os
import re

from irlib.ir.dims import DimExpr

from .dim_source import dim_source

PARALLEL_MIN_ELEMENTS = 1 << 20
"""Outputs with at least this many elements are written by a ``prange`` loop. The serial
nest vectorises and runs near memory speed (measured: a conv epilogue of 200K float32 in
0.022 ms serial, 0.05 ms as a ``prange``, the pool's wake-up dominating); and every parallel
region between two BLAS calls risks the thread pools' spin fight (see
:mod:`jitkernels.threads`). So only very large outputs go parallel."""

PARALLEL_MIN_TASKS = 16
"""Leading output dims are collapsed into one ``prange`` index until it has this many tasks
(a few per thread, for balance)."""

RUNTIME_INNER_BOUND = os.environ.get("IRLIB_CODEGEN_RUNTIME_INNER", "1") != "0"
"""Whether a static nest's innermost loop may read its trip count from the output array's
shape at run time (:func:`inner_bound`); ``IRLIB_CODEGEN_RUNTIME_INNER=0`` (read at
import) keeps every literal."""

INNER_BOUND_MIN = 8
"""Innermost loops shorter than this keep their literal trip count (no vector body to
reach: measured neutral)."""

UNROLL_LIMIT = 248
"""LLVM (numba 0.68's) unrolls an innermost loop of a literal trip count completely when
``trip * body_cost(body)`` is at most about this; see :func:`inner_bound`."""

_READ = re.compile(r"= (?:a\d+|anchor)\[")
_OPERATION = re.compile(r"\bmax\(|\bmin\(|\bmath\.|\b_\w+32\(| [-+*/] |\bif\b|\*\*|\(-")
_INDEX_NAME = re.compile(r"\bi\d+\b")
_LOCAL_NAME = re.compile(r"\bt\d+\b")


def _src(dim) -> str:
    """A dim as generated source: an int literal, or an expression over the size args."""
    return str(dim) if isinstance(dim, int) else dim_source(dim)


def is_parallel(shape: tuple) -> bool:
    """Whether an output of ``shape`` is written by a ``prange`` nest: static shapes of at
    least :data:`PARALLEL_MIN_ELEMENTS`; a symbolic shape never (its size is unknown when
    the kernel is generated, and one kernel serves every size).

    Args:
        shape: the output's dims (ints, or :class:`DimExpr` for symbolic ones).
    """
    if any(isinstance(d, DimExpr) for d in shape):
        return False
    return math.prod(shape) >= PARALLEL_MIN_ELEMENTS


def _prange_header(shape: tuple, stop: int) -> tuple:
    """``(lines, split)``: a ``prange`` over the leading dims of ``shape`` (at most ``stop``
    of them, collapsed until the task count reaches :data:`PARALLEL_MIN_TASKS`) binding
    their indices ``i0 .. i<split-1>`` at depth 2."""
    tasks, split = 1, 0
    while split < stop and tasks < PARALLEL_MIN_TASKS:
        tasks *= shape[split]
        split += 1
    # numba may type a prange index as unsigned, and unsigned-with-signed arithmetic as
    # float: the index is made a signed int first.
    lines = [f"    for task in prange({tasks}):", "        p = np.int64(task)"]
    inner = 1
    for k in reversed(range(split)):
        index = "p" if inner == 1 else f"(p // {inner})"
        value = "0" if shape[k] == 1 else (f"{index} % {shape[k]}" if k else index)
        lines.append("        " + f"i{k} = {value}")
        inner *= shape[k]
    return lines, split


def body_cost(body: list) -> int:
    """A loop body's weight for LLVM's full-unroll decision: ``1 + reads + 2 * operations``
    (array reads, then arithmetic operators, ``max``/``min``, ``math`` calls and choices
    in the ``t<k> = ...`` lines; casts and the store are free). Fitted to the trip counts
    where the literal loop stopped being slow (numba 0.68, 2-core AVX-512 EPYC, float32):
    copy up to 96, ``relu`` 48, ``add, relu`` 32, ``multiply, add, relu`` 24, four
    operations 16.

    Args:
        body: the loop body's lines (``t<k> = ...``, then the output store).
    """
    reads = operations = 0
    for line in body:
        name, _, expression = line.partition(" = ")
        if not name.startswith("t"):
            continue
        if _READ.search(line):
            reads += 1
        else:
            operations += len(_OPERATION.findall(expression))
    return 1 + reads + 2 * operations


def inner_bound(out_name: str, out_shape: tuple, nest_shape: tuple, body: list,
                start: int = 0):
    """``(dim, source)``: the innermost loop's dim and its trip count as a run-time value
    (read from the output's shape), or None to keep the literal.

    With a literal trip count LLVM unrolls a short innermost loop completely (a
    channels-last row of 32 channels), and since numba cannot tell it that the output
    does not alias the inputs, the unrolled loads and stores stay scalar. Read from the
    output's shape, the count is unknown when compiling, so the loop is vectorised behind
    one run-time overlap check: 2-3x faster in the unrolled range (DenseNet's
    ``add, relu`` of 1x56x56x32 0.031 -> 0.011 ms, a 64-channel concatenation copy 0.11 ->
    0.036), but 5-15% slower past it (the check and the remainder loop). So the run-time
    count is used where the literal would be unrolled: ``trip * body_cost(body) <=``
    :data:`UNROLL_LIMIT`, trips of at least :data:`INNER_BOUND_MIN`, when
    :data:`RUNTIME_INNER_BOUND` is on.

    Args:
        out_name: the output array's argument name.
        out_shape: the output's static dims.
        nest_shape: the dims of the nest (the output's, or a part's along a split axis).
        body: the loop body (see :func:`body_cost`).
        start: the first dim the nest loops over (the dims before it are bound outside).
    """
    if not RUNTIME_INNER_BOUND or len(nest_shape) != len(out_shape):
        return None
    k = next((k for k in reversed(range(start, len(nest_shape))) if nest_shape[k] != 1), -1)
    if k < 0 or not isinstance(nest_shape[k], int) or not isinstance(out_shape[k], int):
        return None
    trip = nest_shape[k]
    if trip < INNER_BOUND_MIN or trip * body_cost(body) > UNROLL_LIMIT:
        return None
    missing = out_shape[k] - trip
    return k, (f"{out_name}.shape[{k}]" if missing == 0 else
               f"({out_name}.shape[{k}] - {missing})")


def _bound(dim, k: int, inner_bound) -> str:
    """The trip count of the loop over dim ``k`` (of extent ``dim``): ``inner_bound``'s
    source when it names ``k``, else the extent."""
    if inner_bound is not None and inner_bound[0] == k:
        return inner_bound[1]
    return _src(dim)


def loop_nest(shape: tuple, parallel: bool, inner_bound=None) -> tuple:
    """Loop headers over ``shape`` binding ``i0, i1, ...``, and the body's indentation depth.

    Headers are indented for the function body (depth 1). Unit dims become ``ik = 0``.
    When ``parallel``, the leading dims up to the first one that brings their product to
    :data:`PARALLEL_MIN_TASKS` share one ``prange`` index ``p``, split back into their
    indices; the remaining dims stay serial loops, so the innermost (contiguous) loop is a
    plain ``range`` that LLVM can vectorise.

    Args:
        shape: the dims to loop over (ints or symbolic dims; symbolic only when serial).
        parallel: whether the leading dims run as a ``prange``.
        inner_bound: ``(dim, source)``: the loop over ``dim`` runs to ``source``, a trip
            count read at run time (see :func:`jitkernels.codegen.generator.inner_bound`),
            when that loop is serial; or None.
    """
    lines, depth, start = [], 1, 0
    if parallel:
        lines, start = _prange_header(shape, len(shape))
        depth = 2
    for k in range(start, len(shape)):
        if shape[k] == 1:
            lines.append("    " * depth + f"i{k} = 0")
            continue
        bound = _bound(shape[k], k, inner_bound)
        lines.append("    " * depth + f"for i{k} in range({bound}):")
        depth += 1
    return lines, depth


def hoisted_nest(shape: tuple, body: list, first: int = 0, depth: int = 1,
                 bound=(), inner_bound=None) -> list:
    """A serial loop nest over ``shape`` with each body line placed in the outermost loop
    where every index it reads is bound (source-level loop-invariant code motion).

    numba cannot prove that the output does not alias the inputs, so LLVM keeps a value of
    the outer indices only (a layer norm's per-row ``sqrt(var + eps)``, a per-channel bias
    of an NCHW output) inside the inner loop; computed once per outer iteration, the inner
    loop is a few loads and arithmetic that vectorise.

    Args:
        shape: the dims to loop over; dim ``k`` of it binds ``i<first + k>``.
        body: ``t<k> = ...`` lines in dependency order, then the output store (which reads
            every index).
        first: the number of the first loop index (``i<first>``).
        depth: the indentation depth of the outermost loop.
        bound: index names already bound by enclosing loops.
        inner_bound: ``(dim, source)`` as for :func:`loop_nest` (``dim`` counted as the
            index names are, from ``first``), or None.
    """
    needs: dict = {}
    pending = []
    for line in body:
        name, _, expression = line.partition(" = ")
        indices = set(_INDEX_NAME.findall(expression if name.startswith("t") else line))
        for local in _LOCAL_NAME.findall(expression):
            indices |= needs.get(local, set())
        if name.startswith("t"):
            needs[name] = indices
        pending.append((line, indices))
    lines, bound = [], set(bound)

    def place():
        nonlocal pending
        keep = []
        for line, indices in pending:
            if indices <= bound:
                lines.append("    " * depth + line)
            else:
                keep.append((line, indices))
        pending = keep
    place()
    for k, dim in enumerate(shape):
        name = f"i{first + k}"
        if dim == 1:
            lines.append("    " * depth + f"{name} = 0")
        else:
            extent = _bound(dim, first + k, inner_bound)
            lines.append("    " * depth + f"for {name} in range({extent}):")
            depth += 1
        bound.add(name)
        place()
    lines += ["    " * depth + line for line, _ in pending]
    return lines


def split_nest(shape: tuple, axis: int, parts: list, parallel: bool) -> list:
    """One loop nest over ``shape`` whose ``axis`` is covered by consecutive parts.

    The loops over ``shape[:axis]`` are shared (the leading ones a ``prange`` when
    ``parallel`` and they hold at least two tasks); inside them each part runs its own
    :func:`hoisted_nest` over ``shape[axis:]`` with ``axis`` cut to the part's extent, so
    the output is written in order, one contiguous run per part, and a part's lines that
    read only the shared indices run once per shared iteration.

    Args:
        shape: the output's static dims.
        axis: the split axis.
        parts: ``(extent, body, inner_bound)`` per part, in order along ``axis``;
            ``body`` as for :func:`hoisted_nest`, reading the part's own position on
            ``axis`` as ``i<axis>`` in ``range(extent)``; ``inner_bound`` as there.
        parallel: whether the shared leading dims run as a ``prange``.
    """
    lines, depth, start = [], 1, 0
    if parallel and math.prod(shape[:axis]) >= 2:
        lines, start = _prange_header(shape, axis)
        depth = 2
    for k in range(start, axis):
        if shape[k] == 1:
            lines.append("    " * depth + f"i{k} = 0")
            continue
        lines.append("    " * depth + f"for i{k} in range({shape[k]}):")
        depth += 1
    bound = {f"i{k}" for k in range(axis)}
    for extent, body, inner_bound in parts:
        part_shape = (extent,) + tuple(shape[axis + 1:])
        lines += hoisted_nest(part_shape, body, first=axis, depth=depth, bound=bound,
                              inner_bound=inner_bound)
    return lines
