"""The CPU threading policy of jitkernels.threads: one pool (numba's OpenMP workers) per
process, spinning between jobs, one thread while the machine is busy."""

import os

import pytest

threadpoolctl = pytest.importorskip("threadpoolctl")
pytest.importorskip("numba")

import jitkernels  # noqa: E402
from jitkernels import threads  # noqa: E402


def _pools():
    import scipy.linalg.cython_blas  # noqa: F401
    return {os.path.basename(os.path.dirname(lib.filepath)): lib.num_threads
            for lib in threadpoolctl.ThreadpoolController().lib_controllers
            if lib.internal_api == "openblas"}


def test_loading_cpu_kernels_limits_scipys_blas_to_one_thread():
    jitkernels.get_kernel("nn.conv2d", "cpu")
    pools = _pools()
    scipy_pools = [n for name, n in pools.items() if "scipy" in name]
    if not scipy_pools:
        pytest.skip("scipy shares numpy's BLAS here: nothing to limit")
    assert scipy_pools == [1]


def test_numpys_blas_keeps_its_threads():
    jitkernels.get_kernel("nn.conv2d", "cpu")
    numpy_pools = [n for name, n in _pools().items() if "numpy" in name]
    if not numpy_pools or (os.cpu_count() or 1) < 2 or any(
            os.environ.get(v) for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")):
        pytest.skip("no separate numpy OpenBLAS, a single core, or threads pinned by the user")
    assert numpy_pools[0] > 1


def test_gomp_spincount_defaults_but_user_setting_wins(monkeypatch):
    monkeypatch.setattr(threads, "_DONE", False)
    monkeypatch.setenv("GOMP_SPINCOUNT", "12345")
    threads.configure()
    assert os.environ["GOMP_SPINCOUNT"] == "12345"
    monkeypatch.setattr(threads, "_DONE", False)
    monkeypatch.delenv("GOMP_SPINCOUNT")
    threads.configure()
    from jitkernels.cpu import blas
    assert os.environ["GOMP_SPINCOUNT"] == (threads.GOMP_SPINCOUNT if blas.team_enabled()
                                            else threads.GOMP_SPINCOUNT_WITH_BLAS_THREADS)


def test_blas_threads_mode_keeps_the_short_spin(monkeypatch):
    from jitkernels.cpu import blas
    monkeypatch.setattr(threads, "_DONE", False)
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    monkeypatch.setattr(blas, "team_enabled", lambda environ=None: False)
    threads.configure()
    assert os.environ["GOMP_SPINCOUNT"] == threads.GOMP_SPINCOUNT_WITH_BLAS_THREADS


def test_team_mode_follows_the_switch(monkeypatch):
    from jitkernels.cpu import blas
    assert not blas.team_enabled({"IRLIB_BLAS_TEAM": "0"})
    assert blas.team_enabled({}) == blas.HAVE_OWN_BLAS


@pytest.mark.parametrize("busy, expected", [(0.0, None), (8.0, 1)])
def test_run_threads_drops_to_one_thread_on_a_busy_machine(monkeypatch, busy, expected):
    import numba
    from jitkernels.cpu import work_sharing
    monkeypatch.setattr(work_sharing, "others_busy", lambda: busy)
    monkeypatch.setattr(work_sharing, "machine_cores", lambda: 2)
    monkeypatch.setattr(threads, "_RUNS", {"until": 0.0, "backoff": 1.0, "fastest": {}})
    before = numba.get_num_threads()
    with threads.run_threads() as run:
        inside = run.threads
        assert numba.get_num_threads() == inside
        assert inside == (before if expected is None or before == 1 else expected)
    assert numba.get_num_threads() == before


def test_a_stalled_run_backs_off_to_one_thread(monkeypatch):
    """A multi-threaded run far slower than the fastest one of its key starts a back-off:
    the next runs use one thread; other keys' fastest runs are their own."""
    import numba
    from jitkernels.cpu import work_sharing
    if numba.get_num_threads() < 2:
        pytest.skip("numba runs one thread here")
    monkeypatch.setattr(work_sharing, "others_busy", lambda: 0.0)
    monkeypatch.setattr(threads, "_RUNS", {"until": 0.0, "backoff": 1.0, "fastest": {}})
    clock = iter([0.0, 0.001, 10.0, 10.02, 20.0, 20.0001])      # run, stalled run, run

    def fake_clock():
        return next(clock)

    import time
    monkeypatch.setattr(time, "perf_counter", fake_clock)
    with threads.run_threads("model") as first:
        assert first.threads == numba.get_num_threads()
    with threads.run_threads("model") as second:
        assert second.threads == numba.get_num_threads()
    assert threads._RUNS["until"] > 0.0                # 20 ms against a 1 ms best
    assert threads._RUNS["backoff"] == 2.0             # the next stall backs off longer
    with threads.run_threads("model") as third:
        assert third.threads == 1
    monkeypatch.setattr(threads, "_RUNS", {"until": 0.0, "backoff": 1.0, "fastest": {}})
    with threads.run_threads(None) as untimed:
        assert untimed.threads == numba.get_num_threads()


def test_a_short_models_hiccup_is_not_a_stall(monkeypatch):
    """A model whose fastest run is under JUDGED_MIN_SECONDS is never judged: a 5 ms
    hiccup after 10 us runs starts no back-off."""
    monkeypatch.setattr(threads, "_RUNS", {"until": 0.0, "backoff": 1.0, "fastest": {}})
    threads._judge("tiny", 10e-6)
    threads._judge("tiny", 5e-3)
    assert threads._RUNS["until"] == 0.0
    threads._judge("long", 1e-3)
    threads._judge("long", 5e-3)
    assert threads._RUNS["until"] > 0.0
