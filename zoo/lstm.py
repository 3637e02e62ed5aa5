"""An unrolled LSTM (``relay.testing.lstm``).

``lstm_cell`` is a Function ``(inputs, states, i2h_weight, i2h_bias, h2h_weight, h2h_bias)
-> (next_h, (next_h, next_c))`` written as a chain of let bindings. ``get_net`` calls a
fresh cell per iteration on a fresh input var named ``data`` and that iteration's weights
``i2h_{i}_weight`` (4H, H), ``i2h_{i}_bias`` (4H), ``h2h_{i}_weight``, ``h2h_{i}_bias``,
starting from zero states, and returns the last output. Every variable is annotated, as in
the reference.
"""

import irlib
from irlib.ir.types import TensorType, TupleType

from . import layers
from .init import create_workload


def _let_chain(bindings, result):
    """``let b1 = v1; ...; result`` from a list of (var, value) pairs, built inside out."""
    body = result
    for var, value in reversed(bindings):
        body = irlib.Let(var, value, body)
    return body


class _Bindings:
    """Collects let bindings in order (what Relay's ScopeBuilder does for these models)."""

    def __init__(self):
        self.items = []

    def let(self, name, ty, value):
        var = irlib.Var(name, ty)
        self.items.append((var, value))
        return var


def lstm_cell(num_hidden, batch_size=1, dtype="float32", name=""):
    """One LSTM cell as a Function.

    Args:
        num_hidden: the hidden size H.
        batch_size: the batch size (length of the states).
        dtype: the data type.
        name: the prefix of the dense layers' names.

    Returns:
        A Function of ``(inputs, states, i2h_weight, i2h_bias, h2h_weight, h2h_bias)``
        returning ``(next_h, (next_h, next_c))``; the gates are split from ``i2h + h2h`` in
        the order input, forget, transform, output.
    """
    input_type = TensorType((batch_size, num_hidden), dtype)
    weight_type = TensorType((4 * num_hidden, num_hidden), dtype)
    bias_type = TensorType((4 * num_hidden,), dtype)
    dense_type = TensorType((batch_size, 4 * num_hidden), dtype)
    state_type = TupleType((input_type, input_type))
    ret_type = TupleType((input_type, state_type))

    inputs = irlib.Var("inputs", input_type)
    states = irlib.Var("states", state_type)
    i2h_weight = irlib.Var("i2h_weight", weight_type)
    i2h_bias = irlib.Var("i2h_bias", bias_type)
    h2h_weight = irlib.Var("h2h_weight", weight_type)
    h2h_bias = irlib.Var("h2h_bias", bias_type)

    b = _Bindings()
    i2h = b.let("i2h", dense_type, layers.dense_add_bias(
        data=inputs, units=num_hidden * 4, weight=i2h_weight, bias=i2h_bias, name=f"{name}i2h"))
    h2h = b.let("h2h", dense_type, layers.dense_add_bias(
        data=irlib.TupleGetItem(states, 0), units=num_hidden * 4, weight=h2h_weight,
        bias=h2h_bias, name=f"{name}h2h"))
    gates = b.let("gates", dense_type, irlib.add(i2h, h2h))
    slices = b.let("slice_gates", TupleType((input_type,) * 4),
                   irlib.split(gates, indices_or_sections=4, axis=1).astuple())
    in_gate = b.let("in_gate", input_type, irlib.sigmoid(irlib.TupleGetItem(slices, 0)))
    forget_gate = b.let("forget_gate", input_type, irlib.sigmoid(irlib.TupleGetItem(slices, 1)))
    in_transform = b.let("in_transform", input_type, irlib.tanh(irlib.TupleGetItem(slices, 2)))
    out_gate = b.let("out_gate", input_type, irlib.sigmoid(irlib.TupleGetItem(slices, 3)))
    next_c = b.let("next_c", input_type, irlib.add(
        irlib.multiply(forget_gate, irlib.TupleGetItem(states, 1)),
        irlib.multiply(in_gate, in_transform)))
    next_h = b.let("next_h", input_type, irlib.multiply(out_gate, irlib.tanh(next_c)))
    ret = b.let("ret", ret_type, irlib.Tuple((next_h, irlib.Tuple((next_h, next_c)))))
    body = _let_chain(b.items, ret)
    return irlib.Function((inputs, states, i2h_weight, i2h_bias, h2h_weight, h2h_bias), body,
                          ret_type)


def get_net(iterations, num_hidden, batch_size=1, dtype="float32"):
    """The LSTM unrolled over ``iterations`` steps, as a Function.

    Args:
        iterations: number of steps (at least 1).
        num_hidden: the hidden size H.
        batch_size: the batch size.
        dtype: the data type.

    Returns:
        The network Function: parameters ``data`` (b, H) and the step's four weights per
        step; output the last step's hidden state (b, H).

    Raises:
        ValueError: if ``iterations`` is less than 1.
    """
    if iterations < 1:
        raise ValueError(f"lstm.get_net needs at least one iteration, got {iterations}")
    input_type = TensorType((batch_size, num_hidden), dtype)
    weight_type = TensorType((4 * num_hidden, num_hidden), dtype)
    bias_type = TensorType((4 * num_hidden,), dtype)
    state_type = TupleType((input_type, input_type))
    cell_type = TupleType((input_type, state_type))

    b = _Bindings()
    zeros = b.let("zeros", input_type, irlib.zeros((batch_size, num_hidden), dtype))
    states = b.let("init_states", state_type, irlib.Tuple((zeros, zeros)))
    out = None
    for i in range(iterations):
        step_args = (irlib.Var("data", input_type), states,
                     irlib.Var(f"i2h_{i}_weight", weight_type),
                     irlib.Var(f"i2h_{i}_bias", bias_type),
                     irlib.Var(f"h2h_{i}_weight", weight_type),
                     irlib.Var(f"h2h_{i}_bias", bias_type))
        cell = lstm_cell(num_hidden, batch_size, dtype, f"lstm_{i}")
        call = b.let(f"call_{i}", cell_type, irlib.Call(cell, step_args))
        out = b.let(f"out_{i}", input_type, irlib.TupleGetItem(call, 0))
        states = b.let(f"states_{i}", state_type, irlib.TupleGetItem(call, 1))
    body = _let_chain(b.items, out)
    return irlib.Function(tuple(irlib.analysis.free_vars(body)), body, input_type)


def get_workload(iterations, num_hidden, batch_size=1, dtype="float32"):
    """The unrolled LSTM and initialised parameters.

    Args:
        iterations: number of steps.
        num_hidden: the hidden size.
        batch_size: the batch size.
        dtype: the data type.

    Returns:
        ``(mod, params)`` as :func:`zoo.create_workload` (the ``data`` vars are excluded).
    """
    return create_workload(get_net(iterations, num_hidden, batch_size, dtype))
