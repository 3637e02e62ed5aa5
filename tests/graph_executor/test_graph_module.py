"""GraphModule: every method of graph-executor-api.txt, against hand-computed values."""

import json

import numpy as np
import pytest

import irlib
import interp
from interp import graph_executor
from interp.graph_benchmark import BenchmarkResult
from irlib.errors import IRError, ParamsFormatError, UnknownNameError

from graph_helpers import add_module, graph_module, outputs

X = np.arange(10, dtype="float32").reshape(1, 10)
Y = np.full((1, 10), 0.5, dtype="float32")


def test_set_input_run_get_output():
    gmod, _ = graph_module(add_module())
    gmod.set_input("x", X)
    gmod.set_input(1, Y)
    gmod.run()
    np.testing.assert_array_equal(gmod.get_output(0).numpy(), X + Y)
    gmod.run(x=Y, y=Y)
    np.testing.assert_array_equal(gmod.get_output(0).numpy(), Y + Y)


def test_set_input_params_kwargs_skip_unknown_names():
    gmod, _ = graph_module(add_module())
    gmod.set_input(x=X, y=Y, not_an_input=np.zeros(3))
    gmod.run()
    np.testing.assert_array_equal(gmod.get_output(0).numpy(), X + Y)


def test_set_input_copies_and_get_input_is_live():
    gmod, _ = graph_module(add_module())
    value = X.copy()
    gmod.set_input("x", value)
    value[0, 0] = 100
    live = gmod.get_input("x").numpy()
    assert live[0, 0] == 0 and not np.shares_memory(live, value)
    gmod.set_input("x", Y)
    assert live[0, 0] == 0.5                       # the same internal array
    out = np.empty((1, 10), "float32")
    assert gmod.get_input(0, out) is out and out[0, 0] == 0.5
    assert gmod.get_input("nope") is None


def test_counts_indices_and_input_info():
    gmod, _ = graph_module(add_module())
    assert gmod.get_num_inputs() == 2 and gmod.get_num_outputs() == 1
    assert gmod.get_input_index("y") == 1 and gmod.get_input_index("zz") == -1
    shapes, dtypes = gmod.get_input_info()
    assert shapes == {"x": (1, 10), "y": (1, 10)} and dtypes == {"x": "float32",
                                                                  "y": "float32"}


def test_input_info_excludes_bound_params():
    gmod, factory = graph_module(add_module(), params={"y": Y})
    assert gmod.get_num_inputs() == 2                  # x and the lifted weight p0
    assert set(factory.get_params()) == {"p0"}
    shapes, _ = gmod.get_input_info()
    assert shapes == {"x": (1, 10)}
    gmod.run(x=X)
    np.testing.assert_array_equal(gmod.get_output(0).numpy(), X + Y)


def test_nested_tuple_result_gives_four_heads():
    x = irlib.var("x", shape=(2,))
    body = irlib.Tuple([irlib.exp(x), irlib.Tuple([irlib.Tuple([x + x, irlib.negative(x)]),
                                                   x * x])])
    gmod, factory = graph_module(irlib.IRModule.from_expr(irlib.Function([x], body)))
    gmod.run(x=np.array([1.0, 2.0], "float32"))
    got = outputs(gmod)
    assert gmod.get_num_outputs() == 4 == len(json.loads(factory.get_graph_json())["heads"])
    want = [np.exp([1.0, 2.0]), [2.0, 4.0], [-1.0, -2.0], [1.0, 4.0]]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_get_output_by_name_and_out():
    gmod, factory = graph_module(add_module())
    gmod.run(x=X, y=Y)
    graph = json.loads(factory.get_graph_json())
    head_name = graph["nodes"][graph["heads"][0][0]]["name"]
    np.testing.assert_array_equal(gmod.get_output(head_name + ":0").numpy(), X + Y)
    out = interp.nd.array(np.zeros((1, 10), "float32"))
    assert gmod.get_output(0, out) is out
    np.testing.assert_array_equal(out.numpy(), X + Y)
    with pytest.raises(UnknownNameError, match="output"):
        gmod.get_output("no_such_node")
    with pytest.raises(UnknownNameError):
        gmod.get_output(3)
    with pytest.raises(graph_executor.GraphInputError, match="shape"):
        gmod.get_output(0, np.zeros((2, 10), "float32"))


def test_debug_get_output_not_implemented():
    gmod, _ = graph_module(add_module())
    with pytest.raises(NotImplementedError, match="debug_executor"):
        gmod.debug_get_output(0, np.zeros((1, 10), "float32"))


def test_zero_copy_input_is_not_copied():
    gmod, _ = graph_module(add_module())
    value = X.copy()
    gmod.set_input_zero_copy("x", value)
    gmod.set_input("y", Y)
    assert np.shares_memory(gmod.get_input("x").numpy(), value)
    value[0, 1] = 7.0                                    # seen by the next run
    gmod.run()
    assert gmod.get_output(0).numpy()[0, 1] == 7.5


def test_zero_copy_input_follows_reshape_nop():
    x = irlib.var("x", shape=(2, 3))
    body = irlib.nn.softmax(irlib.reshape(x, newshape=(3, 2)))
    gmod, factory = graph_module(irlib.IRModule.from_expr(irlib.Function([x], body)))
    graph = json.loads(factory.get_graph_json())
    funcs = [n.get("attrs", {}).get("func_name") for n in graph["nodes"]]
    assert funcs == [None, "__nop", "tvmgen_default_fused_nn_softmax"]
    assert graph["nodes"][1]["name"] == "reshape_nop"
    assert graph["attrs"]["storage_id"][1] == [0, 0, 1]     # the nop views the input
    value = np.arange(6, dtype="float32").reshape(2, 3)
    gmod.set_input_zero_copy("x", value)
    gmod.run()
    rows = value.reshape(3, 2)
    want = np.exp(rows) / np.exp(rows).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(gmod.get_output(0).numpy(), want, rtol=1e-6)


def test_zero_copy_output_is_written_in_place():
    gmod, _ = graph_module(add_module())
    target = np.zeros((1, 10), "float32")
    gmod.set_output_zero_copy(0, target)
    gmod.run(x=X, y=Y)
    np.testing.assert_array_equal(target, X + Y)
    assert np.shares_memory(gmod.get_output(0).numpy(), target)
    gmod.set_output_zero_copy("unknown:0", target)        # unknown name: no-op


def test_load_params_and_share_params():
    gmod, _ = graph_module(add_module())
    blob = interp.save_param_dict({"y": Y, "y_unknown": np.ones(2, "float32")})
    gmod.load_params(blob)
    assert gmod.get_input_info()[0] == {"x": (1, 10)}
    gmod.run(x=X)
    np.testing.assert_array_equal(gmod.get_output(0).numpy(), X + Y)
    other, _ = graph_module(add_module())
    other.share_params(gmod, blob)
    assert np.shares_memory(other.get_input("y").numpy(), gmod.get_input("y").numpy())
    other.run(x=X)
    np.testing.assert_array_equal(other.get_output(0).numpy(), X + Y)


def test_corrupt_params_raise():
    gmod, _ = graph_module(add_module())
    blob = interp.save_param_dict({"y": Y})
    with pytest.raises(ParamsFormatError):
        gmod.load_params(blob[:-7])
    with pytest.raises(ParamsFormatError):
        gmod.load_params(b"\x00" * 16)


def test_bad_inputs_raise_documented_errors():
    gmod, _ = graph_module(add_module())
    with pytest.raises(UnknownNameError, match=r"'z'.*\['x', 'y'\]"):
        gmod.set_input("z", X)
    with pytest.raises(UnknownNameError, match=r"\['x', 'y'\]"):
        gmod.run(z=X)
    with pytest.raises(graph_executor.GraphInputError, match=r"shape \(1, 10\)"):
        gmod.set_input("x", np.zeros((2, 10), "float32"))
    with pytest.raises(graph_executor.GraphInputError, match="dtype float32"):
        gmod.set_input("x", np.zeros((1, 10), "float64"))
    with pytest.raises(graph_executor.GraphInputError):
        gmod.set_input_zero_copy("x", np.zeros((10, 2), "float32").T)


def test_benchmark_statistics_and_call():
    result = BenchmarkResult([1, 2, 2, 5])
    assert (result.mean, result.median, result.std, result.max, result.min) == \
        (2.5, 2.0, 1.5, 5, 1)
    assert "mean (ms)" in str(result)
    gmod, _ = graph_module(add_module())
    timed = gmod.benchmark(interp.cpu(0), repeat=3, number=2, x=X, y=Y)
    assert len(timed.results) == 3 and all(r > 0 for r in timed.results)
    np.testing.assert_array_equal(gmod.get_output(0).numpy(), X + Y)
    e2e = gmod.benchmark(interp.cpu(0), repeat=2, number=1, end_to_end=True, x=X, y=Y)
    assert len(e2e.results) == 2
    grown = gmod.benchmark(interp.cpu(0), repeat=1, number=1, min_repeat_ms=2)
    assert grown.results[0] > 0


def test_create_with_hand_written_graph_and_dict_library():
    def myadd(a, b, out):
        np.add(a, b, out=out)
    graph = {
        "nodes": [{"op": "null", "name": "x", "inputs": []},
                  {"op": "null", "name": "y", "inputs": []},
                  {"op": "tvm_op", "name": "add", "inputs": [[0, 0, 0], [1, 0]],
                   "attrs": {"func_name": "myadd", "num_inputs": "2", "num_outputs": "1",
                             "flatten_data": "1"}}],
        "arg_nodes": [0, 1], "heads": [[2, 0, 0]], "node_row_ptr": [0, 1, 2, 3],
        "attrs": {"dltype": ["list_str", ["float32"] * 3],
                  "storage_id": ["list_int", [0, 1, 2]],
                  "shape": ["list_shape", [[2, 2]] * 3]},
    }
    gmod = graph_executor.create(json.dumps(graph), {"myadd": myadd}, interp.cpu(0))
    gmod.run(x=np.ones((2, 2), "float32"), y=np.full((2, 2), 2, "float32"))
    np.testing.assert_array_equal(gmod.get_output(0).numpy(), np.full((2, 2), 3))
    assert graph_executor.get_device(None, interp.cpu(0))[2] == [1, 0]


@pytest.mark.parametrize("mutate, message", [
    (lambda g: g.pop("heads"), "missing key"),
    (lambda g: g["nodes"][2].update(bogus=1), "unknown key"),
    (lambda g: g["nodes"][2]["attrs"].update(func_name="nothere"), "does not have"),
    (lambda g: g["attrs"]["shape"][1].pop(), "one item per entry"),
    (lambda g: g["attrs"].update(weird=["list_str", []]), "unknown attr"),
])
def test_malformed_graphs_raise(mutate, message):
    _, factory = graph_module(add_module())
    graph = json.loads(factory.get_graph_json())
    mutate(graph)
    with pytest.raises(IRError, match=message):
        graph_executor.create(json.dumps(graph), factory.lib, interp.cpu(0))
