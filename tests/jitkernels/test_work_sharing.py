"""Chunks shared by numba's workers (jitkernels.cpu.work_sharing) and the int8 VNNI
product run on them (jitkernels.cpu.int8_vnni.run_gemm): every chunk computed exactly once
whatever the thread count (a kernel counting its chunks), the atomic add, and the shared
product against numpy's int64 product (hypothesis over shapes across the 6-row tile and
64-column block edges, row bands, offsets and 1-3 threads)."""

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit, prange

from irlib.testing.budget import examples
from jitkernels.cpu import int8_vnni, work_sharing
from jitkernels.cpu.work_sharing import atomic_add, claim, finish, new_state, share

needs_vnni = pytest.mark.skipif(not int8_vnni.available(), reason="no AVX-512 VNNI")


@pytest.fixture(autouse=True)
def _idle_machine(monkeypatch):
    """Jobs are shared even when other processes keep the cores busy (the test machine is
    shared), so the tests exercise the shared path."""
    monkeypatch.setattr(work_sharing, "others_busy", lambda: 0.0)


@njit(nogil=True)
def _count_chunks(hits, state, total):
    while True:
        chunk = claim(state, total)
        if chunk < 0:
            break
        atomic_add(hits, chunk, 1)
        finish(state)


@njit(nogil=True)
def _add_many(counter, times):
    for _ in range(times):
        atomic_add(counter, 0, 1)
    return atomic_add(counter, 0, 0)


def test_atomic_add_returns_the_old_value_and_adds():
    counter = np.array([5, 7], np.int64)
    assert _add_many(counter, 3) == 8
    np.testing.assert_array_equal(counter, [8, 7])


def test_concurrent_atomic_adds_lose_nothing():
    counter = np.zeros(1, np.int64)
    _add_many(counter, 1)
    counter[0] = 0
    workers = [threading.Thread(target=_add_many, args=(counter, 100000)) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert counter[0] == 300000     # nogil: the threads add at the same time


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize("total", [1, 2, 37, 5000])
def test_every_chunk_runs_exactly_once(threads, total):
    for _ in range(20):
        hits = np.zeros(total, np.int64)
        state = new_state()
        share(_count_chunks, (hits, state, total), state, total, threads)
        np.testing.assert_array_equal(hits, np.ones(total, np.int64))
        assert state[1] == total


def test_a_stale_job_is_never_claimed_again():
    # a worker that enters a finished job finds its counter exhausted
    hits = np.zeros(4, np.int64)
    state = new_state()
    share(_count_chunks, (hits, state, 4), state, 4, 1)
    _count_chunks(hits, state, 4)
    np.testing.assert_array_equal(hits, np.ones(4, np.int64))


def test_plan_chunks_cost_rule():
    assert int8_vnni.plan_chunks(128, 6, 384, 1) == (1, 1)          # one thread allowed
    assert int8_vnni.plan_chunks(4, 1, 64, 2) == (1, 1)             # too small to share
    bands, threads = int8_vnni.plan_chunks(128, 6, 384, 2)
    assert threads == 2 and bands == 2                              # 22 tiles / 11
    assert int8_vnni.plan_chunks(2048, 6, 384, 2)[0] == 31


def test_threads_allowed_follows_the_environment(monkeypatch):
    monkeypatch.setenv("IRLIB_INT8_THREADS", "3")
    assert int8_vnni.threads_allowed() == 3
    monkeypatch.setenv("IRLIB_INT8_THREADS", "")
    from jitkernels.cpu import blas
    assert int8_vnni.threads_allowed() == blas.get_num_threads()


@needs_vnni
@settings(max_examples=examples(30), deadline=None)
@given(rows=st.sampled_from([1, 5, 6, 7, 12, 13, 66, 67, 128, 131]),
       depth=st.sampled_from([4, 8, 64, 384]),
       units=st.sampled_from([1, 17, 64, 65, 130, 384]),
       low=st.integers(-255, 100), threads=st.integers(1, 3), bands=st.integers(1, 4),
       seed=st.integers(0, 2 ** 16))
def test_shared_product_is_numpys_integer_product(rows, depth, units, low, threads, bands,
                                                  seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, size=(rows, depth)).astype(np.uint8)
    w = rng.integers(-128, 128, size=(depth, units))
    packed = int8_vnni.pack(w.astype(np.float32))
    out = np.full((rows, units), np.nan, np.float32)
    groups = packed.packed.shape[1]
    bands = min(bands, -(-rows // 6))
    total = packed.packed.shape[0] * bands
    state = new_state()
    share(int8_vnni._gemm, (a, packed.packed, groups, packed.colsum, np.int64(low), out, bands,
                            state, total), state, total, threads)
    expected = (a.astype(np.int64) @ w + low * w.sum(axis=0)).astype(np.float32)
    np.testing.assert_array_equal(out, expected)
    # and through run_gemm, shared by the workers
    out[:] = np.nan
    int8_vnni.run_gemm(a, packed.packed, packed.colsum, float(low), out, threads)
    np.testing.assert_array_equal(out, expected)


@needs_vnni
def test_try_product_on_two_threads_matches(monkeypatch):
    monkeypatch.setenv("IRLIB_INT8_THREADS", "2")
    rng = np.random.default_rng(3)
    a = (rng.integers(0, 256, size=(128, 384)) - 131).astype(np.float32)
    w = rng.integers(-128, 128, size=(384, 1536)).astype(np.float32)
    w.flags.writeable = False
    out = np.empty((128, 1536), np.float32)
    for _ in range(5):
        assert int8_vnni.try_product(a, w, False, out)
        expected = (a.astype(np.int64) @ w.astype(np.int64)).astype(np.float32)
        np.testing.assert_array_equal(out, expected)


@njit(nogil=True)
def _count_offset_chunks(hits, offsets, state, total):
    while True:
        chunk = claim(state, total)
        if chunk < 0:
            break
        atomic_add(hits, chunk, offsets[chunk % 2])
        finish(state)


@pytest.mark.parametrize("threads", [1, 2])
def test_tuple_arguments_reach_the_kernel_as_arrays(threads):
    """numba's parallel driver takes no tuples: a tuple of integers arrives as an int64
    array, on the shared path and on the calling thread alike."""
    hits = np.zeros(9, np.int64)
    state = new_state()
    share(_count_offset_chunks, (hits, (3, 5), state, 9), state, 9, threads)
    np.testing.assert_array_equal(hits, [3, 5] * 4 + [3])


def test_others_busy_is_a_rate_of_cores(monkeypatch):
    monkeypatch.undo()
    import os
    import time
    work_sharing.others_busy()
    time.sleep(work_sharing.SAMPLE_SECONDS + 0.05)
    busy = work_sharing.others_busy()
    assert 0.0 <= busy <= len(os.sched_getaffinity(0)) + 0.5


@njit(parallel=True)
def _count_team(hits, state, total, threads):
    for _ in prange(threads):
        _count_chunks(hits, state, total)


@pytest.mark.parametrize("total", [1, 3, 500])
def test_a_given_team_runs_the_job_on_an_idle_machine(total):
    """With a ``team`` (numba's workers each claiming chunks) every chunk still runs once;
    the team is what runs while the cores are free."""
    calls = []

    def team(*args):
        calls.append(args[-1])
        _count_team(*args)

    hits = np.zeros(total, np.int64)
    state = new_state()
    share(_count_chunks, (hits, state, total), state, total, 2, team)
    np.testing.assert_array_equal(hits, np.ones(total, np.int64))
    assert calls == ([] if total == 1 else [2])     # one chunk: no second thread wanted


def test_busy_cores_run_the_kernel_alone_even_with_a_team(monkeypatch):
    monkeypatch.setattr(work_sharing, "others_busy", lambda: 8.0)

    def team(*args):
        raise AssertionError("the team ran on a busy machine")

    hits = np.zeros(64, np.int64)
    state = new_state()
    share(_count_chunks, (hits, state, 64), state, 64, 2, team)
    np.testing.assert_array_equal(hits, np.ones(64, np.int64))


def test_busy_cores_run_the_kernel_alone_without_a_team(monkeypatch):
    monkeypatch.setattr(work_sharing, "others_busy", lambda: 8.0)

    def no_team(*args):
        raise AssertionError("the workers were used on a busy machine")

    monkeypatch.setattr(work_sharing, "_team", no_team)
    hits = np.zeros(64, np.int64)
    state = new_state()
    share(_count_chunks, (hits, state, 64), state, 64, 2)
    np.testing.assert_array_equal(hits, np.ones(64, np.int64))


@settings(max_examples=examples(40), deadline=None)
@given(rows=st.integers(1, 9), cols=st.integers(1, 70), low=st.integers(-300, 300),
       span=st.integers(0, 400), special=st.sampled_from(
           [None, np.nan, np.inf, -np.inf, 0.5, -7.25, 3e9, -3e9, 2.0 ** 30, 2.0 ** 31]),
       seed=st.integers(0, 2 ** 16))
def test_integer_bounds_and_uint8_rows_vs_numpy(rows, cols, low, span, special, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(low, low + span + 1, size=(rows, cols)).astype(np.float32)
    if special is not None:
        a[rng.integers(rows), rng.integers(cols)] = special
    ok, lo, hi = int8_vnni._integer_bounds(a)
    integral = bool(np.all(np.isfinite(a)) and np.all(a == np.round(a))
                    and np.all(np.abs(a) <= 2.0 ** 30))
    assert ok == integral
    if ok:
        assert (lo, hi) == (int(a.min()), int(a.max()))
    span_ok, start = int8_vnni._integer_span(a)
    assert span_ok == (integral and a.max() - a.min() <= 255)
    if span_ok:
        dest = np.full((rows, cols + 3), 9, np.uint8)
        int8_vnni._to_uint8(a, np.int32(start), dest)
        np.testing.assert_array_equal(dest[:, :cols], (a - a.min()).astype(np.uint8))
        assert np.all(dest[:, cols:] == 9)
