"""Kernel compilation when an executor is made (generated kernels) and in its first run
(anchor kernels): progress on a cold cache, silence on a warm cache or without a terminal,
and the generated kernels compiled once, for the types the run passes.

Each case runs a fresh process with its own ``IRLIB_CACHE_DIR`` and ``NUMBA_CACHE_DIR``, so
"cold" really means nothing compiled on disk or in memory.
"""

from __future__ import annotations

import json
import os
import re
import pathlib
import subprocess
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Three groups: add+relu (generated), softmax (its kernel alone), multiply (generated).
_SCRIPT = r"""
import json, sys
import numpy as np
import irlib, interp
from interp import graph_executor

x = irlib.var("x", shape=(3, 5), dtype="float32")
shift = irlib.const(np.linspace(-1, 1, 5).astype("float32"))
body = irlib.multiply(irlib.nn.softmax(irlib.nn.relu(irlib.add(x, shift))),
                      irlib.const(np.float32(2.0)))
mod = irlib.IRModule.from_expr(irlib.Function([x], body))
factory = interp.build(mod, target="cpu")
executor = factory["default"](interp.cpu(0))
stats = executor.compile_stats
gmod = graph_executor.GraphModule(executor)
value = np.arange(15, dtype="float32").reshape(3, 5) / 7 - 1
gmod.set_input("x", value)
gmod.run()
signatures = [len(c.kernel.jit_fn.signatures) for c in factory.lib.compiled.values()
              if c.kernel is not None]
print(json.dumps({"kernels": stats.kernels, "compiled": stats.compiled,
                  "loaded": stats.loaded, "signatures": signatures,
                  "output": gmod.get_output(0).numpy().tolist(), "input": value.tolist()}))
"""


def _run(cache, progress=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["IRLIB_CACHE_DIR"] = str(cache)
    env["NUMBA_CACHE_DIR"] = str(cache / "numba")
    env.pop("IRLIB_PROGRESS", None)
    if progress is not None:
        env["IRLIB_PROGRESS"] = progress
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


def _expected(value):
    shifted = np.maximum(np.asarray(value, "float64") + np.linspace(-1, 1, 5), 0)
    e = np.exp(shifted - shifted.max(axis=1, keepdims=True))
    return 2 * e / e.sum(axis=1, keepdims=True)


def test_cold_cache_shows_compile_progress_then_warm_cache_is_silent(tmp_path):
    cold, stderr = _run(tmp_path, progress="1")
    np.testing.assert_allclose(cold["output"], _expected(cold["input"]), rtol=1e-5)
    assert cold["kernels"] == 2 and cold["compiled"] == 2 and cold["loaded"] == 0
    lines = [line for line in stderr.splitlines() if line.startswith("compiling kernels")]
    # the two generated kernels, compiled when the executor is made ...
    assert [line.split()[2] for line in lines[:2]] == ["1/2", "2/2"], stderr
    assert all(line.split()[3].startswith("tvmgen_default_fused_") for line in lines[:2])
    # ... then softmax's kernel, compiled inside the first run (a count, no total)
    assert len(lines) == 3 and re.fullmatch(r"compiling kernels 1 jitkernels\.cpu\.\S+",
                                            lines[2]), stderr
    # compiled ahead for exactly the types the run passed: no second specialisation
    assert cold["signatures"] == [1, 1]

    warm, stderr = _run(tmp_path, progress="1")
    assert warm["kernels"] == 2 and warm["compiled"] == 0 and warm["loaded"] == 2
    assert "compiling kernels" not in stderr, stderr
    assert warm["output"] == cold["output"]


def test_no_terminal_or_progress_off_prints_nothing(tmp_path):
    for setting, cache in ((None, tmp_path / "unset"), ("0", tmp_path / "off")):
        result, stderr = _run(cache, progress=setting)
        assert result["compiled"] == 2
        assert stderr.strip() == "", stderr


_SYMBOLIC = r"""
import numpy as np
import irlib, interp
from interp import graph_executor
from irlib.ir.dims import size_var

x = irlib.var("x", shape=(size_var("n"), 6), dtype="float32")
mod = irlib.IRModule.from_expr(irlib.Function([x], irlib.nn.relu(irlib.subtract(x, x * x))))
gmod = graph_executor.GraphModule(interp.build(mod, target="cpu")["default"](interp.cpu(0)))
for rows in (2, 5):
    value = np.linspace(-2, 2, rows * 6, dtype="float32").reshape(rows, 6)
    gmod.run(x=value)
    assert np.allclose(gmod.get_output(0).numpy(), np.maximum(value - value * value, 0))
print("ok")
"""


def test_symbolic_graph_shows_its_first_run_compiles(tmp_path):
    env = dict(os.environ, IRLIB_PROGRESS="1", IRLIB_CACHE_DIR=str(tmp_path),
               NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    for expect_lines in (True, False):          # cold, then warm
        out = subprocess.run([sys.executable, "-c", _SYMBOLIC], capture_output=True,
                             text=True, env=env, cwd=ROOT, timeout=300)
        assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
        lines = [line for line in out.stderr.splitlines() if line.startswith("compiling")]
        if expect_lines:
            # one generated kernel, compiled once in the first run (the second size reuses it)
            assert len(lines) == 1 and re.fullmatch(
                r"compiling kernels 1 irlib_codegen_k_[0-9a-f]+\.kernel", lines[0]), out.stderr
        else:
            assert lines == [], out.stderr


def test_groups_whose_kernel_applies_the_epilogue_are_not_compiled_ahead(monkeypatch):
    """relu(conv3x3(x) * s + b + x): the conv kernel applies the epilogue itself, so the
    group's generated loop (its fallback) is neither compiled ahead nor run."""
    import irlib
    import interp
    from irlib.transform import PassContext
    from jitkernels.codegen.signatures import call_signatures

    monkeypatch.setenv("IRLIB_FUSED_EPILOGUE", "1")
    monkeypatch.setenv("IRLIB_TINY_CONV_NCHW", "0")     # this tiny layer too goes NHWC
    rng = np.random.default_rng(4)
    c, size = 8, 11        # shapes no other test builds: the generated source is this test's
    w = rng.standard_normal((c, c, 3, 3)).astype("float32") * 0.2
    s = rng.standard_normal((c, 1, 1)).astype("float32")
    b = rng.standard_normal((c, 1, 1)).astype("float32")
    x = irlib.var("x", shape=(1, c, size, size))
    conv = irlib.nn.conv2d(x, irlib.const(w), padding=(1, 1))
    body = irlib.nn.relu(irlib.add(irlib.add(irlib.multiply(conv, irlib.const(s)),
                                             irlib.const(b)), x))
    with PassContext(opt_level=3):
        factory = interp.build(irlib.IRModule.from_expr(irlib.Function([x], body)), "cpu")
    executor = factory["default"](interp.cpu(0))
    fused = {name: c.kernel for name, c in factory.lib.compiled.items()
             if c.kernel is not None and getattr(c.kernel, "fused_epilogue", None) is not None}
    assert fused, "the conv group should hand its epilogue to the kernel"
    runtime = executor.runtime
    for fn, args in runtime.calls:
        if any(fn is k for k in fused.values()):
            assert call_signatures(fn, args) == []
    value = rng.standard_normal((1, c, size, size)).astype("float32")
    gmod = interp.graph_executor.GraphModule(executor)
    gmod.run(x=value)
    assert all(k.jit_fn.signatures == [] for k in fused.values())
    padded = np.pad(value[0], ((0, 0), (1, 1), (1, 1)))
    windows = np.stack([padded[:, i:i + size, j:j + size] for i in range(3) for j in range(3)])
    conv_ref = np.einsum("oik,kihw->ohw", w.reshape(c, c, 9), windows)
    expected = np.maximum(conv_ref * s + b + value[0], 0)
    np.testing.assert_allclose(gmod.get_output(0).numpy()[0], expected, rtol=1e-4, atol=1e-4)
