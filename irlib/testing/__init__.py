"""Testing helpers for irlib users and its own test suite (see docs/testing.md).

* :mod:`irlib.testing.strategies`: hypothesis strategies generating well-typed programs, each
  with input generators and an independent numpy oracle (``tensor_exprs``, ``programs``,
  ``tensor_types``, ``shapes``; ``adt_programs`` and ``plain_adt_values`` from
  :mod:`irlib.testing.adt_strategies`; ``interp.testing.adt_values`` draws the same values
  as interpreter values), :mod:`irlib.testing.effect_strategies`
  (``effect_programs``: references and effect order) and
  :mod:`irlib.testing.onnx_strategies` (``onnx_models``: small valid ONNX graphs).
* :func:`check_pass` (:mod:`irlib.testing.pass_checker`): property-test a pass.
* :func:`differential` (:mod:`irlib.testing.executor_diff`): run a module on several
  executors and compare; executors are registered in :mod:`irlib.testing.runners`
  (``import interp`` registers the runtime's).
* :mod:`irlib.testing.pytest_plugin`: ``pytest -p irlib.testing.pytest_plugin
  --irlib-thorough`` raises every example budget.
* :func:`sample` (:mod:`irlib.testing.sampling`): one value of a strategy, reproducible
  from a seed.
* :mod:`irlib.testing.dataflow_eval`: a tiny numpy evaluator for dataflow expressions.

The strategies and ``check_pass`` import hypothesis, so this package imports nothing until a
name is used: ``import irlib`` never needs hypothesis.
"""

_LAZY = {
    "check_pass": "pass_checker", "PassCheckError": "pass_checker",
    "PassCheckResult": "pass_checker",
    "differential": "executor_diff", "ExecutorMismatch": "executor_diff",
    "register_runner": "runners", "runner_names": "runners",
    "sample": "sampling",
}

__all__ = sorted(_LAZY)


def __getattr__(name):
    """Import ``check_pass``, ``differential``, ... on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'irlib.testing' has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
