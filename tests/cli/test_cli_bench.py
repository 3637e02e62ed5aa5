"""``irlib bench``: every engine's row (each in its own process), outputs that agree, the
plot; and the torch engine against irlib's reference interpreter."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import irlib

from .cli_helpers import assert_one_line_error, irlib_cli


def test_bench_mlp_vs_onnxruntime_and_torch(tmp_path):
    out = irlib_cli("bench", "mlp", "--vs", "onnxruntime", "--vs", "torch", "--repeat", "3",
                    "--threads", "1", "--plot", tmp_path / "b.png")
    assert out.returncode == 0, out.stderr
    rows = {}
    for line in out.stdout.splitlines():
        match = re.match(r"(irlib|onnxruntime|torch)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+"
                         r"([0-9.]+)x\s+(\S+)$", line)
        if match:
            rows[match.group(1)] = [float(v) for v in match.groups()[1:]]
    assert set(rows) == {"irlib", "onnxruntime", "torch"}, out.stdout
    assert rows["irlib"][3] == 1.0 and rows["irlib"][4] == 0.0
    for engine in ("onnxruntime", "torch"):
        median, minimum, _, ratio, diff = rows[engine]
        assert minimum <= median and diff < 1e-5
        assert ratio == pytest.approx(median / rows["irlib"][0], rel=0.05, abs=0.01)
    from PIL import Image
    with Image.open(tmp_path / "b.png") as image:
        assert image.format == "PNG" and image.size[0] > 200


def test_bench_errors_are_one_line():
    assert_one_line_error(irlib_cli("bench", "mlp", "--vs", "tensorflow"), 2,
                          "irlib bench: error:", "tensorflow")
    assert_one_line_error(irlib_cli("bench", "mlp", "--threads", "0"), 1, "must be positive")


CONV_POOL = '''#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, {h}, {w}), float32], %k: Tensor[(4, 3, 3, 3), float32],
          %g: Tensor[(4), float32], %b: Tensor[(4), float32], %m: Tensor[(4), float32],
          %v: Tensor[(4), float32]) {{
  %0 = nn.conv2d(%x, %k, strides=[{s}, {s}], padding=[{pt}, {pl}, {pb}, {pr}]);
  %1 = nn.batch_norm(%0, %g, %b, %m, %v);
  %2 = nn.relu(%1.0);
  %3 = nn.{pool}(%2, pool_size=[2, 2], strides=[{s}, 1], padding=[1, 0, 0, 1]);
  %4 = concatenate((%3, %3), axis=1);
  nn.softmax(nn.batch_flatten(%4))
}}
'''


@settings(max_examples=6, deadline=None)
@given(h=st.integers(5, 9), w=st.integers(5, 9), s=st.integers(1, 2),
       pads=st.tuples(*[st.integers(0, 2)] * 4), pool=st.sampled_from(["max_pool2d",
                                                                          "avg_pool2d"]))
def test_torch_engine_matches_the_reference_interpreter(h, w, s, pads, pool):
    import interp
    import torch
    from interp.cli.torch_engine import torch_function
    text = CONV_POOL.format(h=h, w=w, s=s, pt=pads[0], pl=pads[1], pb=pads[2], pr=pads[3],
                            pool=pool)
    mod = irlib.parse(text)
    rng = np.random.default_rng(h * 100 + w)
    values = {p.name_hint: rng.standard_normal([int(d) for d in p.checked_type.shape])
              .astype("float32") for p in mod["main"].params}
    values["v"] = np.abs(values["v"]) + 0.5
    expected = interp.create_executor("debug", mod=mod, target="python").evaluate()(**values)
    params = {k: values[k] for k in "kgbmv"}
    got = torch_function(mod["main"], params)(x=torch.from_numpy(values["x"]))
    np.testing.assert_allclose(got.numpy(), np.asarray(expected.numpy()), rtol=1e-4,
                               atol=1e-6)


def test_torch_engine_names_an_op_it_cannot_run():
    from interp.cli.torch_engine import TorchEngineError, torch_function
    x = irlib.var("x", shape=(2, 3))
    f = irlib.infer_type(irlib.Function([x], irlib.cumsum(x, axis=1)))
    with pytest.raises(TorchEngineError, match="'cumsum'"):
        torch_function(f, {})


def test_torch_engine_split_and_filled_ops_match_numpy():
    import torch
    from interp.cli.torch_engine import torch_function
    x = irlib.var("x", shape=(2, 8))
    parts = irlib.split(x, indices_or_sections=4, axis=1).astuple()
    uneven = irlib.split(x, indices_or_sections=(1, 5), axis=1).astuple()
    body = irlib.Tuple([irlib.add(irlib.TupleGetItem(parts, 3), irlib.zeros((2, 2), "float32")),
                        irlib.multiply(irlib.TupleGetItem(uneven, 1),
                                       irlib.ones((2, 4), "float32"))])
    f = irlib.infer_type(irlib.Function([x], body))
    data = np.arange(16, dtype="float32").reshape(2, 8)
    first, second = torch_function(f, {})(x=torch.from_numpy(data))
    np.testing.assert_array_equal(first.numpy(), data[:, 6:8])
    np.testing.assert_array_equal(second.numpy(), data[:, 1:5])


def test_bench_reports_an_engine_failure_in_one_line():
    # lstm calls function literals, which the torch engine does not run
    out = irlib_cli("bench", "lstm", "--vs", "torch", "--repeat", "1")
    assert_one_line_error(out, 1, "irlib bench: torch engine: cannot run a Function node")
    assert "[irlib   ]" not in out.stdout        # checked before any engine ran
