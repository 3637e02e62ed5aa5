"""A fused group's anchor (the op it runs on its kernel before the generated loops) is a named
record, :class:`jitkernels.codegen.Anchor`, and its result type an ``AnchorType``."""

from __future__ import annotations

import numpy as np

import irlib
from jitkernels.codegen import Anchor, AnchorType

from graph_helpers import graph_module, outputs


def test_conv_relu_group_runs_its_conv_as_a_named_anchor():
    x, w = irlib.var("x", shape=(1, 3, 6, 6)), irlib.var("w", shape=(4, 3, 3, 3))
    body = irlib.nn.relu(irlib.nn.conv2d(x, w, padding=(1, 1)))
    mod = irlib.IRModule.from_expr(irlib.Function([x, w], body))
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((1, 3, 6, 6)).astype("float32")
    wv = rng.standard_normal((4, 3, 3, 3)).astype("float32")
    gmod, factory = graph_module(mod, "cpu")
    gmod.run(x=xv, w=wv)
    # oracle: direct convolution written here
    padded = np.pad(xv, ((0, 0), (0, 0), (1, 1), (1, 1)))
    expected = np.zeros((1, 4, 6, 6), "float32")
    for o in range(4):
        for i in range(6):
            for j in range(6):
                expected[0, o, i, j] = np.sum(padded[0, :, i:i + 3, j:j + 3] * wv[o])
    np.testing.assert_allclose(outputs(gmod)[0], np.maximum(expected, 0), rtol=1e-4,
                               atol=1e-5)
    anchored = [c.kernel for c in factory.lib.compiled.values()
                if getattr(c.kernel, "anchor", None) is not None]
    assert anchored, "the conv+relu group should run the conv as its anchor"
    anchor = anchored[0].anchor
    assert isinstance(anchor, Anchor) and anchor.op_name == "nn.conv2d"
    assert anchor.op_name == anchored[0].anchor_op
    assert anchor.attrs["padding"] == (1, 1, 1, 1)
    assert all(isinstance(o, (int, np.ndarray)) for o in anchor.operands)
    assert isinstance(anchored[0]._anchor_type, AnchorType)
    assert anchored[0]._anchor_type.shape == (1, 4, 6, 6)
