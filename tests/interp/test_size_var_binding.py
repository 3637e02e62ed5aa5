"""Size variables bound at function entry, on the interpreter and with run_as_python.

Programs whose parameter types carry symbolic dims (``Tensor[(1, n), float32]``) and whose op
attributes mention them (``reshape(newshape=[n, 4])``, ``full(shape=[n, n])``) run at several
sizes and are compared with numpy written here; mismatched sizes raise
``ArgumentShapeError``; the ``size_params`` attribute binds a size from a scalar argument.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import interp
import irlib
from irlib import size_var

EXECUTORS = ("interpreter", "python")


def run(mod, kind, *args, name="main"):
    """``mod[name](*args)`` on the interpreter or as generated Python."""
    if kind == "interpreter":
        return interp.create_executor("debug", mod).evaluate(mod.get_global_var(name))(*args)
    return interp.run_as_python(mod.get_global_var(name), mod)(*args)


ATTRS_PROGRAM = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, n), float32], %w: Tensor[(n, 64), float32]) {
  %0 = reshape(%w, newshape=[1, n, 4, 16]);
  %1 = transpose(%0, axes=[0, 2, 1, 3]);
  %2 = full(2f, shape=[n, n], dtype="float32");
  %3 = zeros(shape=[1, n], dtype="float32");
  %4 = ones(shape=[n], dtype="float32");
  %5 = broadcast_to(reshape(%x, newshape=[1, 1, n]), shape=[2, n, n]);
  %6 = strided_slice(%w, begin=[0, 0], end=[n - 1, 64]);
  (%1, add(%2, %4), add(%x, %3), %5, %6)
}
"""


@pytest.mark.parametrize("kind", EXECUTORS)
@pytest.mark.parametrize("n", [1, 3, 6])
def test_symbolic_attrs_run_at_several_sizes(kind, n):
    mod = irlib.parse(ATTRS_PROGRAM)
    rng = np.random.default_rng(n)
    x = rng.standard_normal((1, n)).astype("float32")
    w = rng.standard_normal((n, 64)).astype("float32")
    out = run(mod, kind, x, w)
    np.testing.assert_array_equal(out[0].numpy(), w.reshape(1, n, 4, 16).transpose(0, 2, 1, 3))
    np.testing.assert_array_equal(out[1].numpy(), np.full((n, n), 3.0, "float32"))
    np.testing.assert_array_equal(out[2].numpy(), x)
    np.testing.assert_array_equal(out[3].numpy(), np.broadcast_to(x.reshape(1, 1, n), (2, n, n)))
    np.testing.assert_array_equal(out[4].numpy(), w[: n - 1])


@pytest.mark.parametrize("kind", EXECUTORS)
def test_repeated_size_variable_mismatch_names_everything(kind):
    mod = irlib.parse("""#[version = "0.0.5"]
def @main(%a: Tensor[(n, 4), float32], %b: Tensor[(2, n), float32]) {
  add(sum(%a), sum(%b))
}
""")
    a = np.ones((3, 4), "float32")
    np.testing.assert_allclose(run(mod, kind, a, np.ones((2, 3), "float32")).numpy(), 18.0)
    with pytest.raises(irlib.ArgumentShapeError) as info:
        run(mod, kind, a, np.ones((2, 5), "float32"))
    text = str(info.value)
    for piece in ("@main", "%b", "dim 1", "size variable n", "bound to 3", "got size 5"):
        assert piece in text, (piece, text)


@pytest.mark.parametrize("kind", EXECUTORS)
def test_compound_dim_checked_once_bound(kind):
    mod = irlib.parse("""#[version = "0.0.5"]
def @main(%p: Tensor[(n + 1), float32], %q: Tensor[(n), float32]) {
  add(strided_slice(%p, begin=[1], end=[n + 1]), %q)
}
""")
    p = np.arange(5, dtype="float32")
    q = np.ones(4, "float32")
    np.testing.assert_array_equal(run(mod, kind, p, q).numpy(), p[1:] + q)
    with pytest.raises(irlib.ArgumentShapeError, match=r"n \+ 1 = 5 \(with n=4\), got size 6"):
        run(mod, kind, np.arange(6, dtype="float32"), q)


@pytest.mark.parametrize("kind", EXECUTORS)
@pytest.mark.parametrize("total", [2, 5, 8])
def test_size_params_bind_from_a_scalar(kind, total):
    mod = irlib.parse("""#[version = "0.0.5"]
def @main(%cache: Tensor[(8, 4), float32], %total_seq_len: int64, size_params=["total_seq_len"]) {
  %0 = strided_slice(%cache, begin=[0, 0], end=[total_seq_len, 4]);
  %1 = full(1f, shape=[1, total_seq_len], dtype="float32");
  (%0, %1)
}
""")
    cache = np.arange(32, dtype="float32").reshape(8, 4)
    out = run(mod, kind, cache, np.int64(total))
    np.testing.assert_array_equal(out[0].numpy(), cache[:total])
    assert out[1].numpy().shape == (1, total)


@pytest.mark.parametrize("kind", EXECUTORS)
def test_size_param_and_tensor_dim_must_agree(kind):
    mod = irlib.parse("""#[version = "0.0.5"]
def @main(%k: Tensor[(m, 2), float32], %m: int64, size_params=["m"]) {
  reshape(%k, newshape=[2, m])
}
""")
    k = np.arange(6, dtype="float32").reshape(3, 2)
    np.testing.assert_array_equal(run(mod, kind, k, np.int64(3)).numpy(), k.reshape(2, 3))
    with pytest.raises(irlib.ArgumentShapeError, match="size parameter %m"):
        run(mod, kind, k, np.int64(4))


@pytest.mark.parametrize("kind", EXECUTORS)
def test_result_shape_checked_against_substituted_type(kind):
    # an out-of-bounds symbolic end: numpy clamps, the declared type says t rows
    mod = irlib.parse("""#[version = "0.0.5"]
def @main(%cache: Tensor[(4, 2), float32], %t: int64, size_params=["t"]) {
  strided_slice(%cache, begin=[0, 0], end=[t, 2])
}
""")
    with pytest.raises(irlib.IRError, match=r"strided_slice: result has shape \(4, 2\)"):
        run(mod, kind, np.zeros((4, 2), "float32"), np.int64(6))


@pytest.mark.parametrize("kind", EXECUTORS)
def test_closures_see_the_enclosing_bindings(kind):
    n = size_var("n")
    x = irlib.var("x", shape=(n, 2))
    y = irlib.var("y", shape=(2,))
    inner = irlib.Function([y], irlib.add(irlib.full(irlib.const(1.0), shape=[n, 2],
                                                     dtype="float32"), y))
    f = irlib.var("f")
    body = irlib.Let(f, inner, irlib.add(irlib.Call(f, [irlib.const(np.ones(2, "float32"))]),
                                         x))
    mod = irlib.IRModule.from_expr(irlib.Function([x], body))
    for size in (1, 4):
        data = np.arange(2 * size, dtype="float32").reshape(size, 2)
        np.testing.assert_array_equal(run(mod, kind, data).numpy(), data + 2.0)


@pytest.mark.parametrize("kind", EXECUTORS)
def test_closure_returned_keeps_its_bindings(kind):
    # the closure is called after the function that made it returned
    mod = irlib.parse("""#[version = "0.0.5"]
def @make(%x: Tensor[(n), float32]) {
  fn (%s: float32) { full(%s, shape=[n, n], dtype="float32") }
}
def @main(%a: Tensor[(n), float32]) {
  %0 = @make(%a);
  %0(3f)
}
""")
    out = run(mod, kind, np.zeros(3, "float32"))
    np.testing.assert_array_equal(out.numpy(), np.full((3, 3), 3.0, "float32"))


@pytest.mark.parametrize("kind", EXECUTORS)
def test_called_global_binds_from_its_arguments(kind):
    mod = irlib.parse("""#[version = "0.0.5"]
def @g(%v: Tensor[(k, 4), float32]) {
  reshape(%v, newshape=[4, k])
}
def @main(%x: Tensor[(k, 4), float32], %y: Tensor[(2, 4), float32]) {
  (@g(%x), reshape(%y, newshape=[4, 2]))
}
""")
    for rows in (1, 3):
        x = np.arange(4 * rows, dtype="float32").reshape(rows, 4)
        y = np.arange(8, dtype="float32").reshape(2, 4)
        out = run(mod, kind, x, y)
        np.testing.assert_array_equal(out[0].numpy(), x.reshape(4, rows))
        np.testing.assert_array_equal(out[1].numpy(), y.reshape(4, 2))


@pytest.mark.parametrize("kind", EXECUTORS)
def test_unbound_variable_in_an_attribute(kind):
    n, m = size_var("n"), size_var("m")
    x = irlib.var("x", shape=(n,))
    body = irlib.add(irlib.zeros([m], "float32"), irlib.const(1.0))
    mod = irlib.IRModule.from_expr(irlib.Function([x], body))
    with pytest.raises(irlib.UnboundSizeVarError, match="m"):
        run(mod, kind, np.zeros(2, "float32"))


@pytest.mark.parametrize("kind", EXECUTORS)
def test_recursive_global_rebinds_each_call(kind):
    # a tail-recursive loop (a while loop in generated Python) whose size changes each turn
    mod = irlib.parse("""#[version = "0.0.5"]
def @count(%i: int64, %acc: float32, size_params=["i"]) -> float32 {
  if (equal(%i, 0i64)) {
    %acc
  } else {
    @count(subtract(%i, 1i64), add(%acc, sum(ones(shape=[i, 2], dtype="float32"))))
  }
}
""")
    out = run(mod, kind, np.int64(4), np.float32(0.5), name="count")
    assert out.numpy().item() == 0.5 + 2 * (4 + 3 + 2 + 1)


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 5), st.integers(1, 4), st.sampled_from(EXECUTORS))
def test_attention_mask_shapes(seq, past, kind):
    # the nn builder's causal-mask pattern: full/triu-free mask from two size variables
    mod = irlib.parse("""#[version = "0.0.5"]
def @main(%q: Tensor[(1, 2, seq_len, 4), float32], %k: Tensor[(1, 2, total_seq_len, 4), float32]) {
  %0 = nn.batch_matmul(reshape(%q, newshape=[2, seq_len, 4]), reshape(%k, newshape=[2, total_seq_len, 4]));
  %1 = reshape(%0, newshape=[1, 2, seq_len, total_seq_len]);
  %2 = full(-1f, shape=[seq_len, total_seq_len], dtype="float32");
  %3 = broadcast_to(%2, shape=[1, 1, seq_len, total_seq_len]);
  nn.softmax(add(%1, %3))
}
""")
    total = seq + past
    rng = np.random.default_rng(seq * 10 + past)
    q = rng.standard_normal((1, 2, seq, 4)).astype("float32")
    k = rng.standard_normal((1, 2, total, 4)).astype("float32")
    scores = np.einsum("bhsd,bhtd->bhst", q, k) - 1.0
    expected = np.exp(scores - scores.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)
    np.testing.assert_allclose(run(mod, kind, q, k).numpy(), expected, rtol=1e-5, atol=1e-6)


def test_static_programs_have_no_size_bindings_in_generated_python():
    import ast
    mod = irlib.parse("""#[version = "0.0.5"]
def @main(%x: Tensor[(3), float32]) { reshape(%x, newshape=[3, 1]) }
""")
    source = ast.unparse(interp.to_python(mod.get_global_var("main"), mod))
    assert "bind_sizes" not in source and "symbolic_op_caller" not in source
    symbolic = irlib.parse(ATTRS_PROGRAM)
    source = ast.unparse(interp.to_python(symbolic.get_global_var("main"), symbolic))
    assert "bind_sizes" in source and "symbolic_op_caller" in source


@pytest.mark.parametrize("kind", EXECUTORS)
def test_tuple_parameter_binds_and_names_the_field(kind):
    mod = irlib.parse("""#[version = "0.0.5"]
def @main(%t: (Tensor[(n), float32], Tensor[(n, 2), float32])) {
  add(reshape(%t.0, newshape=[n, 1]), %t.1)
}
""")
    a = np.arange(3, dtype="float32")
    b = np.ones((3, 2), "float32")
    np.testing.assert_array_equal(run(mod, kind, (a, b)).numpy(), a.reshape(3, 1) + b)
    with pytest.raises(irlib.ArgumentShapeError, match=r"%t\.1 of @main.*bound to 3.*got size 4"):
        run(mod, kind, (a, np.ones((4, 2), "float32")))


@pytest.mark.parametrize("kind", EXECUTORS)
def test_closure_parameter_checked_against_enclosing_binding(kind):
    n = size_var("n")
    x = irlib.var("x", shape=(n,))
    y = irlib.var("y", shape=(n,))
    c = irlib.var("c", shape=(irlib.Any,))
    inner = irlib.Function([y], irlib.multiply(y, y))
    f = irlib.var("f")
    # the closure's %y: Tensor[(n)] must have the size the enclosing call bound n to
    body = irlib.Let(f, inner, irlib.Tuple([irlib.Call(f, [x]), irlib.Call(f, [c])]))
    mod = irlib.IRModule.from_expr(irlib.Function([x, c], body))
    data = np.arange(3, dtype="float32")
    out = run(mod, kind, data, data + 1)
    np.testing.assert_array_equal(out[0].numpy(), data ** 2)
    np.testing.assert_array_equal(out[1].numpy(), (data + 1) ** 2)
    with pytest.raises(irlib.ArgumentShapeError,
                       match="bound to 2 by an enclosing function, but got size 3"):
        run(mod, kind, np.arange(2, dtype="float32"), data)
