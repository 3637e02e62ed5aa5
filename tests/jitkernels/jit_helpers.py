"""Helpers for the kernel tests: run a kernel and the op's numpy reference on the same inputs."""

from __future__ import annotations

import numpy as np

import jitkernels
from irlib.op import evaluate, get_def


def full_attrs(op_name: str, attrs: dict):
    """The op's Attrs with ``attrs`` over its defaults (what a Call carries)."""
    schema = get_def(op_name).attrs
    return schema.make(op_name, attrs) if schema is not None else None


def check_kernel(op_name: str, inputs, attrs=None, target="cpu", rtol=1e-4, atol=1e-4):
    """Assert that the ``target`` kernel of ``op_name`` matches ``irlib.op.evaluate``.

    Returns:
        The kernel's outputs (a tuple).
    """
    full = full_attrs(op_name, attrs or {})
    expected = evaluate(op_name, inputs, full)
    if not get_def(op_name).tuple_output:
        expected = (expected,)
    kernel = jitkernels.get_kernel(op_name, target)
    assert kernel is not None, f"no {target} kernel for {op_name}"
    got = kernel(*inputs, **(dict(full) if full is not None else {}))
    assert isinstance(got, tuple) and len(got) == len(expected)
    for g, e in zip(got, expected):
        g, e = np.asarray(g), np.asarray(e)
        assert g.shape == e.shape, (op_name, g.shape, e.shape)
        assert g.dtype == e.dtype, (op_name, g.dtype, e.dtype)
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=op_name)
    return got


def randn(rng, *shape, dtype="float32"):
    """Standard-normal test data of ``dtype``."""
    return rng.standard_normal(shape).astype(dtype)
