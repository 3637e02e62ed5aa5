"""Range checks of the ``irlib`` commands' numeric options, done before any work.

argparse checks that ``--batch 2`` is an int; these check that it makes sense (``--batch 0``,
``--seed -1``), so that a bad value is one ``irlib COMMAND: ...`` line with exit code 1
(:class:`~interp.cli.common.CLIInputError`) instead of a numpy error from deep inside.
"""

from __future__ import annotations

from .common import CLIInputError


def at_least(args, minimum: int, *names: str) -> None:
    """Raise :class:`CLIInputError` naming the first option in ``names`` whose value (on the
    argparse namespace ``args``; None and absent options are skipped) is below ``minimum``.

    Args:
        args: the parsed arguments.
        minimum: the smallest value allowed.
        names: option attribute names (``"batch"``, ``"opt_level"``).
    """
    for name in names:
        value = getattr(args, name, None)
        if value is not None and value < minimum:
            flag = "--" + name.replace("_", "-")
            what = "positive" if minimum == 1 else f"at least {minimum}"
            raise CLIInputError(f"{flag} must be {what}, got {value}")


def common_checks(args) -> None:
    """The checks every command that loads a model shares: ``--batch`` >= 1, ``--seed`` >= 0
    (numpy's generators refuse negative seeds), ``--opt-level`` >= 0."""
    at_least(args, 1, "batch")
    at_least(args, 0, "seed", "opt_level")
