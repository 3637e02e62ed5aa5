"""The fused-group code generator: a ``Primitive`` function becomes one numba function.

:func:`compile_primitive` handles two shapes of group:

* **elementwise/injective chains**: every op inlines into one loop nest over the output
  (:mod:`jitkernels.codegen.generator`);
* **anchor + epilogue**: one op that cannot be inlined (``nn.conv2d``, ``nn.dense``, a pool,
  ``nn.softmax``, ...) whose arguments are the group's inputs, followed by inlinable ops.
  The anchor runs on its ``jitkernels`` kernel (numpy reference where it has none; reported
  in ``reference_ops``), and the generated loop nest applies the epilogue while writing the
  output.

Anything else (tuple results, reductions inside the chain, integer arithmetic, several
anchors) returns None, and the caller runs the group op by op.

Symbolic dims (``Tensor[(n, 768), float32]``) are kept symbolic in the generated source:
the kernel takes the size variables' values as trailing int arguments (see
:mod:`jitkernels.codegen.dim_source`), so one compiled kernel runs at every size.

Caching: the generated source is written to ``$IRLIB_CACHE_DIR/codegen`` (default
``~/.cache/irlib/codegen``) as ``k_<sha1 of the source>.py`` and imported from there, so
numba's ``cache=True`` keeps the machine code on disk across processes; within a process a
dict keyed by the source hash returns the already-compiled function. Generated files are
never rewritten (same source, same name), so numba's cache stays valid.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import sys
import tempfile
import threading
from typing import Callable, NamedTuple

import numpy as np

from irlib.ir import expr as E
from irlib.ir.dim_binding import has_symbolic_attrs, substitute_attrs
from irlib.ir.dims import DimExpr
from irlib.ir.functor import post_order
from irlib.ir.types import TensorType, TupleType

from .dim_source import SIZE_PREFIX, dim_source, function_size_names, is_symbolic_shape
from .generator import Unsupported, generate
from .scalar_ops import FLOAT_DTYPES, constant_take_index, supported

__all__ = ["compile_primitive", "FusedKernel", "cache_dir"]

_COMPILED: dict = {}


def cache_dir() -> str:
    """The directory generated kernels are written to (created if missing)."""
    root = os.environ.get("IRLIB_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "irlib")
    path = os.path.join(root, "codegen")
    try:
        os.makedirs(path, exist_ok=True)
        return path
    except OSError:             # read-only home: a per-user temp dir still caches per boot
        path = os.path.join(tempfile.gettempdir(), f"irlib-codegen-{os.getuid()}")
        os.makedirs(path, exist_ok=True)
        return path


def _load(source: str):
    digest = hashlib.sha1(source.encode()).hexdigest()[:20]
    fn = _COMPILED.get(digest)
    if fn is not None:
        return fn
    directory = cache_dir()
    path = os.path.join(directory, f"k_{digest}.py")
    if not os.path.exists(path):
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(fd, "w") as handle:
            handle.write(source)
        os.replace(tmp, path)
    name = f"irlib_codegen_k_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    _COMPILED[digest] = fn = module.kernel
    return fn


def _nodes(body) -> list:
    """The nodes of a group body in post order (calls' op callees are not nodes)."""
    return post_order(body, children_of=_operands)


def _operands(node) -> tuple:
    kind = type(node)
    if kind is E.Call:
        return node.args
    if kind is E.Tuple:
        return node.fields
    if kind is E.TupleGetItem:
        return (node.tuple_value,)
    return ()


def _is_float_tensor(ty) -> bool:
    return isinstance(ty, TensorType) and ty.dtype in FLOAT_DTYPES


class Anchor(NamedTuple):
    """The op of a fused group that is not inlined: it runs first, on its kernel, and the
    generated code reads its result.

    Attributes:
        fn: the kernel (or the numpy reference), with the reference's calling convention.
        operands: per argument, the group input slot it reads (an int) or a constant array.
        attrs: the call's attributes (keyword arguments of ``fn``).
        op_name: the op's name.
        is_reference: whether ``fn`` is the numpy reference (the op has no kernel).
    """

    fn: Callable
    operands: list
    attrs: dict
    op_name: str
    is_reference: bool


class AnchorType(NamedTuple):
    """The static type of an anchor's result: ``shape`` (ints or symbolic dims) and the
    numpy ``dtype`` of the buffer it is written to."""

    shape: tuple
    dtype: np.dtype


class SmallDense(NamedTuple):
    """A second generated kernel of a group anchored on a symbolic ``nn.dense``: ``fn``
    computes the product inline (numba's ``np.dot``); ``data_slot``/``weight_slot`` are the
    group inputs holding its operands."""

    fn: Callable
    data_slot: int
    weight_slot: int


class FusedKernel:
    """A compiled group as a destination-passing callable ``fn(*inputs, *outputs)``.

    When the anchor's kernel has a destination-passing form (``kernel.into(out, *inputs,
    **attrs)`` returning True once it wrote ``out``), the anchor writes into a buffer kept
    between calls (one per thread, so concurrent runs of one executor stay independent)
    instead of allocating its result each call.

    Attributes:
        source: the generated source.
        reference_ops: ops of the group that run on their numpy reference (the anchor,
            when it has no kernel).
        anchor_op: the anchor's op name, or None.
        direct: the jitted function itself when the graph can call it as is (no anchor
            to run first, no rank-0 array to adapt), else None.
        size_names: the size variables the group's symbolic dims mention, sorted; the
            caller passes their values as trailing ints after the outputs (empty for a
            static group). The generated source does not depend on those values, so one
            compiled kernel serves every size, and an anchor whose attributes mention
            them (``strided_slice`` ``end=[n]``) gets them substituted per call.
        small_dense: for a group anchored on a symbolic ``nn.dense``, the
            :class:`SmallDense` of a second generated kernel computing the product with
            numba's ``np.dot``; calls whose ``M*K*N`` is at most
            :data:`INLINE_DENSE_MAX_FLOPS` run it (what a static build inlines), larger
            ones the BLAS anchor. None otherwise.
        small_source: that kernel's source.
    """

    def __init__(self, jit_fn, source: str, num_inputs: int, scalar_slots, anchor=None,
                 anchor_type=None, size_names=()):
        self.jit_fn = jit_fn
        self.source = source
        self.num_inputs = num_inputs
        self.scalar_slots = frozenset(scalar_slots)
        self.anchor = anchor            # an Anchor, or None
        self.anchor_op = anchor.op_name if anchor else None
        self.reference_ops = [anchor.op_name] if anchor and anchor.is_reference else []
        self.direct = jit_fn if anchor is None and not self.scalar_slots else None
        self.size_names = tuple(size_names)
        self._num_sizes = len(self.size_names)
        self._into = getattr(anchor.fn, "into", None) if anchor else None
        self._anchor_type = anchor_type     # the AnchorType of the anchor's result, or None
        self._anchor_sized = anchor is not None and (
            has_symbolic_attrs(anchor.attrs) or
            (anchor_type is not None and is_symbolic_shape(anchor_type.shape)))
        self._sized_key, self._sized = None, None
        self._anchor_shape = None           # sizes -> the anchor's shape, when symbolic
        if anchor_type is not None and is_symbolic_shape(anchor_type.shape):
            arguments = ", ".join(SIZE_PREFIX + name for name in self.size_names)
            dims = "".join(dim_source(d) + ", " for d in anchor_type.shape)
            self._anchor_shape = eval(f"lambda {arguments}: ({dims})")     # our own source
        self._has_scalars = True        # set False by compile_primitive when no rank-0 array
        self.small_dense = None         # a SmallDense: see below
        self.small_source = None
        self.fused_epilogue = None      # a codegen.epilogue.FusedEpilogue, or None
        self.chain_epilogue = None      # channels-first conv epilogue steps (chain_steps)
        # an nn.matmul anchor on n-D data (not transposed): its rows run as one 2-D product
        self._rows_2d = True if (anchor is not None and anchor.op_name == "nn.matmul"
                                 and not anchor.attrs.get("transpose_a")) else None
        # a dense/matmul anchor's packed-kernel call, prepared once per set of arrays
        self._product = None
        if anchor is not None and not anchor.is_reference and len(anchor.operands) == 2 \
                and all(isinstance(o, int) for o in anchor.operands):
            from .prepared_product import prepared_product
            self._product = prepared_product(anchor.op_name, anchor.attrs)
        self._local = threading.local()

    def _anchor_for(self, sizes: tuple) -> tuple:
        """``(attrs, result shape)`` of the anchor for these size values (cached for the
        last ones: consecutive calls of one binding reuse them)."""
        if not self._anchor_sized:
            shape = self._anchor_type.shape if self._anchor_type is not None else None
            return self.anchor.attrs, shape
        if sizes != self._sized_key:
            attrs = self.anchor.attrs
            if has_symbolic_attrs(attrs):
                attrs = substitute_attrs(attrs, dict(zip(self.size_names, sizes)),
                                         f"{self.anchor_op} attribute")
            shape = None
            if self._anchor_shape is not None:
                shape = self._anchor_shape(*sizes)
            elif self._anchor_type is not None:
                shape = self._anchor_type.shape
            self._sized_key, self._sized = sizes, (attrs, shape)
        return self._sized

    def _buffer(self, shape: tuple) -> np.ndarray:
        """This thread's anchor buffer, viewed as ``shape`` (grown when too small)."""
        local = self._local
        view = getattr(local, "view", None)
        if view is not None and view.shape == shape:
            return view
        count = math.prod(shape)
        flat = getattr(local, "buffer", None)
        if flat is None or flat.size < count:
            flat = local.buffer = np.empty(max(count, 1), self._anchor_type.dtype)
        local.view = view = flat[:count].reshape(shape)
        return view

    def _anchor_value(self, arrays, sizes=()) -> np.ndarray:
        fn, operands = self.anchor.fn, self.anchor.operands
        attrs, shape = self._anchor_for(sizes)
        values = [arrays[o] if isinstance(o, int) else o for o in operands]
        if self._into is not None and shape is not None:
            buffer = self._buffer(shape)
            if self._product is not None and self._product.run(values[0], values[1], buffer):
                return buffer
            rows = self._rows_2d
            if rows is not None and values[0].ndim > 2 and values[0].flags.c_contiguous:
                # (B, S, K) @ (K, N): the rows as one 2-D product into the buffer's 2-D view
                # (the kernel's into form takes 2-D data only; its allocating form would
                # make and convert a new result every call).
                values[0] = values[0].reshape(-1, values[0].shape[-1])
                if self._into(buffer.reshape(-1, shape[-1]), *values, **attrs):
                    return buffer
            elif self._into(buffer, *values, **attrs):
                return buffer
        return np.ascontiguousarray(fn(*values, **attrs)[0])

    def __call__(self, *arrays):
        """Run on the graph's arrays ``(*inputs, *outputs, *size values)``."""
        if self._num_sizes:
            sizes = arrays[len(arrays) - self._num_sizes:]
            arrays = arrays[:len(arrays) - self._num_sizes]
        else:
            sizes = ()
        if self._has_scalars:
            args = [a.reshape(1) if a.ndim == 0 else a for a in arrays]
        else:
            args = list(arrays)
        small = self.small_dense
        if small is not None:
            data, weight = arrays[small.data_slot], arrays[small.weight_slot]
            if data.shape[0] * data.shape[1] * weight.shape[0] <= INLINE_DENSE_MAX_FLOPS:
                small.fn(*args, *sizes)
                return
        fused = self.fused_epilogue
        if fused is not None and fused(arrays, arrays[self.num_inputs]):
            return                      # the anchor wrote the output, epilogue included
        if self.anchor is not None:
            args.insert(self.num_inputs, self._anchor_value(arrays, sizes))
        self.jit_fn(*args, *sizes)


def _anchor_kernel(op_name: str):
    from irlib.op.registry import get_def
    try:
        import jitkernels
        kernel = jitkernels.get_kernel(op_name, "cpu")
    except ImportError:
        kernel = None
    return (kernel, False) if kernel is not None else (get_def(op_name).impl, True)


COMPARISONS = frozenset({"equal", "not_equal", "less", "less_equal", "greater",
                         "greater_equal"})
"""Ops whose integer operands a generated kernel may read: the result is a bool, so
numpy's integer arithmetic rules (division, overflow, rounding) never come into it."""


def _compared_integers(nodes) -> set:
    """Integer tensors of a group (parameters, constants) whose every use is an operand of
    a comparison with another operand of the same dtype (a silero-vad ``If`` condition's
    ``equal(sr, 16000)`` on int64): the generator reads them as they are."""
    users: dict = {}
    for node in nodes:
        if isinstance(node, E.Call):
            for arg in node.args:
                users.setdefault(arg, []).append(node)
    allowed = set()
    for node in nodes:
        if not isinstance(node, (E.Var, E.Constant)):
            continue
        ty = node._checked_type
        if not isinstance(ty, TensorType) or not (ty.dtype.startswith("int")
                                                  or ty.dtype.startswith("uint")):
            continue
        uses = users.get(node, [])
        if uses and all(isinstance(u.op, E.Op) and u.op.name in COMPARISONS
                        and len(u.args) == 2
                        and all(getattr(a._checked_type, "dtype", None) == ty.dtype
                                for a in u.args) for u in uses):
            allowed.add(node)
    return allowed


class _Group:
    """What the generator needs to know about a group, or why it cannot take it."""

    def __init__(self, func: E.Function):
        self.inputs: dict = {}          # node -> argument name
        self.arg_names: list = []
        self.scalar_slots: list = []
        self.slot_of: dict = {}         # tensor input node -> flat input position
        leaves: dict = {}               # (tuple param, path) -> leaf name
        self.nodes = _nodes(func.body)
        compared = _compared_integers(self.nodes)
        for param in func.params:
            stack = [(param._checked_type, ())]
            while stack:
                ty, path = stack.pop()
                if isinstance(ty, TupleType):
                    stack.extend((f, path + (i,)) for i, f in reversed(list(enumerate(ty.fields))))
                    continue
                if not _is_float_tensor(ty) and not (not path and param in compared):
                    raise Unsupported(f"input of type {ty}")
                name = f"a{len(self.arg_names)}"
                if len(ty.shape) == 0:
                    self.scalar_slots.append(len(self.arg_names))
                self.arg_names.append(name)
                if path:
                    leaves[(param, path)] = name
                else:
                    self.inputs[param] = name
                    self.slot_of[param] = len(self.arg_names) - 1
        take_indices = {id(n.args[1]) for n in self.nodes            # inlined takes' indices
                        if isinstance(n, E.Call) and isinstance(n.op, E.Op)
                        and n.op.name == "take" and constant_take_index(n) is not None}
        params = set(func.params)
        self.anchors = []
        for node in self.nodes:
            if node in params:
                continue
            if isinstance(node, E.TupleGetItem):
                root, path = node, ()
                while isinstance(root, E.TupleGetItem):
                    root, path = root.tuple_value, (root.index,) + path
                if root in params:
                    if (root, path) not in leaves:
                        raise Unsupported("a sub-tuple of a tuple input")
                    self.inputs[node] = leaves[(root, path)]
                    self.slot_of[node] = self.arg_names.index(leaves[(root, path)])
                continue
            ty = node._checked_type
            if isinstance(node, E.Call):
                if not isinstance(node.op, E.Op):
                    raise Unsupported("call of a non-op")
                if not (supported(node.op.name) or node.op.name == "split") or \
                        (node.op.name == "take" and constant_take_index(node) is None):
                    self.anchors.append(node)
                if isinstance(ty, TensorType) and ty.dtype not in FLOAT_DTYPES \
                        and ty.dtype != "bool":
                    raise Unsupported(f"dtype {ty.dtype}")
            elif isinstance(node, E.Constant):
                if node.data.numpy().dtype.name not in FLOAT_DTYPES | {"bool"} \
                        and id(node) not in take_indices and node not in compared:
                    raise Unsupported("non-float constant")
        for node in self.nodes:             # tuple params may only be projected
            if isinstance(node, (E.Call, E.Tuple)):
                operands = node.args if isinstance(node, E.Call) else node.fields
                if any(o in params and o not in self.inputs for o in operands):
                    raise Unsupported("a tuple input used whole")
        self.outputs = self._outputs(func.body)

    @staticmethod
    def _outputs(body) -> list:
        ty = body._checked_type
        if isinstance(ty, TensorType):
            return [body]
        if isinstance(body, E.Tuple):
            fields = list(body.fields)
        else:
            fields = []
            for i, field_type in enumerate(ty.fields):
                item = E.TupleGetItem(body, i)
                item.with_type(field_type)
                fields.append(item)
        if not all(isinstance(f._checked_type, TensorType) for f in fields):
            raise Unsupported("nested tuple result")
        return fields


def compile_primitive(func: E.Function):
    """Compile a typed primitive function into one generated numba kernel, if it fits.

    Args:
        func: a ``Primitive=1`` function whose types are inferred.

    Returns:
        A :class:`FusedKernel`, or None when the group is not one the generator handles (or
        numba is missing): the caller then runs it op by op.
    """
    try:
        import numba  # noqa: F401
    except ImportError:
        return None
    from ..threads import configure
    configure()
    try:
        group = _Group(func)
    except Unsupported:
        return None
    if not any(isinstance(n, E.Call) for n in group.nodes):
        return None
    anchor, anchor_source, arg_names = None, None, list(group.arg_names)
    inputs = dict(group.inputs)
    if group.anchors:
        node = group.anchors[0]
        if len(group.anchors) > 1 or not isinstance(node._checked_type, TensorType):
            return None
        operands = []
        for arg in node.args:
            if arg in group.slot_of:
                operands.append(group.slot_of[arg])
            elif isinstance(arg, E.Constant):
                operands.append(arg.data.numpy())
            else:
                return None
        inputs[node] = "anchor"
        anchor_source = _inline_anchor(node, operands)
        # An anchor that is the group's result runs on its kernel (writing the output
        # itself), unless it is a small static dense the generated code computes inline
        # (a lone LSTM step's h @ R^T: ~1 us instead of ~4 through the BLAS wrapper).
        if node in group.outputs and anchor_source is None:
            return None
        small_source = _inline_anchor(node, operands, symbolic=True)
        if anchor_source is None:
            fn, is_reference = _anchor_kernel(node.op.name)
            if fn is None:
                return None
            attrs = dict(node.attrs) if node.attrs is not None else {}
            anchor = Anchor(fn, operands, attrs, node.op.name, is_reference)
            arg_names.append("anchor")
    size_names = function_size_names(func)
    try:
        source = _with_helpers(generate(arg_names, inputs, group.outputs, anchor_source,
                                        size_names))
    except Unsupported:
        return None
    anchor_type = None
    if anchor is not None:
        ty = group.anchors[0]._checked_type
        try:
            dims = tuple(d if isinstance(d, DimExpr) else int(d) for d in ty.shape)
            anchor_type = AnchorType(dims, np.dtype(ty.dtype))
        except (TypeError, ValueError):     # an Any dim: allocate per call
            anchor_type = None
    kernel = FusedKernel(_load(source), source, len(group.arg_names), group.scalar_slots,
                         anchor, anchor_type, size_names)
    if anchor is not None and not size_names:
        kernel.fused_epilogue = _fused_epilogue(group, anchor)
        if kernel.fused_epilogue is None:
            from .chain_steps import match_channels_first
            kernel.chain_epilogue = match_channels_first(group, group.anchors[0])
    if anchor is not None and small_source is not None:
        # A symbolic nn.dense: small products (a decode step's GEMVs) run inside a second
        # kernel on numba's np.dot, large ones on the BLAS anchor; the size decides per call.
        try:
            small = _with_helpers(generate(group.arg_names, inputs, group.outputs,
                                           small_source, size_names))
        except Unsupported:
            small = None
        if small is not None:
            kernel.small_dense = SmallDense(_load(small), anchor.operands[0], anchor.operands[1])
            kernel.small_source = small
    if anchor_source is not None:
        kernel.anchor_op = group.anchors[0].op.name
    if any(len(o._checked_type.shape) == 0 for o in group.outputs):
        kernel.direct = None            # a rank-0 output is passed as shape (1,)
    elif not group.scalar_slots:
        kernel._has_scalars = False     # no rank-0 array to adapt at each call
    return kernel


_LIBM = {"_erf32(": "math.erf(", "_exp32(": "math.exp(", "_tanh32(": "math.tanh("}
"""The libm call each fast scalar helper replaces (what ``IRLIB_FAST_SCALAR=0`` emits)."""


def _with_helpers(source: str) -> str:
    """A generated source with the imports of the :mod:`~jitkernels.codegen.fast_scalar`
    helpers it calls, or with libm's functions in their place when those are switched off
    (:func:`jitkernels.codegen.fast_scalar.enabled`)."""
    from . import fast_scalar
    if not fast_scalar.enabled():
        for helper, libm in _LIBM.items():
            source = source.replace(helper, libm)
        return source
    return fast_scalar.add_imports(source)


def _fused_epilogue(group, anchor):
    """A :class:`~jitkernels.codegen.epilogue.FusedEpilogue` when the anchor's kernel can
    apply the group's epilogue itself (an ``into_fused`` form, a matching chain), else None."""
    into_fused = getattr(anchor[0], "into_fused", None)
    if into_fused is None or anchor[4]:
        return None
    from ..cpu.epilogue import enabled
    from .epilogue import FusedEpilogue, channel_axis, match_epilogue
    if not enabled():
        return None
    node = group.anchors[0]
    steps = match_epilogue(group, node)
    if steps is None:
        return None
    ty = node._checked_type
    return FusedEpilogue(into_fused, anchor[1], anchor[2], steps,
                         int(ty.shape[channel_axis(node)]), ty.dtype)


INLINE_DENSE_MAX_FLOPS = 65536 * 4
"""Largest ``M*N*K`` of an ``nn.dense`` computed inside generated code (numba's ``np.dot``,
single-threaded: see :mod:`jitkernels.threads`); larger ones run on numpy's threaded BLAS
as the anchor kernel. It is OpenBLAS's own threshold for going multi-threaded."""


def _inline_anchor(node, operands, symbolic: bool = False):
    """numba source computing a small ``nn.dense`` or 2-D ``nn.matmul`` inside the kernel,
    or None.

    With ``symbolic=False``: for a static product of at most :data:`INLINE_DENSE_MAX_FLOPS`
    multiply-adds (``nn.matmul`` with either operand transposed too: a small model's
    projections, silero-vad's ``(1, 512) @ (512, 256)`` front end and ``(1, 64) @ (64, 1)``
    head run in ~1 us instead of ~5-6 through the BLAS wrapper).
    With ``symbolic=True``: for an ``nn.dense`` whose size is symbolic (the caller decides
    per call).
    """
    name = node.op.name
    if name not in ("nn.dense", "nn.matmul") or not all(isinstance(o, int) for o in operands):
        return None
    data, weight = node.args
    types = [data._checked_type, weight._checked_type, node._checked_type]
    if any(len(t.shape) != 2 for t in types) or len({t.dtype for t in types}) != 1 \
            or types[0].dtype not in FLOAT_DTYPES:
        return None
    left, right = f"a{operands[0]}", f"a{operands[1]}"
    if name == "nn.dense":
        right += ".T"
    else:
        if symbolic:
            return None
        attrs = dict(node.attrs) if node.attrs is not None else {}
        if attrs.get("transpose_a"):
            left += ".T"
        if attrs.get("transpose_b"):
            right += ".T"
    rows, units = types[2].shape
    depth = types[0].shape[0 if left.endswith(".T") else 1]
    is_static = all(isinstance(d, int) for d in (rows, depth, units))
    if symbolic:
        return None if is_static else f"np.dot({left}, {right})"
    if not is_static or int(rows) * int(depth) * int(units) > INLINE_DENSE_MAX_FLOPS:
        return None
    return f"np.dot({left}, {right})"
