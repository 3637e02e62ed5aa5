"""``sample``: one value of a strategy, reproducible from a seed (for printing and docs).

Hypothesis draws at random, and ``strategy.example()`` cannot be seeded. :func:`sample`
runs the strategy under ``hypothesis.seed(seed)`` and returns the last of a few values
generated, so the same seed gives the same program (for a given hypothesis version) and
different seeds give different ones; the first value hypothesis generates is always its
simplest, which is why a few are drawn.
"""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

__all__ = ["sample"]


def sample(strategy, seed: int = 0, draws: int = 5):
    """A value of ``strategy``, the same for the same ``seed``.

    Args:
        strategy: any hypothesis strategy (e.g. ``strategies.tensor_exprs()``).
        seed: the seed; change it for another value.
        draws: how many values to generate before keeping the last (more: larger values
            on average).

    Returns:
        The value (a generated program prints as text).
    """
    found = []

    @hypothesis_seed(seed)
    @settings(max_examples=max(2, draws), phases=[Phase.generate], database=None,
              derandomize=False, deadline=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(value):
        found.append(value)

    collect()
    return found[-1]
