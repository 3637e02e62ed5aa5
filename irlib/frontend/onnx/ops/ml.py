"""``ai.onnx.ml`` ops: Binarizer and ArrayFeatureExtractor (composed from comparisons, casts and
``take``), LabelEncoder (onto ``onnx.label_encoder``), and TreeEnsemble,
TreeEnsembleRegressor and TreeEnsembleClassifier (onto ``onnx.tree_ensemble``, see
:mod:`irlib.op.frontend.classic_ml`). Scaler, Normalizer, Imputer and LinearRegressor live in
:mod:`.ml_linear`.
"""

from __future__ import annotations

import numpy as np

from ....op.frontend.classic_ml import AGGREGATES, NODE_MODES, POST_TRANSFORMS
from ..registry import converter
from . import ml_linear  # noqa: F401  (Scaler, Normalizer, Imputer, LinearRegressor)
from .common import scalar, unsupported
from .ml_trees import classifier_outputs, regressor_attrs

ML_DOMAIN = "ai.onnx.ml"


@converter("Binarizer", since=1, domain=ML_DOMAIN)
def _binarizer(ctx, inputs, attrs):
    x = inputs[0]
    dtype = ctx.dtype(x)
    above = ctx.emit("greater", x, scalar(ctx, attrs.get("threshold", 0.0), dtype))
    return ctx.emit("cast", above, dtype=dtype)


@converter("ArrayFeatureExtractor", since=1, domain=ML_DOMAIN)
def _array_feature_extractor(ctx, inputs, attrs):
    x, indices = inputs
    flat = ctx.emit("reshape", ctx.emit("cast", indices, dtype="int64"), newshape=[-1])
    picked = ctx.emit("take", x, flat, axis=ctx.ndim(x) - 1, mode="fast")
    # a 1-D X gives one row [1, k]
    return ctx.emit("reshape", picked, newshape=[1, -1]) if ctx.ndim(x) == 1 else picked


# -- LabelEncoder -------------------------------------------------------------------------------

def _python_list(value) -> list:
    """Attribute entries as Python scalars (strings decoded)."""
    items = value.reshape(-1).tolist() if isinstance(value, np.ndarray) else list(value)
    return [item.decode() if isinstance(item, bytes) else item for item in items]


def _tensor_dtype(value: np.ndarray) -> str:
    return "string" if value.dtype == object or value.dtype.kind in "US" else str(value.dtype)


_DEFAULTS = {"string": "_Unused", "float32": -0.0}


def _pick(attrs, prefix: str, kinds):
    """``(list, dtype)`` of the one ``{prefix}_{kind}`` attribute set, or ``(None, None)``."""
    found = [(name, attrs[f"{prefix}_{name}"]) for name in kinds
             if attrs.get(f"{prefix}_{name}") is not None]
    if len(found) > 1:
        unsupported(f"LabelEncoder sets {', '.join(prefix + '_' + n for n, _ in found)}; "
                    "only one may be set")
    if not found:
        return None, None
    name, value = found[0]
    dtype = {"floats": "float32", "int64s": "int64", "strings": "string"}.get(name) or \
        _tensor_dtype(np.asarray(value))
    return _python_list(value), dtype


@converter("LabelEncoder", since=1, domain=ML_DOMAIN)
def _label_encoder_v1(ctx, inputs, attrs):
    x = inputs[0]
    classes = list(attrs.get("classes_strings", ()))
    numbers = list(range(len(classes)))
    if ctx.dtype(x) == "string":
        return ctx.emit("onnx.label_encoder", x, keys=tuple(classes), values=tuple(numbers),
                        default=int(attrs.get("default_int64", -1)), dtype="int64")
    return ctx.emit("onnx.label_encoder", ctx.emit("cast", x, dtype="int64"),
                    keys=tuple(numbers), values=tuple(classes),
                    default=attrs.get("default_string", "_Unused"), dtype="string")


@converter("LabelEncoder", since=2, domain=ML_DOMAIN)
def _label_encoder(ctx, inputs, attrs):
    x = inputs[0]
    keys, key_dtype = _pick(attrs, "keys", ("floats", "int64s", "strings", "tensor"))
    values, dtype = _pick(attrs, "values", ("floats", "int64s", "strings", "tensor"))
    if keys is None or values is None:
        unsupported("LabelEncoder needs one keys_* and one values_* attribute")
    if len(keys) != len(values):
        unsupported(f"LabelEncoder has {len(keys)} keys for {len(values)} values")
    if (key_dtype == "string") != (ctx.dtype(x) == "string"):
        unsupported(f"LabelEncoder keys of {key_dtype} do not match input of {ctx.dtype(x)}")
    if attrs.get("default_tensor") is not None:
        default = _python_list(attrs["default_tensor"])[0]
    elif dtype == "string":
        default = attrs.get("default_string", "_Unused")
    elif dtype == "float32" and "values_floats" in attrs:
        default = float(attrs.get("default_float", -0.0))
    elif "values_int64s" in attrs:
        default = int(attrs.get("default_int64", -1))
    else:
        default = _DEFAULTS.get(dtype, -0.0 if dtype.startswith("float") else -1)
    return ctx.emit("onnx.label_encoder", x, keys=tuple(keys), values=tuple(values),
                    default=default, dtype=dtype)


# -- TreeEnsemble (opset 5) ---------------------------------------------------------------------

def _enum(attrs, name: str, names: tuple, default: int) -> str:
    value = int(attrs.get(name, default))
    if not 0 <= value < len(names):
        unsupported(f"TreeEnsemble {name} {value} is not one of 0..{len(names) - 1}")
    return names[value]


def _floats(value) -> tuple:
    return tuple(float(v) for v in _python_list(value)) if value is not None else ()


def _ints(value) -> tuple:
    return tuple(int(v) for v in _python_list(value)) if value is not None else ()


def _float_input(ctx, x):
    """``x`` itself when it is floating point, else cast to float32."""
    return x if ctx.dtype(x) in ("float16", "float32", "float64") else \
        ctx.emit("cast", x, dtype="float32")


@converter("TreeEnsemble", since=5, domain=ML_DOMAIN)
def _tree_ensemble(ctx, inputs, attrs):
    for name in ("nodes_featureids", "nodes_splits", "nodes_modes", "nodes_truenodeids",
                 "nodes_falsenodeids", "nodes_trueleafs", "nodes_falseleafs",
                 "leaf_targetids", "leaf_weights", "tree_roots"):
        if attrs.get(name) is None:
            unsupported(f"TreeEnsemble needs the attribute {name!r}")
    modes = _ints(attrs["nodes_modes"])
    if any(not 0 <= m < len(NODE_MODES) for m in modes):
        unsupported(f"TreeEnsemble nodes_modes must lie in 0..{len(NODE_MODES) - 1}")
    missing = _ints(attrs.get("nodes_missing_value_tracks_true")) or (0,) * len(modes)
    targets = _ints(attrs["leaf_targetids"])
    n_targets = int(attrs.get("n_targets", max(targets, default=0) + 1))
    return ctx.emit(
        "onnx.tree_ensemble", _float_input(ctx, inputs[0]),
        nodes_featureids=_ints(attrs["nodes_featureids"]),
        nodes_splits=_floats(attrs["nodes_splits"]), nodes_modes=modes,
        nodes_truenodeids=_ints(attrs["nodes_truenodeids"]),
        nodes_trueleafs=_ints(attrs["nodes_trueleafs"]),
        nodes_falsenodeids=_ints(attrs["nodes_falsenodeids"]),
        nodes_falseleafs=_ints(attrs["nodes_falseleafs"]),
        nodes_missing_value_tracks_true=missing,
        membership_values=_floats(attrs.get("membership_values")),
        tree_roots=_ints(attrs["tree_roots"]),
        leaf_offsets=tuple(range(len(targets) + 1)), leaf_targetids=targets,
        leaf_weights=_floats(attrs["leaf_weights"]), n_targets=n_targets,
        aggregate_function=_enum(attrs, "aggregate_function", AGGREGATES, 1),
        post_transform=_enum(attrs, "post_transform", POST_TRANSFORMS, 0))


# -- TreeEnsembleRegressor / TreeEnsembleClassifier (opsets 1 and 3) --------------------------

@converter("TreeEnsembleRegressor", since=1, domain=ML_DOMAIN)
def _tree_ensemble_regressor(ctx, inputs, attrs):
    x = _float_input(ctx, inputs[0])
    scores = ctx.emit("onnx.tree_ensemble", x, **regressor_attrs(attrs))
    return scores if ctx.dtype(scores) == "float32" else \
        ctx.emit("cast", scores, dtype="float32")


@converter("TreeEnsembleClassifier", since=1, domain=ML_DOMAIN)
def _tree_ensemble_classifier(ctx, inputs, attrs):
    return classifier_outputs(ctx, _float_input(ctx, inputs[0]), attrs)
