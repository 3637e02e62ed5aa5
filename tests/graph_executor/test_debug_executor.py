"""interp.debug_executor: per-node times, debug_get_output and the profile table.

Oracles: the node list comes from the graph JSON (read here), node values from the reference
interpreter evaluating the same sub-expression (``create_executor("debug")``) or numpy
written here, FLOP counts from the convolution / dense formulas written here.
"""

import json
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import irlib
import interp
from interp import debug_executor
from interp.graph_runtime import GraphInputError
from irlib.errors import IRError, UnknownNameError
from irlib.ir.dims import size_var
from irlib.transform import PassContext

F32 = "float32"


def _conv_net(channels=8, size=16, units=10):
    """``softmax(dense(flatten(relu(bias_add(conv2d(x, w), b))), d))`` and its pieces."""
    x = irlib.var("x", shape=(1, 3, size, size))
    w = irlib.var("w", shape=(channels, 3, 3, 3))
    b = irlib.var("b", shape=(channels,))
    flat = channels * (size - 2) ** 2
    d = irlib.var("d", shape=(units, flat))
    act = irlib.nn.relu(irlib.nn.bias_add(irlib.nn.conv2d(x, w, channels=channels,
                                                          kernel_size=(3, 3)), b))
    dense = irlib.nn.dense(irlib.nn.batch_flatten(act), d)
    out = irlib.nn.softmax(dense)
    params = [x, w, b, d]
    return {"mod": irlib.IRModule.from_expr(irlib.Function(params, out)),
            "act": irlib.Function(params, act), "dense": irlib.Function(params, dense)}


def _values(channels=8, size=16, units=10, seed=0):
    rng = np.random.default_rng(seed)
    flat = channels * (size - 2) ** 2
    return {"x": rng.standard_normal((1, 3, size, size)).astype(F32),
            "w": rng.standard_normal((channels, 3, 3, 3)).astype(F32),
            "b": rng.standard_normal(channels).astype(F32),
            "d": (rng.standard_normal((units, flat)) / np.sqrt(flat)).astype(F32)}


def _debug_module(mod, values, opt_level=3):
    params = {k: v for k, v in values.items() if k != "x"}
    with PassContext(opt_level=opt_level):
        factory = interp.build(mod, target="cpu", params=params)
    return debug_executor.GraphModuleDebug(factory["default"](interp.cpu(0))), factory


def _interpret(func, values):
    """The reference interpreter's value of ``func`` at ``values``."""
    run = interp.create_executor("debug", mod=irlib.IRModule.from_expr(func)).evaluate()
    return run(*[values[p.name_hint] for p in func.params]).numpy()


def _executed_nodes(graph_json):
    """(index, name) of the nodes that run a function, read from the graph JSON."""
    nodes = json.loads(graph_json)["nodes"]
    return [(i, n["name"]) for i, n in enumerate(nodes)
            if n["op"] == "tvm_op" and n["attrs"]["func_name"] != "__nop"]


def _node_named(graph_json, prefix):
    names = [name for _, name in _executed_nodes(graph_json) if name.startswith(prefix)]
    assert len(names) == 1, names
    return names[0]


@pytest.fixture(scope="module")
def conv_net():
    net, values = _conv_net(), _values()
    gmod, factory = _debug_module(net["mod"], values)
    return net, values, gmod, factory


def test_run_records_every_executed_node_with_positive_times(conv_net):
    net, values, gmod, factory = conv_net
    gmod.run(x=values["x"])
    times = gmod.node_times()
    assert [(i, name) for i, name, _ in times] == _executed_nodes(factory.get_graph_json())
    seconds = np.array([t for _, _, t in times])
    assert (seconds > 0).all()
    total = gmod.last_run_ms() / 1e3
    assert seconds.sum() <= total
    assert seconds.sum() >= 0.5 * total       # the clock reads cost little next to the nodes
    # The run computed the model: its output is the interpreter's.
    want = _interpret(net["mod"]["main"], values)
    np.testing.assert_allclose(gmod.get_output(0).numpy(), want, rtol=1e-4, atol=1e-6)


def test_debug_get_output_equals_the_interpreter_on_the_sub_expression(conv_net):
    net, values, gmod, factory = conv_net
    graph = factory.get_graph_json()
    gmod.run(x=values["x"])                   # later nodes may have reused early buffers
    dense_name = _node_named(graph, "tvmgen_default_fused_nn_dense")
    want_dense = _interpret(net["dense"], values)
    out = np.empty(want_dense.shape, F32)
    assert gmod.debug_get_output(dense_name, out) is out
    np.testing.assert_allclose(out, want_dense, rtol=1e-4, atol=1e-4)
    conv_name = _node_named(graph, "tvmgen_default_fused_nn_conv2d")
    want_act = _interpret(net["act"], values)             # NCHW
    got = gmod.debug_get_output(conv_name).numpy()
    if got.shape != want_act.shape:                       # the cpu build runs it NHWC
        assert got.shape == (1, 14, 14, 8)
        want_act = want_act.transpose(0, 2, 3, 1)
    np.testing.assert_allclose(got, want_act, rtol=1e-4, atol=1e-4)
    index = [i for i, name in _executed_nodes(graph) if name == conv_name][0]
    target = interp.nd.array(np.zeros(got.shape, F32))
    gmod.debug_get_output(index, target)
    np.testing.assert_array_equal(target.numpy(), got)
    # An input node's "output" is the input itself.
    x_index = json.loads(graph)["arg_nodes"][0]
    np.testing.assert_array_equal(gmod.debug_get_output(x_index).numpy(), values["x"])


def test_bad_nodes_raise_documented_errors(conv_net):
    _, values, gmod, factory = conv_net
    count = len(json.loads(factory.get_graph_json())["nodes"])
    with pytest.raises(UnknownNameError, match="no node named 'not_a_node'") as info:
        gmod.debug_get_output("not_a_node")
    assert isinstance(info.value, LookupError) and isinstance(info.value, IRError)
    assert "tvmgen_default_fused" in str(info.value)      # it names existing nodes
    with pytest.raises(UnknownNameError, match=f"node index {count} is out of range"):
        gmod.debug_get_output(count)
    with pytest.raises(UnknownNameError, match="out of range"):
        gmod.debug_get_output(-1)
    with pytest.raises(IRError, match="index .int. or name .str."):
        gmod.debug_get_output(1.5)
    name = _executed_nodes(factory.get_graph_json())[-1][1]
    with pytest.raises(GraphInputError, match="out has shape"):
        gmod.debug_get_output(name, np.empty((3, 3), F32))
    with pytest.raises(UnknownNameError, match="1 output"):
        gmod.get_node_output(name, 1)
    with pytest.raises(IRError, match="runs no function"):
        gmod.run_individual_node(json.loads(factory.get_graph_json())["arg_nodes"][0])


def test_profile_table_rows_flops_and_percentages(conv_net):
    _, values, gmod, factory = conv_net
    gmod.set_input("x", values["x"])
    report = gmod.profile(repeat=3)
    graph = factory.get_graph_json()
    assert [(r.index, r.name) for r in report.rows] == _executed_nodes(graph)
    assert all(r.time_ms > 0 and len(r.times_ms) == 3 for r in report.rows)
    assert sum(r.percent for r in report.rows) == pytest.approx(100.0)
    assert report.total_ms == pytest.approx(sum(r.time_ms for r in report.rows))
    shapes = json.loads(graph)["attrs"]["shape"][1]
    row_ptr = json.loads(graph)["node_row_ptr"]
    for row in report.rows:
        assert row.shapes == (tuple(shapes[row_ptr[row.index]]),)
    by_name = {r.name: r for r in report.rows}
    conv = by_name[_node_named(graph, "tvmgen_default_fused_nn_conv2d")]
    assert conv.ops[0] == "nn.conv2d" and "nn.relu" in conv.ops
    # 2 FLOPs per multiply-add: out 1x8x14x14, each a sum over 3 channels x 3x3 taps.
    assert conv.flops == 2 * 8 * 14 * 14 * 3 * 3 * 3
    assert conv.gflops == pytest.approx(conv.flops / (conv.time_ms * 1e6))
    dense = by_name[_node_named(graph, "tvmgen_default_fused_nn_dense")]
    assert dense.flops == 2 * 10 * (8 * 14 * 14)
    softmax = by_name[_node_named(graph, "tvmgen_default_fused_nn_softmax")]
    assert softmax.flops is None and softmax.gflops is None
    text = str(report)
    for row in report.rows:
        assert f"{row.index:>4}  " in text
    assert "GFLOP/s" in text and "conv2d,add,relu" in text and "nn.conv2d" in text
    records = report.records()
    json.dumps(records)
    assert records[0].keys() >= {"index", "name", "ops", "shapes", "time_ms", "percent",
                                 "flops", "gflops"}
    kinds = {op: count for op, count, _, _ in report.by_op()}
    assert kinds["nn.conv2d"] == 1 and kinds["nn.dense"] == 1
    assert len(report.table(top=2).splitlines()) < len(text.splitlines())


def test_run_individual_and_single_nodes(conv_net):
    _, values, gmod, factory = conv_net
    gmod.set_input("x", values["x"])
    seconds = gmod.run_individual(number=2, repeat=1)
    graph = json.loads(factory.get_graph_json())
    executed = {i for i, _ in _executed_nodes(factory.get_graph_json())}
    assert len(seconds) == len(graph["nodes"])
    assert all((t > 0) == (i in executed) for i, t in enumerate(seconds))
    result = gmod.run_individual_node(max(executed), number=2, repeat=2)
    assert len(result.results) == 2 and result.min > 0


@settings(max_examples=4, deadline=None)
@given(channels=st.sampled_from([4, 8]), size=st.integers(6, 12),
       opt_level=st.sampled_from([2, 3]))
def test_debug_get_output_at_random_sizes(channels, size, opt_level):
    net, values = _conv_net(channels, size, 5), _values(channels, size, 5, seed=size)
    gmod, factory = _debug_module(net["mod"], values, opt_level)
    gmod.set_input("x", values["x"])
    name = _node_named(factory.get_graph_json(), "tvmgen_default_fused_nn_dense")
    np.testing.assert_allclose(gmod.debug_get_output(name).numpy(),
                               _interpret(net["dense"], values), rtol=1e-4, atol=1e-4)
    report = gmod.profile(repeat=1, warmup=0)
    conv = [r for r in report.rows if "nn.conv2d" in r.ops][0]
    assert conv.flops == 2 * channels * (size - 2) ** 2 * 27


def test_symbolic_graph_profile_and_outputs_at_the_bound_size():
    n = size_var("n")
    x = irlib.var("x", shape=(n, 16), dtype=F32)
    w = irlib.var("w", shape=(8, 16), dtype=F32)
    hidden = irlib.nn.relu(irlib.nn.dense(x, w))
    mod = irlib.IRModule.from_expr(irlib.Function([x, w], irlib.nn.softmax(hidden)))
    rng = np.random.default_rng(3)
    weight = rng.standard_normal((8, 16)).astype(F32)
    factory = interp.build(mod, target="cpu", params={"w": weight})
    gmod = debug_executor.GraphModuleDebug(factory["default"](interp.cpu(0)))
    graph = factory.get_graph_json()
    name = [nm for _, nm in _executed_nodes(graph) if "dense" in nm][0]
    with pytest.raises(IRError, match="run the debug module first"):
        gmod.node_times()
    with pytest.raises(GraphInputError, match="'x' was not set"):
        gmod.debug_get_output(name)            # its size is not known yet
    for rows in (3, 5):
        data = rng.standard_normal((rows, 16)).astype(F32)
        gmod.run(x=data)
        assert [(i, nm) for i, nm, _ in gmod.node_times()] == _executed_nodes(graph)
        got = gmod.debug_get_output(name).numpy()
        np.testing.assert_allclose(got, np.maximum(data @ weight.T, 0), rtol=1e-5, atol=1e-5)
        report = gmod.profile(repeat=2)
        dense = [r for r in report.rows if r.name == name][0]
        assert dense.shapes == ((rows, 8),) and dense.flops == 2 * rows * 8 * 16
        last = report.rows[-1]
        assert last.shapes == ((rows, 8),)


def test_create_from_graph_json_and_library_with_a_trace(tmp_path, conv_net):
    net, values, _, factory = conv_net
    root = tmp_path / "dump"
    gmod = debug_executor.create(factory.get_graph_json(), factory.lib, interp.cpu(0),
                                 dump_root=str(root))
    gmod.set_input(**factory.params)
    gmod.run(x=values["x"])
    want = _interpret(net["mod"]["main"], values)
    np.testing.assert_allclose(gmod.get_output(0).numpy(), want, rtol=1e-4, atol=1e-6)
    traces = [os.path.join(d, f) for d, _, files in os.walk(root) for f in files]
    assert len(traces) == 1 and traces[0].endswith(debug_executor.TRACE_FILE)
    with open(traces[0], encoding="utf-8") as handle:
        events = json.load(handle)["traceEvents"]
    assert [e["name"] for e in events] == [nm for _, nm in
                                           _executed_nodes(factory.get_graph_json())]
    assert all(e["ph"] == "X" and e["dur"] > 0 for e in events)
    assert all(a["ts"] + a["dur"] <= b["ts"] for a, b in zip(events, events[1:]))
    gmod.exit()
    assert not root.exists()
    with pytest.raises(IRError, match="graph JSON string"):
        debug_executor.create({"nodes": []}, factory.lib, interp.cpu(0))


def test_profile_model_builds_like_irlib_run():
    net, values = _conv_net(), _values()
    params = {k: v for k, v in values.items() if k != "x"}
    report = debug_executor.profile_model(net["mod"], params, {"x": values["x"]}, repeat=2)
    ops = [r.ops for r in report.rows]
    assert ("nn.dense",) in ops and any("nn.conv2d" in o for o in ops)
    assert report.repeat == 2 and report.run_ms > 0
    with pytest.raises(UnknownNameError, match="'y'"):
        debug_executor.profile_model(net["mod"], params, {"y": values["x"]}, repeat=1)


def test_plain_graph_module_still_refuses_debug_get_output(conv_net):
    _, _, _, factory = conv_net
    plain = interp.graph_executor.GraphModule(factory["default"](interp.cpu(0)))
    with pytest.raises(NotImplementedError, match="debug_executor"):
        plain.debug_get_output(0, None)


# -- FLOP counting against the formulas, on typed functions (no build) ---------------------------

def _typed(params, body):
    return irlib.transform.infer_type(irlib.Function(params, body))


@settings(max_examples=12, deadline=None)
@given(channels=st.sampled_from([2, 4, 6]), groups=st.sampled_from([1, 2]),
       size=st.integers(5, 9), kernel=st.sampled_from([1, 3]), stride=st.sampled_from([1, 2]),
       nhwc=st.booleans())
def test_conv_flops_formula(channels, groups, size, kernel, stride, nhwc):
    from interp.profile_report import group_flops
    cin, cout = 4, channels
    if nhwc:
        x = irlib.var("x", shape=(1, size, size, cin))
        w = irlib.var("w", shape=(kernel, kernel, cin // groups, cout))
        layouts = {"data_layout": "NHWC", "kernel_layout": "HWIO"}
    else:
        x = irlib.var("x", shape=(1, cin, size, size))
        w = irlib.var("w", shape=(cout, cin // groups, kernel, kernel))
        layouts = {}
    conv = irlib.nn.conv2d(x, w, strides=(stride, stride), groups=groups, channels=cout,
                           kernel_size=(kernel, kernel), **layouts)
    out = (size - kernel) // stride + 1
    func = _typed([x, w], irlib.nn.relu(conv))
    # each output: a sum over the group's cin/groups channels and kernel x kernel taps
    assert group_flops(func) == 2 * cout * out * out * (cin // groups) * kernel * kernel


def test_transposed_conv_dense_and_matmul_flops():
    from interp.profile_report import group_flops, group_ops
    x = irlib.var("x", shape=(1, 4, 5, 5))
    w = irlib.var("w", shape=(4, 3, 2, 2))        # IOHW: each input feeds 3 channels x 4 taps
    func = _typed([x, w], irlib.nn.conv2d_transpose(x, w, strides=(2, 2), channels=3,
                                                    kernel_size=(2, 2)))
    assert group_flops(func) == 2 * (4 * 5 * 5) * 3 * 4
    a = irlib.var("a", shape=(2, 5, 7))
    b = irlib.var("b", shape=(2, 3, 7))
    func = _typed([a, b], irlib.add(irlib.nn.batch_matmul(a, b), irlib.const(1.0)))
    assert group_flops(func) == 2 * 2 * 5 * 3 * 7
    assert group_ops(func) == ("nn.batch_matmul", "add")
    at = irlib.var("at", shape=(7, 5))
    bt = irlib.var("bt", shape=(7, 3))
    func = _typed([at, bt], irlib.nn.matmul(at, bt, transpose_a=True))
    assert group_flops(func) == 2 * 5 * 3 * 7
    d = irlib.var("d", shape=(3, 8))
    e = irlib.var("e", shape=(6, 8))
    func = _typed([d, e], irlib.nn.dense(d, e))
    assert group_flops(func) == 2 * 3 * 6 * 8
    func = _typed([d], irlib.nn.softmax(d))
    assert group_flops(func) is None and group_ops(func) == ("nn.softmax",)
    assert group_flops(None) is None and group_ops(None) == ()
    n = size_var("n")
    s = irlib.var("s", shape=(n, 8))
    func = _typed([s, e], irlib.nn.dense(s, e))
    assert group_flops(func, {"n": 5}) == 2 * 5 * 6 * 8
    assert group_flops(func) is None            # n unbound: unknown
