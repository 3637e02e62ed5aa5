"""Imports every op family module so that each registers its ops (in a fixed order)."""

from . import tensor  # noqa: F401
