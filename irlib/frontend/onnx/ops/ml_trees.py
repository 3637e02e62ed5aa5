"""The ``(tree id, node id)`` encoding of ``ai.onnx.ml`` TreeEnsembleRegressor and
TreeEnsembleClassifier (opsets 1 and 3) rewritten into the attributes of
``onnx.tree_ensemble`` (interior nodes and leaves numbered apart, as TreeEnsemble opset 5
does, with each leaf's ``(target, weight)`` pairs in a range of ``leaf_offsets``).
"""

from __future__ import annotations

import numpy as np

from ....op.frontend.classic_ml import AGGREGATES, NODE_MODES, POST_TRANSFORMS
from .common import unsupported


def _list(attrs, name: str, default=None) -> list:
    """An attribute's entries (a tensor's flattened) as a list, ``default`` when absent."""
    value = attrs.get(f"{name}_as_tensor")
    if value is None:
        value = attrs.get(name)
    if value is None:
        return [] if default is None else default
    items = value.reshape(-1).tolist() if isinstance(value, np.ndarray) else list(value)
    return [item.decode() if isinstance(item, bytes) else item for item in items]


def _required(attrs, name: str, op: str) -> list:
    values = _list(attrs, name)
    if not values:
        unsupported(f"{op} needs the attribute {name!r}")
    return values


def _structure(attrs, op: str, prefix: str) -> dict:
    """The node and leaf attributes of ``onnx.tree_ensemble`` (all but the aggregation and
    transform), from the nodes and the ``{prefix}_*`` leaf weights of ``op``."""
    tree_ids = [int(v) for v in _required(attrs, "nodes_treeids", op)]
    node_ids = [int(v) for v in _required(attrs, "nodes_nodeids", op)]
    features = [int(v) for v in _required(attrs, "nodes_featureids", op)]
    values = [float(v) for v in _list(attrs, "nodes_values", [0.0] * len(tree_ids))]
    modes = [str(v) for v in _required(attrs, "nodes_modes", op)]
    true_ids = [int(v) for v in _required(attrs, "nodes_truenodeids", op)]
    false_ids = [int(v) for v in _required(attrs, "nodes_falsenodeids", op)]
    missing = [int(v) for v in _list(attrs, "nodes_missing_value_tracks_true",
                                     [0] * len(tree_ids))]
    if len({len(tree_ids), len(node_ids), len(features), len(values), len(modes),
            len(true_ids), len(false_ids), len(missing)}) != 1:
        unsupported(f"{op}: the nodes_* attributes differ in length")
    for mode in modes:
        if mode != "LEAF" and mode not in NODE_MODES[:6]:
            unsupported(f"{op}: node mode {mode!r} is not supported")
    # number interior nodes and leaves apart, each in the order they are listed
    interior, leaf = {}, {}
    for tree, node, mode in zip(tree_ids, node_ids, modes):
        table = leaf if mode == "LEAF" else interior
        if (tree, node) in interior or (tree, node) in leaf:
            unsupported(f"{op}: node {node} of tree {tree} is listed twice")
        table[(tree, node)] = len(table)

    def child(tree, node):
        if (tree, node) in leaf:
            return leaf[(tree, node)], 1
        if (tree, node) in interior:
            return interior[(tree, node)], 0
        unsupported(f"{op}: tree {tree} branches to node {node}, which is not listed")

    out = {name: [] for name in ("nodes_featureids", "nodes_splits", "nodes_modes",
                                 "nodes_truenodeids", "nodes_trueleafs", "nodes_falsenodeids",
                                 "nodes_falseleafs", "nodes_missing_value_tracks_true")}

    def add_node(feature, split, mode, true, false, tracks):
        out["nodes_featureids"].append(feature)
        out["nodes_splits"].append(split)
        out["nodes_modes"].append(mode)
        out["nodes_truenodeids"].append(true[0])
        out["nodes_trueleafs"].append(true[1])
        out["nodes_falsenodeids"].append(false[0])
        out["nodes_falseleafs"].append(false[1])
        out["nodes_missing_value_tracks_true"].append(tracks)

    referenced = set()
    for i, mode in enumerate(modes):
        if mode == "LEAF":
            continue
        tree = tree_ids[i]
        true, false = child(tree, true_ids[i]), child(tree, false_ids[i])
        referenced.update({(tree, true_ids[i]), (tree, false_ids[i])})
        add_node(features[i], values[i], NODE_MODES.index(mode), true, false, missing[i])
    roots = []
    for tree in dict.fromkeys(tree_ids):  # trees in order of first appearance
        heads = [(tree, n) for t, n in zip(tree_ids, node_ids)
                 if t == tree and (tree, n) not in referenced]
        if len(heads) != 1:
            unsupported(f"{op}: tree {tree} has {len(heads)} root nodes")
        if heads[0] in leaf:
            # a single-leaf tree: a node whose both branches reach that leaf
            roots.append(len(out["nodes_modes"]))
            add_node(0, 0.0, 0, (leaf[heads[0]], 1), (leaf[heads[0]], 1), 0)
        else:
            roots.append(interior[heads[0]])
    pairs = [[] for _ in leaf]
    for tree, node, target, weight in zip(
            _list(attrs, f"{prefix}_treeids"), _list(attrs, f"{prefix}_nodeids"),
            _list(attrs, f"{prefix}_ids"), _list(attrs, f"{prefix}_weights")):
        key = (int(tree), int(node))
        if key not in leaf:
            unsupported(f"{op}: {prefix} weight on node {node} of tree {tree}, not a leaf")
        pairs[leaf[key]].append((int(target), float(weight)))
    offsets = np.cumsum([0] + [len(p) for p in pairs]).tolist()
    flat = [pair for group in pairs for pair in group]
    out = {name: tuple(value) for name, value in out.items()}
    out.update(tree_roots=tuple(roots), leaf_offsets=tuple(int(v) for v in offsets),
               leaf_targetids=tuple(t for t, _ in flat),
               leaf_weights=tuple(w for _, w in flat))
    return out


def _choice(attrs, name: str, names: tuple, default: str, op: str) -> str:
    value = attrs.get(name, default)
    if value not in names:
        unsupported(f"{op}: {name} {value!r} is not one of {names}")
    return value


def regressor_attrs(attrs) -> dict:
    """The ``onnx.tree_ensemble`` attributes of a TreeEnsembleRegressor node.

    Raises:
        OpNotImplemented: malformed trees or unsupported attribute values.
    """
    op = "TreeEnsembleRegressor"
    out = _structure(attrs, op, "target")
    n_targets = int(attrs.get("n_targets", max(out["leaf_targetids"], default=0) + 1))
    out.update(n_targets=n_targets,
               base_values=tuple(float(v) for v in _list(attrs, "base_values")),
               aggregate_function=_choice(attrs, "aggregate_function", AGGREGATES, "SUM", op),
               post_transform=_choice(attrs, "post_transform", POST_TRANSFORMS, "NONE", op))
    return out


def classifier_outputs(ctx, x, attrs) -> list:
    """``[label, probabilities]`` of a TreeEnsembleClassifier node over float input ``x``.

    More than two classes: the label is the class of the largest summed score (the first of
    equal ones), the probabilities the scores after ``post_transform``. Two classes (see
    :func:`_binary_outputs`) only in the form sklearn exporters write.

    Raises:
        OpNotImplemented: an unsupported binary form, PROBIT or SOFTMAX_ZERO, malformed trees.
    """
    op = "TreeEnsembleClassifier"
    strings = _list(attrs, "classlabels_strings")
    labels = strings or [int(v) for v in _list(attrs, "classlabels_int64s")]
    if len(labels) < 2:
        unsupported(f"{op} needs at least two class labels, got {len(labels)}")
    transform = _choice(attrs, "post_transform", ("NONE", "SOFTMAX", "LOGISTIC"), "NONE", op)
    structure = _structure(attrs, op, "class")
    base = tuple(float(v) for v in _list(attrs, "base_values"))
    if len(labels) == 2:
        return _binary_outputs(ctx, x, structure, base, labels, transform)
    scores = ctx.emit("onnx.tree_ensemble", x, n_targets=len(labels), base_values=base,
                      aggregate_function="SUM", post_transform="NONE", **structure)
    label = _label_of(ctx, ctx.emit("argmax", scores, axis=[1]), labels)
    if transform == "SOFTMAX":
        scores = ctx.emit("nn.softmax", scores, axis=1)
    elif transform == "LOGISTIC":
        scores = ctx.emit("sigmoid", scores)
    return [label, _as_float32(ctx, scores)]


def _label_of(ctx, index, labels):
    """The class labels at the class indexes ``index``."""
    strings = isinstance(labels[0], str)
    return ctx.emit("onnx.label_encoder", ctx.emit("cast", index, dtype="int64"),
                    keys=tuple(range(len(labels))), values=tuple(labels),
                    default="" if strings else -1, dtype="string" if strings else "int64")


def _as_float32(ctx, value):
    return value if ctx.dtype(value) == "float32" else ctx.emit("cast", value, dtype="float32")


def _binary_outputs(ctx, x, structure, base, labels, transform):
    """Two classes with every leaf weight on class 0 (as sklearn exporters write them): the
    weights sum (plus the one base value) to the positive class's score ``s``. As onnxruntime
    does: the label is the positive class where ``s > 0.5`` (all weights non-negative) or
    ``s > 0`` (some negative), and the probabilities are ``[1 - s, s]`` or ``[-s, s]``
    respectively, or ``[logistic(-s), logistic(s)]`` under LOGISTIC."""
    op = "TreeEnsembleClassifier"
    if set(structure["leaf_targetids"]) - {0} or len(base) > 1 or transform == "SOFTMAX":
        unsupported(f"{op} with two classes is supported only with every class_ids 0, at "
                    "most one base value and post_transform NONE or LOGISTIC")
    positive = all(w >= 0 for w in structure["leaf_weights"])
    score = ctx.emit("onnx.tree_ensemble", x, n_targets=1, base_values=base,
                     aggregate_function="SUM", post_transform="NONE", **structure)
    dtype = ctx.dtype(score)
    above = ctx.emit("greater", ctx.emit("reshape", score, newshape=[-1]),
                     ctx.const(np.array(0.5 if positive else 0.0, dtype)))
    label = _label_of(ctx, above, labels)
    if transform == "LOGISTIC":
        pair = [ctx.emit("sigmoid", ctx.emit("negative", score)), ctx.emit("sigmoid", score)]
    elif positive:
        pair = [ctx.emit("subtract", ctx.const(np.array(1.0, dtype)), score), score]
    else:
        pair = [ctx.emit("negative", score), score]
    probabilities = ctx.emit("concatenate", ctx.make_tuple(pair), axis=1)
    return [label, _as_float32(ctx, probabilities)]
