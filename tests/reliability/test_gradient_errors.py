"""Regression (issue #19): gradient rules raise GradientError (an IRError naming the op),
not a bare NotImplementedError."""

import ast
import pathlib

import numpy as np
import pytest

import irlib
from irlib.errors import GradientError, IRError


def scatter_mul_function():
    data = irlib.var("data", shape=(3, 2))
    updates = irlib.var("updates", shape=(1, 2))
    indices = irlib.const(np.array([[0, 1]], "int64"))
    body = irlib.scatter_elements(data, indices, updates, axis=0, reduction="mul")
    return irlib.Function([data, updates], body)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("mode", ["first_order", "higher_order"])
def test_unsupported_gradient_is_a_gradient_error(mode):
    mod = irlib.transform.InferType()(irlib.IRModule.from_expr(scatter_mul_function()))
    with pytest.raises(GradientError) as info:
        irlib.transform.gradient(mod["main"], mod=mod if mode == "higher_order" else None,
                                 mode=mode)
    assert isinstance(info.value, IRError)
    assert "scatter_elements" in str(info.value) and "mul" in str(info.value)


def test_no_bare_not_implemented_error_in_op_rules():
    # Every `raise NotImplementedError` left under irlib/ is an abstract method a subclass
    # must override (developer-facing), never an op's rule.
    root = pathlib.Path(irlib.__file__).parent
    offenders = []
    for path in (root / "op").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Raise) and node.exc is not None:
                target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(target, ast.Name) and target.id == "NotImplementedError":
                    offenders.append(f"{path.name}:{node.lineno}")
    assert offenders == ["extern_call.py:85"] or offenders == [], offenders


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("mode", ["first_order", "higher_order"])
def test_an_op_without_a_gradient_rule_is_a_gradient_error(mode):
    # image.grid_sample registers no gradient rule: the gradient pass says so, naming it
    data = irlib.var("data", shape=(1, 1, 3, 3))
    grid = irlib.var("grid", shape=(1, 2, 2, 2))
    func = irlib.Function([data, grid], irlib.image.grid_sample(data, grid))
    mod = irlib.transform.InferType()(irlib.IRModule.from_expr(func))
    with pytest.raises(GradientError, match="'image.grid_sample' has no registered gradient"):
        irlib.transform.gradient(mod["main"], mod=mod if mode == "higher_order" else None,
                                 mode=mode)
