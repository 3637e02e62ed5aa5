"""The kernels' positional records are named: padding pairs and the three-axis window
geometry the CUDA kernels index (the fused groups' anchor record:
tests/graph_executor/test_anchor_record.py)."""

from __future__ import annotations

import numpy as np

from jitkernels._geometry import (AFTER, BEFORE, DILATION, EXTRA, STRIDES, WINDOW, Padding,
                                  PoolWindow, Window3, padding_pairs)


def test_padding_pairs_name_before_and_after():
    assert padding_pairs((1, 2, 3, 4), 2) == Padding(before=(1, 2), after=(3, 4))
    assert padding_pairs(1, 3).after == (1, 1, 1)
    assert padding_pairs((5, 6), 2) == Padding((5, 6), (5, 6))


def test_pool_window_as3_and_its_flat_offsets():
    attrs = {"pool_size": (2, 3), "strides": (1, 2), "dilation": (1, 1),
             "padding": (0, 1, 0, 2), "layout": "NCHW"}
    window = PoolWindow((1, 4, 8, 9), attrs, 2).as3()
    assert window == Window3(window=(1, 2, 3), strides=(1, 1, 2), dilation=(1, 1, 1),
                             before=(0, 0, 1), after=(0, 0, 2))
    flat = window.flat(1, 0)
    assert flat.dtype == np.int64 and flat.shape == (17,)
    assert [flat[WINDOW + 2], flat[STRIDES + 2], flat[DILATION + 1], flat[BEFORE + 2],
            flat[AFTER + 2], flat[EXTRA], flat[EXTRA + 1]] == [3, 2, 1, 1, 2, 1, 0]
