"""Example budgets for property tests that scale with the hypothesis profile.

A test written ``@settings(max_examples=examples(50))`` runs 50 examples under the default
profile and 20 times as many under ``--hypothesis-profile=thorough``.
"""

from __future__ import annotations

THOROUGH_FACTOR = 20


def examples(count: int) -> int:
    """The example budget for a test whose default budget is ``count``.

    Args:
        count: examples to run under the default (CI) profile.
    """
    from hypothesis import settings
    profile = getattr(settings, "_current_profile", None)
    return count * THOROUGH_FACTOR if profile == "thorough" else count
