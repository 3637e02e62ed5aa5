"""LowerIntegerMatMul and its value ranges: quantized products cast to float become float
products, bit for bit.

* the value ranges of hand-written expressions are the hand-derived intervals;
* ``check_pass`` on generated quantized-Linear programs (hypothesis over shapes, the
  activation's source: a dynamically quantized float tensor, uint8 or int8 data with a zero
  point; constant or run-time int8 weights; ``nn.matmul``/``nn.dense``, transposed weights,
  float32/float64 results, weights big enough to need a split depth or to wrap int32)
  requires bitwise-identical results on the reference interpreter, and the test's own bound
  says when the product must have been rewritten and when it must have been left alone;
* the graph executor at opt_level 3 matches a numpy oracle written here (quantize with
  ``np.round``, int64 product, float32 cast, scale) bit for bit;
* generic dataflow programs pass through unchanged in meaning.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import interp
import irlib
from irlib.analysis import check_well_formed  # noqa: F401 - imported for the checker
from irlib.ir.functor import post_order
from irlib.testing import check_pass
from irlib.testing.budget import examples
from irlib.transform import InferType, LowerIntegerMatMul
from irlib.transform._value_range import Range, ValueRanges
from irlib.transform.lower_integer_matmul import chunk_bounds

EXACT32 = 2 ** 24
INT32_MAX = 2 ** 31 - 1


def _typed(expr, params):
    mod = InferType()(irlib.IRModule.from_expr(irlib.Function(params, expr)))
    return mod["main"].body


def _ranges_of(expr, params):
    body = _typed(expr, params)
    return body, ValueRanges(body)


# -- value ranges ----------------------------------------------------------------------------

def test_quantized_activation_range_is_hand_derived():
    x = irlib.var("x", shape=(4, 8), dtype="float32")
    zp = irlib.var("zp", shape=(), dtype="uint8")
    scale = irlib.const(np.float32(0.1))
    q = irlib.cast(irlib.clip(irlib.add(irlib.round(irlib.divide(x, scale)),
                                        irlib.cast(zp, "float32")), 0.0, 255.0), "uint8")
    shifted = irlib.subtract(irlib.cast(q, "int32"), irlib.cast(zp, "int32"))
    body, ranges = _ranges_of(shifted, [x, zp])
    assert ranges[body] == Range(-255.0, 255.0, True)
    assert not ranges.may_wrap(body)
    clipped = body.args[0].args[0].args[0]
    assert ranges[clipped] == Range(0.0, 255.0, True)
    divided = clipped.args[0].args[0].args[0]
    assert ranges[divided].lo == -np.inf and not ranges[divided].integral


def test_ranges_of_constants_wraps_and_floats():
    w = irlib.const(np.array([[-7, 3], [100, -128]], "int8"))
    u = irlib.var("u", shape=(3,), dtype="uint8")
    body, ranges = _ranges_of(irlib.Tuple([irlib.cast(w, "int32"), irlib.add(u, u),
                                           irlib.multiply(irlib.cast(u, "int16"),
                                                          irlib.cast(u, "int16"))]), [u])
    cast_w, wrapped, product = body.fields
    assert ranges[cast_w] == Range(-128.0, 100.0, True)
    assert ranges[wrapped] == Range(0.0, 255.0, True) and ranges.may_wrap(wrapped)
    # 255 * 255 = 65025 leaves int16: the whole int16 range, marked as wrapping
    assert ranges[product] == Range(-32768.0, 32767.0, True) and ranges.may_wrap(product)


def test_chunk_bounds_split_depth_exactly():
    weight = np.full((1536, 3), 127, np.int64)
    # 1536 * 255 * 127 = 49.7M: three chunks of 512 (16.58M each) are the fewest exact
    assert chunk_bounds(1536, 255.0, weight) == [(0, 512), (512, 1024), (1024, 1536)]
    assert chunk_bounds(384, 255.0, weight[:384]) == [(0, 384)]
    assert chunk_bounds(384, 255.0, None, 127.0) == [(0, 384)]
    assert chunk_bounds(1536, 255.0, None, 127.0) is None          # no split without constants
    assert chunk_bounds(70000, 255.0, np.full((70000, 1), 127, np.int64)) is None   # wraps


# -- generated quantized Linear programs ------------------------------------------------------

class _Program:
    """A quantized Linear as irlib IR, with its inputs' strategy (for ``check_pass``)."""

    def __init__(self, draw):
        self.rows = draw(st.sampled_from([(1,), (3,), (2, 5), (1, 4)]))
        self.depth = draw(st.sampled_from([1, 7, 64, 300, 1100, 1600]))
        self.units = draw(st.sampled_from([1, 5, 16]))
        self.source = draw(st.sampled_from(["dynamic", "uint8", "int8"]))
        self.weight_kind = draw(st.sampled_from(["constant", "constant", "input"]))
        self.dense = draw(st.booleans())
        self.transpose_b = self.dense or draw(st.booleans())
        self.target = draw(st.sampled_from(["float32", "float32", "float64"]))
        self.big = draw(st.sampled_from(["full", "small", "wrap"]))
        seed = draw(st.integers(0, 2 ** 16))
        rng = np.random.default_rng(seed)
        high = {"full": 127, "small": 3, "wrap": 127}[self.big]
        w_shape = (self.units, self.depth) if self.transpose_b else (self.depth, self.units)
        weight = rng.integers(-high, high + 1, size=w_shape)
        if self.big == "wrap":                     # int32 wrap-around needs ~2^31 / 255
            weight = np.where(weight >= 0, 127, -127) * 300
            weight = np.where(rng.random(w_shape) < 0.5, weight, -weight)
        self.weight = weight.astype("int32")
        self.zero_point = int(rng.integers(0, 256)) if self.source != "int8" else \
            int(rng.integers(-128, 128))
        self.params, self.bounds = [], []
        self.expr = self._build()

    def _param(self, name, shape, dtype, bounds):
        var = irlib.var(name, shape=shape, dtype=dtype)
        self.params.append(var)
        self.bounds.append((dtype, bounds))
        return var

    def _activation(self):
        shape = self.rows + (self.depth,)
        if self.source == "dynamic":
            x = self._param("x", shape, "float32", (-4.0, 4.0))
            high = irlib.maximum(irlib.max(x), irlib.const(np.float32(0)))
            low = irlib.minimum(irlib.min(x), irlib.const(np.float32(0)))
            # onnxruntime's rule (the importer's): scale 1 for an all-zero tensor, so no NaN
            # reaches the float -> uint8 casts (whose NaN result is undefined)
            scale = irlib.where(irlib.equal(high, low), irlib.const(np.float32(1)), irlib.divide(
                irlib.subtract(high, low), irlib.const(np.float32(255))))
            zp = irlib.cast(irlib.clip(irlib.round(irlib.divide(irlib.negative(low), scale)),
                                       0.0, 255.0), "uint8")
            q = irlib.cast(irlib.clip(irlib.add(irlib.round(irlib.divide(x, scale)),
                                                irlib.cast(zp, "float32")), 0.0, 255.0),
                           "uint8")
            return irlib.subtract(irlib.cast(q, "int32"), irlib.cast(zp, "int32"))
        dtype = self.source
        limits = (0, 255) if dtype == "uint8" else (-128, 127)
        data = self._param("q", shape, dtype, limits)
        zp = irlib.const(np.array(self.zero_point, dtype))
        return irlib.subtract(irlib.cast(data, "int32"), irlib.cast(zp, "int32"))

    def _build(self):
        a = self._activation()
        if self.weight_kind == "constant":
            b = irlib.const(self.weight)
        else:
            b = irlib.cast(self._param("w", self.weight.shape, "int8", (-127, 127)), "int32")
        if self.dense:
            product = irlib.nn.dense(a, b)
        else:
            product = irlib.nn.matmul(a, b, transpose_b=self.transpose_b)
        scale = irlib.const(np.float32(0.0123))
        return irlib.multiply(irlib.cast(product, self.target), irlib.cast(scale, self.target))

    # what check_pass needs
    def module(self):
        """``main = fn (params) { expr }``."""
        return irlib.IRModule.from_expr(irlib.Function(self.params, self.expr))

    def inputs_strategy(self):
        """Inputs inside each parameter's interval."""
        fields = {}
        for var, (dtype, (lo, hi)) in zip(self.params, self.bounds):
            shape = tuple(int(d) for d in var.type_annotation.shape)
            elements = st.integers(lo, hi) if dtype != "float32" else \
                st.floats(lo, hi, width=32)
            fields[var] = hnp.arrays(dtype, shape, elements=elements)
        return st.fixed_dictionaries(fields)

    def input_list(self, inputs):
        """The inputs in parameter order."""
        return [inputs[p] for p in self.params]

    def expected_bound(self) -> float:
        """The test's own bound on every partial sum (column L1 norm for a constant)."""
        magnitude = 255.0 if self.source != "int8" else 128.0 + abs(self.zero_point)
        if self.source == "uint8":
            magnitude = float(max(self.zero_point, 255 - self.zero_point))
        if self.source == "dynamic":
            magnitude = 255.0
        w = np.abs(self.weight.astype(np.int64))
        w = w.T if self.transpose_b else w
        if self.weight_kind == "constant":
            return magnitude * float(w.sum(axis=0).max())
        return magnitude * self.depth * 127.0

    def one_signed_fits(self) -> bool:
        """The test's own check that ``q @ W`` (``q`` uint8, ``W`` constant) and
        ``zp * colsum(W)`` are exact in float32 and the result cannot wrap int32."""
        if self.source == "int8" or self.weight_kind != "constant":
            return False
        w = self.weight.astype(np.int64)
        w = w.T if self.transpose_b else w
        positive, negative = np.clip(w, 0, None).sum(axis=0), np.clip(-w, 0, None).sum(axis=0)
        return 255 * int(np.maximum(positive, negative).max()) <= EXACT32 and \
            255 * int(np.abs(w.sum(axis=0)).max()) <= EXACT32 and \
            self.expected_bound() <= INT32_MAX

    def __repr__(self):
        return self.module().astext(show_meta_data=False)


@st.composite
def quantized_programs(draw):
    """A :class:`_Program` (quantized Linear) drawn by hypothesis."""
    return _Program(draw)


def _int_products(mod) -> int:
    return sum(1 for n in post_order(mod["main"].body)
               if isinstance(n, irlib.Call) and getattr(n.op, "name", "") in
               ("nn.matmul", "nn.dense") and n.checked_type.dtype.startswith("int"))


def test_check_pass_on_quantized_linears():
    result = check_pass(LowerIntegerMatMul(), programs=quantized_programs(),
                        executor="debug", exact=True, idempotent=True,
                        max_examples=examples(40))
    assert result.changed > 0


@settings(max_examples=examples(30), deadline=None)
@given(program=quantized_programs())
def test_rewritten_exactly_when_the_bound_holds(program):
    before = InferType()(program.module())
    after = LowerIntegerMatMul()(before)
    bound = program.expected_bound()
    if bound <= EXACT32:
        assert _int_products(after) == 0
        assert "strided_slice" not in after.astext(show_meta_data=False)
    if bound > INT32_MAX:
        assert _int_products(after) == 1            # the reference wraps: left alone
    if program.one_signed_fits():
        # q - zp with q >= 0: q @ W - zp * colsum(W), one product, no split depth
        assert _int_products(after) == 0
        assert "strided_slice" not in after.astext(show_meta_data=False)


def test_generic_programs_keep_their_meaning():
    check_pass(LowerIntegerMatMul(), programs="dataflow", max_examples=examples(15))


# -- the graph executor against a numpy oracle --------------------------------------------------

def _quantized_linear_oracle(x, weight, bias, w_scale):
    """numpy: DynamicQuantizeLinear (ONNX rules: round half to even, saturate), the int64
    product, float32 cast, scales and bias, in the ONNX graph's order."""
    high, low = max(float(x.max()), 0.0), min(float(x.min()), 0.0)
    scale = np.float32(1.0) if high == low else \
        np.float32(np.float32(high) - np.float32(low)) / np.float32(255)
    zp = np.clip(np.round(np.float32(-np.float32(low)) / scale), 0, 255).astype(np.uint8)
    q = np.clip(np.round(x / scale) + np.float32(zp), 0, 255).astype(np.uint8)
    acc = (q.astype(np.int64) - int(zp)) @ weight.astype(np.int64)
    return acc.astype(np.int32).astype(np.float32) * np.float32(scale * w_scale) + bias


@settings(max_examples=examples(12), deadline=None)
@given(rows=st.sampled_from([1, 4, 33]), depth=st.sampled_from([16, 384, 1536]),
       units=st.sampled_from([8, 40]), shift=st.sampled_from([0.0, 1.5, -0.7]),
       zeros=st.booleans(), seed=st.integers(0, 1000))
def test_graph_executor_matches_numpy_oracle(rows, depth, units, shift, zeros, seed):
    rng = np.random.default_rng(seed)
    x_var = irlib.var("x", shape=(rows, depth), dtype="float32")
    weight = rng.integers(-127, 128, size=(depth, units)).astype(np.int8)
    bias = rng.standard_normal(units).astype(np.float32)
    w_scale = np.float32(0.004)
    high = irlib.maximum(irlib.max(x_var), irlib.const(np.float32(0)))
    low = irlib.minimum(irlib.min(x_var), irlib.const(np.float32(0)))
    scale = irlib.where(irlib.equal(high, low), irlib.const(np.float32(1)),
                        irlib.divide(irlib.subtract(high, low), irlib.const(np.float32(255))))
    zp = irlib.cast(irlib.clip(irlib.round(irlib.divide(irlib.negative(low), scale)),
                               0.0, 255.0), "uint8")
    q = irlib.cast(irlib.clip(irlib.add(irlib.round(irlib.divide(x_var, scale)),
                                        irlib.cast(zp, "float32")), 0.0, 255.0), "uint8")
    a = irlib.subtract(irlib.cast(q, "int32"), irlib.cast(zp, "int32"))
    product = irlib.nn.matmul(a, irlib.cast(irlib.const(weight), "int32"))
    out = irlib.add(irlib.multiply(irlib.cast(product, "float32"),
                                   irlib.multiply(scale, irlib.const(w_scale))),
                    irlib.const(bias))
    mod = irlib.IRModule.from_expr(irlib.Function([x_var], out))
    x = np.zeros((rows, depth), np.float32) if zeros else \
        (rng.standard_normal((rows, depth)) + shift).astype(np.float32)
    with irlib.transform.PassContext(opt_level=3):
        func = interp.create_executor("graph", mod=mod, device=interp.cpu(0),
                                      target="cpu").evaluate()
    got = func(x).numpy()
    want = _quantized_linear_oracle(x, weight, bias, w_scale)
    np.testing.assert_array_equal(got, want)


@settings(max_examples=examples(6), deadline=None)
@given(seed=st.integers(0, 2 ** 16), zero_point=st.integers(0, 255),
       target=st.sampled_from(["float32", "float64"]), dense=st.booleans())
def test_offset_form_avoids_the_split_and_is_exact(seed, zero_point, target, dense):
    """1536 deep, uniform int8 weights: |q - zp| * sum|W| > 2**24 (two chunks), but the
    one-signed q (uint8) keeps q @ W below 2**24, so q @ W - zp * colsum(W) is one product."""
    rng = np.random.default_rng(seed)
    depth, units = 1536, 24
    weight = rng.integers(-127, 128, size=(units, depth) if dense else (depth, units))
    w_kn = weight.T if dense else weight
    assert 255 * np.abs(w_kn).sum(axis=0).max() > EXACT32          # the L1 bound fails
    q = irlib.var("q", shape=(5, depth), dtype="uint8")
    a = irlib.subtract(irlib.cast(q, "int32"), irlib.const(np.int32(zero_point)))
    b = irlib.const(weight.astype("int32"))
    product = irlib.nn.dense(a, b) if dense else irlib.nn.matmul(a, b)
    mod = InferType()(irlib.IRModule.from_expr(irlib.Function([q], irlib.cast(product,
                                                                              target))))
    after = LowerIntegerMatMul()(mod)
    text = after.astext(show_meta_data=False)
    assert _int_products(after) == 0 and "strided_slice" not in text
    x = rng.integers(0, 256, size=(5, depth)).astype(np.uint8)
    want = ((x.astype(np.int64) - zero_point) @ w_kn).astype(np.int32).astype(target)
    for module in (mod, after):
        got = interp.create_executor("debug", mod=module, device=interp.cpu(0),
                                     target="python").evaluate()(x).numpy()
        np.testing.assert_array_equal(got, want)
