"""Testing helpers for irlib users and its own test suite.

* :mod:`irlib.testing.strategies`: hypothesis strategies generating well-typed programs, each
  with input generators and an independent numpy oracle (``tensor_exprs``, ``programs``,
  ``tensor_types``).
* :mod:`irlib.testing.dataflow_eval`: a tiny numpy evaluator for dataflow expressions.

The strategies import hypothesis; import them explicitly (``from irlib.testing import
strategies``) so that ``import irlib`` never needs it.
"""
