"""Parser fuzzing (issue #19): text mutants and mutated generated programs.

Every input must parse or raise an IRError with a message. Long mode:
``python benchmarks/fuzz.py --minutes N``.
"""

import random

from hypothesis import given, settings, strategies as st

import irlib
from irlib.testing.strategies import programs

from campaigns import Report, classify, mutate_text, parser_campaign


def test_parser_text_mutants():
    report = parser_campaign(4000, seed=19)
    assert report.cases == 4000
    assert report.failures == [], report.failures[:5]


@settings(max_examples=15, deadline=None)
@given(programs(), st.integers(0, 2 ** 32 - 1))
def test_mutants_of_generated_programs(program, seed):
    text = irlib.IRModule.from_expr(program.function).astext()
    # the unmutated text round-trips (a generated program is well formed)
    irlib.parse(text)
    rng = random.Random(seed)
    report = Report("generated")
    for _ in range(40):
        mutant = mutate_text(text, rng)
        classify(report, mutant, lambda: irlib.parse(mutant))
    assert report.failures == [], report.failures[:3]


def test_classify_records_foreign_exceptions():
    # the oracle itself: a KeyError is a failure, an IRError is not
    report = Report("check")
    classify(report, "a", lambda: {}["missing"])
    classify(report, "b", lambda: irlib.parse("def"))
    assert report.irlib_errors == 1 and len(report.failures) == 1
    assert report.failures[0][1].startswith("KeyError")
