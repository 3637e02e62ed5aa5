"""jitkernels.codegen.fast_scalar.erf32 against math.erf, and a generated GELU group that
uses it against numpy written here."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import irlib
import interp
from irlib.testing.budget import examples

pytest.importorskip("numba")
from jitkernels.codegen.fast_scalar import erf32  # noqa: E402


@settings(max_examples=examples(200), deadline=None)
@given(x=st.floats(-20, 20, width=32))
def test_erf32_is_within_3e_7_of_math_erf(x):
    assert abs(float(erf32(np.float32(x))) - math.erf(x)) <= 3e-7


def test_erf32_special_values():
    assert math.isnan(erf32(np.float32("nan")))
    assert erf32(np.float32("inf")) == 1.0 and erf32(np.float32("-inf")) == -1.0
    assert erf32(np.float32(0.0)) == 0.0


def test_generated_gelu_uses_the_vector_erf_and_matches_numpy():
    x = irlib.var("x", shape=(4, 96))
    half, one = irlib.const(0.5), irlib.const(1.0)
    gelu = irlib.multiply(irlib.multiply(x, half),
                          irlib.add(one, irlib.erf(irlib.divide(x, irlib.const(2 ** 0.5)))))
    lib = interp.build(irlib.IRModule.from_expr(irlib.Function([x], gelu)))
    sources = [c.kernel.source for c in lib.lib.compiled.values() if c.kernel is not None]
    assert any("_erf32(" in s for s in sources)
    data = np.random.default_rng(0).standard_normal((4, 96)).astype("float32") * 3
    m = interp.graph_executor.GraphModule(lib["default"](interp.cpu(0)))
    m.run(x=data)
    erf = np.vectorize(math.erf)(data.astype("float64") / math.sqrt(2.0))
    np.testing.assert_allclose(m.get_output(0).numpy(), 0.5 * data * (1 + erf),
                               rtol=1e-6, atol=1e-6)
