"""ONNX-ML (``ai.onnx.ml`` domain) ops with no composition onto other ops, each with a numpy
reference.

* ``onnx.label_encoder(x, keys, values, default, dtype)``: map each element of ``x`` that
  equals ``keys[i]`` to ``values[i]`` and every other element to ``default``; the result has
  ``x``'s shape and dtype ``dtype``. Keys and values are integers, floats or strings; a NaN key
  matches every NaN element; a repeated key maps to its last value.
* ``onnx.tree_ensemble(x, ...)``: the summed (or averaged, min-ed, max-ed) leaf weights of
  an ensemble of decision trees over the rows of a ``[N, F]`` float tensor, as ``[N,
  n_targets]`` of ``x``'s dtype. The encoding is the one of ``ai.onnx.ml`` TreeEnsemble
  (opset 5) with one generalization, so that TreeEnsembleRegressor and TreeEnsembleClassifier
  map onto it too: leaf ``l`` adds the ``(target, weight)`` pairs ``leaf_offsets[l] ..
  leaf_offsets[l + 1] - 1`` of ``leaf_targetids``/``leaf_weights``, and ``base_values`` (one
  per target, or none) are added after aggregation, before ``post_transform``.

Binarizer and ArrayFeatureExtractor need no op of their own: their converters compose
comparisons, casts and ``take``.
"""

from __future__ import annotations

import numpy as np

from ...errors import OpImplError, TypeInferenceError
from ...ir.types import TensorType
from ..registry import register_opaque
from ..type_relations import expect_tensor

__all__ = ["AGGREGATES", "POST_TRANSFORMS", "NODE_MODES"]

#: Aggregation of the trees' leaf weights per target, by TreeEnsemble's enum value.
AGGREGATES = ("AVERAGE", "SUM", "MIN", "MAX")
#: Transforms of the aggregated scores, by TreeEnsemble's enum value.
POST_TRANSFORMS = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")
#: Node comparisons ``x[feature] <op> split``, by TreeEnsemble's enum value.
NODE_MODES = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ",
              "BRANCH_NEQ", "BRANCH_MEMBER")

_FLOATS = ("float16", "float32", "float64")



# -- LabelEncoder -------------------------------------------------------------------------------

def _label_encoder_rel(arg_types, attrs):
    op = "onnx.label_encoder"
    data = expect_tensor(arg_types[0], f"{op}: data")
    keys, values = attrs["keys"], attrs["values"]
    if len(keys) != len(values):
        raise TypeInferenceError(f"{op}: {len(keys)} keys for {len(values)} values")
    string_keys = bool(keys) and isinstance(keys[0], str)
    if keys and string_keys != (data.dtype == "string"):
        raise TypeInferenceError(f"{op}: data {data} does not match "
                                 f"{'string' if string_keys else 'numeric'} keys")
    return TensorType(data.shape, attrs["dtype"])


def _label_encoder_ref(data, keys=(), values=(), default=None, dtype="int64"):
    op = "onnx.label_encoder"
    if len(keys) != len(values):
        raise OpImplError(f"{op}: {len(keys)} keys for {len(values)} values", op=op)
    out_dtype = object if dtype == "string" else np.dtype(dtype)
    if data.dtype == object or data.dtype.kind in "US":
        table = dict(zip(keys, values))  # the last of repeated keys wins
        flat = [table.get(item.decode() if isinstance(item, bytes) else item, default)
                for item in data.reshape(-1).tolist()]
        return (np.array(flat, out_dtype).reshape(data.shape),)
    # numeric keys: NaN keys match NaN inputs; the rest by binary search in sorted keys
    nan_value, table = None, {}
    for key, value in zip(keys, values):
        if isinstance(key, float) and np.isnan(key):
            nan_value = (value,)
        else:
            table[key] = value
    out = np.full(data.shape, default, out_dtype)
    if table:
        sorted_keys = np.array(sorted(table), dtype=data.dtype)
        mapped = np.array([table[k] for k in sorted(table)], out_dtype)
        pos = np.minimum(np.searchsorted(sorted_keys, data), len(sorted_keys) - 1)
        hit = sorted_keys[pos] == data
        out[hit] = mapped[pos[hit]]
    if nan_value is not None and data.dtype.kind == "f":
        out[np.isnan(data)] = nan_value[0]
    return (out,)


register_opaque("onnx.label_encoder", ("data",),
                ("onnx.attrs.LabelEncoderAttrs",
           [("keys", ()), ("values", ()), ("default", None), ("dtype", "int64")]),
                _label_encoder_rel, _label_encoder_ref,
                "ONNX-ML LabelEncoder: map elements equal to keys[i] to values[i], others to "
                "default")


# -- TreeEnsemble -------------------------------------------------------------------------------

_NODE_ATTRS = ("nodes_featureids", "nodes_splits", "nodes_modes", "nodes_truenodeids",
               "nodes_trueleafs", "nodes_falsenodeids", "nodes_falseleafs",
               "nodes_missing_value_tracks_true")


def _tree_ensemble_rel(arg_types, attrs):
    op = "onnx.tree_ensemble"
    data = expect_tensor(arg_types[0], f"{op}: data")
    if data.ndim != 2 or data.dtype not in _FLOATS:
        raise TypeInferenceError(f"{op}: data must be a [N, F] float tensor, got {data}")
    _check_structure(attrs, TypeInferenceError)
    return TensorType((data.shape[0], attrs["n_targets"]), data.dtype)


def _check_structure(attrs, error):
    """Raise ``error`` where the node, leaf and tree attributes do not fit together."""
    op = "onnx.tree_ensemble"
    nodes = len(attrs["nodes_featureids"])
    for name in _NODE_ATTRS:
        if len(attrs[name]) != nodes:
            raise error(f"{op}: {name} has {len(attrs[name])} entries for {nodes} nodes")
    offsets = attrs["leaf_offsets"]
    pairs = len(attrs["leaf_targetids"])
    if len(attrs["leaf_weights"]) != pairs or not offsets or offsets[0] != 0 or \
            offsets[-1] != pairs or any(b < a for a, b in zip(offsets, offsets[1:])):
        raise error(f"{op}: leaf_offsets {list(offsets)[:8]} do not split the {pairs} leaf "
                    f"weights ({len(attrs['leaf_weights'])} given)")
    leaves = len(offsets) - 1
    for ids, flags in (("nodes_truenodeids", "nodes_trueleafs"),
                       ("nodes_falsenodeids", "nodes_falseleafs")):
        for target, is_leaf in zip(attrs[ids], attrs[flags]):
            if not 0 <= target < (leaves if is_leaf else nodes):
                raise error(f"{op}: {ids} entry {target} is out of range")
    if any(not 0 <= root < nodes for root in attrs["tree_roots"]):
        raise error(f"{op}: tree_roots {list(attrs['tree_roots'])} must index the {nodes} "
                    "nodes")
    n_targets = attrs["n_targets"]
    if any(not 0 <= t < n_targets for t in attrs["leaf_targetids"]):
        raise error(f"{op}: leaf_targetids must lie in [0, {n_targets})")
    if attrs["base_values"] and len(attrs["base_values"]) != n_targets:
        raise error(f"{op}: {len(attrs['base_values'])} base_values for {n_targets} targets")
    if attrs["aggregate_function"] not in AGGREGATES:
        raise error(f"{op}: aggregate_function {attrs['aggregate_function']!r} is not one of "
                    f"{AGGREGATES}")
    if attrs["post_transform"] not in POST_TRANSFORMS:
        raise error(f"{op}: post_transform {attrs['post_transform']!r} is not one of "
                    f"{POST_TRANSFORMS}")
    members = sum(1 for m in attrs["nodes_modes"] if m == NODE_MODES.index("BRANCH_MEMBER"))
    sets = sum(1 for v in attrs["membership_values"] if v != v)  # NaN delimits each set
    if members and sets != members:
        raise error(f"{op}: {members} BRANCH_MEMBER nodes but {sets} NaN-delimited "
                    "membership sets")
    if any(not 0 <= m < len(NODE_MODES) for m in attrs["nodes_modes"]):
        raise error(f"{op}: nodes_modes must lie in [0, {len(NODE_MODES)})")


def _member_sets(modes, membership_values):
    """``{node: array of members}`` for the BRANCH_MEMBER nodes, in node order."""
    member_mode = NODE_MODES.index("BRANCH_MEMBER")
    sets, current = [], []
    for value in membership_values:
        if value != value:
            sets.append(np.array(current, "float64"))
            current = []
        else:
            current.append(value)
    nodes = [i for i, m in enumerate(modes) if m == member_mode]
    return dict(zip(nodes, sets))


_COMPARES = (np.less_equal, np.less, np.greater_equal, np.greater, np.equal, np.not_equal)


def _goes_true(codes, mode, value, split):
    """The comparison of each entry's feature ``value`` with its node's ``split`` (``codes``:
    the comparison modes the ensemble uses, BRANCH_MEMBER left out)."""
    if len(codes) == 1:
        return _COMPARES[codes[0]](value, split)
    result = np.zeros(value.shape, bool)
    for code in codes:
        chosen = mode == code
        result[chosen] = _COMPARES[code](value[chosen], split[chosen])
    return result


class _Forest:
    """The node and leaf attributes of one ``onnx.tree_ensemble`` call as numpy arrays,
    checked once (see :func:`_forest`)."""

    def __init__(self, attrs):
        _check_structure(attrs, lambda message: OpImplError(message,
                                                            op="onnx.tree_ensemble"))
        self.feature = np.asarray(attrs["nodes_featureids"], "int64")
        self.split = np.asarray(attrs["nodes_splits"], "float64")
        self.mode = np.asarray(attrs["nodes_modes"], "int64")
        self.true_id = np.asarray(attrs["nodes_truenodeids"], "int64")
        self.true_leaf = np.asarray(attrs["nodes_trueleafs"], bool)
        self.false_id = np.asarray(attrs["nodes_falsenodeids"], "int64")
        self.false_leaf = np.asarray(attrs["nodes_falseleafs"], bool)
        self.missing_true = np.asarray(attrs["nodes_missing_value_tracks_true"], bool)
        self.tracks_missing = bool(self.missing_true.any())
        self.members = _member_sets(attrs["nodes_modes"], attrs["membership_values"])
        self.codes = [int(c) for c in np.unique(self.mode) if c < len(_COMPARES)] or [0]
        self.roots = np.asarray(attrs["tree_roots"], "int64")
        self.offsets = np.asarray(attrs["leaf_offsets"], "int64")
        self.targets = np.asarray(attrs["leaf_targetids"], "int64")
        self.weights = np.asarray(attrs["leaf_weights"], "float64")
        self.base = np.asarray(attrs["base_values"], "float64")


#: Recently used forests by their attribute values (a model calls the op with the same ones
#: every run; checking and converting 10^4-node tuples each time would cost as much as
#: walking the trees).
_FORESTS: dict = {}
_FORESTS_KEPT = 8


def _forest(attrs) -> _Forest:
    key = tuple(attrs[name] for name in sorted(attrs))
    forest = _FORESTS.get(key)
    if forest is None:
        forest = _Forest(attrs)
        if len(_FORESTS) >= _FORESTS_KEPT:
            del _FORESTS[next(iter(_FORESTS))]
        _FORESTS[key] = forest
    return forest


def _leaves(data, forest: _Forest):
    """``[N, trees]`` leaf index that each row reaches in each tree (every (row, tree) pair
    walked at once, one level per step)."""
    op = "onnx.tree_ensemble"
    feature = forest.feature
    if feature.size and (feature.min() < 0 or feature.max() >= data.shape[1]):
        raise OpImplError(f"{op}: nodes_featureids reach feature {feature.max()} of "
                          f"{data.shape[1]}", op=op)
    split = forest.split.astype(data.dtype)
    rows, trees = data.shape[0], forest.roots.size
    row = np.repeat(np.arange(rows), trees)
    node = np.tile(forest.roots, rows)
    active = np.arange(rows * trees)
    # a tree is acyclic, so every walk reaches a leaf within len(nodes) steps
    for _ in range(feature.size + 1):
        if not active.size:
            break
        at = node[active]
        value = data[row[active], feature[at]]
        go = _goes_true(forest.codes, forest.mode[at], value, split[at])
        for member_node, values in forest.members.items():
            here = at == member_node
            if here.any():
                go[here] = np.isin(value[here], values.astype(data.dtype))
        if forest.tracks_missing:
            go |= forest.missing_true[at] & np.isnan(value)
        node[active] = np.where(go, forest.true_id[at], forest.false_id[at])
        active = active[~np.where(go, forest.true_leaf[at], forest.false_leaf[at])]
    else:
        raise OpImplError(f"{op}: the nodes form a cycle", op=op)
    return node.reshape(rows, trees)


def _aggregate(leaves, forest: _Forest, n_targets: int, how: str):
    """``[N, n_targets]`` float64 scores: the leaf weights aggregated, then base values."""
    offsets = forest.offsets
    rows, trees = leaves.shape
    counts = (offsets[1:] - offsets[:-1])[leaves].reshape(-1)     # per (row, tree)
    row_of = np.repeat(np.repeat(np.arange(rows), trees), counts)
    starts = offsets[:-1][leaves].reshape(-1)
    # the pair indexes of every (row, tree) leaf, flattened
    pair = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
    target, weight = forest.targets[pair], forest.weights[pair]
    scores = np.zeros((rows, n_targets), "float64")
    reached = np.zeros(scores.shape, bool)
    reached[row_of, target] = True
    if how in ("SUM", "AVERAGE"):
        np.add.at(scores, (row_of, target), weight)
        if how == "AVERAGE" and trees:
            scores /= trees
    else:
        scores[:] = np.inf if how == "MIN" else -np.inf
        (np.minimum if how == "MIN" else np.maximum).at(scores, (row_of, target), weight)
    if forest.base.size:
        scores += forest.base
    # a target that no leaf of the row reaches scores 0, base value or not (as onnxruntime)
    scores[~reached] = 0.0
    return scores


def post_transform(scores, how: str):
    """Apply a TreeEnsemble ``post_transform`` to ``[N, K]`` float64 scores.

    Args:
        scores: the aggregated scores.
        how: one of :data:`POST_TRANSFORMS`.

    Returns:
        The transformed scores (a new array where the transform is not NONE).

    Raises:
        OpImplError: ``how`` is unknown, or PROBIT without scipy.
    """
    op = "onnx.tree_ensemble"
    if how == "NONE":
        return scores
    if how == "LOGISTIC":
        return 1.0 / (1.0 + np.exp(-scores))
    if how == "SOFTMAX":
        shifted = np.exp(scores - scores.max(axis=1, keepdims=True))
        return shifted / shifted.sum(axis=1, keepdims=True)
    if how == "SOFTMAX_ZERO":
        # zero scores stay zero and take no part in the normalization
        shifted = np.where(scores != 0, np.exp(scores - scores.max(axis=1, keepdims=True)), 0)
        total = shifted.sum(axis=1, keepdims=True)
        return np.divide(shifted, total, out=np.zeros_like(shifted), where=total != 0)
    if how == "PROBIT":
        try:
            from scipy.special import ndtri
        except ImportError:
            raise OpImplError(f"{op}: post_transform PROBIT needs scipy", op=op) from None
        return ndtri(scores)  # sqrt(2) * erfinv(2 p - 1)
    raise OpImplError(f"{op}: post_transform {how!r} is not one of {POST_TRANSFORMS}", op=op)


def _tree_ensemble_ref(data, **attrs):
    op = "onnx.tree_ensemble"
    if data.ndim != 2 or data.dtype.kind != "f":
        raise OpImplError(f"{op}: data must be a [N, F] float tensor, got {data.dtype} "
                          f"{data.shape}", op=op)
    forest = _forest(attrs)
    scores = _aggregate(_leaves(data, forest), forest, attrs["n_targets"],
                        attrs["aggregate_function"])
    scores = post_transform(scores, attrs["post_transform"])
    return (scores.astype(data.dtype),)


register_opaque("onnx.tree_ensemble", ("data",),
                ("onnx.attrs.TreeEnsembleAttrs",
           [("nodes_featureids", ()), ("nodes_splits", ()), ("nodes_modes", ()),
            ("nodes_truenodeids", ()), ("nodes_trueleafs", ()), ("nodes_falsenodeids", ()),
            ("nodes_falseleafs", ()), ("nodes_missing_value_tracks_true", ()),
            ("membership_values", ()), ("tree_roots", ()), ("leaf_offsets", (0,)),
            ("leaf_targetids", ()), ("leaf_weights", ()), ("n_targets", 1),
            ("base_values", ()), ("aggregate_function", "SUM"), ("post_transform", "NONE")]),
                _tree_ensemble_rel, _tree_ensemble_ref,
                "ONNX-ML TreeEnsemble: aggregated leaf weights of decision trees per target")
