"""The ``onnx.*`` ops of irlib/op/frontend/classic_ml.py (LabelEncoder, TreeEnsemble): type
relations, and numpy references against hand-derived values, numpy formulas written here and
onnx.reference's evaluator."""

import numpy as np
import pytest

from irlib.errors import OpImplError, TypeInferenceError
from irlib.ir.types import TensorType
from irlib.op.frontend import classic_ml
from irlib.testing.budget import examples
from op_test_helpers import evaluate_op as run, op_relation as relation

RNG = np.random.default_rng(0)


# -- LabelEncoder -------------------------------------------------------------------------------

def test_label_encoder_strings_to_ints_hand_derived():
    data = np.array([["b", "zz"], ["a", "b"]], object)
    got = run("onnx.label_encoder", data, keys=("a", "b"), values=(5, 6), default=-1,
              dtype="int64")
    np.testing.assert_array_equal(got, [[6, -1], [5, 6]])
    assert got.dtype == np.int64


def test_label_encoder_ints_to_strings_and_repeated_key_takes_the_last():
    data = np.array([1, 4, 2, 1], "int64")
    got = run("onnx.label_encoder", data, keys=(1, 2, 1), values=("x", "y", "z"),
              default="?", dtype="string")
    assert got.tolist() == ["z", "?", "y", "z"]


def test_label_encoder_nan_key_matches_every_nan():
    data = np.array([np.nan, 0.5, -np.nan, 2.0], "float32")
    got = run("onnx.label_encoder", data, keys=(0.5, float("nan")), values=(1.5, 9.0),
              default=-0.0, dtype="float32")
    np.testing.assert_array_equal(got, [9.0, 1.5, 9.0, -0.0])


@pytest.mark.parametrize("seed", range(examples(4)))
def test_label_encoder_ints_match_a_dict_lookup(seed):
    rng = np.random.default_rng(seed)
    keys = rng.choice(50, 12, replace=False).tolist()
    values = rng.integers(-100, 100, 12).tolist()
    data = rng.integers(0, 50, (5, 6)).astype("int32")
    got = run("onnx.label_encoder", data, keys=tuple(keys), values=tuple(values),
              default=7, dtype="int16")
    table = dict(zip(keys, values))
    want = np.array([[table.get(v, 7) for v in row] for row in data.tolist()], "int16")
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int16


def test_label_encoder_matches_onnx_reference_evaluator():
    onnx = pytest.importorskip("onnx")
    from onnx import helper
    from onnx.reference import ReferenceEvaluator
    node = helper.make_node("LabelEncoder", ["x"], ["y"], domain="ai.onnx.ml",
                            keys_int64s=[3, 1, 8, 1], values_strings=["a", "b", "c", "d"],
                            default_string="-")
    graph = helper.make_graph([node], "g", [
        helper.make_tensor_value_info("x", onnx.TensorProto.INT64, [6])], [
        helper.make_tensor_value_info("y", onnx.TensorProto.STRING, [6])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19),
                                                    helper.make_opsetid("ai.onnx.ml", 2)])
    data = np.array([1, 3, 0, 8, 8, 2], "int64")
    want = ReferenceEvaluator(model).run(None, {"x": data})[0]
    got = run("onnx.label_encoder", data, keys=(3, 1, 8, 1), values=("a", "b", "c", "d"),
              default="-", dtype="string")
    assert got.tolist() == [str(v) for v in want.tolist()]


def test_label_encoder_relation_and_errors():
    ty = relation("onnx.label_encoder", [TensorType((2, 3), "string")], keys=("a",),
                  values=(1.0,), default=0.0, dtype="float32")
    assert ty == TensorType((2, 3), "float32")
    with pytest.raises(TypeInferenceError, match="does not match"):
        relation("onnx.label_encoder", [TensorType((2,), "int64")], keys=("a",),
                 values=(1,), default=0, dtype="int64")
    with pytest.raises(TypeInferenceError, match="2 keys for 1 values"):
        relation("onnx.label_encoder", [TensorType((2,), "int64")], keys=(1, 2),
                 values=(1,), default=0, dtype="int64")


# -- TreeEnsemble -------------------------------------------------------------------------------

def _stump(**extra):
    """One tree: node 0 tests x[0] <= 1 (true: leaf 0, false: node 1); node 1 tests x[1] in
    {2, 5} (true: leaf 1, false: leaf 2). Leaf 0 gives target 0 weight 1.0, leaf 1 gives
    target 1 weight 2.0 and target 0 weight 0.5, leaf 2 gives target 1 weight -3.0."""
    attrs = dict(nodes_featureids=(0, 1), nodes_splits=(1.0, 0.0), nodes_modes=(0, 6),
                 nodes_truenodeids=(0, 1), nodes_trueleafs=(1, 1),
                 nodes_falsenodeids=(1, 2), nodes_falseleafs=(0, 1),
                 nodes_missing_value_tracks_true=(0, 1),
                 membership_values=(2.0, 5.0, float("nan")), tree_roots=(0,),
                 leaf_offsets=(0, 1, 3, 4), leaf_targetids=(0, 1, 0, 1),
                 leaf_weights=(1.0, 2.0, 0.5, -3.0), n_targets=2)
    attrs.update(extra)
    return attrs


def test_tree_ensemble_one_tree_hand_derived():
    data = np.array([[0.5, 9.0], [3.0, 5.0], [3.0, 4.0], [3.0, np.nan], [np.nan, 2.0]],
                    "float32")
    got = run("onnx.tree_ensemble", data, **_stump())
    # row 3: NaN at the member node tracks true; row 4: NaN <= 1 is false
    np.testing.assert_allclose(got, [[1.0, 0.0], [0.5, 2.0], [0.0, -3.0], [0.5, 2.0],
                                     [0.5, 2.0]])
    assert got.dtype == np.float32


@pytest.mark.parametrize("how,want", [
    ("SUM", [[2.0, 0.0], [1.0, 4.0], [1.5, 2.0]]),
    ("AVERAGE", [[1.0, 0.0], [0.5, 2.0], [0.75, 1.0]]),
    ("MIN", [[1.0, 0.0], [0.5, 2.0], [0.5, 2.0]]),
    ("MAX", [[1.0, 0.0], [0.5, 2.0], [1.0, 2.0]])])
def test_tree_ensemble_aggregates_two_trees_hand_derived(how, want):
    # the stump twice, the second copy's root (node 2) testing x[1] <= 1 instead of x[0]
    attrs = _stump(nodes_featureids=(0, 1, 1, 1), nodes_splits=(1.0, 0.0, 1.0, 0.0),
                   nodes_modes=(0, 6, 0, 6), nodes_truenodeids=(0, 1, 0, 1),
                   nodes_trueleafs=(1, 1, 1, 1), nodes_falsenodeids=(1, 2, 3, 2),
                   nodes_falseleafs=(0, 1, 0, 1), nodes_missing_value_tracks_true=(0, 1, 0, 1),
                   membership_values=(2.0, 5.0, float("nan"), 2.0, 5.0, float("nan")),
                   tree_roots=(0, 2), aggregate_function=how)
    # row 0: both trees reach leaf 0 (target 1 is reached by no leaf: 0); row 1: both reach
    # leaf 1; row 2: tree 1 reaches leaf 0, tree 2 leaf 1
    data = np.array([[0.0, 0.0], [3.0, 5.0], [0.5, 5.0]])
    np.testing.assert_allclose(run("onnx.tree_ensemble", data, **attrs), want)


def test_tree_ensemble_base_values_and_unreached_targets():
    data = np.array([[0.5, 0.0]], "float64")
    got = run("onnx.tree_ensemble", data, **_stump(base_values=(10.0, 20.0)))
    np.testing.assert_allclose(got, [[11.0, 0.0]])  # target 1 is reached by no leaf


@pytest.mark.parametrize("how", ["LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT"])
def test_tree_ensemble_post_transforms_match_numpy_formulas(how):
    data = np.array([[0.5, 9.0], [3.0, 5.0], [3.0, 4.0]])
    raw = np.array([[1.0, 0.0], [0.5, 2.0], [0.0, -3.0]])
    if how == "PROBIT":  # scores must be probabilities
        attrs = _stump(leaf_weights=(0.9, 0.2, 0.3, 0.6), post_transform=how)
        raw = np.array([[0.9, 0.0], [0.3, 0.2], [0.0, 0.6]])
        from math import erf
        got = run("onnx.tree_ensemble", data, **attrs)
        # probit is the inverse of the normal cdf 0.5 (1 + erf(z / sqrt 2))
        cdf = np.vectorize(lambda z: 0.5 * (1 + erf(z / np.sqrt(2))))(got)
        np.testing.assert_allclose(cdf[raw != 0], raw[raw != 0], rtol=1e-9)
        return
    got = run("onnx.tree_ensemble", data, **_stump(post_transform=how))
    if how == "LOGISTIC":
        want = 1 / (1 + np.exp(-raw))
    elif how == "SOFTMAX":
        want = np.exp(raw) / np.exp(raw).sum(axis=1, keepdims=True)
    else:
        exp = np.where(raw != 0, np.exp(raw), 0)
        want = exp / exp.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_tree_ensemble_relation_and_errors():
    ty = relation("onnx.tree_ensemble", [TensorType((7, 2), "float32")], **_stump())
    assert ty == TensorType((7, 2), "float32")
    with pytest.raises(TypeInferenceError, match="float tensor"):
        relation("onnx.tree_ensemble", [TensorType((7, 2), "int64")], **_stump())
    with pytest.raises(TypeInferenceError, match="nodes_splits has 1 entries"):
        relation("onnx.tree_ensemble", [TensorType((7, 2), "float32")],
                 **_stump(nodes_splits=(1.0,)))
    with pytest.raises(TypeInferenceError, match="out of range"):
        relation("onnx.tree_ensemble", [TensorType((7, 2), "float32")],
                 **_stump(nodes_falsenodeids=(1, 9)))
    with pytest.raises(TypeInferenceError, match="membership sets"):
        relation("onnx.tree_ensemble", [TensorType((7, 2), "float32")],
                 **_stump(membership_values=(2.0,)))
    with pytest.raises(OpImplError, match="reach feature 1 of 1"):
        run("onnx.tree_ensemble", np.zeros((2, 1), "float32"), **_stump())
    cycle = _stump(nodes_truenodeids=(1, 0), nodes_trueleafs=(0, 0),
                   nodes_falsenodeids=(1, 0), nodes_falseleafs=(0, 0), nodes_modes=(0, 0))
    with pytest.raises(OpImplError, match="cycle"):
        run("onnx.tree_ensemble", np.zeros((2, 2), "float32"), **cycle)


def test_constants_follow_the_spec_enums():
    assert classic_ml.POST_TRANSFORMS.index("LOGISTIC") == 2
    assert classic_ml.NODE_MODES.index("BRANCH_MEMBER") == 6
    assert classic_ml.AGGREGATES.index("SUM") == 1
