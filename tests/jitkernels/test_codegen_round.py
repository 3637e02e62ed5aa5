"""The generated code's ``round`` (``np.rint`` in the kernel) against numpy's ``np.round``
(round half to even, ONNX's rule), in a fused group with the arithmetic around it as
DynamicQuantizeLinear writes it: ties at k + 0.5 of both signs, -0.5 -> -0, large values,
infinities and NaN, float32 and float64."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import interp
import irlib
from irlib.testing.budget import examples
from jitkernels import codegen


def _compiled(shape, dtype):
    """The graph executor's function for ``clip(round(x / s) + 3, -1e30, 1e30)``."""
    x = irlib.var("x", shape=shape, dtype=dtype)
    s = irlib.var("s", shape=(), dtype=dtype)
    body = irlib.clip(irlib.add(irlib.round(irlib.divide(x, s)), irlib.const(3.0, dtype=dtype)),
                      -1e30, 1e30)
    mod = irlib.IRModule.from_expr(irlib.Function([x, s], body))
    with irlib.transform.PassContext(opt_level=3):
        return interp.create_executor("graph", mod=mod, device=interp.cpu(0),
                                      target="cpu").evaluate()


_SPECIAL = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 1e7 + 0.5, 2.0 ** 23 + 1, 3e38,
            np.inf, -np.inf, np.nan, -0.0]


@settings(max_examples=examples(20), deadline=None)
@given(dtype=st.sampled_from(["float32", "float64"]), size=st.integers(1, 40),
       data=st.data())
def test_generated_round_is_half_to_even(dtype, size, data):
    values = data.draw(hnp.arrays(dtype, (size,), elements=st.one_of(
        st.sampled_from(_SPECIAL),
        st.integers(-300, 300).map(lambda k: k + 0.5),
        st.floats(-1e6, 1e6, width=32 if dtype == "float32" else 64))))
    values = values.astype(dtype)
    scale = np.array(1.0, dtype)
    got = _compiled((size,), dtype)(values, scale).numpy()
    want = np.clip(np.round(values / scale) + np.array(3, dtype), -1e30, 1e30).astype(dtype)
    np.testing.assert_array_equal(got, want)


def test_round_group_is_generated_code():
    x = irlib.var("x", shape=(8,), dtype="float32")
    func = irlib.Function([x], irlib.round(irlib.multiply(x, irlib.const(np.float32(2)))))
    func = irlib.transform.InferType()(irlib.IRModule.from_expr(func))["main"]
    primitive = func.with_attr("Primitive", 1) if hasattr(func, "with_attr") else func
    kernel = codegen.compile_primitive(primitive)
    assert kernel is not None and "np.rint" in kernel.source
