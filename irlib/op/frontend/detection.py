"""``onnx.non_max_suppression(boxes, scores, max_per_class, iou, score, center_point_box)``
-> ``selected_indices`` ``(?, 3)`` int64: ONNX NonMaxSuppression, with a numpy reference.
"""

from __future__ import annotations

import numpy as np

from ...ir.dims import Any
from ...ir.types import TensorType
from ..registry import register_opaque
from ..type_relations import expect_tensor

__all__ = []


# -- NonMaxSuppression ------------------------------------------------------------------------

def _nms_rel(arg_types, attrs):
    expect_tensor(arg_types[0], "onnx.non_max_suppression: boxes")
    return TensorType((Any, 3), "int64")


def _corners(box, center):
    if center:
        x, y, w, h = box
        return y - h / 2, x - w / 2, y + h / 2, x + w / 2
    y1, x1, y2, x2 = box
    return min(y1, y2), min(x1, x2), max(y1, y2), max(x1, x2)


def _iou_over(a, b, center, threshold):
    ay1, ax1, ay2, ax2 = _corners(a, center)
    by1, bx1, by2, bx2 = _corners(b, center)
    width = min(ax2, bx2) - max(ax1, bx1)
    height = min(ay2, by2) - max(ay1, by1)
    if width <= 0 or height <= 0:
        return False
    inter = width * height
    area_a, area_b = (ax2 - ax1) * (ay2 - ay1), (bx2 - bx1) * (by2 - by1)
    union = area_a + area_b - inter
    if area_a <= 0 or area_b <= 0 or union <= 0:
        return False
    return inter / union > threshold


def _nms_ref(boxes, scores, max_per_class, iou_threshold, score_threshold,
             center_point_box=0):
    if max_per_class.size == 0:
        return (np.zeros((0, 3), "int64"),)
    limit = max(int(max_per_class.reshape(-1)[0]), 0)
    iou = float(iou_threshold.reshape(-1)[0]) if iou_threshold.size else 0.0
    selected = []
    for b in range(scores.shape[0]):
        for c in range(scores.shape[1]):
            row = scores[b, c]
            candidates = range(row.size) if score_threshold.size == 0 else \
                [i for i in range(row.size) if row[i] > score_threshold.reshape(-1)[0]]
            # highest score first; ties keep the lower box index first
            order = sorted(candidates, key=lambda i: (-row[i], i))
            kept = []
            for index in order:
                if len(kept) >= limit:
                    break
                if all(not _iou_over(boxes[b, index], boxes[b, k], center_point_box, iou)
                       for k in kept):
                    kept.append(index)
                    selected.append((b, c, index))
    return (np.asarray(selected, "int64").reshape(-1, 3),)


register_opaque("onnx.non_max_suppression",
                ("boxes", "scores", "max_output_boxes_per_class", "iou_threshold",
           "score_threshold"),
                ("onnx.attrs.NMSAttrs", [("center_point_box", 0)]), _nms_rel, _nms_ref,
                "ONNX NonMaxSuppression: [batch, class, box] of the kept boxes")
