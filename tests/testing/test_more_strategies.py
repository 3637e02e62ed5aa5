"""effect_programs, sharing_programs and the program forms: well formed, closed, typed as
declared, and their oracles agree with the interpreter; sample() is reproducible."""

import numpy as np
from hypothesis import given, settings, strategies as st

import interp
from irlib import analysis
from irlib.testing import sample
from irlib.testing import strategies as irst
from irlib.testing.budget import examples
from irlib.testing.effect_strategies import effect_programs
from irlib.testing.program_forms import bind_inputs, computed_twice
from irlib.testing.runners import compare
from irlib.testing.sharing_strategies import sharing_programs
from irlib.transform import InferType


def run(program, inputs):
    return interp.create_executor("debug", mod=program.module()).evaluate()(
        *program.input_list(inputs))


def check_program(program, inputs, exact):
    assert set(analysis.free_vars(program.expr)) <= set(program.params)
    analysis.check_well_formed(program.expr)
    typed = InferType()(program.module())
    assert typed["main"].checked_type.ret_type == program.result_type
    compare(run(program, inputs), program.reference(inputs), exact=exact)


@settings(max_examples=examples(40), deadline=None)
@given(program=effect_programs(), data=st.data())
def test_effect_programs(program, data):
    check_program(program, data.draw(program.inputs_strategy()), exact=True)


@settings(max_examples=examples(40), deadline=None)
@given(program=sharing_programs(), data=st.data())
def test_sharing_programs(program, data):
    check_program(program, data.draw(program.inputs_strategy()), exact=False)


@settings(max_examples=examples(30), deadline=None)
@given(program=irst.tensor_exprs(min_inputs=2), seed=st.integers(0, 100))
def test_program_forms_keep_their_oracle(program, seed):
    inputs = program.random_inputs(seed)
    twice = computed_twice(program)
    check_program(twice, inputs, exact=False)
    first = program.params[0]
    bound = bind_inputs(program, {first: inputs[first]})
    assert first not in bound.params and len(bound.params) == len(program.params) - 1
    check_program(bound, {p: inputs[p] for p in bound.params}, exact=False)


def test_sample_is_reproducible_from_its_seed():
    texts = [repr(sample(irst.tensor_exprs(), seed=s)) for s in (11, 11, 12)]
    assert texts[0] == texts[1]
    assert texts[0] != texts[2]
    assert isinstance(sample(st.integers(0, 10 ** 6), seed=3), int)


def test_docs_testing_page_shows_every_public_strategy():
    import pathlib
    import re
    from hypothesis.strategies import SearchStrategy
    from irlib.testing import adt_strategies, effect_strategies, onnx_strategies
    from irlib.testing import sharing_strategies, strategies
    page = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "testing.md").read_text()
    code = "\n".join(re.findall(r"```python\n(.*?)```", page, re.S))
    modules = (strategies, adt_strategies, effect_strategies, sharing_strategies,
               onnx_strategies)
    public = set()
    for module in modules:
        for name in dir(module):
            value = getattr(module, name)
            if name.startswith("_") or not callable(value) or isinstance(value, type):
                continue
            if getattr(value, "__module__", "") != module.__name__:
                continue
            try:
                made = value(*(["int"] if name == "plain_adt_values" else []))
            except TypeError:
                continue
            if isinstance(made, SearchStrategy):
                public.add(name)
    assert {"tensor_exprs", "programs", "adt_programs", "effect_programs",
            "sharing_programs", "onnx_models", "shapes", "tensor_types"} <= public
    missing = sorted(name for name in public if f"{name}(" not in code)
    assert not missing, f"docs/testing.md has no example of {missing}"
