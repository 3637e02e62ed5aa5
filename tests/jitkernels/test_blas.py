"""jitkernels.cpu.blas: irlib's own OpenBLAS (core type, fallback, numpy's BLAS untouched) and
its GEMMs against a float64 numpy product written here (hypothesis, small budgets)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irlib.testing.budget import examples
from jitkernels import threads
from jitkernels.cpu import blas, blas_team, blas_threads, openblas, work_sharing
from jitkernels.cpu.blas_threads import AdaptiveThreads

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
needs_own = pytest.mark.skipif(not blas.HAVE_OWN_BLAS,
                               reason="irlib's OpenBLAS not in use (no AVX-512, no "
                                      "scipy-openblas32, or IRLIB_BLAS_CORETYPE=numpy)")


@contextlib.contextmanager
def split_everything(on: bool = True, team: bool = True):
    """Send every product, however small, to irlib's BLAS on 2 threads: cut into parts for
    numba's workers (``team``) or on 2 OpenBLAS threads, each product judged for stalls."""
    saved = (blas.SMALL_MAX_FLOPS, blas_threads.JUDGED_MIN_WORK, blas_team.MIN_PART_WORK,
             work_sharing.others_busy, blas._POLICY)
    if on:
        blas.SMALL_MAX_FLOPS, blas_threads.JUDGED_MIN_WORK = -1, 0
        blas_team.MIN_PART_WORK = 1
        work_sharing.others_busy = lambda: 0.0      # cut even on a busy test machine
        if blas.HAVE_OWN_BLAS:
            blas._POLICY = (blas.TeamProducts(2) if team else AdaptiveThreads(
                2, blas._OWN.set_num_threads, blas._OWN.gemm[np.dtype(np.float32)]))
    try:
        yield
    finally:
        (blas.SMALL_MAX_FLOPS, blas_threads.JUDGED_MIN_WORK, blas_team.MIN_PART_WORK,
         work_sharing.others_busy, blas._POLICY) = saved
        if blas.HAVE_OWN_BLAS:
            blas._OWN.set_num_threads(1)


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
    with split_everything(draw(st.booleans()), draw(st.booleans())):
        assert blas.gemm(a, b, out) is out
    np.testing.assert_allclose(out, expected, rtol=_tolerance(dtype, k),
                               atol=_tolerance(dtype, k))


@settings(max_examples=examples(40), deadline=None)
@given(st.data(), st.booleans())
def test_gemm_strided_matches_numpy(data, split):
    """Both backends' strided GEMM (irlib's on 2 threads, or numpy's cblas), beta 0/1."""
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
    with split_everything(split, draw(st.booleans())):
        blas.gemm_strided(a, b, out[:, :n], accumulate)
    np.testing.assert_allclose(out[:, :n], expected, rtol=_tolerance(dtype, k),
                               atol=_tolerance(dtype, k))
    np.testing.assert_array_equal(out[:, n:], start[:, n:])   # outside the view: untouched


@needs_own
def test_large_product_on_two_threads_is_right():
    """A product above JUDGED_MIN_WORK and MIN_PART_WORK, on the real thresholds, on 2
    threads (cut into parts for numba's workers, or on OpenBLAS's, whichever is in use)."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((96, 700)).astype(np.float32)
    b = rng.standard_normal((700, 333)).astype(np.float32)
    saved = blas.get_num_threads()
    blas.set_num_threads(2)
    try:
        assert a.shape[0] * a.shape[1] * b.shape[1] >= blas_threads.JUDGED_MIN_WORK
        out = blas.gemm(a, b, np.empty((96, 333), np.float32))
        tall = blas.gemm(b.T, a.T, np.empty((333, 96), np.float32))   # transposed operands
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


class _Recorder:
    """An AdaptiveThreads target: records the thread counts set and the calls made."""

    def __init__(self):
        self.counts, self.ran = [], []

    def set_threads(self, count):
        self.counts.append(count)

    def task(self, seconds):
        """A 'BLAS call' that takes ``seconds`` and notes the thread count it ran on."""
        def call():
            time.sleep(seconds)
            self.ran.append(self.counts[-1])
        return (call, ())


def test_adaptive_threads_keep_every_thread_while_nothing_stalls():
    """Products as fast as one thread's rate predicts (or faster) run on every thread."""
    target = _Recorder()
    policy = AdaptiveThreads(2, target.set_threads)
    policy.serial_rate = 1e9                      # one thread: 1e9 multiply-adds a second
    for _ in range(5):
        policy.run([target.task(0.001)], work=1e9)      # one thread would take 1 s
    assert target.ran == [2] * 5 and policy.stalls == 0 and policy.serial_left == 0
    assert target.counts == [2]                    # set once, not per product


def test_adaptive_threads_back_off_to_one_thread_after_a_stall_and_return():
    """A product over SPIKE_FACTOR x its shape's fastest run on several threads (and slower
    than one thread) is a stall: the next products run on one thread (1, then 2 after a
    second stall), then every thread again."""
    target = _Recorder()
    policy = AdaptiveThreads(2, target.set_threads)
    policy.serial_rate = 1e7                           # 2e6 multiply-adds: 0.2 s
    policy.run([target.task(0.0)], work=2e6, key="shape")      # the shape's fastest run
    slow = 0.25                                        # > one thread, >> the fastest
    policy.run([target.task(slow)], work=2e6, key="shape")
    assert policy.stalls == 1 and policy.serial_left == 1 and target.ran == [2, 2]
    policy.run([target.task(0.0)], work=2e6, key="shape")      # the one serial product
    assert target.ran[-1] == 1 and policy.serial_left == 0
    policy.run([target.task(slow)], work=2e6, key="shape")     # on 2 again: stalls again
    assert target.ran[-1] == 2 and policy.stalls == 2 and policy.serial_left == 2
    for _ in range(2):
        policy.run([target.task(0.0)], work=2e6, key="shape")
    assert target.ran[-2:] == [1, 1]
    policy.run([target.task(0.0)], work=2e6, key="shape")      # back on 2, no stall
    assert target.ran[-1] == 2 and policy.stalls == 2 and policy.backoff == 2


def test_adaptive_threads_judge_a_shape_against_itself():
    """A shape that always runs below the calibrated rate is not a stall (it was 2-4 false
    stalls per inference on an idle machine when judged against the rate alone); a first
    run far beyond one thread's time is."""
    target = _Recorder()
    policy = AdaptiveThreads(2, target.set_threads)
    policy.serial_rate = 1e7                           # 2e6 multiply-adds: 0.2 s
    for _ in range(3):                                 # steady at 1.5x one thread's time
        policy.run([target.task(0.3)], work=2e6, key="skinny")
    assert policy.stalls == 0 and target.ran == [2, 2, 2]
    first_slow = blas_threads.FIRST_FACTOR * 0.02 * 1.25
    policy.serial_rate = 1e8                           # another shape: 0.02 s on one thread
    policy.run([target.task(first_slow)], work=2e6, key="new shape")
    assert policy.stalls == 1 and "new shape" not in policy.fastest


def test_adaptive_threads_do_not_judge_short_products():
    """A product below JUDGED_MIN_WORK is never a stall, however slow."""
    target = _Recorder()
    policy = AdaptiveThreads(2, target.set_threads)
    policy.serial_rate = 1e9
    policy.run([target.task(0.01)], work=blas_threads.JUDGED_MIN_WORK - 1)
    assert policy.stalls == 0 and target.ran == [2]


def test_adaptive_threads_measure_one_thread_first():
    """Without a known one-thread rate (and no calibration product), the first judged
    products run on one thread and set it; a one-thread policy never sets more."""
    target = _Recorder()
    policy = AdaptiveThreads(2, target.set_threads)
    policy.run([target.task(0.001)], work=1e7)
    assert target.ran == [1] and policy.serial_rate > 0
    single = _Recorder()
    AdaptiveThreads(1, single.set_threads).run([single.task(0.0)], work=1e9)
    assert single.ran == [1]


@needs_own
def test_calibration_measures_a_plausible_rate():
    """The calibration product runs on irlib's OpenBLAS and gives a finite positive rate."""
    own = blas._OWN
    policy = AdaptiveThreads(2, own.set_num_threads, own.gemm[np.dtype(np.float32)])
    try:
        rate = policy.calibrate()
    finally:
        own.set_num_threads(1)
    assert 1e7 < rate < 1e13


@needs_own
@pytest.mark.skipif(not blas._BATCH, reason="irlib's OpenBLAS has no cblas_?gemm_batch")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("team", [False, True])
def test_batched_product_is_one_batch_call(dtype, team, monkeypatch):
    """A batched product above the small-product limit is one task: one cblas_?gemm_batch
    call on OpenBLAS's threads, or one parts table of its 12 matrices for numba's workers,
    with broadcast (stride 0), reversed (negative step) and transposed operands read in
    place, and matches numpy."""
    calls = []
    real = blas._BATCH[np.dtype(dtype)]

    def counting(*args):
        calls.append(args)
        return real(*args)
    monkeypatch.setitem(blas._BATCH, np.dtype(dtype), counting)
    real_parts = blas_team.run_parts

    def counting_parts(address, parts, beta):
        calls.append(parts.shape[0])
        return real_parts(address, parts, beta)
    monkeypatch.setattr(blas_team, "run_parts", counting_parts)
    monkeypatch.setattr(work_sharing, "others_busy", lambda: 0.0)
    monkeypatch.setattr(blas, "_POLICY", blas.TeamProducts(2) if team else AdaptiveThreads(
        2, blas._OWN.set_num_threads, blas._OWN.gemm[np.dtype(np.float32)]))
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 1, 40, 70)).astype(dtype)
    b = np.swapaxes(rng.standard_normal((1, 4, 50, 70)).astype(dtype), -1, -2)
    out = np.full((3, 4, 40, 50), np.nan, dtype)
    blas.gemm(a, b, out)
    reversed_a = rng.standard_normal((4, 40, 70)).astype(dtype)[::-1]    # negative step
    reversed_out = np.full((4, 40, 50), np.nan, dtype)
    blas.gemm(reversed_a, b[0], reversed_out)
    blas._OWN.set_num_threads(1)
    from numba import get_num_threads
    if team and get_num_threads() > 1:
        assert calls == [12, 4]
    elif not team:
        assert len(calls) == 2
    np.testing.assert_allclose(out, a.astype(np.float64) @ b.astype(np.float64),
                               rtol=_tolerance(dtype, 70), atol=_tolerance(dtype, 70))
    np.testing.assert_allclose(reversed_out, reversed_a.astype(np.float64) @ b[0],
                               rtol=_tolerance(dtype, 70), atol=_tolerance(dtype, 70))


# -- products cut into parts for numba's workers (jitkernels.cpu.blas_team) -------------------

@needs_own
@settings(max_examples=examples(40), deadline=None)
@given(st.data())
def test_parts_cover_the_product_once(data):
    """Every part table (rows or columns cut, aligned, 1-4 threads, either transpose) runs
    to numpy's product, overwriting or accumulating."""
    draw = data.draw
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    dtype = draw(st.sampled_from(["float32", "float64"]))
    m, k, n = draw(st.integers(1, 90)), draw(st.integers(1, 40)), draw(st.integers(1, 90))
    a, b = _matrix(draw, rng, m, k, dtype), _matrix(draw, rng, k, n, dtype)
    a, (trans_a, lda) = blas._readable(a)
    b, (trans_b, ldb) = blas._readable(b)
    start = rng.standard_normal((m, n)).astype(dtype)
    out = start.copy()
    beta = draw(st.sampled_from([0.0, 1.0]))
    threads = draw(st.integers(1, 4))
    row = (trans_a, trans_b, m, n, k, lda, ldb, n, blas._address(a), blas._address(b),
           blas._address(out))
    saved = blas_team.MIN_PART_WORK
    blas_team.MIN_PART_WORK = 1
    try:
        parts = blas_team.split(row, threads, np.dtype(dtype).itemsize)
    finally:
        blas_team.MIN_PART_WORK = saved
    assert 1 <= parts.shape[0] <= threads
    by_rows = np.all(parts[:, 3] == n)
    sizes = parts[:, 2] if by_rows else parts[:, 3]
    assert sizes.sum() == (m if by_rows else n) and np.all(sizes > 0)
    assert np.all(sizes[:-1] % (4 if by_rows else 16) == 0)       # aligned inner cuts
    address = blas.TeamProducts(2).addresses[np.dtype(dtype)]
    blas_team.run_parts(address, parts, np.dtype(dtype).type(beta))
    expected = a.astype(np.float64) @ b.astype(np.float64) + beta * start
    np.testing.assert_allclose(out, expected, rtol=_tolerance(dtype, k),
                               atol=_tolerance(dtype, k))


def test_split_keeps_small_products_whole_and_cuts_the_longer_side():
    row = lambda m, n, k: (111, 111, m, n, k, k, n, n, 0, 0, 0)      # noqa: E731
    assert blas_team.split(row(8, 8, 8), 2, 4).shape[0] == 1          # < MIN_PART_WORK
    tall = blas_team.split(row(3136, 64, 576), 2, 4)
    assert tall.shape[0] == 2 and list(tall[:, 2]) == [1568, 1568]    # rows cut
    assert list(tall[:, 10]) == [0, 1568 * 64 * 4]                    # out rows advance
    wide = blas_team.split(row(49, 512, 4608), 2, 4)
    assert list(wide[:, 3]) == [256, 256] and list(wide[:, 9]) == [0, 256 * 4]


@needs_own
def test_busy_machine_runs_the_parts_on_the_caller(monkeypatch):
    monkeypatch.setattr(work_sharing, "others_busy", lambda: 8.0)

    def no_workers(*args):
        raise AssertionError("parts were shared on a busy machine")

    monkeypatch.setattr(blas_team, "run_parts", no_workers)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((300, 200)).astype(np.float32)
    b = rng.standard_normal((200, 300)).astype(np.float32)
    monkeypatch.setattr(blas, "_POLICY", blas.TeamProducts(2))
    out = blas.gemm(a, b, np.empty((300, 300), np.float32))
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)
