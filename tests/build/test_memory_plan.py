"""The static memory planner: storage reuse only between non-overlapping live ranges."""

import json

import numpy as np
from hypothesis import given, settings, strategies as st

import irlib
import interp
from interp.memory_plan import PlanNode, plan_memory, unplanned_bytes


def _chain(n, size=400):
    """x -> op -> op -> ... (n ops), every entry ``size`` bytes."""
    nodes = [PlanNode(False, (), (0,))]
    for i in range(n):
        nodes.append(PlanNode(True, (i,), (i + 1,)))
    return nodes, [size] * (n + 1), [n]


def test_chain_ping_pongs_between_two_buffers():
    nodes, sizes, heads = _chain(5)
    ids, storage = plan_memory(nodes, sizes, heads)
    # input 0 owns its buffer; op outputs alternate between two buffers, the head is kept.
    assert ids == [0, 1, 2, 1, 2, 1]
    assert len(storage) == 3


def test_output_never_aliases_its_own_input():
    nodes, sizes, heads = _chain(4)
    ids, _ = plan_memory(nodes, sizes, heads)
    for node in nodes[1:]:
        assert ids[node.inputs[0]] != ids[node.outputs[0]]


def test_live_ranges_do_not_overlap_on_a_diamond():
    # 0 -> a(1) -> b(2), a(1) -> c(3), d(4) = f(b, c)
    nodes = [PlanNode(False, (), (0,)), PlanNode(True, (0,), (1,)),
             PlanNode(True, (1,), (2,)), PlanNode(True, (1,), (3,)),
             PlanNode(True, (2, 3), (4,))]
    ids, _ = plan_memory(nodes, [64] * 5, [4])
    assert len({ids[1], ids[2], ids[3]}) == 3          # all live at node 3
    assert ids[4] == ids[1]                            # 1 is dead by then


def test_sizes_outside_match_range_are_not_reused():
    nodes, _, heads = _chain(3)
    ids, _ = plan_memory(nodes, [4, 4, 4 * 1000, 4], heads)
    assert ids[2] not in (ids[1],)


def test_nop_aliases_keep_storage_alive():
    nodes = [PlanNode(False, (), (0,)), PlanNode(True, (0,), (1,)),
             PlanNode(True, (1,), (2,), alias_input=True), PlanNode(True, (2,), (3,)),
             PlanNode(True, (3,), (4,))]
    ids, _ = plan_memory(nodes, [64] * 5, [4])
    assert ids[2] == ids[1]
    assert ids[3] != ids[1]                  # 1 is still read (through 2) by node 3
    assert ids[4] == ids[1]


def test_unplanned_bytes_counts_every_entry_once():
    assert unplanned_bytes([10, 20, 30], alias_entries=(1,)) == 40


def test_resnet_style_graph_uses_less_memory_with_planning():
    import zoo
    mod, params = zoo.resnet.get_workload(num_classes=10, image_shape=(3, 64, 64),
                                          num_layers=18)
    factory = interp.build(mod, target="python", params=params)
    memory = factory.memory
    assert memory["planned_bytes"] < memory["unplanned_bytes"]
    graph = json.loads(factory.get_graph_json())
    storage = graph["attrs"]["storage_id"][1]
    # Activations: with planning only a few buffers of the biggest size stay live.
    assert memory["planned_activation_bytes"] < memory["unplanned_activation_bytes"] / 2.5
    assert len(set(storage)) < len(storage)


def test_reshape_nop_storage_matches_relay():
    # TVM's test_reshape_nop: the expected storage ids are (0, 1, 1, 2, 3, 2).
    x = irlib.var("x", shape=(10, 4))
    y = irlib.expand_dims(irlib.abs(x), axis=1)
    t0 = irlib.reshape(y, newshape=(1, 40))
    t1 = irlib.abs(y)
    body = irlib.Tuple([irlib.reshape(t0, newshape=(2, 20)), irlib.sqrt(t1),
                        irlib.reshape(t1, newshape=(1, 40))])
    factory = interp.build(irlib.IRModule.from_expr(irlib.Function([x], body)))
    graph = json.loads(factory.get_graph_json())
    assert graph["attrs"]["storage_id"][1] == [0, 1, 1, 2, 3, 2]
    assert [n["name"] for n in graph["nodes"]].count("reshape_nop") == 2
    from interp import graph_executor
    gmod = graph_executor.GraphModule(factory["default"](interp.cpu(0)))
    value = np.random.default_rng(1).uniform(-1, 1, (10, 4)).astype("float32")
    gmod.run(x=value)
    np.testing.assert_allclose(gmod.get_output(0).numpy(), np.abs(value).reshape(2, 20))
    np.testing.assert_allclose(gmod.get_output(1).numpy(),
                               np.sqrt(np.abs(value)).reshape(10, 1, 4), rtol=1e-6)
    np.testing.assert_allclose(gmod.get_output(2).numpy(), np.abs(value).reshape(1, 40))



@st.composite
def random_graphs(draw):
    """Random DAGs: a few inputs, then op nodes reading earlier entries (some nops)."""
    num_inputs = draw(st.integers(1, 3))
    nodes = [PlanNode(False, (), (i,)) for i in range(num_inputs)]
    sizes = [draw(st.sampled_from([16, 64, 256, 1024])) for _ in range(num_inputs)]
    for _ in range(draw(st.integers(1, 12))):
        count = len(sizes)
        reads = tuple(sorted(set(draw(st.lists(st.integers(0, count - 1), min_size=1,
                                               max_size=3)))))
        if draw(st.booleans()) and len(reads) == 1:
            nodes.append(PlanNode(True, reads, (count,), alias_input=True))
            sizes.append(sizes[reads[0]])
            continue
        outs = draw(st.integers(1, 2))
        nodes.append(PlanNode(True, reads, tuple(range(count, count + outs))))
        sizes += [draw(st.sampled_from([16, 64, 256, 1024])) for _ in range(outs)]
    heads = sorted(set(draw(st.lists(st.integers(0, len(sizes) - 1), min_size=1,
                                     max_size=3))))
    return nodes, sizes, heads


@settings(max_examples=200, deadline=None)
@given(graph=random_graphs())
def test_planned_storages_never_hold_two_live_tensors(graph):
    nodes, sizes, heads = graph
    ids, storage = plan_memory(nodes, sizes, heads)
    # Oracle: simulate execution with one value per storage and check every read sees the
    # value its producer wrote.
    holder = {}
    root = list(range(len(sizes)))        # a nop output is the same tensor as its input
    for node in nodes:
        if node.alias_input:
            root[node.outputs[0]] = root[node.inputs[0]]
    for node in nodes:
        if not node.is_op:
            holder[ids[node.outputs[0]]] = root[node.outputs[0]]
            continue
        for entry in node.inputs:
            assert holder[ids[entry]] == root[entry]
        for entry in node.outputs:
            if not node.alias_input:
                assert ids[entry] not in {ids[i] for i in node.inputs}
                holder[ids[entry]] = root[entry]
            assert storage[ids[entry]] >= sizes[entry]
    for entry in heads:
        assert holder[ids[entry]] == root[entry]
