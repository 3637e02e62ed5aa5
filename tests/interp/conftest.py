"""Fixtures shared by the interpreter tests."""

import pytest

from adt_programs import list_module


@pytest.fixture(scope="module")
def program():
    """``(mod, names)`` of :func:`adt_programs.list_module` (List, nat and their globals)."""
    return list_module()
