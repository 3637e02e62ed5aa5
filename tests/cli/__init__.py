"""Tests of the ``irlib`` command line (interp.cli)."""
