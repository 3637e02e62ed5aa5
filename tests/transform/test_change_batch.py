"""ChangeBatch: the listed parameters get the new batch size; types follow."""

import numpy as np
import pytest

import irlib
from irlib import Function, IRModule, var
from irlib.errors import IRError, TypeInferenceError
from irlib.transform import ChangeBatch

from _graph_opt_helpers import assert_close, run


def test_reference_example_on_the_mlp():
    import zoo
    mod, _ = zoo.mlp.get_workload(1)
    data = mod["main"].params[0]
    out = ChangeBatch({data: 0}, batch_size=123)(mod)
    main = out["main"]
    assert tuple(main.params[0].type_annotation.shape)[0] == 123
    assert tuple(main.checked_type.ret_type.shape) == (123, 10)
    assert [p.name_hint for p in main.params] == [p.name_hint for p in mod["main"].params]


def test_other_axis_and_meaning():
    x = var("x", shape=(3, 1), dtype="float64")
    mod = IRModule.from_expr(Function([x], irlib.exp(x), irlib.TensorType((3, 1), "float64")))
    out = ChangeBatch({x: 1}, batch_size=4)(mod)
    values = np.random.default_rng(0).standard_normal((3, 4))
    assert_close(run(out, [values]), np.exp(values))


def test_errors():
    x = var("x")
    with pytest.raises(IRError, match="no tensor type"):
        ChangeBatch({x: 0})(IRModule.from_expr(Function([x], x)))
    y = var("y", shape=(2, 3))
    fixed = IRModule.from_expr(Function([y], irlib.reshape(y, (6,))))
    with pytest.raises(TypeInferenceError):
        ChangeBatch({y: 0}, batch_size=5)(fixed)
