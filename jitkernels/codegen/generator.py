"""Source generation for a fused group: one loop nest over the output, ops inlined.

Given the typed body of a ``Primitive`` function, :func:`generate` writes the source of one
numba function ``kernel(a0, a1, ..., out)`` that loops over the output's index space and
computes each output element by inlining every op of the group (TVM's compute inlining):

* an input tensor is read at the index its consumers ask for (broadcast dims read 0);
* an elementwise/broadcast op becomes a scalar expression over its operands' values;
* an index op (``expand_dims``, ``squeeze``, ``reshape``, ``batch_flatten``, ``transpose``,
  ``broadcast_to``, ``concatenate``, a permuting ``layout_transform``) only changes the
  index its operand is read at.

Every (node, index) pair is computed once per element, into a local ``t<k>``. One node may
be an *anchor* (``nn.conv2d``, ``nn.dense``, ...): it is not inlined but read from an extra
input array that the caller fills by running the anchor's kernel first.

Before/after, for ``fn (%p0: Tensor[(2, 3)], %p1: Tensor[(3)]) { nn.relu(add(%p0, %p1)) }``::

    @njit(cache=True, fastmath=False, error_model='numpy')
    def kernel(a0, a1, out):
        for i0 in range(2):
            for i1 in range(3):
                t0 = a0[i0, i1]
                t1 = a1[i1]
                t2 = (t0 + t1)
                t3 = max(t2, np.float32(0.0))
                out[i0, i1] = t3
"""

from __future__ import annotations

from irlib.ir import expr as E
from irlib.ir.dims import DimExpr

from . import concat_split
from .dim_source import SIZE_PREFIX
from .node_types import Unsupported, shape_of as _shape, src as _src
from .loops import PARALLEL_MIN_ELEMENTS, PARALLEL_MIN_TASKS, hoisted_nest, inner_bound, \
    is_parallel, loop_nest, split_nest  # noqa: F401 (the thresholds are re-exported)
from .scalar_ops import RULES, constant_take_index, literal


def _dtype(node) -> str:
    return node.checked_type.dtype


def _strides(shape) -> list:
    strides, step = [], 1
    for dim in reversed(shape):
        strides.append(step)
        step *= dim
    return list(reversed(strides))


def _layout_source(source: str, target: str, index: list) -> list:
    """The ``source``-layout index of the element at ``index`` of the ``target`` layout,
    when one layout is a permutation of the other (``NCHW`` <-> ``NHWC``); split layouts
    such as ``NCHW16c`` are left to the op's kernel."""
    plain = source.isalpha() and source.isupper() and len(set(source)) == len(source)
    if not plain or sorted(source) != sorted(target) or len(source) != len(index):
        raise Unsupported(f"layout_transform {source} -> {target}")
    return [index[target.index(axis)] for axis in source]


def _sample(dim) -> int:
    """``dim`` at a binding where every size variable is 7919 (to order two products)."""
    if isinstance(dim, DimExpr):
        return int(dim.substitute({name: 7919 for name in dim.free_vars()}))
    return int(dim)


def _reshape_groups(out_shape, in_shape):
    """Consecutive output dims and input dims with equal products, pairwise
    (``(n, 12, 64)`` vs ``(n, 768)``: ``[([0], [0]), ([1, 2], [1])]``), or None when the
    shapes do not split that way (then the index goes through the flat offset)."""
    groups, o, i = [], 0, 0
    while o < len(out_shape) or i < len(in_shape):
        out_axes, in_axes, out_product, in_product = [], [], 1, 1
        if o < len(out_shape):
            out_axes.append(o)
            out_product = out_shape[o]
            o += 1
        if i < len(in_shape):
            in_axes.append(i)
            in_product = in_shape[i]
            i += 1
        while out_product != in_product:
            out_value, in_value = _sample(out_product), _sample(in_product)
            if out_value < in_value and o < len(out_shape):
                out_axes.append(o)
                out_product = out_product * out_shape[o]
                o += 1
            elif in_value < out_value and i < len(in_shape):
                in_axes.append(i)
                in_product = in_product * in_shape[i]
                i += 1
            else:
                return None
        groups.append((out_axes, in_axes))
    return groups


def _broadcast_index(index: list, shape: tuple) -> list:
    """The operand index for output ``index`` under numpy broadcasting."""
    offset = len(index) - len(shape)
    return ["0" if dim == 1 else index[offset + j] for j, dim in enumerate(shape)]


class _Emitter:
    """Emits the loop body: one local per distinct (node, index)."""

    def __init__(self, inputs: dict, float_dtype: str, part=None, base: int = 0):
        self.inputs = inputs          # node -> argument name
        self.float_dtype = float_dtype
        self.lines: list = []
        self.memo: dict = {}
        self.needs: dict = {}
        # For one part of a split nest: (index text, start, stop, axis): the text that
        # holds positions [start, stop) of the output's split axis, whose loop is i<axis>.
        self.part = part
        self.base = base              # locals are numbered from here (unique per kernel)

    def value(self, node, index: list) -> str:
        """The local holding ``node``'s value at ``index`` (emitting what it needs)."""
        # NOTE: an explicit stack, not recursion: groups are bounded by FuseOps' max depth,
        # but a chain of 256 ops must not approach the recursion limit either.
        stack = [(node, tuple(index), False)]
        while stack:
            current, idx, ready = stack.pop()
            key = (current, idx)
            if key in self.memo:
                continue
            needs = self.needs.get(key)
            if needs is None:
                needs = self.needs[key] = self.operands(current, list(idx))
            missing = [(n, tuple(i)) for n, i in needs if (n, tuple(i)) not in self.memo]
            if missing and not ready:
                stack.append((current, idx, True))
                stack.extend((n, i, False) for n, i in missing)
                continue
            self.memo[key] = self.emit(current, list(idx),
                                       [self.memo[(n, tuple(i))] for n, i in needs])
        return self.memo[(node, tuple(index))]

    def new_local(self, expression: str) -> str:
        name = f"t{self.base + len(self.lines)}"
        self.lines.append(f"{name} = {expression}")
        return name

    # -- per-node rules (the op's record in scalar_ops.RULES names them) ----------------------
    def operands(self, node, index: list) -> list:
        """``(operand node, operand index)`` pairs ``node`` reads at ``index``."""
        if node in self.inputs or isinstance(node, E.Constant):
            return []
        if isinstance(node, E.TupleGetItem):
            return [self.split_operand(node, index)]
        if not isinstance(node, E.Call) or not isinstance(node.op, E.Op):
            raise Unsupported(f"{type(node).__name__} in a fused group")
        rule = RULES.get(node.op.name)
        if rule is None:
            raise Unsupported(f"op {node.op.name}")
        return getattr(self, "index_" + rule.index)(node, index)

    @staticmethod
    def index_none(node, index: list) -> list:
        """A constant fill reads nothing."""
        return []

    @staticmethod
    def index_same(node, index: list) -> list:
        """Elementwise: every operand at the output index."""
        return [(arg, index) for arg in node.args]

    @staticmethod
    def index_broadcast(node, index: list) -> list:
        """Broadcasting: each operand at its broadcast index."""
        return [(arg, _broadcast_index(index, _shape(arg))) for arg in node.args]

    @staticmethod
    def index_bias_add(node, index: list) -> list:
        """``nn.bias_add``: the data at the index, the bias at the index along ``axis``."""
        axis = node.attrs["axis"] % len(index)
        return [(node.args[0], index), (node.args[1], [index[axis]])]

    @staticmethod
    def index_broadcast_to(node, index: list) -> list:
        """``broadcast_to``: the operand at its broadcast index."""
        return [(node.args[0], _broadcast_index(index, _shape(node.args[0])))]

    @staticmethod
    def index_expand_dims(node, index: list) -> list:
        """``expand_dims``: the output index without the new axes."""
        axis = node.attrs["axis"]
        axis = axis if axis >= 0 else axis + len(index)
        return [(node.args[0], index[:axis] + index[axis + node.attrs["num_newaxis"]:])]

    @staticmethod
    def index_stack(node, index: list) -> list:
        """``stack``: every field at the output index without the stacked axis."""
        fields = node.args[0]
        if not isinstance(fields, E.Tuple):
            raise Unsupported("stack of a non-literal tuple")
        axis = int(node.attrs["axis"]) % len(index)
        return [(field, index[:axis] + index[axis + 1:]) for field in fields.fields]

    @staticmethod
    def index_take(node, index: list) -> list:
        """``take`` of a constant scalar index: the data at the index with that index
        inserted on the axis."""
        k = constant_take_index(node)
        if k is None:
            raise Unsupported("take of a run-time or array index")
        axis = int(node.attrs["axis"]) % (len(index) + 1)
        return [(node.args[0], index[:axis] + [str(k)] + index[axis:])]

    @staticmethod
    def index_transpose(node, index: list) -> list:
        """``transpose``: the output index permuted back."""
        axes = node.attrs["axes"] or tuple(reversed(range(len(index))))
        source = [None] * len(index)
        for out_dim, in_dim in enumerate(axes):
            source[in_dim % len(index)] = index[out_dim]
        return [(node.args[0], source)]

    def index_reshape(self, node, index: list) -> list:
        """``reshape``/``squeeze``/``nn.batch_flatten``: the index of the same element."""
        return [(node.args[0], self.reshape_index(index, _shape(node), _shape(node.args[0])))]

    def index_concatenate(self, node, index: list) -> list:
        """``concatenate``: each field at the index shifted along the axis (clamped)."""
        return self.concat_operands(node, index)

    @staticmethod
    def index_layout_transform(node, index: list) -> list:
        """``layout_transform`` (a permutation): the index in the source layout."""
        attrs = node.attrs
        return [(node.args[0], _layout_source(attrs["src_layout"], attrs["dst_layout"], index))]

    def split_operand(self, node, index: list) -> tuple:
        """``split(x)[i]`` reads ``x`` shifted by the start of section ``i``; ``(a, b).i``
        reads the field."""
        call = node.tuple_value
        if isinstance(call, E.Tuple):
            return (call.fields[node.index], index)
        if not (isinstance(call, E.Call) and isinstance(call.op, E.Op)
                and call.op.name == "split"):
            raise Unsupported("projection of a tuple inside a group")
        data = call.args[0]
        axis = call.attrs["axis"] % len(index)
        size = _shape(data)[axis]
        sections = call.attrs["indices_or_sections"]
        if isinstance(sections, int):
            starts = [k * (size // sections) for k in range(sections)]
        else:
            if not all(isinstance(b, int) for b in sections):
                raise Unsupported("split at symbolic indices")
            starts = [0] + [int(b) for b in sections]
        shifted = list(index)
        if starts[node.index] != 0:
            shifted[axis] = f"({index[axis]} + {_src(starts[node.index])})"
        return (data, shifted)

    def reshape_index(self, index: list, out_shape: tuple, in_shape: tuple) -> list:
        kept_out = [(i, d) for i, d in zip(index, out_shape) if d != 1]
        kept_in = [j for j, d in enumerate(in_shape) if d != 1]
        if [d for _, d in kept_out] == [in_shape[j] for j in kept_in]:
            # Only unit dims added or removed: a direct index map.
            source = ["0"] * len(in_shape)
            for j, (i, _) in zip(kept_in, kept_out):
                source[j] = i
            return source
        groups = _reshape_groups(out_shape, in_shape)
        if groups is not None:
            return self.grouped_reshape_index(index, out_shape, in_shape, groups)
        terms = [f"{i} * {_src(s)}" for i, s in zip(index, _strides(out_shape))
                 if s != 0 and i != "0"]
        linear = self.new_local(" + ".join(terms) if terms else "0")
        return [f"(({linear} // {_src(s)}) % {_src(d)})"
                for s, d in zip(_strides(in_shape), in_shape)]

    def grouped_reshape_index(self, index: list, out_shape, in_shape, groups) -> list:
        """The operand index of a reshape whose dims split/merge in groups (see
        :func:`_reshape_groups`): each group's output indices are combined and split again
        within the group only, so a symbolic dim that maps to itself is read by its own
        index, with no division by a run-time size."""
        source = ["0"] * len(in_shape)
        for out_axes, in_axes in groups:
            terms = []
            for axis, stride in zip(out_axes, _strides([out_shape[a] for a in out_axes])):
                if index[axis] != "0" and out_shape[axis] != 1:
                    terms.append(index[axis] if stride == 1 else f"{index[axis]} * {_src(stride)}")
            linear = " + ".join(terms) if terms else "0"
            if len(in_axes) == 1:
                source[in_axes[0]] = linear if len(terms) <= 1 else f"({linear})"
                continue
            if len(terms) > 1:
                linear = self.new_local(linear)
            strides = _strides([in_shape[a] for a in in_axes])
            outermost = True            # no modulo for the group's first non-unit dim
            for axis, stride in zip(in_axes, strides):
                dim = in_shape[axis]
                if dim == 1:
                    continue
                value = linear if stride == 1 else f"({linear} // {_src(stride)})"
                if not outermost:
                    value = f"({value} % {_src(dim)})"
                outermost = False
                source[axis] = value
        return source

    def concat_operands(self, node, index: list) -> list:
        fields = node.args[0]
        if not isinstance(fields, E.Tuple):
            raise Unsupported("concatenate of a non-literal tuple")
        axis = node.attrs["axis"] % len(index)
        resolved = self.part_field(fields.fields, axis, index)
        if resolved is not None:
            return [resolved]
        pairs, start = [], 0
        for field in fields.fields:
            shifted = list(index)
            shifted[axis] = f"({index[axis]} - {_src(start)})" if start != 0 else index[axis]
            # Clamp so that reads of the branches not taken stay in bounds (a symbolic
            # field may be empty at run time: clamped to 0 last, never to -1).
            size = _shape(field)[axis]
            if isinstance(size, DimExpr):
                shifted[axis] = f"max(min({shifted[axis]}, {_src(size - 1)}), 0)"
            else:
                shifted[axis] = f"min(max({shifted[axis]}, 0), {_src(size - 1)})"
            pairs.append((field, shifted))
            start += size
        return pairs

    def part_field(self, fields, axis: int, index: list):
        """In a split-nest part whose range of the split axis is ``index[axis]`` and lies in
        one field: ``(that field, its index)``, read with no choice; else None.

        Sound for any concatenation of the group: the same index text is the same value,
        which the part's loop keeps within ``[start, stop)``."""
        if self.part is None or index[axis] != self.part[0]:
            return None
        _, start, stop, loop_axis = self.part
        offset = 0
        for field in fields:
            size = _shape(field)[axis]
            if not isinstance(size, int):
                return None
            if offset <= start and stop <= offset + size:
                shifted = list(index)
                shift = start - offset
                shifted[axis] = f"(i{loop_axis} + {shift})" if shift else f"i{loop_axis}"
                return (field, shifted)
            offset += size
        return None

    def emit(self, node, index: list, values: list) -> str:
        if node in self.inputs:
            return self.new_local(f"{self.inputs[node]}[{', '.join(index) or '0'}]")
        if isinstance(node, E.Constant):
            data = node.data.numpy()
            if data.size != 1:
                raise Unsupported("non-scalar constant inside a group")
            return literal(data.reshape(-1)[0], data.dtype.name)
        if isinstance(node, E.TupleGetItem):
            return values[0]
        rule = RULES[node.op.name]
        dtype = _dtype(node)
        if rule.combine is not None:
            text = getattr(self, "combine_" + rule.combine)(node, index, values)
        else:
            template = rule.template
            if template is None:                # index-only ops: the operand's value
                return values[0]
            if rule.float32_template is not None and dtype == "float32":
                template = rule.float32_template
            literals = {name: literal(node.attrs[name], dtype) for name in rule.literal_attrs}
            text = template.format(*values, dtype=dtype, zero=literal(0.0, dtype),
                                   one=literal(1.0, dtype), **literals)
            if rule.index == "none":            # a constant fill: the literal itself
                return text
        if rule.float_result and dtype in ("float32", "float64"):
            text = f"np.{dtype}({text})"
        return self.new_local(text)

    @staticmethod
    def combine_stack(node, index: list, values: list) -> str:
        """``stack``: the value of the field the index picks on the stacked axis."""
        axis = int(node.attrs["axis"]) % len(index)
        text = values[-1]
        for position in reversed(range(len(values) - 1)):
            text = f"({values[position]} if {index[axis]} == {position} else {text})"
        return text

    @staticmethod
    def combine_concatenate(node, index: list, values: list) -> str:
        """``concatenate``: the value of the field whose range holds the index on the axis."""
        if len(values) == 1:                # one field, or resolved by a split part
            return values[0]
        axis = node.attrs["axis"] % len(index)
        bounds, start = [], 0
        for field in node.args[0].fields:
            start += _shape(field)[axis]
            bounds.append(start)
        text = values[-1]
        for bound, value in reversed(list(zip(bounds[:-1], values[:-1]))):
            text = f"({value} if {index[axis]} < {_src(bound)} else {text})"
        return text


def generate(arg_names: list, inputs: dict, outputs: list, anchor_source=None,
             size_names=()) -> str:
    """Source of a fused kernel.

    Args:
        arg_names: the generated function's input argument names, in calling order.
        inputs: node -> argument name: the group's tensor inputs (params, projections of
            tuple params, and the anchor when it is read from an input).
        outputs: the nodes whose values are written to ``out0``, ``out1``, ... (one loop
            nest each; a large one runs in parallel, see :data:`PARALLEL_MIN_ELEMENTS`).
        anchor_source: a statement body ``anchor = <expr>`` computed first (e.g.
            ``np.dot(a0, a1.T)`` for ``nn.dense``), or None.
        size_names: the size variables symbolic dims may mention, in order: the kernel
            takes their values as trailing int arguments ``sz_<name>`` after the outputs,
            and its loop bounds and index arithmetic are expressions over them.

    Returns:
        The source of a module defining ``kernel(*arg_names, out0, ..., sz_<size>...)``.
        Rank-0 arrays are passed as shape (1,).

    Raises:
        Unsupported: if the group has an op or a dtype the generator does not handle.
    """
    out_names = [f"out{k}" for k in range(len(outputs))]
    size_args = [SIZE_PREFIX + name for name in size_names]
    body = []
    if anchor_source is not None:
        body.append(f"    anchor = {anchor_source}")
    for out_name, node in zip(out_names, outputs):
        body += _output_nest(node, out_name, inputs, bool(size_names))
    parallel = any("prange(" in line for line in body)
    lines = ["import math", "import numpy as np", "from numba import njit, prange", "", "",
             # error_model="numpy": x / 0 is inf/nan as in the numpy references, not a
             # ZeroDivisionError
             f"@njit(cache=True, fastmath=False, error_model='numpy'"
             f"{', parallel=True' if parallel else ''})",
             f"def kernel({', '.join(list(arg_names) + out_names + size_args)}):"] + body
    if any("_erf32(" in line for line in lines):
        lines.insert(3, "from jitkernels.codegen.fast_scalar import erf32 as _erf32")
    return "\n".join(lines) + "\n"


def _output_nest(node, out_name: str, inputs: dict, symbolic: bool) -> list:
    """The loop nest(s) writing output ``node`` to ``out_name``: a split nest when the output
    reads a concatenation elementwise (:func:`concat_split.split_plan`), else one nest per
    :func:`_output_parts` part (hoisted when the group is symbolic or :data:`HOIST_STATIC`)."""
    out_shape = _shape(node)
    parallel = is_parallel(out_shape)
    plan = concat_split.split_plan(node, inputs) if concat_split.SPLIT_CONCAT else None
    if plan is not None:
        axis, bounds = plan
        parts, base = [], 0
        for start, stop in zip(bounds[:-1], bounds[1:]):
            index = [f"i{k}" for k in range(len(out_shape))]
            if start:
                index[axis] = f"(i{axis} + {start})"
            emitter = _Emitter(inputs, _dtype(node), part=(index[axis], start, stop, axis),
                               base=base)
            result = emitter.value(node, index)
            base += len(emitter.lines)
            part_shape = out_shape[:axis] + (stop - start,) + out_shape[axis + 1:]
            body = emitter.lines + [f"{out_name}[{', '.join(index)}] = {result}"]
            parts.append((stop - start, body,
                          inner_bound(out_name, out_shape, part_shape, body, axis)))
        parallel = parallel or concat_split.split_parallel(out_shape)
        return split_nest(out_shape, axis, parts, parallel)
    lines = []
    for part, axis, start in _output_parts(node):
        part_shape = _shape(part)
        emitter = _Emitter(inputs, _dtype(node))
        index = [f"i{k}" for k in range(len(part_shape))]
        result = emitter.value(part, index)
        target = list(index)
        if start != 0:
            target[axis] = f"{index[axis]} + {_src(start)}"
        body = emitter.lines + [f"{out_name}[{', '.join(target) or '0'}] = {result}"]
        bound = None if symbolic else inner_bound(out_name, out_shape, part_shape, body)
        if (symbolic or HOIST_STATIC) and not parallel:
            lines += hoisted_nest(part_shape, body, inner_bound=bound)
            continue
        headers, depth = loop_nest(part_shape, parallel, bound)
        lines += headers
        lines += ["    " * depth + line for line in body]
    return lines


HOIST_STATIC = False
"""Whether static groups get the hoisted nest too (:func:`loops.hoisted_nest`; symbolic
groups always do)."""

def _output_parts(node) -> list:
    """``(node, axis, start)`` loop nests that write an output: a ``concatenate`` of a
    literal tuple is written field by field into its slice along ``axis`` (one nest each,
    no per-element choice of field, so the copies vectorise: measured 4x faster on
    SqueezeNet's channels-last fire-module concatenations); anything else is one nest."""
    if (isinstance(node, E.Call) and isinstance(node.op, E.Op)
            and node.op.name == "concatenate" and isinstance(node.args[0], E.Tuple)):
        axis = node.attrs["axis"] % len(_shape(node))
        parts, start = [], 0
        for field in node.args[0].fields:
            size = _shape(field)[axis]
            if size != 0:
                parts.append((field, axis, start))
            start += size
        return parts
    return [(node, None, 0)]
