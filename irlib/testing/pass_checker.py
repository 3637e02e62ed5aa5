"""``check_pass``: property-test a pass on generated, well-typed programs.

For each program hypothesis draws, :func:`check_pass` type-checks it, runs the pass, and
requires that

1. the pass returns an :class:`~irlib.ir.module.IRModule` and leaves its input unchanged;
2. every function of the output is well formed and the output type-checks;
3. ``main`` gives the same result before and after on inputs drawn for the program (same
   structure, dtypes and shapes; floats within ``rtol``/``atol``, or bitwise with
   ``exact=True``); for the ``"effects"`` programs the result records every reference's
   final content, so effects must also keep their order;
4. with ``idempotent=True``: running the pass again changes nothing (structurally).

When a check fails, hypothesis shrinks the program, and :class:`PassCheckError` reports the
smallest one: the program before and after the pass in the text format, the inputs, and
what differed. The executor that runs programs is a parameter (see
:mod:`irlib.testing.runners`): irlib may not import the runtime, so ``"debug"``,
``"graph"`` and ``"python"`` exist once ``interp`` is imported; ``"dataflow"`` needs only
irlib.

Example (the ``"dataflow"`` executor needs only irlib)::

    from irlib.testing import check_pass
    from irlib.transform import FoldConstant
    check_pass(FoldConstant(), programs="dataflow", idempotent=True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from ..errors import IRError
from ..ir.module import IRModule
from ..ir.structural import structural_equal
from .budget import examples
from .program_forms import bind_inputs, computed_twice
from .runners import ValueMismatch, compare, get_runner, plain

__all__ = ["check_pass", "PassCheckError", "PassCheckResult", "program_strategy",
           "computed_twice",
           "PROGRAM_KINDS", "DEFAULT_EXAMPLES"]

#: Examples per check under the default hypothesis profile (x20 with ``--irlib-thorough``).
DEFAULT_EXAMPLES = 60

#: The program families ``programs=`` may name.
PROGRAM_KINDS = ("dataflow", "control", "adt", "effects", "sharing")


class PassCheckError(IRError, AssertionError):
    """``check_pass`` found a program on which the pass breaks a promise.

    Args:
        message: what went wrong (the other arguments are the attributes below).

    Attributes:
        before, after: the module given to the pass and the one it returned (None if the
            pass raised).
        inputs: the inputs, in ``main``'s parameter order.
    """

    def __init__(self, message, before=None, after=None, inputs=None):
        super().__init__(message)
        self.before, self.after, self.inputs = before, after, inputs


@dataclass(frozen=True)
class PassCheckResult:
    """What a passing :func:`check_pass` ran.

    Attributes:
        examples: programs checked.
        changed: how many of them the pass changed (a check where this is 0 tested
            nothing: widen ``programs``).
    """

    examples: int
    changed: int


def program_strategy(programs):
    """The hypothesis strategy ``check_pass`` draws from, for a ``programs=`` value.

    Args:
        programs: a name of :data:`PROGRAM_KINDS` (``"dataflow"``: :func:`tensor_exprs`,
            ``"control"``: :func:`programs`; a third of those through
            :func:`~irlib.testing.program_forms.computed_twice` and a third with some
            inputs bound to constants (:func:`~irlib.testing.program_forms.bind_inputs`);
            ``"adt"``: :func:`adt_programs`, ``"effects"``: :func:`effect_programs`,
            ``"sharing"``: :func:`sharing_programs`), a tuple of names (drawn from all), or
            any strategy of programs (objects with ``module()``, ``inputs_strategy()`` and
            ``input_list(inputs)``, as the generators of :mod:`irlib.testing` draw).
    """
    from . import strategies as irst
    from .effect_strategies import effect_programs
    from .sharing_strategies import sharing_programs
    if isinstance(programs, str):
        makers = {"dataflow": lambda: _varied(irst.tensor_exprs()),
                  "control": lambda: _varied(irst.programs()),
                  "adt": irst.adt_programs, "effects": effect_programs,
                  "sharing": sharing_programs}
        if programs not in makers:
            raise IRError(f"check_pass: unknown program family {programs!r}; expected one of "
                          f"{list(PROGRAM_KINDS)} or a hypothesis strategy")
        return makers[programs]()
    if isinstance(programs, (tuple, list)):
        return st.one_of([program_strategy(p) for p in programs])
    if isinstance(programs, st.SearchStrategy):
        return programs
    raise IRError(f"check_pass: programs must be a family name, a tuple of names or a "
                  f"hypothesis strategy, not {type(programs).__name__}")


@st.composite
def _partly_constant(draw, strategy):
    program = draw(strategy)
    bound = [p for p in program.params if draw(st.booleans())]
    if not bound:
        return program
    values = program.random_inputs(seed=draw(st.integers(0, 2 ** 16)))
    return bind_inputs(program, {p: values[p] for p in bound})


def _varied(strategy):
    """A third as given, a third computing their result twice, a third partly constant."""
    return st.one_of(strategy, strategy.map(computed_twice), _partly_constant(strategy))


def _pass_name(pass_or_fn) -> str:
    for name in (getattr(pass_or_fn, "name", None),
                 getattr(getattr(pass_or_fn, "info", None), "name", None)):
        if isinstance(name, str) and name:
            return name
    return getattr(pass_or_fn, "__name__", None) or type(pass_or_fn).__name__


def _text(mod) -> str:
    try:
        return mod.astext(show_meta_data=False)
    except Exception as exc:  # noqa: BLE001 - the report must not fail on a printer bug
        return f"<cannot print the module: {exc}>"


def _main_only(mod) -> str:
    """The module's text without the Prelude's definitions (for ADT programs)."""
    text = _text(mod)
    if "def @main" in text and text.count("\ndef @") > 4:
        main = text.split("def @main", 1)[1].split("\ndef @", 1)[0]
        return "(the Prelude's definitions left out)\ndef @main" + main.rstrip()
    return text


def _format_inputs(params, args) -> str:
    lines = []
    for param, value in zip(params, args):
        shown = plain(value)
        if isinstance(shown, np.ndarray):
            shown = np.array2string(shown, precision=6, threshold=40).replace("\n", " ")
        lines.append(f"  %{param.name_hint} = {shown}")
    return "\n".join(lines) or "  (none)"


class _Shown:
    """A drawn program that hypothesis prints as its text (its ``repr``)."""

    __slots__ = ("program",)

    def __init__(self, program):
        self.program = program

    def __repr__(self) -> str:
        return repr(self.program)

    def _repr_pretty_(self, printer, cycle):
        printer.text(repr(self.program))


class _Checker:
    """Runs the checks on one program; builds the failure report."""

    def __init__(self, pass_or_fn, run, rtol, atol, exact, idempotent, type_check,
                 verify=True):
        from ..transform import InferType
        self.pass_or_fn, self.run = pass_or_fn, run
        self.rtol, self.atol, self.exact = rtol, atol, exact
        self.idempotent, self.type_check, self.verify = idempotent, type_check, verify
        self.infer = InferType()
        self.name = _pass_name(pass_or_fn)
        self.examples = self.changed = 0

    def apply(self, mod):
        """The pass on ``mod``; in verify mode, inside a copy of the current PassContext with
        ``irlib.verify`` on (so every pass of a Sequential is checked as it runs)."""
        if not self.verify:
            return self.pass_or_fn(mod)
        from ..transform import PassContext
        now = PassContext.current()
        with PassContext(opt_level=now.opt_level, fallback_device=now.fallback_device,
                         required_pass=now.required_pass, disabled_pass=now.disabled_pass,
                         trace=now.trace, config={**now.config, "irlib.verify": True},
                         instruments=now.instruments):
            return self.pass_or_fn(mod)

    def fail(self, what, before, after, args, detail=""):
        params = before["main"].params
        parts = [f"check_pass: {self.name} {what}",
                 "--- program before the pass:", _main_only(before),
                 "--- after the pass:",
                 _main_only(after) if after is not None else "(no module came out)",
                 "--- inputs:", _format_inputs(params, args)]
        if detail:
            parts += ["--- detail:", detail]
        raise PassCheckError("\n".join(parts), before, after, list(args))

    def check(self, program, data):
        mod = self.infer(program.module())
        inputs = data.draw(program.inputs_strategy(), label="inputs")
        # Counted once the inputs are drawn: a draw that runs out of hypothesis's data
        # abandons the example (hypothesis then makes another), which must not count.
        self.examples += 1
        args = program.input_list(inputs)
        out, problem = self.find_problem(mod, args)
        if problem is not None:
            # NOTE: raised here, outside every ``except``, so that hypothesis sees one kind
            # of failure (same type, place and context) and shrinks towards one example.
            what, detail = problem
            self.fail(what, mod, out, args, detail)

    def find_problem(self, mod, args):
        """``(output module, None)``, or ``(output, (what failed, detail))``."""
        from ..analysis import check_well_formed
        before_text = _text(mod)
        try:
            out = self.apply(mod)
        except Exception as exc:  # noqa: BLE001 - any failure of the pass is a finding
            return None, ("raised an exception", f"{type(exc).__name__}: {exc}")
        if not isinstance(out, IRModule):
            return None, (f"returned a {type(out).__name__}, not an IRModule", "")
        if _text(mod) != before_text:
            return out, ("mutated its input module",
                         "the input module now prints as:\n" + _text(mod))
        if _text(out) != before_text:
            self.changed += 1
        for gvar, func in out.functions.items():
            try:
                check_well_formed(func, free_vars=())
            except IRError as exc:
                return out, (f"produced an ill-formed @{gvar.name_hint}", str(exc))
        if self.type_check:
            try:
                self.infer(out)
            except IRError as exc:
                return out, ("produced a module that does not type-check", str(exc))
        try:
            expected = self.run(mod, list(args))
        except Exception as exc:  # noqa: BLE001 - reported, but not as the pass's fault
            return out, ("was not to blame: the executor failed on the program *before* the "
                         "pass (a generator or executor problem)", f"{type(exc).__name__}: {exc}")
        try:
            actual = self.run(out, list(args))
        except Exception as exc:  # noqa: BLE001 - the transformed program failed to run
            return out, ("produced a program that fails to run", f"{type(exc).__name__}: {exc}")
        try:
            compare(actual, expected, rtol=self.rtol, atol=self.atol, exact=self.exact)
        except ValueMismatch as exc:
            return out, ("changed the result", str(exc))
        if self.idempotent:
            return out, self.idempotence_problem(out)
        return out, None

    def idempotence_problem(self, out):
        """None, or what a second run of the pass changed."""
        again = self.apply(out)
        names = sorted(g.name_hint for g in out.functions)
        if sorted(g.name_hint for g in again.functions) != names:
            return ("is not idempotent (a second run changed the globals)",
                    "after a second run:\n" + _main_only(again))
        for name in names:
            if not structural_equal(again[name], out[name], map_free_vars=True):
                return (f"is not idempotent (a second run changed @{name})",
                        "after a second run:\n" + _main_only(again))
        return None


def check_pass(pass_or_fn, *, programs="dataflow", max_examples: int | None = None,
               executor="debug", rtol: float = 1e-5, atol: float = 1e-6, exact: bool = False,
               idempotent: bool = False, type_check: bool = True, verify: bool = True,
               shrink: bool = True, seed: int | None = None) -> PassCheckResult:
    """Property-test ``pass_or_fn`` on generated programs (see the module docstring).

    Args:
        pass_or_fn: a pass, or any callable ``IRModule -> IRModule``; it receives a
            type-checked module whose ``main`` is the generated program.
        programs: which programs to generate (see :func:`program_strategy`): ``"dataflow"``
            (default), ``"control"``, ``"adt"``, ``"effects"``, a tuple of those, or a
            strategy such as ``strategies.tensor_exprs(ops=("add", "exp"), max_steps=4)``.
        max_examples: programs to try; default :data:`DEFAULT_EXAMPLES`, multiplied by 20
            under ``pytest --irlib-thorough`` (the ``thorough`` hypothesis profile).
        executor: runs ``main`` before and after: a name registered in
            :mod:`irlib.testing.runners` (``"debug"``, ``"graph"``, ``"python"`` once
            ``interp`` is imported; ``"dataflow"`` always) or a callable
            ``run(mod, args) -> value``.
        rtol, atol: tolerance on floating-point results. The defaults allow rounding only;
            a pass that is exact only approximately (FastMath-like) passes looser ones.
        exact: require bitwise-identical results instead.
        idempotent: also require that a second run of the pass changes nothing.
        type_check: require the output module to type-check (on by default).
        verify: run the pass in verify mode (on by default): inside a copy of the current
            PassContext with ``config["irlib.verify"]``, so each pass a Sequential (or a
            pipeline) runs is checked well formed and type-checked as it finishes, and a
            broken program is reported with the name of the inner pass that broke it.
        shrink: let hypothesis shrink a failing program (the default). False reports the
            first failing program found, which is faster but bigger.
        seed: a hypothesis seed, to reproduce a run; None uses the current hypothesis
            profile (the test suite's is derandomized).

    Returns:
        A :class:`PassCheckResult` (how many programs were checked and changed).

    Raises:
        PassCheckError: on the smallest failing program hypothesis finds, with the program
            before and after in the text format, its inputs and what differed.
        UnknownNameError: when ``executor`` names no registered executor.
    """
    run = get_runner(executor)
    strategy = program_strategy(programs)
    checker = _Checker(pass_or_fn, run, rtol, atol, exact, idempotent, type_check, verify)
    budget = max_examples if max_examples is not None else examples(DEFAULT_EXAMPLES)
    # NOTE: never Phase.explain: it reruns the failing program many times under coverage
    # tracing, which costs more than the shrinking; the report says what failed.
    phases = tuple(p for p in Phase if p is not Phase.explain and (shrink or p is not Phase.shrink))
    config = settings(settings.default, max_examples=budget, deadline=None, phases=phases,
                      report_multiple_bugs=False, suppress_health_check=list(HealthCheck))

    @config
    @given(program=strategy.map(_Shown), data=st.data())
    def check(program, data):
        checker.check(program.program, data)

    if seed is not None:
        check = hypothesis_seed(seed)(check)
    check()
    return PassCheckResult(checker.examples, checker.changed)
