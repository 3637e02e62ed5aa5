"""jitkernels.cpu.blas: irlib's own OpenBLAS (core type, fallback, numpy's BLAS untouched) and
its GEMMs against a float64 numpy product written here (hypothesis, small budgets)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irlib.testing.budget import examples
from jitkernels import threads
from jitkernels.cpu import blas, openblas
from jitkernels.cpu.gemm_pool import GemmPool

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
needs_own = pytest.mark.skipif(not blas.HAVE_OWN_BLAS,
                               reason="irlib's OpenBLAS not in use (no AVX-512, no "
                                      "scipy-openblas32, or IRLIB_BLAS_CORETYPE=numpy)")


@contextlib.contextmanager
def split_everything(on: bool = True):
    """Send every product, however small, to irlib's BLAS, split into panels on 2 threads."""
    names = ("SMALL_MAX_FLOPS", "PARALLEL_MIN_FLOPS", "PANEL_MIN_FLOPS")
    saved = [getattr(blas, name) for name in names] + [blas.get_num_threads()]
    if on:
        blas.SMALL_MAX_FLOPS, blas.PARALLEL_MIN_FLOPS, blas.PANEL_MIN_FLOPS = -1, 0, 1
        blas.set_num_threads(2)
    try:
        yield
    finally:
        for name, value in zip(names, saved):
            setattr(blas, name, value)
        blas.set_num_threads(saved[-1])


def _matrix(draw, rng, rows, cols, dtype):
    """A (rows, cols) operand: contiguous, row-strided inside a wider buffer, or transposed."""
    kind = draw(st.sampled_from(["plain", "strided", "transposed"]))
    if kind == "transposed":
        return rng.standard_normal((cols, rows)).astype(dtype).T
    pad = draw(st.integers(1, 3)) if kind == "strided" else 0
    return rng.standard_normal((rows, cols + pad)).astype(dtype)[:, :cols]


def _batch(draw, rng, batch, shape, dtype):
    """A 2-D operand (a view, see _matrix) or a stack of them with leading shape ``batch``."""
    if not batch:
        return _matrix(draw, rng, *shape, dtype)
    if draw(st.booleans()):          # a batch whose matrices are transposed views
        return np.swapaxes(rng.standard_normal(batch + shape[::-1]).astype(dtype), -1, -2)
    return rng.standard_normal(batch + shape).astype(dtype)


def _tolerance(dtype, depth):
    return (2e-5 if dtype == "float32" else 1e-12) * max(depth, 1) ** 0.5 * 4


@needs_own
@settings(max_examples=examples(40), deadline=None)
@given(st.data())
def test_gemm_matches_numpy(data):
    draw = data.draw
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    dtype = draw(st.sampled_from(["float32", "float64"]))
    m, k, n = (draw(st.integers(0, 40)) for _ in range(3))
    batch_a, batch_b = draw(st.sampled_from([((), ()), ((3,), (3,)), ((1,), (3,)),
                                             ((3,), ()), ((), (2,)), ((2, 1), (1, 3))]))
    a, b = (_batch(draw, rng, batch, shape, dtype)
            for batch, shape in ((batch_a, (m, k)), (batch_b, (k, n))))
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    out = np.full(expected.shape, np.nan, dtype)
    with split_everything(draw(st.booleans())):
        assert blas.gemm(a, b, out) is out
    np.testing.assert_allclose(out, expected, rtol=_tolerance(dtype, k),
                               atol=_tolerance(dtype, k))


@settings(max_examples=examples(40), deadline=None)
@given(st.data(), st.booleans())
def test_gemm_strided_matches_numpy(data, split):
    """Both backends' strided GEMM (irlib's, split into panels, or numpy's cblas), beta 0/1."""
    draw = data.draw
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    dtype = draw(st.sampled_from(["float32", "float64"]))
    m, k, n = (draw(st.integers(0, 33)) for _ in range(3))
    a, b = _matrix(draw, rng, m, k, dtype), _matrix(draw, rng, k, n, dtype)
    wide = n + draw(st.integers(0, 2))
    start = rng.standard_normal((m, wide)).astype(dtype)
    accumulate = draw(st.booleans())
    expected = a.astype(np.float64) @ b.astype(np.float64) + (start[:, :n] if accumulate else 0)
    out = start.copy()
    with split_everything(split):
        blas.gemm_strided(a, b, out[:, :n], accumulate)
    np.testing.assert_allclose(out[:, :n], expected, rtol=_tolerance(dtype, k),
                               atol=_tolerance(dtype, k))
    np.testing.assert_array_equal(out[:, n:], start[:, n:])   # outside the view: untouched


@needs_own
def test_large_product_is_split_and_right():
    """A product above PARALLEL_MIN_FLOPS, on the real thresholds, split over 2 threads."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((96, 700)).astype(np.float32)
    b = rng.standard_normal((700, 333)).astype(np.float32)
    saved = blas.get_num_threads()
    blas.set_num_threads(2)
    try:
        assert a.shape[0] * a.shape[1] * b.shape[1] >= blas.PARALLEL_MIN_FLOPS
        out = blas.gemm(a, b, np.empty((96, 333), np.float32))
        tall = blas.gemm(b.T, a.T, np.empty((333, 96), np.float32))   # split by rows
    finally:
        blas.set_num_threads(saved)
    expected = a.astype(np.float64) @ b
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(tall, expected.T, rtol=1e-4, atol=1e-3)


@needs_own
def test_overlapping_or_odd_outputs_fall_back_to_numpy():
    """``out`` aliasing an operand, or with non-adjacent columns: still ``a @ b``."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal((64, 200)).astype(np.float32)
    buffer = rng.standard_normal((200, 200)).astype(np.float32)
    b = buffer[:, :128]
    expected = a.astype(np.float64) @ b
    columns = np.empty((64, 256), np.float32)[:, ::2]
    np.testing.assert_allclose(blas.gemm(a, b, columns), expected, rtol=1e-4, atol=1e-3)
    alias = buffer[:64, :128]           # overlaps b
    blas.gemm(a, b, alias)
    np.testing.assert_allclose(alias, expected, rtol=1e-4, atol=1e-3)


@needs_own
def test_concurrent_callers_get_their_own_products():
    """Threads sharing the GEMM pool each get their own product."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((128, 256)).astype(np.float32)
    bs = [rng.standard_normal((256, 300)).astype(np.float32) for _ in range(4)]
    results = {}

    def work(i):
        out = np.empty((128, 300), np.float32)
        for _ in range(10):
            blas.gemm(a, bs[i], out)
        results[i] = out

    workers = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    for i in range(4):
        np.testing.assert_allclose(results[i], a.astype(np.float64) @ bs[i], rtol=1e-4,
                                   atol=1e-3)


def test_pool_runs_every_task_and_reraises():
    pool = GemmPool(3)
    try:
        seen = []
        lock = threading.Lock()

        def record(i):
            with lock:
                seen.append(i)
        pool.run([(record, (i,)) for i in range(50)])
        assert sorted(seen) == list(range(50))

        def fail():
            raise ValueError("task failed")
        with pytest.raises(ValueError, match="task failed"):
            pool.run([(record, (-1,)), (fail, ()), (record, (-2,))])
        assert -1 in seen and -2 in seen
    finally:
        pool.close()


def test_choose_coretype_from_flags():
    assert openblas.choose_coretype({"avx2", "avx512f", "avx512bw", "avx512vl",
                                     "avx512dq"}) == "SkylakeX"
    assert openblas.choose_coretype({"avx2", "avx512f", "avx512cd"}) is None   # no BW/VL/DQ
    assert openblas.choose_coretype({"avx2", "fma"}) is None
    assert openblas.choose_coretype(set()) is None


def test_requested_coretype_override():
    assert openblas.requested_coretype({openblas.ENV_CORETYPE: "numpy"}) is None
    assert openblas.requested_coretype({openblas.ENV_CORETYPE: "Haswell"}) == "Haswell"
    automatic = openblas.choose_coretype(openblas.cpu_features(), *openblas.cpu_identity())
    assert openblas.requested_coretype({openblas.ENV_CORETYPE: "auto"}) == automatic
    assert openblas.requested_coretype({}) == automatic


def test_gemm_threads_from_environment():
    assert threads.gemm_threads({"IRLIB_NUM_THREADS": "3", "OMP_NUM_THREADS": "5"}) == 3
    assert threads.gemm_threads({"IRLIB_NUM_THREADS": "x", "OPENBLAS_NUM_THREADS": "1"}) == 1
    assert threads.gemm_threads({"OMP_NUM_THREADS": "4"}) == 4
    assert threads.gemm_threads({}) >= 1


_PROBE = r"""
import json, os, sys
import numpy as np, threadpoolctl
def numpys():
    import numpy
    folder = os.path.dirname(numpy.__file__) + ".libs"
    return [(i["architecture"], i["num_threads"]) for i in threadpoolctl.threadpool_info()
            if i["filepath"].startswith(folder)]
before = numpys()
from jitkernels.cpu import blas
a = np.arange(600, dtype=np.float32).reshape(20, 30) / 100
b = np.arange(1200, dtype=np.float32).reshape(30, 40) / 100
out = blas.gemm(a, b, np.empty((20, 40), np.float32))
ok = bool(np.allclose(out, a.astype(np.float64) @ b, rtol=1e-5))
print(json.dumps({"before": before, "after": numpys(), "backend": blas.backend(), "ok": ok,
                  "coretype_env": os.environ.get("OPENBLAS_CORETYPE")}))
"""


def _probe(coretype):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE",)}
    if coretype is None:
        env.pop(openblas.ENV_CORETYPE, None)
    else:
        env[openblas.ENV_CORETYPE] = coretype
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_env_var_forces_numpys_blas():
    report = _probe("numpy")
    assert report["backend"]["library"] == "numpy" and report["ok"]


@pytest.mark.skipif(openblas.library_path() is None, reason="scipy-openblas32 not installed")
def test_own_copy_loads_the_asked_core_type_and_leaves_numpy_alone():
    """irlib's copy gets the core type asked for; numpy's BLAS keeps its kernels and threads,
    and OPENBLAS_CORETYPE is not left in the environment."""
    for coretype in ("Haswell", None):
        report = _probe(coretype)
        assert report["ok"] and report["coretype_env"] is None
        assert report["before"] == report["after"]
        if coretype == "Haswell":
            assert report["backend"]["corename"] == "Haswell"
        elif openblas.requested_coretype({}) is None:
            assert report["backend"]["library"] == "numpy"
        else:
            assert report["backend"]["corename"] == openblas.requested_coretype({})


@needs_own
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(1, 37, 50), (45, 37, 1), (1, 1, 9), (9, 1, 1), (1, 600, 800)])
@pytest.mark.parametrize("views", ["plain", "a transposed", "b transposed", "both strided"])
def test_one_row_or_column_products(dtype, shape, views):
    """Products with one output row or column (cblas GEMV), operands in every layout."""
    m, k, n = shape
    rng = np.random.default_rng(sum(shape))
    if views == "a transposed":
        a, b = rng.standard_normal((k, m)).astype(dtype).T, rng.standard_normal((k, n))
    elif views == "b transposed":
        a, b = rng.standard_normal((m, k)), rng.standard_normal((n, k)).astype(dtype).T
    elif views == "both strided":
        a = rng.standard_normal((m, 2 * k)).astype(dtype)[:, ::2]
        b = rng.standard_normal((2 * k, n)).astype(dtype)[::2]
    else:
        a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    a, b = a.astype(dtype, copy=False), b.astype(dtype, copy=False)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    with split_everything():
        out = blas.gemm(a, b, np.full((m, n), np.nan, dtype))
        column = np.full((m, 3 * n), 7.0, dtype)
        blas.gemm_strided(a, b, column[:, ::3] if n == 1 else column[:, :n], True)
    np.testing.assert_allclose(out, expected, rtol=_tolerance(dtype, k), atol=_tolerance(dtype, k))
    np.testing.assert_allclose(column[:, :n] if n > 1 else column[:, :1], expected + 7,
                               rtol=_tolerance(dtype, k), atol=_tolerance(dtype, k))


def test_missing_package_loads_nothing(monkeypatch):
    """Without scipy-openblas32 the loader returns None (blas then keeps numpy's BLAS)."""
    monkeypatch.setattr(openblas.importlib.util, "find_spec", lambda name: None)
    assert openblas.library_path() is None
    assert openblas.load("SkylakeX") is None
    monkeypatch.setattr(openblas, "requested_coretype", lambda: "SkylakeX")
    assert blas._load_own() is None


def test_pool_backs_off_to_the_caller_after_a_stall():
    """A helper that holds its task much longer than the caller worked is a stall: the next
    call runs every task on the calling thread."""
    import time
    pool = GemmPool(2)
    ran_on = []

    def task():
        main = threading.current_thread() is threading.main_thread()
        ran_on.append(main)
        time.sleep(0.02 if main else 0.2)
    try:
        for _ in range(10):          # until the helper took a task (it may wake too late)
            ran_on.clear()
            pool.run([(task, ()), (task, ())])
            if not all(ran_on):
                break
        if all(ran_on):
            pytest.skip("the helper thread never got a task on this (busy) machine")
        assert pool.stalls >= 1 and pool.serial_left >= 1
        ran_on.clear()
        pool.run([(task, ()), (task, ())])
        assert ran_on == [True, True]            # backed off: both on the caller
    finally:
        pool.close()
