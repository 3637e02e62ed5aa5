"""Shared helpers of the StableHLO frontend tests: lower a JAX function, import it, run it
on the interpreter and the graph executor, and compare with JAX's own outputs."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import interp  # noqa: E402
from irlib.frontend.stablehlo import from_stablehlo  # noqa: E402


def lower(function, *args) -> str:
    """The StableHLO text of ``jax.jit(function)`` lowered on ``args``."""
    return jax.jit(function, keep_unused=True).lower(*args).as_text()


def run(mod, executor: str, inputs) -> list:
    """Outputs of ``mod["main"]`` on ``inputs`` as numpy arrays (``"debug"`` or ``"graph"``)."""
    if executor == "debug":
        fn = interp.create_executor("debug", mod=mod).evaluate()
    else:
        fn = interp.create_executor("graph", mod=mod, device=interp.cpu(0),
                                    target="cpu").evaluate()
    got = fn(*inputs)
    return [np.asarray(g.numpy()) for g in _flatten(got)]


def _flatten(value):
    stack, out = [value], []
    while stack:
        item = stack.pop(0)
        if isinstance(item, (tuple, list)):
            stack[0:0] = list(item)
        else:
            out.append(item)
    return out


def expected(function, *args) -> list:
    """JAX's outputs of ``function`` on ``args`` (the oracle), flattened."""
    result = jax.jit(function)(*args)
    leaves = jax.tree_util.tree_leaves(result)
    return [np.asarray(leaf) for leaf in leaves]


def check(function, *args, executors=("debug", "graph"), rtol=1e-4, atol=1e-5):
    """Import ``function`` lowered on ``args`` and compare every executor's outputs with
    JAX's; returns the imported module."""
    mod = from_stablehlo(lower(function, *args))
    want = expected(function, *args)
    for executor in executors:
        got = run(mod, executor, [np.asarray(a) for a in args])
        assert len(got) == len(want), executor
        for g, w in zip(got, want):
            assert g.shape == w.shape, (executor, g.shape, w.shape)
            assert g.dtype == w.dtype, (executor, g.dtype, w.dtype)
            if w.dtype.kind in "fc":
                np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=executor)
            else:
                np.testing.assert_array_equal(g, w, err_msg=executor)
    return mod
