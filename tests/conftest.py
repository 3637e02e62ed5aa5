"""Test-suite configuration: hypothesis profiles.

``ci`` (the default) keeps property tests to each test's fixed example budget and makes runs
reproducible; ``--irlib-thorough`` (irlib's pytest plugin, enabled below) or
``--hypothesis-profile=thorough`` multiplies every budget (see
:func:`irlib.testing.budget.examples`) for long runs.
"""

from hypothesis import HealthCheck, settings

# --irlib-thorough (irlib's pytest plugin) loads the "thorough" profile registered below.
pytest_plugins = ["irlib.testing.pytest_plugin"]

settings.register_profile("ci", derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.data_too_large])
settings.register_profile("thorough", deadline=None, max_examples=2000,
                          suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.data_too_large])
if getattr(settings, "_current_profile", "default") == "default":
    # NOTE: the hypothesis plugin has already applied --hypothesis-profile by now; only
    # replace hypothesis' own default.
    settings.load_profile("ci")
