"""Turning a primitive (fused) function into a library function of the graph executor.

A library function uses destination passing, like a TVM PackedFunc in a graph: it is called
as ``fn(*inputs, *outputs)`` with one numpy array per flattened input tensor and per
flattened output tensor, and writes its results into the output arrays.

:func:`compile_function` picks, for each primitive function:

1. on ``"cpu"``: the fused-group code generator (:mod:`jitkernels.codegen`), which turns the
   whole group into one numba function;
2. otherwise a step list over the group's op calls, each run by its kernel from the
   ``jitkernels`` registry (``"cpu"``/``"cuda"``) or by its numpy reference implementation
   (always on ``"python"``), with the result copied into the outputs. A group that is a
   single op call whose kernel has a destination-passing form (``kernel.into(out,
   *inputs, **attrs)``) calls that instead, writing straight into the output.

It also says which ops ran on the numpy reference, so that ``build`` can report them.

A primitive function whose types or op attributes mention size variables (symbolic dims,
``Tensor[(n, 768), float32]``) is compiled once for every size: its library function takes
the values of those variables (``CompiledFunction.size_names``, sorted) as trailing ints,
``fn(*inputs, *outputs, *sizes)``. The generated kernel computes its extents from them;
the op-by-op forms substitute them into the attributes that mention them (``reshape``'s
``newshape``, ``strided_slice``'s ``end``...) before calling the kernel or the reference,
once per new set of values.
"""

from __future__ import annotations

import numpy as np

from irlib.errors import OpImplError
from irlib.ir import expr as E
from irlib.ir.dim_binding import has_symbolic_attrs, substitute_attrs
from irlib.ir.types import TupleType
from irlib.op.registry import get_def

from .graph_dims import function_size_names
from .graph_lower import _tensor_types, _unflatten


def _kernel_for(op_name: str, target: str):
    if target == "python":
        return None
    try:
        import jitkernels
    except ImportError:
        return None
    return jitkernels.get_kernel(op_name, target)


class _SizedAttrs:
    """Op attributes that mention size variables, substituted per set of size values (the
    last set is kept: the calls of one binding reuse it).

    Args:
        attrs: the attributes (a dict).
        size_names: the variables whose values the caller passes, in order.
        where: what the attributes belong to, for error messages.
    """

    __slots__ = ("attrs", "size_names", "where", "_key", "_value")

    def __init__(self, attrs: dict, size_names: tuple, where: str):
        self.attrs, self.size_names, self.where = attrs, size_names, where
        self._key, self._value = None, None

    def at(self, sizes: tuple) -> dict:
        """The attributes with the size variables replaced by ``sizes``."""
        if sizes != self._key:
            self._value = dict(substitute_attrs(self.attrs, dict(zip(self.size_names, sizes)),
                                                self.where))
            self._key = sizes
        return self._value


def _step_attrs(node: E.Call, size_names: tuple):
    """A call's attributes as a dict, or a :class:`_SizedAttrs` when they are symbolic."""
    attrs = dict(node.attrs) if node.attrs is not None else {}
    if size_names and has_symbolic_attrs(attrs):
        return _SizedAttrs(attrs, size_names, f"{node.op.name} attribute")
    return attrs


class _StepProgram:
    """A primitive function as a list of op steps (the non-generated path)."""

    def __init__(self, func: E.Function, target: str, size_names: tuple = ()):
        self.size_names = tuple(size_names)
        self.reference_ops: list = []
        self.kernel_ops: list = []
        slot: dict = {}
        self.constants: list = []
        self.param_types = [p._checked_type or p.type_annotation for p in func.params]
        self.param_counts = [len(_tensor_types(t, "a parameter")) for t in self.param_types]
        for i, param in enumerate(func.params):
            slot[param] = i
        self.num_slots = len(func.params)
        self.steps: list = []
        stack = [(func.body, False)]
        while stack:
            node, ready = stack.pop()
            if node in slot:
                continue
            kind = type(node)
            if kind is E.Constant:
                slot[node] = self._new_slot()
                self.constants.append((slot[node], node.data.numpy()))
                continue
            operands = (node.args if kind is E.Call else node.fields if kind is E.Tuple
                        else (node.tuple_value,) if kind is E.TupleGetItem else None)
            if operands is None:
                raise OpImplError(f"graph executor: unsupported {kind.__name__} inside a "
                                  f"primitive function")
            if not ready:
                stack.append((node, True))
                stack.extend((o, False) for o in reversed(operands) if o not in slot)
                continue
            out = self._new_slot()
            if kind is E.Call:
                op_def = get_def(node.op.name)
                kernel = _kernel_for(node.op.name, target)
                (self.kernel_ops if kernel else self.reference_ops).append(node.op.name)
                fn = kernel or op_def.impl
                if fn is None:
                    raise OpImplError(f"{node.op.name} has no reference implementation",
                                      op=node.op.name)
                self.steps.append(("call", fn, tuple(slot[a] for a in node.args),
                                   _step_attrs(node, self.size_names),
                                   op_def.tuple_output, out, node.op.name))
            elif kind is E.Tuple:
                self.steps.append(("tuple", tuple(slot[f] for f in node.fields), out))
            else:
                self.steps.append(("item", slot[node.tuple_value], node.index, out))
            slot[node] = out
        self.result_slot = slot[func.body]
        self.num_inputs = sum(self.param_counts)
        self.num_outputs = len(_tensor_types(func.body.checked_type, "a result"))

    def _new_slot(self) -> int:
        self.num_slots += 1
        return self.num_slots - 1

    def __call__(self, *arrays):
        """Run on the graph's arrays ``(*inputs, *outputs, *size values)``."""
        end = self.num_inputs + self.num_outputs
        sizes = arrays[end:]
        env = [None] * self.num_slots
        position = 0
        for i, (ty, count) in enumerate(zip(self.param_types, self.param_counts)):
            chunk = list(arrays[position:position + count])
            env[i] = _as_tuples(_unflatten(ty, chunk)) if isinstance(ty, TupleType) \
                else chunk[0]
            position += count
        for index, value in self.constants:
            env[index] = value
        for step in self.steps:
            if step[0] == "call":
                _, fn, args, attrs, tuple_output, out, name = step
                if type(attrs) is _SizedAttrs:
                    attrs = attrs.at(sizes)
                try:
                    result = fn(*[env[a] for a in args], **attrs)
                except (TypeError, ValueError, IndexError, ArithmeticError) as error:
                    raise OpImplError(f"{name}: {error}", op=name) from error
                env[out] = result if tuple_output else result[0]
            elif step[0] == "tuple":
                env[step[2]] = tuple(env[s] for s in step[1])
            else:
                env[step[3]] = env[step[1]][step[2]]
        results = _flatten_value(env[self.result_slot])
        for target, value in zip(arrays[self.num_inputs:end], results):
            np.copyto(target, value, casting="unsafe")


class _IntoCall:
    """A group that is one op call on its (tensor) parameters and constants, whose kernel
    writes into the graph's output entry directly (``kernel.into``), with the op-by-op
    program as fallback when ``into`` declines (e.g. an input it would send to the
    reference).

    Args:
        into: the kernel's ``into(out, *operands, **attrs)``.
        attrs: the call's attributes (a dict, or a ``_SizedAttrs``).
        program: the op-by-op fallback.
        operands: None when the call's operands are the group's inputs in order; else per
            operand the input slot it reads (an int) or a constant array (``take`` of a
            constant index).
    """

    def __init__(self, into, attrs, program: _StepProgram, operands=None):
        self.into, self.attrs, self.program = into, attrs, program
        self.operands = operands
        self.num_inputs = program.num_inputs
        self.reference_ops, self.kernel_ops = program.reference_ops, program.kernel_ops

    def __call__(self, *arrays):
        """Run on the graph's arrays ``(*inputs, output, *size values)``."""
        count = self.num_inputs
        attrs = self.attrs
        if type(attrs) is _SizedAttrs:
            attrs = attrs.at(arrays[count + 1:])
        operands = self.operands
        if operands is None:
            written = self.into(arrays[count], *arrays[:count], **attrs)
        else:
            written = self.into(arrays[count], *[arrays[o] if type(o) is int else o
                                                 for o in operands], **attrs)
        if not written:
            self.program(*arrays)


def _into_call(func: E.Function, program: _StepProgram, target: str):
    """An :class:`_IntoCall` for ``func`` when it is ``op(...)`` whose operands are its
    tensor parameters and constants and the op's kernel has an ``into`` form; else None."""
    body = func.body
    if not (isinstance(body, E.Call) and isinstance(body.op, E.Op)
            and program.num_inputs == len(func.params)
            and not get_def(body.op.name).tuple_output
            and not any(isinstance(t, TupleType) for t in program.param_types)
            and all(a in func.params or isinstance(a, E.Constant) for a in body.args)):
        return None
    into = getattr(_kernel_for(body.op.name, target), "into", None)
    if into is None:
        return None
    operands = None
    if list(body.args) != list(func.params):
        position = {param: i for i, param in enumerate(func.params)}
        operands = [position[a] if isinstance(a, E.Var) else a.data.numpy()
                    for a in body.args]
    return _IntoCall(into, _step_attrs(body, program.size_names), program, operands)


def _as_tuples(value):
    if isinstance(value, list):
        return tuple(_as_tuples(v) for v in value)
    return value


def _flatten_value(value) -> list:
    out, stack = [], [value]
    while stack:
        current = stack.pop()
        if isinstance(current, tuple):
            stack.extend(reversed(current))
        else:
            out.append(current)
    return out


class CompiledFunction:
    """A library function plus how it was produced.

    Attributes:
        fn: the destination-passing callable.
        how: ``"codegen"`` (one generated numba function), ``"kernels"`` (op steps, some on
            kernels) or ``"reference"`` (op steps on numpy references only).
        reference_ops: names of the ops that run on their numpy reference.
        kernel: the ``jitkernels.codegen.FusedKernel`` for ``"codegen"`` (its ``source``,
            ``anchor_op``), else None.
        size_names: the size variables whose values ``fn`` takes after the outputs
            (sorted; empty for a function of static shapes).
    """

    __slots__ = ("fn", "how", "reference_ops", "kernel", "size_names")

    def __init__(self, fn, how: str, reference_ops, kernel=None, size_names=()):
        self.fn, self.how, self.reference_ops = fn, how, list(reference_ops)
        self.kernel = kernel
        self.size_names = tuple(size_names)


_FUSED_KERNELS = {"irlib.attention": "jitkernels.cpu.attention",
                  "irlib.layer_norm": "jitkernels.cpu.layer_norm"}
"""Function attribute -> the kernel module whose ``fused_function(func)`` runs such a
function (made by the FuseAttention / FuseLayerNorm passes)."""


def _fused_kernel(func: E.Function):
    """The fused kernel's callable for a function FuseAttention/FuseLayerNorm made, or None
    (no numba, or a body the kernel does not cover: it then runs op by op)."""
    import importlib
    for attr, module in _FUSED_KERNELS.items():
        if func.get_attr(attr):
            try:
                return importlib.import_module(module).fused_function(func)
            except ImportError:
                return None
    return None


def compile_function(func: E.Function, target: str) -> CompiledFunction:
    """Compile a typed primitive function for ``target``.

    Args:
        func: the ``Primitive=1`` function (types inferred).
        target: ``"cpu"``, ``"cuda"`` or ``"python"``.

    Returns:
        A :class:`CompiledFunction`.
    """
    size_names = function_size_names(func)
    if target == "cpu" and any(func.get_attr(a) for a in _FUSED_KERNELS):
        fused = _fused_kernel(func)         # takes the size values (if any) and ignores them
        if fused is not None:
            return CompiledFunction(fused, "kernels", (), None, size_names)
    if target == "cpu":
        try:
            from jitkernels import codegen
        except ImportError:
            codegen = None
        if codegen is not None:
            generated = codegen.compile_primitive(func)
            if generated is not None:
                return CompiledFunction(generated.direct or generated, "codegen",
                                        generated.reference_ops, generated,
                                        generated.size_names)
    program = _StepProgram(func, target, size_names)
    how = "kernels" if program.kernel_ops else "reference"
    fn = _into_call(func, program, target) if program.kernel_ops else None
    return CompiledFunction(fn or program, how, program.reference_ops, None, size_names)
