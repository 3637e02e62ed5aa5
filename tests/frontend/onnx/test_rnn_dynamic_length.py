"""Recurrent ops whose sequence length is known only at run time (issue #19).

The silero-vad shape: an ``If`` on a run-time condition with an LSTM in a branch, fed a chunk
whose length is a dynamic dim. The importer runs the cell in a loop (a recursive function)
instead of unrolling it; every result is compared with onnxruntime on the same model, for
several lengths through one import, on the interpreter and the graph executor (which falls
back to the interpreter for the loop).
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from irlib.frontend.onnx import from_onnx  # noqa: E402
from irlib.ir.types import TensorType  # noqa: E402
from irlib.transform import InferType  # noqa: E402

from ._running import run_outputs  # noqa: E402

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def _weights(op, hidden, feat, directions, seed):
    rng = np.random.default_rng(seed)
    gates = GATES[op]
    return [numpy_helper.from_array((0.4 * rng.standard_normal(shape)).astype("float32"), name)
            for name, shape in (("W", (directions, gates * hidden, feat)),
                                ("R", (directions, gates * hidden, hidden)),
                                ("B", (directions, 2 * gates * hidden)))]


def _recurrent_node(op, hidden, direction, outputs, seq_lens=""):
    inputs = ["x", "W", "R", "B", seq_lens, "h0"] + (["c0"] if op == "LSTM" else [])
    return helper.make_node(op, inputs, outputs, hidden_size=hidden, direction=direction)


def _state_inputs(op, directions, batch, hidden):
    names = ["h0"] + (["c0"] if op == "LSTM" else [])
    return [helper.make_tensor_value_info(n, TensorProto.FLOAT, [directions, batch, hidden])
            for n in names]


def lstm_in_if_model(hidden=8, feat=4, batch=1):
    """``If(c) { Squeeze(LSTM(x).Y_h) } else { Squeeze(h0) }`` with ``x: [T, batch, feat]``
    and ``T`` a dim named at run time."""
    squeeze_axis = numpy_helper.from_array(np.array([0], "int64"), "axis0")
    then = helper.make_graph(
        [_recurrent_node("LSTM", hidden, "forward", ["Y", "Yh", "Yc"]),
         helper.make_node("Squeeze", ["Yh", "axis0"], ["out_then"])],
        "then", [], [helper.make_tensor_value_info("out_then", TensorProto.FLOAT,
                                                   [batch, hidden])])
    other = helper.make_graph(
        [helper.make_node("Squeeze", ["h0", "axis0"], ["out_else"])],
        "else", [], [helper.make_tensor_value_info("out_else", TensorProto.FLOAT,
                                                   [batch, hidden])])
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["out"], then_branch=then, else_branch=other)],
        "lstm_in_if",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["T", batch, feat]),
         helper.make_tensor_value_info("c", TensorProto.BOOL, [])]
        + _state_inputs("LSTM", 1, batch, hidden),
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [batch, hidden])],
        _weights("LSTM", hidden, feat, 1, seed=0) + [squeeze_axis])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)
    onnx.checker.check_model(model)
    return model


def recurrent_model(op, hidden, feat, batch, direction, with_lens, seed):
    """One RNN/GRU/LSTM node with all outputs, ``x: [T, batch, feat]`` (``T`` dynamic)."""
    directions = 2 if direction == "bidirectional" else 1
    outs = ["Y", "Yh"] + (["Yc"] if op == "LSTM" else [])
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["T", batch, feat])]
    if with_lens:
        inputs.append(helper.make_tensor_value_info("lens", TensorProto.INT32, [batch]))
    inputs += _state_inputs(op, directions, batch, hidden)
    out_info = [helper.make_tensor_value_info("Y", TensorProto.FLOAT,
                                              ["T", directions, batch, hidden])]
    out_info += [helper.make_tensor_value_info(n, TensorProto.FLOAT, [directions, batch, hidden])
                 for n in outs[1:]]
    graph = helper.make_graph(
        [_recurrent_node(op, hidden, direction, outs, "lens" if with_lens else "")],
        "recurrent", inputs, out_info, _weights(op, hidden, feat, directions, seed))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)
    onnx.checker.check_model(model)
    return model


def _onnxruntime(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


@pytest.mark.parametrize("executor", ["debug", "graph"])
def test_lstm_in_if_with_a_run_time_length(executor):
    model = lstm_in_if_model()
    mod, params = from_onnx(model)
    main = InferType()(mod)["main"]
    assert main.params[0].checked_type.shape[1:] == (1, 4)     # T stays a dynamic dim
    rng = np.random.default_rng(1)
    h0 = rng.standard_normal((1, 1, 8)).astype("float32")
    c0 = rng.standard_normal((1, 1, 8)).astype("float32")
    for length, cond in ((5, True), (1, True), (12, True), (3, False)):
        x = rng.standard_normal((length, 1, 4)).astype("float32")
        flag = np.array(cond)
        want = _onnxruntime(model, {"x": x, "c": flag, "h0": h0, "c0": c0})
        got = run_outputs(mod, params, executor, [x, flag, h0, c0])
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)


def test_lstm_in_if_types_its_output_statically():
    mod, _ = from_onnx(lstm_in_if_model(hidden=6, feat=3, batch=2))
    assert InferType()(mod)["main"].ret_type == TensorType((2, 6), "float32")


@settings(max_examples=8, deadline=None)
@given(op=st.sampled_from(["LSTM", "GRU", "RNN"]),
       direction=st.sampled_from(["forward", "reverse", "bidirectional"]),
       batch=st.integers(1, 3), hidden=st.integers(1, 5), feat=st.integers(1, 4),
       lengths=st.lists(st.integers(0, 6), min_size=1, max_size=3),
       with_lens=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_recurrent_ops_with_a_run_time_length(op, direction, batch, hidden, feat, lengths,
                                              with_lens, seed):
    model = recurrent_model(op, hidden, feat, batch, direction, with_lens, seed)
    mod, params = from_onnx(model)
    directions = 2 if direction == "bidirectional" else 1
    rng = np.random.default_rng(seed)
    for length in lengths:
        if length == 0 and with_lens:
            continue        # onnxruntime refuses sequence_lens beyond a zero length
        feeds = {"x": rng.standard_normal((length, batch, feat)).astype("float32")}
        if with_lens:
            feeds["lens"] = rng.integers(1, length + 1, batch).astype("int32")
        for name in ["h0"] + (["c0"] if op == "LSTM" else []):
            feeds[name] = rng.standard_normal((directions, batch, hidden)).astype("float32")
        if length == 0:
            # onnxruntime refuses an empty sequence: the outputs are the initial states
            # and an empty Y (hand-derived)
            want = [np.zeros((0, directions, batch, hidden), "float32"), feeds["h0"]] + \
                ([feeds["c0"]] if op == "LSTM" else [])
        else:
            want = _onnxruntime(model, feeds)
        names = [p.name_hint for p in mod["main"].params]
        got = run_outputs(mod, params, "debug", [feeds[n] for n in names])
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
