"""Helpers shared by the whole test suite: run a module, compare results, make variables.

Import them as ``from helpers import run, to_numpy, assert_close, tvar`` (pytest puts
``tests/`` on ``sys.path``, since ``tests/conftest.py`` lives there). Fixtures shared by
several directories live in ``tests/conftest.py``.
"""

from __future__ import annotations

import numpy as np

import irlib

__all__ = ["run", "to_numpy", "assert_close", "tvar", "assert_rewrites", "make_list_module",
           "let_chain_function", "apply_epilogue_steps", "numpy_conv_nhwc"]


def run(mod, *args, kind: str = "debug"):
    """``mod["main"](*args)`` on an executor of ``interp.create_executor`` (the reference
    interpreter by default); the result is a runtime value (see :func:`to_numpy`)."""
    from interp import create_executor
    return create_executor(kind, mod=mod).evaluate()(*args)


def to_numpy(value):
    """A result as numpy: arrays for tensors, nested tuples for tuples and for the fields of
    constructor values."""
    if isinstance(value, (tuple, list)) or hasattr(value, "fields"):
        return tuple(to_numpy(v) for v in getattr(value, "fields", value))
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


def assert_close(actual, expected, rtol: float = 1e-5, atol: float = 1e-6):
    """Require two results (runtime values, arrays or nested tuples of them) to have the same
    structure and shapes and close contents (``np.testing.assert_allclose``'s meaning)."""
    stack = [(to_numpy(actual), to_numpy(expected), "result")]
    while stack:
        got, want, path = stack.pop()
        if isinstance(want, tuple):
            assert isinstance(got, tuple) and len(got) == len(want), \
                f"{path}: expected a tuple of {len(want)}, got {got!r}"
            stack.extend((g, w, f"{path}[{i}]") for i, (g, w) in enumerate(zip(got, want)))
            continue
        assert not isinstance(got, tuple), f"{path}: expected an array, got a tuple"
        assert np.shape(got) == np.shape(want), f"{path}: shape {np.shape(got)} vs " \
            f"{np.shape(want)}"
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=path)


def tvar(name: str, shape, dtype: str = "float32"):
    """A variable annotated with the tensor type ``Tensor[shape, dtype]``."""
    return irlib.var(name, shape=shape, dtype=dtype)


def assert_rewrites(transform, before: str, after: str):
    """Run a pass on a function written in the text format and require the result to be the
    function ``after`` (structural equality: bound names may differ, types and attributes
    may not).

    This is how a pass test states what the pass does, as TVM's pass tests do: the program
    before and the program expected after, both readable.

    Args:
        transform: a pass (or any callable taking and returning a function).
        before: the input function, ``fn (...) { ... }`` in the text format.
        after: the expected output function in the text format.

    Returns:
        The pass's output (for further checks).
    """
    from irlib.ir.structural import structural_equal
    func = irlib.parse_expr(before)
    out = transform(func)
    expected = irlib.parse_expr(after)
    assert structural_equal(out, expected, map_free_vars=True), (
        f"the pass gave\n{out}\nbut the test expects\n{expected}")
    return out


def let_chain_function(depth: int, step, first=None):
    """``fn (%first) { let %v1 = step(%first); let %v2 = step(%v1); ...; %v<depth> }``, built
    without recursion: the long programs the no-recursion tests run passes over.

    Args:
        depth: the number of lets.
        step: ``previous variable -> bound value``.
        first: the parameter (default ``%x: Tensor[(2,), float32]``).
    """
    first = irlib.var("x", shape=(2,)) if first is None else first
    current, bindings = first, []
    for index in range(depth):
        bound = irlib.var(f"v{index + 1}")
        bindings.append((bound, step(current)))
        current = bound
    body = current
    for bound, value in reversed(bindings):
        body = irlib.Let(bound, value, body)
    return irlib.Function([first], body)


def make_list_module():
    """A module with ``type List[A] { Cons(A, List[A]), Nil }`` built by hand (no parser,
    no Prelude); returns ``(mod, list_type, cons, nil)``."""
    from irlib import Constructor, GlobalTypeVar, IRModule, TypeCall, TypeData, TypeVar
    mod = IRModule()
    list_type = GlobalTypeVar("List")
    a = TypeVar("A")
    cons = Constructor("Cons", [a, TypeCall(list_type, [a])], list_type)
    nil = Constructor("Nil", [], list_type)
    mod[list_type] = TypeData(list_type, [a], [cons, nil])
    return mod, list_type, cons, nil


def apply_epilogue_steps(out, kinds, vectors, residual):
    """The oracle of a fused conv epilogue (jitkernels.cpu.epilogue): its steps in numpy, in
    order, on a copy of ``out`` (in ``out``'s dtype).

    Args:
        out: the convolution's result before the epilogue.
        kinds: the step kinds (``ADD``, ``MUL``, ``RESIDUAL``, else ReLU).
        vectors: one per-channel vector per step (used by ``ADD``/``MUL``).
        residual: the array a ``RESIDUAL`` step adds.
    """
    from jitkernels.cpu.epilogue import ADD, MUL, RESIDUAL
    out = out.copy()
    for s, kind in enumerate(kinds):
        if kind == ADD:
            out += vectors[s]
        elif kind == MUL:
            out *= vectors[s]
        elif kind == RESIDUAL:
            out += residual
        else:
            out = np.maximum(out, 0)
    return out


def numpy_conv_nhwc(x, w, strides, dilation, before, after):
    """NHWC data, HWIO weight: a sum over kernel taps of strided windows of the zero-padded
    image, in float64."""
    padded = np.pad(x.astype(np.float64), ((0, 0), (before[0], after[0]),
                                           (before[1], after[1]), (0, 0)))
    kh, kw = w.shape[:2]
    oh = (padded.shape[1] - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (padded.shape[2] - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((x.shape[0], oh, ow, w.shape[3]))
    for b in range(kh):
        for e in range(kw):
            window = padded[:, b * dilation[0]:b * dilation[0] + strides[0] * (oh - 1) + 1:
                            strides[0],
                            e * dilation[1]:e * dilation[1] + strides[1] * (ow - 1) + 1:
                            strides[1], :]
            out += window @ w[b, e].astype(np.float64)
    return out
