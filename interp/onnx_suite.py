"""Run the ONNX backend node tests through ``from_onnx`` and an irlib executor.

::

    python -m interp.onnx_suite [--filter REGEX] [--executor debug|graph]

The onnx wheel does not ship the test data, so the cases are generated in memory from the
generators in ``onnx.backend.test.case.node`` (numpy is seeded first, so the inputs are the
same on every run). Each case is imported, run on its first data set and compared with the
expected outputs (rtol 1e-3, atol 1e-5, NaN == NaN, same shape). One line per failing case
gives its category:

* ``unsupported``: :class:`OpNotImplemented` (op type or variant not supported);
* ``malformed``: :class:`ModelFormatError`; ``convert``: :class:`ConversionError`;
* ``input``: an input kind the runner cannot feed (maps, sequences of maps, ...);
* ``run``: type inference or evaluation failed; ``timeout``: over the per-case limit;
* ``mismatch``: wrong values, ``shape``: wrong shape, ``dtype``: wrong element type,
  ``outputs``: wrong number of outputs.

The last line is ``N passed, M failed``. On a terminal a progress bar over the cases (with
the pass/fail counts so far) shows on stderr while it runs; ``IRLIB_PROGRESS=0`` hides it,
``IRLIB_PROGRESS=1`` prints it as lines where stderr is not a terminal.
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
import time
import warnings
from dataclasses import dataclass

import numpy as np

RTOL = 1e-3
ATOL = 1e-5
CASE_TIMEOUT_S = 60


@dataclass
class CaseResult:
    """Outcome of one case: ``category`` is ``"pass"`` or a failure category."""

    name: str
    category: str
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.category == "pass"


def collect_cases(pattern: str | None = None) -> list:
    """The backend node test cases (``onnx.backend.test.case.TestCase``), generated with numpy
    seeded to 0, whose names match ``pattern`` (``re.search``)."""
    np.random.seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case import node
        cases = node.collect_testcases()
    regex = re.compile(pattern) if pattern else None
    return [case for case in cases if regex is None or regex.search(case.name)]


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def _flatten(value) -> list:
    from interp.values import TupleValue
    if isinstance(value, (TupleValue, tuple)):
        out = []
        for field in value:
            out.extend(_flatten(field))
        return out
    return [value]


def _as_array(value):
    if hasattr(value, "numpy"):
        return value.numpy()
    return np.asarray(value)


def compare(actual, expected) -> tuple:
    """``(category, detail)`` comparing one output; category ``"pass"`` when they agree."""
    expected = np.asarray(expected)
    actual = _as_array(actual)
    if actual.shape != expected.shape:
        return "shape", f"shape {actual.shape} != expected {expected.shape}"
    if expected.dtype.kind in "USO":
        return ("pass", "") if np.array_equal(actual.astype(str), expected.astype(str)) else \
            ("mismatch", "strings differ")
    if actual.dtype != expected.dtype:
        return "dtype", f"dtype {actual.dtype} != expected {expected.dtype}"
    if expected.dtype.kind == "V":  # ml_dtypes (bfloat16, float8, int4, ...): compare widened
        wide = "int64" if "int" in expected.dtype.name else "float64"
        actual, expected = actual.astype(wide), expected.astype(wide)
    if expected.dtype.kind in "biu":
        same = np.array_equal(actual, expected)
    else:
        same = np.allclose(actual, expected, rtol=RTOL, atol=ATOL, equal_nan=True)
    if not same:
        diff = np.abs(actual.astype("float64") - expected.astype("float64"))
        return "mismatch", f"max abs diff {np.nanmax(diff) if diff.size else 0:.3g}"
    return "pass", ""


def run_case(case, executor: str = "debug") -> CaseResult:
    """Import and run one case; never raises (failures become categories)."""
    import interp
    from irlib.errors import IRError
    from irlib.frontend import ConversionError, ModelFormatError, OpNotImplemented
    from irlib.frontend.onnx import from_onnx

    inputs, expected = case.data_sets[0]
    inputs = [_normalize(value) for value in inputs]
    expected = [_normalize(value) for value in expected]
    graph_inputs = [vi.name for vi in case.model.graph.input
                    if vi.name not in {init.name for init in case.model.graph.initializer}]
    try:
        mod, params = from_onnx(case.model)
    except OpNotImplemented as error:
        return CaseResult(case.name, "unsupported", _short(error))
    except ModelFormatError as error:
        return CaseResult(case.name, "malformed", _short(error))
    except ConversionError as error:
        return CaseResult(case.name, "convert", _short(error))
    except Exception as error:  # noqa: BLE001  (a crash is a finding, reported by category)
        return CaseResult(case.name, "crash", f"{type(error).__name__}: {_short(error)}")
    try:
        main = mod["main"]
        args = [to_value(value, var.type_annotation, mod)
                for value, var in zip(inputs[:len(graph_inputs)], main.params)]
    except (TypeError, ValueError) as error:
        return CaseResult(case.name, "input", _short(error))
    try:
        function = interp.create_executor(executor, mod=mod).evaluate()
        result = function(*args)
    except IRError as error:
        return CaseResult(case.name, "run", f"{type(error).__name__}: {_short(error)}")
    except Exception as error:  # noqa: BLE001
        return CaseResult(case.name, "crash", f"{type(error).__name__}: {_short(error)}")
    outputs = _flatten(result)
    random = is_random(case.model)
    if len(outputs) != len(expected):
        return CaseResult(case.name, "outputs", f"{len(outputs)} outputs, expected "
                                                f"{len(expected)}")
    for index, (actual, want) in enumerate(zip(outputs, expected)):
        actual = from_value(actual)
        if random and actual is not None and not isinstance(actual, list) \
                and isinstance(want, np.ndarray):
            # random outputs: as onnx's reference runner, compare shape and dtype only
            actual, want = np.zeros_like(_as_array(actual)), np.zeros_like(want)
        category, detail = compare_value(actual, want)
        if category != "pass":
            return CaseResult(case.name, category, f"output {index}: {detail}")
    return CaseResult(case.name, "pass")


#: ONNX ops whose outputs are random: cases using them compare output shapes and dtypes only.
RANDOM_OPS = frozenset({"Bernoulli", "RandomUniform", "RandomUniformLike", "RandomNormal",
                        "RandomNormalLike", "Multinomial"})


def is_random(model) -> bool:
    """True when ``model`` uses a random op (or Dropout with a training-mode input)."""
    for node in model.graph.node:
        if node.op_type in RANDOM_OPS:
            return True
        if node.op_type == "Dropout" and len(node.input) > 2 and node.input[2]:
            return True
    return False


def to_value(value, ty, mod):
    """A runner input as an interpreter value of type ``ty``, through the public
    :func:`interp.values.from_python_value` (lists -> ``List``, None/value -> ``Option``).

    Raises:
        TypeError: (``ValueConversionError``) when ``value`` does not fit ``ty``.
    """
    from interp.values import from_python_value
    return from_python_value(_normalize_items(value), ty, mod)


def _normalize_items(value):
    """``value`` with every TensorProto/numpy scalar inside lists made a numpy array."""
    value = _normalize(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_normalize_items(item) for item in value)
    return value


def from_value(value):
    """An interpreter result as a runner value (:func:`interp.values.to_python_value`):
    ``List`` -> list, ``Option`` -> value/None, tuples elementwise, tensors as they are."""
    from interp.values import to_python_value
    return to_python_value(value)


def compare_value(actual, expected) -> tuple:
    """:func:`compare` extended to sequences (lists) and empty optionals (None)."""
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return "mismatch", "sequence length or kind differs"
        for item, want in zip(actual, expected):
            category, detail = compare_value(item, _normalize(want))
            if category != "pass":
                return category, f"sequence item: {detail}"
        return "pass", ""
    if expected is None:
        return ("pass", "") if actual is None else ("mismatch", "expected an empty optional")
    if actual is None or isinstance(actual, list):
        return "mismatch", "got a sequence or empty optional, expected a tensor"
    return compare(actual, _normalize(expected))


def _normalize(value):
    """Scalars and ``TensorProto`` values as numpy arrays (lists and None left alone)."""
    from onnx import TensorProto, numpy_helper
    if isinstance(value, TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, np.generic):
        return np.asarray(value)
    return value


def _short(error, limit: int = 160) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def run_suite(pattern: str | None = None, executor: str = "debug", out=None,
              timeout_s: int = CASE_TIMEOUT_S) -> list:
    """Run every matching case; prints one line per failure to ``out``; returns results.

    While it runs, a progress bar over the cases with the pass/fail counts so far shows on
    stderr when it is a terminal, or as lines with ``IRLIB_PROGRESS=1`` (:mod:`irlib.progress`).
    """
    from irlib.progress import task
    results = []
    use_alarm = hasattr(signal, "SIGALRM") and timeout_s
    cases = collect_cases(pattern)
    bar = task("onnx node cases", total=len(cases))
    if use_alarm:
        previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        for case in cases:
            bar.start(case.name)
            if use_alarm:
                signal.alarm(timeout_s)
            try:
                with warnings.catch_warnings(), np.errstate(all="ignore"):
                    warnings.simplefilter("ignore")
                    result = run_case(case, executor)
            except _Timeout:
                result = CaseResult(case.name, "timeout", f"over {timeout_s}s")
            finally:
                if use_alarm:
                    signal.alarm(0)
            results.append(result)
            if not result.passed and out is not None:
                print(f"FAIL {result.name} [{result.category}] {result.detail}", file=out)
            passed = sum(r.passed for r in results)
            bar.advance(passed=passed, failed=len(results) - passed)
    finally:
        bar.close()
        if use_alarm:
            signal.signal(signal.SIGALRM, previous)
    return results


class _CurrentStdout:
    """``sys.stdout`` as it is at each write: a live progress bar on the terminal redirects
    it, so the FAIL lines print above the bar instead of through it."""

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        sys.stdout.flush()


def main(argv=None) -> int:
    """Command-line entry point; returns 0 when every selected case passes."""
    parser = argparse.ArgumentParser(prog="python -m interp.onnx_suite",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--filter", default=None, help="regex on case names (re.search)")
    parser.add_argument("--executor", default="debug",
                        help="interp.create_executor kind (default: debug, the interpreter)")
    parser.add_argument("--timeout", type=int, default=CASE_TIMEOUT_S,
                        help="seconds per case (0: none)")
    parser.add_argument("--summary", action="store_true",
                        help="also print the failure count per category")
    args = parser.parse_args(argv)
    start = time.time()
    results = run_suite(args.filter, args.executor, out=_CurrentStdout(),
                        timeout_s=args.timeout)
    passed = sum(result.passed for result in results)
    if args.summary:
        counts: dict = {}
        for result in results:
            if not result.passed:
                counts[result.category] = counts.get(result.category, 0) + 1
        for category, count in sorted(counts.items(), key=lambda item: -item[1]):
            print(f"  {category}: {count}")
        print(f"  ({time.time() - start:.0f}s)")
    print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
