"""pytest plugin: ``--irlib-thorough`` raises every irlib property-test budget.

Enable it with ``pytest -p irlib.testing.pytest_plugin`` (or ``pytest_plugins =
["irlib.testing.pytest_plugin"]`` in a top-level ``conftest.py``; irlib's own test suite
does). Then ``pytest --irlib-thorough`` loads the ``thorough`` hypothesis profile, under
which :func:`irlib.testing.budget.examples` and :func:`irlib.testing.check_pass`'s default
budget multiply by :data:`irlib.testing.budget.THOROUGH_FACTOR` (20). A ``thorough``
profile registered by the project (as irlib's ``tests/conftest.py`` does) is used as it is;
otherwise the plugin registers one (no deadline, the slow-data health checks off).

Under the ``thorough`` profile each hypothesis test shows its examples run against its
budget while it runs (a progress line; see :func:`pytest_runtest_call`).

The ``irlib_examples`` fixture gives a test the scaled budget function::

    def test_many(irlib_examples):
        check_pass(MyPass(), max_examples=irlib_examples(200))
"""

from __future__ import annotations

import pytest

PROFILE = "thorough"


def pytest_addoption(parser):
    """Register ``--irlib-thorough``.

    Args:
        parser: pytest's option parser.
    """
    group = parser.getgroup("irlib", "irlib property testing")
    group.addoption("--irlib-thorough", action="store_true", default=False,
                    help="run irlib property tests (check_pass, generated programs) with "
                         "20x their example budgets (the 'thorough' hypothesis profile)")


def pytest_configure(config):
    """Load the ``thorough`` hypothesis profile when ``--irlib-thorough`` is given.

    Args:
        config: pytest's config.
    """
    if not config.getoption("irlib_thorough", default=False):
        return
    from hypothesis import HealthCheck, settings
    from hypothesis.errors import InvalidArgument
    try:
        settings.get_profile(PROFILE)
    except InvalidArgument:
        settings.register_profile(PROFILE, deadline=None,
                                  suppress_health_check=[HealthCheck.too_slow,
                                                         HealthCheck.data_too_large])
    settings.load_profile(PROFILE)


def pytest_report_header(config):
    """Say in pytest's header when the thorough budgets are on.

    Args:
        config: pytest's config.
    """
    if config.getoption("irlib_thorough", default=False):
        return "irlib: --irlib-thorough (example budgets x20)"
    return None


def _thorough() -> bool:
    from hypothesis import settings
    return getattr(settings, "_current_profile", None) == PROFILE


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """Under the ``thorough`` profile (``--irlib-thorough`` or
    ``--hypothesis-profile=thorough``), show each hypothesis test's examples run against its
    budget while it runs (:mod:`irlib.progress`: a bar on a terminal, lines with
    ``IRLIB_PROGRESS=1``, nothing with ``IRLIB_PROGRESS=0``); silent in other profiles.

    The count comes from wrapping the test's ``hypothesis.inner_test`` (the attribute
    hypothesis lets plugins replace), so every call of the test body counts: generated
    examples, then any shrinking steps.

    Args:
        item: the test item about to run.
    """
    handle = getattr(getattr(item, "obj", None), "hypothesis", None)
    inner = getattr(handle, "inner_test", None)
    if inner is None or not _thorough():
        yield
        return
    import functools

    from irlib.progress import task
    settings = getattr(item.obj, "_hypothesis_internal_use_settings", None)
    budget = getattr(settings, "max_examples", 0)
    capture = item.config.pluginmanager.getplugin("capturemanager")
    guard = capture.global_and_fixture_disabled if capture is not None else None
    bar = task(f"{item.nodeid} examples", total=budget, guard=guard, transient=True)

    @functools.wraps(inner)
    def counted(*args, **kwargs):
        try:
            return inner(*args, **kwargs)
        finally:
            bar.advance()

    handle.inner_test = counted
    try:
        yield
    finally:
        handle.inner_test = inner
        bar.close()


@pytest.fixture
def irlib_examples():
    """The budget function :func:`irlib.testing.budget.examples` (scaled when thorough)."""
    from .budget import examples
    return examples
