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

Caching: the generated source is written to ``$IRLIB_CACHE_DIR/codegen`` (default
``~/.cache/irlib/codegen``) as ``k_<sha1 of the source>.py`` and imported from there, so
numba's ``cache=True`` keeps the machine code on disk across processes; within a process a
dict keyed by the source hash returns the already-compiled function. Generated files are
never rewritten (same source, same name), so numba's cache stays valid.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile

import numpy as np

from irlib.ir import expr as E
from irlib.ir.types import TensorType

from .generator import Unsupported, generate
from .scalar_ops import FLOAT_DTYPES, supported

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
    """The nodes of a group body in post order (explicit stack)."""
    order, seen, stack = [], set(), [(body, False)]
    while stack:
        node, ready = stack.pop()
        if ready:
            order.append(node)
            continue
        if node in seen:
            continue
        seen.add(node)
        stack.append((node, True))
        if isinstance(node, E.Call):
            stack.extend((a, False) for a in reversed(node.args))
        elif isinstance(node, E.Tuple):
            stack.extend((f, False) for f in reversed(node.fields))
        elif isinstance(node, E.TupleGetItem):
            stack.append((node.tuple_value, False))
    return order


def _dtype_ok(node) -> bool:
    ty = node._checked_type
    if isinstance(ty, TensorType):
        return ty.dtype in FLOAT_DTYPES or ty.dtype == "bool"
    return isinstance(node, E.Tuple)


class FusedKernel:
    """A compiled group as a destination-passing callable ``fn(*inputs, out)``.

    Attributes:
        source: the generated source.
        reference_ops: ops of the group that run on their numpy reference (the anchor,
            when it has no kernel).
        anchor_op: the anchor's op name, or None.
    """

    def __init__(self, jit_fn, source: str, num_params: int, scalar_params, anchor=None):
        self.jit_fn = jit_fn
        self.source = source
        # The graph can call the jitted function directly when no argument needs adapting.
        self.direct = jit_fn if anchor is None and not scalar_params else None
        self.num_params = num_params
        self.scalar_params = frozenset(scalar_params)
        self.anchor_op = None
        self.anchor = anchor            # (fn, [param index or constant array], attrs, name)
        if anchor:
            self.anchor_op = anchor[3]
        self.reference_ops = [anchor[3]] if anchor and anchor[4] else []

    def __call__(self, *arrays):
        count = self.num_params
        args = [a.reshape(1) if i in self.scalar_params else a
                for i, a in enumerate(arrays[:count])]
        if self.anchor is not None:
            fn, operands, attrs, _, _ = self.anchor
            values = [arrays[o] if isinstance(o, int) else o for o in operands]
            result = fn(*values, **attrs)[0]
            args.append(np.ascontiguousarray(result))
        out = arrays[count]
        self.jit_fn(*args, out.reshape(1) if out.ndim == 0 else out)


def _anchor_kernel(op_name: str):
    from irlib.op.registry import get_def
    try:
        import jitkernels
        kernel = jitkernels.get_kernel(op_name, "cpu")
    except ImportError:
        kernel = None
    return (kernel, False) if kernel is not None else (get_def(op_name).impl, True)


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
    if not isinstance(func.body._checked_type, TensorType):
        return None
    nodes = _nodes(func.body)
    params = set(func.params)
    anchors = []
    for node in nodes:
        if not _dtype_ok(node) and node not in params:
            return None
        if isinstance(node, E.Call):
            if not isinstance(node.op, E.Op):
                return None
            if not supported(node.op.name):
                anchors.append(node)
        elif isinstance(node, E.TupleGetItem):
            return None
        elif isinstance(node, E.Tuple) and not _only_concatenated(node, nodes):
            return None
    if any(p._checked_type is None or not isinstance(p._checked_type, TensorType)
           or p._checked_type.dtype not in FLOAT_DTYPES for p in func.params):
        return None
    anchor, anchor_source = None, None
    if anchors:
        if len(anchors) > 1 or anchors[0] is func.body:
            return None
        node = anchors[0]
        operands = []
        for arg in node.args:
            if arg in params:
                operands.append(func.params.index(arg))
            elif isinstance(arg, E.Constant):
                operands.append(arg.data.numpy())
            else:
                return None
        if not isinstance(node._checked_type, TensorType):
            return None
        anchor_source = _inline_anchor(node, operands)
        if anchor_source is None:
            fn, is_reference = _anchor_kernel(node.op.name)
            if fn is None:
                return None
            attrs = dict(node.attrs) if node.attrs is not None else {}
            anchor = (fn, operands, attrs, node.op.name, is_reference)
    if not anchors and all(not isinstance(n, E.Call) for n in nodes):
        return None
    try:
        source, _ = generate(func, anchors[0] if anchors else None, anchor_source)
    except Unsupported:
        return None
    jit_fn = _load(source)
    scalars = [i for i, p in enumerate(func.params) if len(p._checked_type.shape) == 0]
    kernel = FusedKernel(jit_fn, source, len(func.params), scalars, anchor)
    if anchor_source is not None:
        kernel.anchor_op = anchors[0].op.name
    return kernel


def _inline_anchor(node, operands):
    """numba source computing the anchor inside the kernel (BLAS ``nn.dense``), or None."""
    if node.op.name != "nn.dense" or not all(isinstance(o, int) for o in operands):
        return None
    data, weight = node.args
    types = [data._checked_type, weight._checked_type, node._checked_type]
    if any(len(t.shape) != 2 for t in types) or len({t.dtype for t in types}) != 1:
        return None
    return f"np.dot(a{operands[0]}, a{operands[1]}.T)"


def _only_concatenated(tuple_node, nodes) -> bool:
    users = [n for n in nodes if isinstance(n, E.Call) and tuple_node in n.args]
    return bool(users) and all(isinstance(u.op, E.Op) and u.op.name == "concatenate"
                               for u in users)
