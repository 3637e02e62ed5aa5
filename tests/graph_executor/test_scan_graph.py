"""Loops whose state grows on the graph executor (interp.graph_growing): ONNX ``Scan`` and
``Loop`` with scan outputs run as one ``__loop`` node with static outputs, the model stays on
the graph executor (no interpreter fallback) and agrees with onnxruntime; a loop whose trip
count depends on run-time data falls back to the interpreter, with the reason, and is still
right."""

import json
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import irlib
import interp
from graph_helpers import graph_function

onnx = pytest.importorskip("onnx")
onnxruntime = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

FLOAT = TensorProto.FLOAT


def _info(name, shape, dtype=FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def _ort(model, feeds):
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _other(feeds):
    """Different float inputs of the same shapes (a second run must not give the first
    run's results: the loop replays recorded calls on new data)."""
    return {k: (v * np.float32(-0.7) + np.float32(0.3)).astype(v.dtype)
            if v.dtype == np.float32 else v for k, v in feeds.items()}


def _check(model, feeds, rtol=1e-5, atol=1e-5):
    """The model on the graph executor (checked not to fall back) agrees with onnxruntime
    on ``feeds``, on other inputs after them, and on ``feeds`` again."""
    from irlib.frontend.onnx import from_onnx
    mod, params = from_onnx(model)
    func = graph_function(mod, params)
    names = [i.name for i in model.graph.input
             if i.name not in {t.name for t in model.graph.initializer}]
    for run in (feeds, _other(feeds), feeds):
        want = _ort(model, run)
        got = func(*[run[n] for n in names])
        got = list(got) if isinstance(got, (tuple, list)) else [got]
        assert len(got) == len(want)
        for value, ref in zip(got, want):
            np.testing.assert_allclose(np.asarray(value.numpy()), ref, rtol=rtol, atol=atol)


def _scan_model(length, width, in_dirs, out_dirs, axis_one, opset):
    """A Scan with one state ``s`` (width,), ``len(in_dirs)`` scan inputs and
    ``len(out_dirs)`` scan outputs: s' = 0.5 s + sum_k x_k, outputs s' * x_0 and
    tanh(s' - k); with ``axis_one`` the first scan input is (width, length), scanned along
    axis 1, and the first scan output is stacked along axis 1."""
    inputs = [f"x{k}" for k in range(len(in_dirs))]
    nodes = [helper.make_node("Mul", ["s_in", "half"], ["s_half"])]
    total = "s_half"
    for k, name in enumerate(inputs):
        nodes.append(helper.make_node("Add", [total, f"{name}_t"], [f"sum{k}"]))
        total = f"sum{k}"
    nodes.append(helper.make_node("Identity", [total], ["s_out"]))
    outs = []
    for k in range(len(out_dirs)):
        if k == 0:
            nodes.append(helper.make_node("Mul", ["s_out", "x0_t"], ["y0_t"]))
        else:
            nodes.append(helper.make_node("Sub", ["s_out", f"c{k}"], [f"d{k}"]))
            nodes.append(helper.make_node("Tanh", [f"d{k}"], [f"y{k}_t"]))
        outs.append(f"y{k}_t")
    constants = [numpy_helper.from_array(np.full(width, 0.5, np.float32), "half")] + [
        numpy_helper.from_array(np.full(width, float(k), np.float32), f"c{k}")
        for k in range(1, len(out_dirs))]
    body = helper.make_graph(
        nodes, "body",
        [_info("s_in", [width])] + [_info(f"{n}_t", [width]) for n in inputs],
        [_info("s_out", [width])] + [_info(o, [width]) for o in outs],
        initializer=constants)
    attrs = {"num_scan_inputs": len(inputs)}
    if opset >= 9:
        attrs["scan_input_directions"] = list(in_dirs)
        attrs["scan_output_directions"] = list(out_dirs)
        if axis_one:
            attrs["scan_input_axes"] = [1] + [0] * (len(inputs) - 1)
            attrs["scan_output_axes"] = [1] + [0] * (len(out_dirs) - 1)
    in_shapes = [[width, length] if axis_one and k == 0 else [length, width]
                 for k in range(len(inputs))]
    out_shapes = [[width, length] if axis_one and k == 0 else [length, width]
                  for k in range(len(out_dirs))]
    graph = helper.make_graph(
        [helper.make_node("Scan", ["s0"] + inputs, ["s"] + [f"ys{k}" for k in range(len(outs))],
                          body=body, **attrs)],
        "scan", [_info("s0", [width])] + [_info(n, s) for n, s in zip(inputs, in_shapes)],
        [_info("s", [width])] + [_info(f"ys{k}", s) for k, s in enumerate(out_shapes)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return model, in_shapes


@settings(max_examples=8, deadline=None)
@given(length=st.integers(1, 6), width=st.integers(1, 4),
       in_dirs=st.lists(st.integers(0, 1), min_size=1, max_size=2),
       out_dirs=st.lists(st.integers(0, 1), min_size=1, max_size=2),
       axis_one=st.booleans(), seed=st.integers(0, 1000))
def test_scan_matches_onnxruntime(length, width, in_dirs, out_dirs, axis_one, seed):
    """Scan (opset 17): forward and reverse inputs and outputs, several scan inputs and
    outputs, a state, scan axes 0 and 1."""
    model, in_shapes = _scan_model(length, width, in_dirs, out_dirs, axis_one, 17)
    rng = np.random.default_rng(seed)
    feeds = {"s0": rng.standard_normal(width).astype(np.float32)}
    for k, shape in enumerate(in_shapes):
        feeds[f"x{k}"] = rng.standard_normal(shape).astype(np.float32)
    _check(model, feeds)


def test_scan_opset_9():
    """Scan as opset 9 first defined its attributes (reverse input, forward output)."""
    model, in_shapes = _scan_model(4, 3, [1], [0], False, 9)
    rng = np.random.default_rng(0)
    feeds = {"s0": rng.standard_normal(3).astype(np.float32),
             "x0": rng.standard_normal(in_shapes[0]).astype(np.float32)}
    _check(model, feeds)


def test_scan_is_one_loop_node_with_static_outputs():
    """The whole model lowers to the graph: one ``__loop`` node, every entry outside the
    loop's part graphs with a static shape."""
    from irlib.frontend.onnx import from_onnx
    model, _ = _scan_model(5, 3, [0], [0, 1], False, 17)
    mod, params = from_onnx(model)
    with irlib.transform.PassContext(opt_level=3):
        lib = interp.build(mod, "cpu", params)
    graph = json.loads(lib.graph_json)
    assert [n["name"] for n in graph["nodes"] if n["name"].startswith("__loop")] == ["__loop"]
    for shape in graph["attrs"]["shape"][1]:
        assert all(isinstance(d, int) for d in shape), shape


@pytest.mark.parametrize("append", [True, False])
def test_scan_outputs_written_row_by_row_or_concatenated(monkeypatch, append):
    """Scan outputs are appended row by row in place of the step's concatenation (the
    node's description lists them), or, with the switch off, concatenated each step; both
    agree with onnxruntime, also with a scan output fused with its computation."""
    import interp.graph_growing as growing
    from irlib.frontend.onnx import from_onnx
    monkeypatch.setattr(growing, "APPEND_ROWS", append)
    model, in_shapes = _scan_model(5, 3, [0, 1], [0, 1], False, 17)
    mod, params = from_onnx(model)
    with irlib.transform.PassContext(opt_level=3):
        lib = interp.build(mod, "cpu", params)
    (description,) = [f.fn.describe() for name, f in lib.lib.compiled.items()
                      if name.startswith("__loop")]
    assert description["trips"] == 5
    assert description["control"] == [0, 1]          # the counter and the condition
    assert (len(description["appended"]) == 2) if append else not description["appended"]
    rng = np.random.default_rng(1)
    feeds = {"s0": rng.standard_normal(3).astype(np.float32)}
    for k, shape in enumerate(in_shapes):
        feeds[f"x{k}"] = rng.standard_normal(shape).astype(np.float32)
    _check(model, feeds)


def _lstm_scan_model(length, batch, inputs, hidden, seed):
    """An LSTM written as a Scan: states h, c (batch, hidden); gates x_t W + h R + b split
    into i, f, g, o; c' = f c + i g, h' = o tanh(c'); scan output h'."""
    rng = np.random.default_rng(seed)
    weights = {"W": rng.standard_normal((inputs, 4 * hidden)) * 0.4,
               "R": rng.standard_normal((hidden, 4 * hidden)) * 0.4,
               "B": rng.standard_normal(4 * hidden) * 0.1}
    state = [batch, hidden]
    body = helper.make_graph(
        [helper.make_node("MatMul", ["x_t", "W"], ["xw"]),
         helper.make_node("MatMul", ["h_in", "R"], ["hr"]),
         helper.make_node("Add", ["xw", "hr"], ["pre"]),
         helper.make_node("Add", ["pre", "B"], ["gates"]),
         helper.make_node("Split", ["gates"], ["gi", "gf", "gg", "go"], axis=1),
         helper.make_node("Sigmoid", ["gi"], ["i"]),
         helper.make_node("Sigmoid", ["gf"], ["f"]),
         helper.make_node("Tanh", ["gg"], ["g"]),
         helper.make_node("Sigmoid", ["go"], ["o"]),
         helper.make_node("Mul", ["f", "c_in"], ["fc"]),
         helper.make_node("Mul", ["i", "g"], ["ig"]),
         helper.make_node("Add", ["fc", "ig"], ["c_out"]),
         helper.make_node("Tanh", ["c_out"], ["tc"]),
         helper.make_node("Mul", ["o", "tc"], ["h_out"]),
         helper.make_node("Identity", ["h_out"], ["y_t"])],
        "cell",
        [_info("h_in", state), _info("c_in", state), _info("x_t", [batch, inputs])],
        [_info("h_out", state), _info("c_out", state), _info("y_t", state)])
    graph = helper.make_graph(
        [helper.make_node("Scan", ["h0", "c0", "x"], ["h", "c", "ys"], body=body,
                          num_scan_inputs=1),
         helper.make_node("ReduceMean", ["ys"], ["pooled"], axes=[0], keepdims=0)],
        "lstm_scan",
        [_info("h0", state), _info("c0", state), _info("x", [length, batch, inputs])],
        [_info("h", state), _info("c", state), _info("ys", [length] + state),
         _info("pooled", state)],
        initializer=[numpy_helper.from_array(v.astype(np.float32), k)
                     for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@settings(max_examples=3, deadline=None)      # each new shape compiles its kernels
@given(length=st.integers(1, 7), batch=st.integers(1, 3), inputs=st.integers(1, 5),
       hidden=st.integers(1, 6), seed=st.integers(0, 1000))
def test_lstm_written_with_scan(length, batch, inputs, hidden, seed):
    """An LSTM-style RNN as a Scan, with a reduction over the scanned outputs after it."""
    model = _lstm_scan_model(length, batch, inputs, hidden, seed)
    rng = np.random.default_rng(seed + 1)
    feeds = {"h0": rng.standard_normal((batch, hidden)).astype(np.float32),
             "c0": rng.standard_normal((batch, hidden)).astype(np.float32),
             "x": rng.standard_normal((length, batch, inputs)).astype(np.float32)}
    _check(model, feeds)


def _loop_model(trips, width, trip_input=False, data_condition=False):
    """An ONNX Loop with a state s and two scan outputs: s' = 0.9 s + i, outputs s' * 2
    and the counter; the trip count is a constant (an initializer) unless ``trip_input``;
    with ``data_condition`` the body computes the condition (sum(s') < 50)."""
    nodes = [helper.make_node("Cast", ["i"], ["fi"], to=FLOAT),
             helper.make_node("Mul", ["s_in", "decay"], ["sd"]),
             helper.make_node("Add", ["sd", "fi"], ["s_out"]),
             helper.make_node("Mul", ["s_out", "two"], ["y_t"]),
             helper.make_node("Identity", ["i"], ["k_t"])]
    if data_condition:
        nodes += [helper.make_node("ReduceSum", ["s_out"], ["total"], keepdims=0),
                  helper.make_node("Less", ["total", "limit"], ["cond_out"])]
    else:
        nodes.append(helper.make_node("Identity", ["cond_in"], ["cond_out"]))
    body = helper.make_graph(
        nodes, "body",
        [_info("i", [], TensorProto.INT64), _info("cond_in", [], TensorProto.BOOL),
         _info("s_in", [width])],
        [_info("cond_out", [], TensorProto.BOOL), _info("s_out", [width]),
         _info("y_t", [width]), _info("k_t", [], TensorProto.INT64)],
        initializer=[numpy_helper.from_array(np.full(width, 0.9, np.float32), "decay"),
                     numpy_helper.from_array(np.full(width, 2.0, np.float32), "two"),
                     numpy_helper.from_array(np.array(50.0, np.float32), "limit")])
    initializers = [numpy_helper.from_array(np.array(True), "c0"),
                    numpy_helper.from_array(np.array([0], np.int64), "axes")]
    inputs = [_info("s0", [width])]
    if trip_input:
        inputs.insert(0, _info("M", [], TensorProto.INT64))
    else:
        initializers.append(numpy_helper.from_array(np.array(trips, np.int64), "M"))
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "c0", "s0"], ["s", "ys", "ks"], body=body),
         helper.make_node("ReduceSum", ["ys", "axes"], ["ysum"], keepdims=0)],
        "loop", inputs,
        [_info("s", [width]), _info("ys", [None, width]), _info("ks", [None], TensorProto.INT64),
         _info("ysum", [width])],
        initializer=initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@settings(max_examples=6, deadline=None)
@given(trips=st.integers(0, 9), width=st.integers(1, 4), seed=st.integers(0, 1000))
def test_loop_with_constant_trip_count_and_scan_outputs(trips, width, seed):
    """Loop with a constant M (zero trips included), a state and two scan outputs (one of
    them the int64 counter), a reduction over a scan output after the loop."""
    model = _loop_model(trips, width)
    s0 = np.random.default_rng(seed).standard_normal(width).astype(np.float32)
    _check(model, {"s0": s0})


def _growing_state_model(trips, rows, width):
    """A Loop (constant M) whose state itself grows: acc' = concat(acc, i * ones(1, width))
    along axis 0 (the importer types the state ``Tensor[(?, ?)]``)."""
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=FLOAT),
         helper.make_node("Mul", ["row", "fi"], ["scaled"]),
         helper.make_node("Concat", ["acc_in", "scaled"], ["acc_out"], axis=0),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [_info("i", [], TensorProto.INT64), _info("cond_in", [], TensorProto.BOOL),
         _info("acc_in", [None, width])],
        [_info("cond_out", [], TensorProto.BOOL), _info("acc_out", [None, width])],
        initializer=[numpy_helper.from_array(np.ones((1, width), np.float32), "row")])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "c0", "a0"], ["acc"], body=body),
         helper.make_node("Sigmoid", ["acc"], ["out"])],
        "grow", [_info("a0", [rows, width])], [_info("out", [None, width])],
        initializer=[numpy_helper.from_array(np.array(trips, np.int64), "M"),
                     numpy_helper.from_array(np.array(True), "c0")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@settings(max_examples=5, deadline=None)
@given(trips=st.integers(0, 6), rows=st.integers(1, 3), width=st.integers(1, 4))
def test_loop_whose_state_grows_itself(trips, rows, width):
    """Loop-carried state that grows by a row per step (not a scan output): its final size
    follows from the constant trip count; the op after the loop is specialised to it."""
    model = _growing_state_model(trips, rows, width)
    a0 = np.random.default_rng(trips).standard_normal((rows, width)).astype(np.float32)
    _check(model, {"a0": a0})


def test_modules_sharing_a_scan_kernel_keep_their_own_runs():
    """Two modules of one factory (the loop's library function shared) run alternately on
    the creating thread, and one on another thread, each with its own inputs: every result
    is onnxruntime's (the loop's recorded steps belong to one set of arrays)."""
    import threading
    from irlib.frontend.onnx import from_onnx
    model = _lstm_scan_model(4, 1, 3, 5, 11)
    mod, params = from_onnx(model)
    with irlib.transform.PassContext(opt_level=3):
        factory = interp.build(mod, "cpu", params)
    modules = [interp.graph_executor.GraphModule(factory["default"](interp.cpu(0)))
               for _ in range(2)]
    rng = np.random.default_rng(5)
    feeds = [{"h0": rng.standard_normal((1, 5)).astype(np.float32),
              "c0": rng.standard_normal((1, 5)).astype(np.float32),
              "x": rng.standard_normal((4, 1, 3)).astype(np.float32)} for _ in range(3)]
    wants = [_ort(model, feed) for feed in feeds]

    def run_and_check(module, feed, want):
        module.run(**feed)
        for k, ref in enumerate(want):
            np.testing.assert_allclose(module.get_output(k).numpy(), ref, rtol=1e-5,
                                       atol=1e-5)
    for _ in range(3):
        for module, feed, want in zip(modules, feeds, wants):
            run_and_check(module, feed, want)
    errors = []

    def other_thread():
        try:
            for _ in range(2):
                run_and_check(modules[0], feeds[2], wants[2])
        except AssertionError as error:       # pragma: no cover - reported below
            errors.append(error)
    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join()
    assert not errors, errors
    run_and_check(modules[0], feeds[0], wants[0])


def _static_loop_model(trips, rows, cols, seed):
    """An ONNX Loop with a constant trip count and static state only (two states swapped
    each step: x' = tanh(y W + b), y' = x; the condition passed on)."""
    rng = np.random.default_rng(seed)
    state = [rows, cols]
    body = helper.make_graph(
        [helper.make_node("MatMul", ["y_in", "W"], ["yw"]),
         helper.make_node("Add", ["yw", "b"], ["yb"]),
         helper.make_node("Tanh", ["yb"], ["x_out"]),
         helper.make_node("Identity", ["x_in"], ["y_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [_info("i", [], TensorProto.INT64), _info("cond_in", [], TensorProto.BOOL),
         _info("x_in", state), _info("y_in", state)],
        [_info("cond_out", [], TensorProto.BOOL), _info("x_out", state), _info("y_out", state)])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "c0", "x0", "y0"], ["xf", "yf"], body=body),
         helper.make_node("Sub", ["xf", "yf"], ["diff"])],
        "static_loop", [_info("x0", state), _info("y0", state)], [_info("diff", state)],
        initializer=[numpy_helper.from_array(
            (rng.standard_normal((cols, cols)) * 0.5).astype(np.float32), "W"),
            numpy_helper.from_array(rng.standard_normal(cols).astype(np.float32), "b"),
            numpy_helper.from_array(np.array(True), "c0"),
            numpy_helper.from_array(np.array(trips, np.int64), "M")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@settings(max_examples=5, deadline=None)
@given(trips=st.integers(0, 7), rows=st.integers(1, 3), cols=st.integers(1, 4),
       seed=st.integers(0, 1000))
def test_static_loop_with_constant_trip_count_runs_recorded_steps(trips, rows, cols, seed):
    """A loop whose state keeps its shape but whose trip count is a constant also runs from
    recorded steps (its description has the trip count and the control state) and agrees
    with onnxruntime, run after run on other inputs."""
    from irlib.frontend.onnx import from_onnx
    model = _static_loop_model(trips, rows, cols, seed)
    mod, params = from_onnx(model)
    with irlib.transform.PassContext(opt_level=3):
        lib = interp.build(mod, "cpu", params)
    (description,) = [f.fn.describe() for name, f in lib.lib.compiled.items()
                      if name.startswith("__loop")]
    assert description["trips"] == trips and description["control"] == [0, 1]
    rng = np.random.default_rng(seed + 1)
    _check(model, {"x0": rng.standard_normal((rows, cols)).astype(np.float32),
                   "y0": rng.standard_normal((rows, cols)).astype(np.float32)})


@pytest.mark.parametrize("trip_input, data_condition, reason", [
    (True, False, "reads %M"), (False, True, "trip count known at build time")])
def test_data_dependent_growing_loop_falls_back_and_is_right(trip_input, data_condition,
                                                             reason):
    """A trip count given at run time, or a condition computed from the data: the growing
    loop cannot have static outputs; the program runs on the interpreter, says why, and
    agrees with onnxruntime."""
    from irlib.frontend.onnx import from_onnx
    model = _loop_model(6, 3, trip_input=trip_input, data_condition=data_condition)
    s0 = np.linspace(1, 3, 3, dtype=np.float32)
    feeds = {"s0": s0}
    if trip_input:
        feeds["M"] = np.array(6, np.int64)
    want = _ort(model, feeds)
    mod, params = from_onnx(model)
    with irlib.transform.PassContext(opt_level=3):
        executor = interp.create_executor("graph", mod=irlib.transform.InferType()(mod),
                                          device=interp.cpu(0), target="cpu", params=params)
        func = executor.evaluate()
        got = func(*[feeds[i.name] for i in model.graph.input])
    assert executor.fallback is not None and reason in executor.fallback, executor.fallback
    for value, ref in zip(got, want):
        np.testing.assert_allclose(np.asarray(value.numpy()), ref, rtol=1e-5, atol=1e-5)


def _exported(tmp_path, model):
    from irlib.frontend.onnx import from_onnx
    mod, params = from_onnx(model)
    with irlib.transform.PassContext(opt_level=3):
        factory = interp.build(mod, "cpu", params)
    path = tmp_path / "scan.irlib"
    factory.export_library(str(path))
    return path


def test_export_library_round_trips_a_scan(tmp_path):
    """A graph with a growing ``__loop`` node is written by export_library and, loaded back
    with load_module, gives onnxruntime's results."""
    model = _lstm_scan_model(5, 2, 3, 4, 7)
    rng = np.random.default_rng(3)
    feeds = {"h0": rng.standard_normal((2, 4)).astype(np.float32),
             "c0": rng.standard_normal((2, 4)).astype(np.float32),
             "x": rng.standard_normal((5, 2, 3)).astype(np.float32)}
    want = _ort(model, feeds)
    loaded = interp.load_module(str(_exported(tmp_path, model)))
    module = interp.graph_executor.GraphModule(loaded["default"](interp.cpu(0)))
    for _ in range(2):
        module.run(**feeds)
        for k, ref in enumerate(want):
            np.testing.assert_allclose(module.get_output(k).numpy(), ref, rtol=1e-5,
                                       atol=1e-5)


@pytest.mark.parametrize("damage", ["step graph not json", "drop num_outer", "consts text",
                                    "drop trips", "appended out of range",
                                    "control not a list"])
def test_load_module_refuses_a_damaged_scan_description(tmp_path, damage):
    """A damaged description of a growing loop raises IRError naming the node."""
    model, _ = _scan_model(4, 2, [0], [1], False, 17)
    path = _exported(tmp_path, model)
    with zipfile.ZipFile(path) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    control = json.loads(files["control.json"])
    name = next(iter(control))
    if damage == "step graph not json":
        control[name]["graphs"][1] = "{not json"
    elif damage == "drop num_outer":
        del control[name]["num_outer"]
    elif damage == "drop trips":
        del control[name]["trips"]
    elif damage == "appended out of range":
        control[name]["appended"] = [99]
    elif damage == "control not a list":
        control[name]["control"] = 3
    else:
        control[name]["consts"] = "abc"
    files["control.json"] = json.dumps(control).encode()
    with zipfile.ZipFile(tmp_path / "bad.irlib", "w") as archive:
        for file_name, data in files.items():
            archive.writestr(file_name, data)
    with pytest.raises(irlib.IRError, match=name):
        interp.load_module(str(tmp_path / "bad.irlib"))


def test_retyped_copy_leaves_the_original_types_alone():
    """interp.graph_retype: a copy typed with a size variable (and a primitive function
    specialised to static shapes) gets the new types; the original nodes keep theirs."""
    from irlib.ir import expr as E
    from irlib.ir.dims import Any, size_var
    from irlib.ir.types import TensorType
    from interp.graph_retype import has_any, retyped_copy, specialise_primitive
    acc = irlib.var("acc", shape=(Any, 3))
    row = irlib.var("row", shape=(3,))
    p0, p1 = irlib.var("p0", shape=(Any, 3)), irlib.var("p1", shape=(3,))
    fused = irlib.Function([p0, p1], irlib.concatenate((p0, irlib.expand_dims(p1, 0)), 0))
    fused = fused.with_attr("Primitive", 1)
    typed = irlib.transform.InferType()(irlib.IRModule.from_expr(
        irlib.Function([acc, row], E.Call(fused, (acc, row)))))["main"]
    call = typed.body
    assert has_any(call.checked_type)
    n = size_var("n")
    copy, new_vars = retyped_copy(call, {typed.params[0]: TensorType((n, 3), "float32"),
                                         typed.params[1]: TensorType((3,), "float32")})
    assert copy.checked_type == TensorType((n + 1, 3), "float32")
    assert has_any(call.checked_type) and has_any(call.op.params[0].checked_type)
    assert set(new_vars) == set(typed.params)
    special = specialise_primitive(call.op, [TensorType((4, 3), "float32"),
                                             TensorType((3,), "float32")])
    assert special.checked_type.ret_type == TensorType((5, 3), "float32")
    assert has_any(call.op.checked_type.ret_type)
