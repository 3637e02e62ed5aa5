"""from_onnx on STFT, MelWeightMatrix, TensorScatter, AffineGrid, recurrent ops with run-time
``sequence_lens`` and Pad with run-time axes: one-node models run by onnxruntime (the oracle)
and by the interpreter and the graph executor."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import interp  # noqa: E402
from irlib.frontend.onnx import from_onnx  # noqa: E402

RNG = np.random.default_rng(0)
_TYPES = {"float32": TensorProto.FLOAT, "int64": TensorProto.INT64,
          "int32": TensorProto.INT32}


def _model(op_type, args, attrs=None, outputs=("y",), opset=17, constant=()):
    """A one-node model on ``args`` (name -> array in input order, None for an omitted
    input): the names in ``constant`` become initializers, the rest graph inputs; its
    outputs are float tensors."""
    names = [name if value is not None else "" for name, value in args.items()]
    inputs = [helper.make_tensor_value_info(name, _TYPES[value.dtype.name], value.shape)
              for name, value in args.items() if value is not None and name not in constant]
    node = helper.make_node(op_type, names, list(outputs), **(attrs or {}))
    graph = helper.make_graph(
        [node], "g", inputs,
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
        [numpy_helper.from_array(args[n], n) for n in constant])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def _feeds(args, constant=()):
    return {name: value for name, value in args.items()
            if value is not None and name not in constant}


def _check(model, feeds, rtol=1e-4, atol=1e-5):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    for output, value in zip(model.graph.output, expected):  # the checker wants a shape
        output.type.tensor_type.shape.CopyFrom(
            helper.make_tensor_value_info("s", TensorProto.FLOAT, value.shape)
            .type.tensor_type.shape)
    mod, _ = from_onnx(model)
    for kind in ("debug", "graph"):
        result = interp.create_executor(kind, mod=mod).evaluate()(*feeds.values())
        outputs = list(result) if isinstance(result, tuple) else [result]
        assert len(outputs) == len(expected), kind
        for got, want in zip(outputs, expected):
            np.testing.assert_allclose(got.numpy(), want, rtol=rtol, atol=atol, err_msg=kind)
    return mod


def _f32(*shape):
    return RNG.standard_normal(shape).astype("float32")


@pytest.mark.parametrize("window,constant_step", [(False, False), (True, True)])
def test_stft(window, constant_step):
    args = {"signal": _f32(2, 48, 1), "frame_step": np.array(5, "int64"),
            "window": np.hamming(12).astype("float32") if window else None,
            "frame_length": np.array(12, "int64")}
    constant = ("frame_step",) if constant_step else ()
    model = _model("STFT", args, {"onesided": 1}, constant=constant)
    _check(model, _feeds(args, constant), atol=1e-4)


def test_mel_weight_matrix_runtime_and_folded():
    args = {"num_mel_bins": np.array(6, "int64"), "dft_length": np.array(32, "int64"),
            "sample_rate": np.array(16000, "int64"),
            "lower_edge_hertz": np.array(50.0, "float32"),
            "upper_edge_hertz": np.array(7000.0, "float32")}
    _check(_model("MelWeightMatrix", args), args)
    mod = _check(_model("MelWeightMatrix", args, constant=tuple(args)), {})
    assert "onnx.mel_weight_matrix" not in mod.astext()  # constant inputs fold at import


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter(mode):
    feeds = {"past_cache": _f32(2, 3, 6, 4), "update": _f32(2, 3, 2, 4),
             "write_indices": np.array([4, 1] if mode == "linear" else [5, 2], "int64")}
    _check(_model("TensorScatter", feeds, {"mode": mode}, opset=24), feeds)


@pytest.mark.parametrize("size", [[2, 3, 4, 5], [2, 1, 3, 2, 4]])
@pytest.mark.parametrize("align_corners", [0, 1])
def test_affine_grid(size, align_corners):
    spatial = len(size) - 2
    feeds = {"theta": _f32(2, spatial, spatial + 1), "size": np.array(size, "int64")}
    _check(_model("AffineGrid", feeds, {"align_corners": align_corners}, opset=20), feeds)


def _recurrent_feeds(op_type, directions, peepholes):
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op_type]
    steps, batch, size, hidden = 4, 3, 5, 2
    feeds = {"X": _f32(steps, batch, size), "W": _f32(directions, gates * hidden, size),
             "R": _f32(directions, gates * hidden, hidden),
             "B": _f32(directions, 2 * gates * hidden),
             "sequence_lens": np.array([4, 1, 3], "int32"),
             "initial_h": _f32(directions, batch, hidden)}
    if op_type == "LSTM":
        feeds["initial_c"] = _f32(directions, batch, hidden)
        feeds["P"] = _f32(directions, 3 * hidden) if peepholes else None
    return feeds, hidden


@pytest.mark.parametrize("op_type,direction,peepholes", [
    ("LSTM", "forward", True), ("LSTM", "reverse", False), ("LSTM", "bidirectional", True),
    ("GRU", "bidirectional", False), ("RNN", "reverse", False)])
def test_recurrent_ops_with_runtime_sequence_lens(op_type, direction, peepholes):
    directions = 2 if direction == "bidirectional" else 1
    feeds, hidden = _recurrent_feeds(op_type, directions, peepholes)
    outputs = ("Y", "Y_h", "Y_c") if op_type == "LSTM" else ("Y", "Y_h")
    model = _model(op_type, feeds, {"hidden_size": hidden, "direction": direction},
                   outputs=outputs, opset=14)
    _check(model, _feeds(feeds))


@pytest.mark.parametrize("axes", [[1, 3], [-3, -1], [0]])
def test_pad_with_runtime_axes(axes):
    feeds = {"x": _f32(2, 3, 4, 5), "pads": np.array([1, 2] * len(axes), "int64"),
             "value": np.array(0.5, "float32"), "axes": np.array(axes, "int64")}
    model = _model("Pad", feeds, {"mode": "constant"}, opset=18)
    _check(model, feeds)


def _run_split_to_sequence(data, split, axis):
    """SplitToSequence with a run-time ``split`` through both executors: the list's arrays."""
    from interp.values import from_python_value, to_python_value
    model = _model("SplitToSequence", {"data": data, "split": split}, {"axis": axis})
    model.graph.output[0].CopyFrom(helper.make_tensor_sequence_value_info(
        "y", TensorProto.FLOAT, None))
    mod, _ = from_onnx(model)
    results = []
    for kind in ("debug", "graph"):
        main = mod["main"]
        values = [from_python_value(a, p.type_annotation, mod)
                  for a, p in zip((data, split), main.params)]
        out = to_python_value(interp.create_executor(kind, mod=mod).evaluate()(*values))
        results.append([np.asarray(piece.numpy()) for piece in out])
    return results


@pytest.mark.parametrize("split,axis,want_sizes", [(np.array(4, "int64"), 1, [4, 2]),
                                                   (np.array(2, "int32"), 1, [2, 2, 2]),
                                                   (np.array([1, 2], "int64"), 0, [1, 2])])
def test_split_to_sequence_with_runtime_split(split, axis, want_sizes):
    data = _f32(3, 6)
    want = np.split(data, np.cumsum(want_sizes)[:-1], axis=axis)
    for pieces in _run_split_to_sequence(data, split, axis):
        assert [p.shape[axis] for p in pieces] == want_sizes
        for got, expected in zip(pieces, want):
            np.testing.assert_array_equal(got, expected)


def _sequence_outputs(model, args):
    """The list output of ``model`` run by both executors, as numpy arrays."""
    from interp.values import from_python_value, to_python_value
    mod, _ = from_onnx(model)
    main = mod["main"]
    results = []
    for kind in ("debug", "graph"):
        values = [from_python_value(a, p.type_annotation, mod) for a, p in zip(args, main.params)]
        out = to_python_value(interp.create_executor(kind, mod=mod).evaluate()(*values))
        results.append([np.asarray(piece.numpy()) for piece in out])
    return results


def _sequence_model(nodes, inputs, opset=17):
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_sequence_value_info(
        "out", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def test_sequence_empty_takes_the_rank_of_its_first_element():
    nodes = [helper.make_node("SequenceEmpty", [], ["empty"], dtype=TensorProto.FLOAT),
             helper.make_node("SequenceInsert", ["empty", "x"], ["one"]),
             helper.make_node("SequenceInsert", ["one", "y", "zero"], ["out"])]
    model = _sequence_model(nodes, [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
        helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3]),
        helper.make_tensor_value_info("zero", TensorProto.INT64, [])])
    x, y = _f32(2, 3), _f32(1, 3)
    for pieces in _sequence_outputs(model, (x, y, np.array(0, "int64"))):
        assert len(pieces) == 2
        np.testing.assert_array_equal(pieces[0], y)  # inserted at the front
        np.testing.assert_array_equal(pieces[1], x)


def _constant(name, value):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(value, name))


def test_sequence_empty_carried_through_a_loop():
    # out = [x[:1], x[:2], ..., x[:n]], built by inserting into a SequenceEmpty in a Loop
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         _constant("one", np.array(1, "int64")), _constant("axes", np.array([0], "int64")),
         _constant("starts", np.array([0], "int64")),
         helper.make_node("Add", ["i", "one"], ["end"]),
         helper.make_node("Unsqueeze", ["end", "axes"], ["ends"]),
         helper.make_node("Slice", ["x", "starts", "ends"], ["piece"]),
         helper.make_node("SequenceInsert", ["seq_in", "piece"], ["seq_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_sequence_value_info("seq_in", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_sequence_value_info("seq_out", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("SequenceEmpty", [], ["empty"], dtype=TensorProto.FLOAT),
             helper.make_node("Loop", ["n", "", "empty"], ["out"], body=body)]
    model = _sequence_model(nodes, [helper.make_tensor_value_info("n", TensorProto.INT64, []),
                                    helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])])
    x = _f32(4)
    for pieces in _sequence_outputs(model, (np.array(3, "int64"), x)):
        assert [p.tolist() for p in pieces] == [x[:k].tolist() for k in (1, 2, 3)]


def _untyped_sequence_model(nodes, extra_inputs=()):
    untyped = helper.make_tensor_sequence_value_info("seq", TensorProto.FLOAT, None)
    return _sequence_model(nodes, [untyped] + list(extra_inputs))


def test_untyped_sequence_input_gets_its_element_type_from_use():
    model = _untyped_sequence_model(
        [helper.make_node("SequenceInsert", ["seq", "x"], ["out"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])])
    items = [_f32(2), _f32(4)]
    x = _f32(3)
    for pieces in _sequence_outputs(model, (items, x)):
        assert [p.tolist() for p in pieces] == [v.tolist() for v in items + [x]]


def test_untyped_sequence_element_rank_needed_is_reported():
    from irlib.frontend import OpNotImplemented
    model = _untyped_sequence_model(
        [helper.make_node("SequenceAt", ["seq", "i"], ["item"]),
         helper.make_node("SequenceConstruct", ["item"], ["out"])],
        [helper.make_tensor_value_info("i", TensorProto.INT64, [])])
    with pytest.raises(OpNotImplemented, match="element rank of a sequence is unknown"):
        from_onnx(model)


def test_split_to_sequence_with_a_runtime_chunk_below_one_is_empty():
    for pieces in _run_split_to_sequence(_f32(3, 6), np.array(0, "int64"), 1):
        assert pieces == []
