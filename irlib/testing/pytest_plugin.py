"""pytest plugin: ``--irlib-thorough`` raises every irlib property-test budget.

Enable it with ``pytest -p irlib.testing.pytest_plugin`` (or ``pytest_plugins =
["irlib.testing.pytest_plugin"]`` in a top-level ``conftest.py``; irlib's own test suite
does). Then ``pytest --irlib-thorough`` loads the ``thorough`` hypothesis profile, under
which :func:`irlib.testing.budget.examples` and :func:`irlib.testing.check_pass`'s default
budget multiply by :data:`irlib.testing.budget.THOROUGH_FACTOR` (20). A ``thorough``
profile registered by the project (as irlib's ``tests/conftest.py`` does) is used as it is;
otherwise the plugin registers one (no deadline, the slow-data health checks off).

The ``irlib_examples`` fixture gives a test the scaled budget function::

    def test_many(irlib_examples):
        check_pass(MyPass(), max_examples=irlib_examples(200))
"""

from __future__ import annotations

import pytest

PROFILE = "thorough"


def pytest_addoption(parser):
    """Register ``--irlib-thorough``."""
    group = parser.getgroup("irlib", "irlib property testing")
    group.addoption("--irlib-thorough", action="store_true", default=False,
                    help="run irlib property tests (check_pass, generated programs) with "
                         "20x their example budgets (the 'thorough' hypothesis profile)")


def pytest_configure(config):
    """Load the ``thorough`` hypothesis profile when ``--irlib-thorough`` is given."""
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
    """Say in pytest's header when the thorough budgets are on."""
    if config.getoption("irlib_thorough", default=False):
        return "irlib: --irlib-thorough (example budgets x20)"
    return None


@pytest.fixture
def irlib_examples():
    """The budget function :func:`irlib.testing.budget.examples` (scaled when thorough)."""
    from .budget import examples
    return examples
