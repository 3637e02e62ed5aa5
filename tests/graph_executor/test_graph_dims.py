"""interp.graph_dims: the JSON spelling of symbolic dims, their generated evaluation, binding."""

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from irlib.errors import IRError
from irlib.ir.dims import floordiv, format_dim, size_var, substitute_dim
from interp.graph_dims import ShapeEvaluator, SizeBinder, dim_text, parse_dim
from interp.graph_runtime import GraphInputError
from jitkernels.codegen.dim_source import dim_source

NAMES = ("a", "b", "n")


@st.composite
def dims(draw, depth=3):
    """Random dims over a, b, n: ints, variables, +, -, *, floordiv by a positive int."""
    if depth == 0 or draw(st.booleans()):
        return draw(st.one_of(st.integers(0, 9), st.sampled_from(NAMES).map(size_var)))
    left = draw(dims(depth=depth - 1))
    kind = draw(st.sampled_from(["+", "*", "-", "//"]))
    if kind == "//":
        return floordiv(left, draw(st.integers(1, 5)))
    right = draw(dims(depth=depth - 1))
    return left + right if kind == "+" else left * right if kind == "*" else left - right


@settings(max_examples=60, deadline=None)
@given(shape=st.lists(dims(), min_size=0, max_size=4),
       values=st.tuples(st.integers(0, 50), st.integers(0, 50), st.integers(0, 50)))
def test_shape_evaluator_agrees_with_substitute_dim(shape, values):
    assume(not any(isinstance(d, int) and d < 0 for d in shape))   # no such tensor type
    bindings = dict(zip(NAMES, values))
    want = tuple(substitute_dim(d, bindings) for d in shape)
    evaluator = ShapeEvaluator([tuple(shape)], [4], NAMES)
    if any(w < 0 for w in want):
        with pytest.raises(GraphInputError, match="negative dim"):
            evaluator(*values)
        return
    shapes, nbytes = evaluator(*values)
    assert shapes == (want,)
    assert nbytes == (4 * int(np.prod(want, dtype=np.int64)),)
    # The kernels' spelling of each dim evaluates to the same value.
    scope = {f"sz_{k}": v for k, v in bindings.items()}
    assert tuple(eval(dim_source(d), {}, scope) for d in shape) == want


@settings(max_examples=60, deadline=None)
@given(dim=dims())
def test_json_text_round_trips(dim):
    assert parse_dim(dim_text(dim)) == dim


@pytest.mark.parametrize("text", ["__import__('os')", "n.real", "n ** 2", "[n]", "lambda: 1",
                                  "f(n)", "n / 2", "1.5", "", "floordiv(n)"])
def test_malformed_dim_strings_are_rejected(text):
    with pytest.raises(IRError, match="malformed graph JSON"):
        parse_dim(text, "entry 3")


def test_parse_dim_reads_the_printed_forms():
    n, c = size_var("n"), size_var("c")
    for dim in (n, c + n, 2 * n + 1, floordiv(n, 2), n * c - 3, 0 - n + 4):
        assert parse_dim(format_dim(dim)) == dim
    assert parse_dim(7) == 7


def test_binder_errors_and_values():
    n, c = size_var("n"), size_var("c")
    binder = SizeBinder(["x", "cache", "t"], [(1, n), (c, n), ()], {2: "t"}, ("c", "n", "t"))
    assert binder.bind([np.zeros((1, 3)), np.zeros((5, 3)), np.array(7)]) == (5, 3, 7)
    with pytest.raises(GraphInputError, match=r"input 'cache'.*dim 1.*bound to 3.*got 4"):
        binder.bind([np.zeros((1, 3)), np.zeros((5, 4)), np.array(7)])
    with pytest.raises(GraphInputError, match="size input 't' must hold one integer"):
        binder.bind([np.zeros((1, 3)), np.zeros((5, 3)), np.array(7.5)])
    with pytest.raises(IRError, match="no input binds"):
        SizeBinder(["x"], [(c + n,)], {}, ("c", "n"))


@st.composite
def binding_cases(draw):
    """Input dims over n and c (each also appearing plainly), and actual shapes that
    usually agree with one binding but sometimes have one dim off."""
    n, c = size_var("n"), size_var("c")
    choices = [3, n, c, n + c, 2 * n, n + 1]
    inputs = [draw(st.lists(st.sampled_from(choices), min_size=1, max_size=3))
              for _ in range(draw(st.integers(1, 3)))]
    inputs.append([n, c])
    draw(st.randoms()).shuffle(inputs)
    values = {"n": draw(st.integers(0, 5)), "c": draw(st.integers(0, 5))}
    shapes = [[substitute_dim(d, values) for d in dims] for dims in inputs]
    if draw(st.booleans()):
        k = draw(st.integers(0, len(shapes) - 1))
        axes = [a for a, d in enumerate(inputs[k]) if not isinstance(d, int)]
        if axes:
            axis = draw(st.sampled_from(axes))
            shapes[k][axis] += draw(st.sampled_from([-1, 1]))
            if shapes[k][axis] < 0:
                shapes[k][axis] = 2
    return inputs, shapes


@settings(max_examples=80, deadline=None)
@given(binding_cases())
def test_size_binder_follows_the_dim_binding_rule(case):
    from irlib.errors import ArgumentShapeError
    from irlib.ir.dim_binding import bind_size_vars
    from irlib.ir.types import TensorType
    inputs, shapes = case
    names = [f"x{k}" for k in range(len(inputs))]
    binder = SizeBinder(names, [tuple(d) for d in inputs], {}, ("c", "n"))
    arrays = [np.zeros(shape, np.float32) for shape in shapes]
    try:
        want = bind_size_vars([TensorType(tuple(d), "float32") for d in inputs],
                              [tuple(s) for s in shapes], param_names=names)
    except ArgumentShapeError:
        with pytest.raises(GraphInputError):
            binder.bind(arrays)
        return
    assert binder.bind(arrays) == (want["c"], want["n"])
