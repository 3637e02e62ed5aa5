"""Helpers shared by the op tests: annotate types through the op relations, evaluate,
and check gradients against two-sided finite differences."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import irlib
from irlib.ir import expr as E
from irlib.ir.functor import post_order
from irlib.ir.types import TensorType, TupleType
from irlib.op import registry
from irlib.testing.dataflow_eval import evaluate


def annotate(expr):
    """Give every node of a dataflow expression its type via the op relations.

    A test-local stand-in for type inference, so op tests need only the registry.
    """
    for node in post_order(expr):
        kind = type(node)
        if kind is E.Var:
            ty = node.type_annotation
        elif kind is E.Constant:
            ty = node.tensor_type
        elif kind is E.Tuple:
            ty = TupleType([f.checked_type for f in node.fields])
        elif kind is E.TupleGetItem:
            ty = node.tuple_value.checked_type.fields[node.index]
        elif kind is E.Call:
            op_def = registry.get_def(node.op.name)
            ty = op_def.type_rel([a.checked_type for a in node.args], node.attrs)
        else:
            continue
        node.with_type(ty)
    return expr


def type_of(expr):
    """The annotated type of ``expr`` (a TupleWrapper's underlying tuple)."""
    if isinstance(expr, E.TupleWrapper):
        expr = expr.astuple()
    return annotate(expr).checked_type


def evaluate_op(name, *inputs, **attrs):
    """Op ``name``'s numpy implementation on ``inputs`` with keyword attributes."""
    return registry.evaluate(name, list(inputs), registry.get_def(name).make_attrs(attrs))


def op_relation(name, arg_types, **attrs):
    """The result type op ``name``'s type relation gives for ``arg_types``."""
    op_def = registry.get_def(name)
    return op_def.type_rel(arg_types, op_def.make_attrs(attrs))


def value_type(value):
    """The TensorType/TupleType of a numpy value (or tuple of values)."""
    if isinstance(value, tuple):
        return TupleType([value_type(v) for v in value])
    value = np.asarray(value)
    return TensorType(value.shape, value.dtype.name)


def make_vars(inputs):
    """One Var per input array (a tuple input gets a TupleType var)."""
    return [irlib.var(f"in{i}", value_type(x)) for i, x in enumerate(inputs)]


def call_with_vars(builder, inputs, **attrs):
    """``(expr, env)``: ``builder`` applied to fresh vars typed after ``inputs``."""
    variables = make_vars(inputs)
    expr = builder(*variables, **attrs)
    if isinstance(expr, E.TupleWrapper):
        expr = expr.astuple()
    return expr, dict(zip(variables, inputs))


def _objective(call, env, weights):
    result = evaluate(call, env)
    if isinstance(result, tuple):
        return sum(float(np.sum(r * w)) for r, w in zip(result, weights))
    return float(np.sum(result * weights))


def _perturbable(call, env):
    """(var, field index or None, array) for every float input of the call."""
    items = []
    for arg in call.args:
        if arg not in env:  # constants are not perturbed
            continue
        value = env[arg]
        if isinstance(value, tuple):
            items.extend((arg, i, v) for i, v in enumerate(value))
        elif np.issubdtype(value.dtype, np.floating):
            items.append((arg, None, value))
    return items


def check_gradient(builder, inputs, eps=1e-6, rtol=1e-5, atol=1e-6, seed=0, **attrs):
    """Compare an op's gradient rule with two-sided finite differences (float64 inputs).

    The scalar objective is ``sum(op(inputs) * weights)`` for random ``weights``, whose
    gradient w.r.t. each input is the op's adjoint given ``out_grad = weights``.
    """
    call, env = call_with_vars(builder, inputs, **attrs)
    annotate(call)
    out_type = call.checked_type
    rng = np.random.default_rng(seed)
    if isinstance(out_type, TupleType):
        weights = tuple(rng.standard_normal(f.concrete_shape) for f in out_type.fields)
    else:
        weights = rng.standard_normal(out_type.concrete_shape)
    out_grad = irlib.var("out_grad", out_type)
    grads = registry.get_def(call.op.name).grad(call, out_grad)
    assert len(grads) == len(call.args)
    grad_env = dict(env)
    grad_env[out_grad] = weights
    grad_values = [evaluate(g, grad_env) for g in grads]
    for arg, index, value in _perturbable(call, env):
        position = call.args.index(arg)
        analytic = grad_values[position] if index is None else grad_values[position][index]
        numeric = np.zeros_like(value)
        for flat in range(value.size):
            samples = []
            for sign in (1, -1):
                bumped = value.copy()
                bumped.flat[flat] += sign * eps
                trial = dict(env)
                if index is None:
                    trial[arg] = bumped
                else:
                    fields = list(env[arg])
                    fields[index] = bumped
                    trial[arg] = tuple(fields)
                samples.append(_objective(call, trial, weights))
            numeric.flat[flat] = (samples[0] - samples[1]) / (2 * eps)
        np.testing.assert_allclose(np.asarray(analytic), numeric, rtol=rtol, atol=atol,
                                   err_msg=f"{call.op.name}: gradient of input {position}"
                                           f"{'' if index is None else f'.{index}'}")
    # Non-float inputs (bool conditions) get zero adjoints of their own shape.
    for position, arg in enumerate(call.args):
        value = env.get(arg)
        if value is None:
            continue
        if not isinstance(value, tuple) and not np.issubdtype(value.dtype, np.floating):
            assert np.shape(grad_values[position]) == value.shape
            assert not np.any(grad_values[position])


# -- table-driven checks -----------------------------------------------------------------

RNG = np.random.default_rng(1234)


def pair(value):
    """An int or a 1/2-sequence as a pair (what the 2-D op builders accept)."""
    return (value, value) if isinstance(value, int) else tuple(value) * (2 // len(value))


def pads4(padding):
    """1, 2 or 4 padding amounts as ``[top, left, bottom, right]``."""
    padding = (padding,) if isinstance(padding, int) else tuple(padding)
    return list(padding) * (4 // len(padding))


def pool_out_hw(h, w, pads, pool_size, strides, dilation, ceil_mode):
    """The ``(out_h, out_w)`` of a 2-D pooling window (Relay's rule, written out here as the
    oracle's: ``ceil_mode`` adds ``stride - 1`` before the floor division)."""
    extra = [s - 1 if ceil_mode else 0 for s in strides]
    oh = (h + pads[0] + pads[2] - dilation[0] * (pool_size[0] - 1) - 1 + extra[0]) \
        // strides[0] + 1
    ow = (w + pads[1] + pads[3] - dilation[1] * (pool_size[1] - 1) - 1 + extra[1]) \
        // strides[1] + 1
    return oh, ow


def rand(shape, dtype="float32", low=-2.0, high=2.0):
    if dtype == "bool":
        return RNG.random(shape) > 0.5
    if np.issubdtype(np.dtype(dtype), np.integer):
        return RNG.integers(-5, 6, size=shape).astype(dtype)
    return RNG.uniform(low, high, size=shape).astype(dtype)


def positive(shape, dtype="float32"):
    return rand(shape, dtype, 0.5, 3.0)


@dataclass
class OpRecord:
    """One op under test: a builder, input makers per case, an oracle and attrs."""

    name: str
    builder: Callable
    cases: list              # each: (list of input arrays (or tuples), attrs dict)
    oracle: Callable         # oracle(*inputs, **attrs) -> array or tuple of arrays
    tol: float = 1e-5
    ids: list = field(default_factory=list)


def check_record(record: OpRecord, case: int) -> None:
    """Run one case of a record: reference vs oracle, and relation type vs oracle type."""
    inputs, attrs = record.cases[case]
    expr, env = call_with_vars(record.builder, inputs, **attrs)
    assert expr.op.name == record.name
    result = evaluate(expr, env)
    expected = record.oracle(*inputs, **attrs)
    assert type_of(expr) == value_type(expected)
    assert value_type(result) == value_type(expected)
    if isinstance(expected, tuple):
        for got, want in zip(result, expected):
            np.testing.assert_allclose(got, want, rtol=record.tol, atol=record.tol)
    else:
        np.testing.assert_allclose(result, expected, rtol=record.tol, atol=record.tol)
