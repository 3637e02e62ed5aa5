"""The op library's "is this expression typed?" checks catch exactly UntypedError (what
``checked_type`` raises before inference), so any other failure surfaces instead of being
read as "untyped"."""

from __future__ import annotations

import pytest

import irlib
from irlib.errors import GradientError
from irlib.op._composite import arg_types
from irlib.op.transform import checked_type_for_grad


class _Broken:
    """An expression stand-in whose type lookup fails for a reason other than "untyped"."""

    @property
    def checked_type(self):
        raise RuntimeError("broken type slot")


def test_untyped_argument_is_a_gradient_error_naming_the_op():
    x = irlib.var("x", shape=(2, 3))
    with pytest.raises(GradientError, match="nn.dense"):
        checked_type_for_grad(x, "nn.dense")
    with pytest.raises(GradientError, match="nn.lrn"):
        arg_types([x], "nn.lrn")


def test_typed_argument_gives_its_type():
    typed = irlib.infer_type(irlib.Function([irlib.var("x", shape=(2, 3))], irlib.const(0.0)))
    x = typed.params[0]
    assert tuple(checked_type_for_grad(x, "exp").shape) == (2, 3)
    assert [tuple(t.shape) for t in arg_types([x], "exp")] == [(2, 3)]


def test_other_failures_are_not_read_as_untyped():
    with pytest.raises(RuntimeError, match="broken type slot"):
        checked_type_for_grad(_Broken(), "nn.dense")
    with pytest.raises(RuntimeError, match="broken type slot"):
        arg_types([_Broken()], "nn.lrn")
