"""Round trip: ``parse(astext(x))`` is structurally equal to ``x`` (and keeps DAG sharing).

Checked by hypothesis on generated tensor programs, generated DAGs with sharing across
scopes, generated ADT programs over the Prelude, and on fixed modules: the Prelude (with
its tensor arrays), nat.rly, a small conv net and deep programs.
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import irlib
from irlib.ir import expr as E
from irlib.ir.functor import post_order
from irlib.prelude import Prelude
from irlib.testing import strategies as S

_PRELUDE = Prelude()
_PRELUDE.mod.import_from_std("nat.rly")


def roundtrip_module(mod):
    typed = irlib.transform.InferType()(mod)
    back = irlib.parse(mod.astext())
    irlib.assert_structural_equal(back, typed, map_free_vars=True)
    # printing the parsed module again gives the same text
    assert back.astext() == typed.astext()
    return back


def roundtrip_expr(expr, **kwargs):
    back = irlib.parse_expr(irlib.astext(expr), **kwargs)
    irlib.assert_structural_equal(back, expr, map_free_vars=True)
    return back


def shared_node_count(expr) -> int:
    """Distinct non-atomic nodes (sharing makes this smaller than the tree size)."""
    count = 0
    for node in post_order(expr):
        if type(node) in (E.Var, E.GlobalVar, E.Op, E.Constructor, E.Constant):
            continue
        if type(node) is E.Call and type(node.op) is E.Constructor and not node.args:
            continue
        count += 1
    return count


@settings(max_examples=40, deadline=None)
@given(S.programs())
def test_generated_programs_roundtrip_as_modules(program):
    roundtrip_module(program.module())


@settings(max_examples=40, deadline=None)
@given(S.tensor_exprs(dtypes=("float16",)) | S.tensor_exprs(dtypes=("float64",))
       | S.tensor_exprs(dtypes=("int32",)) | S.tensor_exprs(dtypes=("int64",))
       | S.tensor_exprs(dtypes=("float32",)))
def test_generated_tensor_expressions_roundtrip(program):
    back = roundtrip_expr(program.expr)
    assert shared_node_count(back) == shared_node_count(program.expr)


@st.composite
def shared_dags(draw):
    """Untyped DAGs whose shared nodes are used across let, fn, if and match scopes."""
    pool = []   # (node, variables it needs)

    def build(depth, scope):
        choice = draw(st.integers(0, 9 if depth > 0 else 2))
        if choice == 0:
            return draw(st.sampled_from(scope))
        if choice == 1:
            return irlib.const(draw(st.integers(0, 3)))
        if choice == 2:
            usable = [node for node, needs in pool if needs <= set(scope)]
            return draw(st.sampled_from(usable)) if usable else irlib.const(1.0)
        if choice == 3:
            node = irlib.exp(build(depth - 1, scope))
        elif choice == 4:
            node = irlib.add(build(depth - 1, scope), build(depth - 1, scope))
        elif choice == 5:
            node = E.TupleGetItem(E.Tuple([build(depth - 1, scope)]), 0)
        elif choice == 6:
            node = E.If(build(depth - 1, scope), build(depth - 1, scope),
                        build(depth - 1, scope))
        elif choice == 7:
            bound = irlib.var("x")
            node = E.Let(bound, build(depth - 1, scope), build(depth - 1, scope + [bound]))
        elif choice == 8:
            param = irlib.var("p")
            node = E.Call(E.Function([param], build(depth - 1, scope + [param])),
                          (build(depth - 1, scope),))
        else:
            head = irlib.var("h")
            node = E.Match(build(depth - 1, scope), [
                E.Clause(E.PatternVar(head), build(depth - 1, scope + [head])),
                E.Clause(E.PatternWildcard(), build(depth - 1, scope))])
        pool.append((node, set(irlib.analysis.free_vars(node))))
        return node

    return build(draw(st.integers(1, 5)), [irlib.var("a"), irlib.var("b")])


@settings(max_examples=60, deadline=None)
@given(shared_dags())
def test_dags_with_sharing_across_scopes_roundtrip_and_keep_sharing(expr):
    back = roundtrip_expr(expr)
    assert shared_node_count(back) == shared_node_count(expr)


# -- ADT programs over the Prelude --------------------------------------------------------------

@st.composite
def list_programs(draw):
    """A function of ``%xs: List[int32]`` built from Prelude calls, matches and lambdas."""
    mod = _PRELUDE.mod
    _, cons, nil = mod.get_type("List")
    _, some, none = mod.get_type("Option")
    g = mod.get_global_var
    int32 = irlib.TensorType((), "int32")
    list_int = irlib.TypeCall(mod.get_global_type_var("List"), [int32])
    xs = irlib.var("xs", list_int)

    def lambda1(body_of):
        x = irlib.var("x", int32)
        return E.Function([x], body_of(x))

    def int_expr(lists, depth):
        choice = draw(st.integers(0, 4 if depth else 1))
        if choice == 0:
            return irlib.const(draw(st.integers(-3, 3)))
        if choice == 1:
            return E.Call(g("length"), (draw(st.sampled_from(lists)),))
        if choice == 2:
            return E.Call(g("sum"), (list_expr(lists, depth - 1),))
        if choice == 3:
            h, t = irlib.var("h", int32), irlib.var("t")
            return E.Match(list_expr(lists, depth - 1), [
                E.Clause(E.PatternConstructor(cons, [E.PatternVar(h), E.PatternConstructor(
                    cons, [E.PatternWildcard(), E.PatternVar(t)])]), h),
                E.Clause(E.PatternWildcard(), irlib.const(0))])
        return E.If(irlib.less(int_expr(lists, depth - 1), irlib.const(1)),
                    int_expr(lists, depth - 1), int_expr(lists, depth - 1))

    def list_expr(lists, depth):
        choice = draw(st.integers(0, 6 if depth else 1))
        if choice == 0:
            return draw(st.sampled_from(lists))
        if choice == 1:
            return E.Call(cons, (irlib.const(draw(st.integers(0, 5))), E.Call(nil, ())))
        if choice == 2:
            return E.Call(g("map"), (lambda1(lambda x: irlib.add(x, int_expr(lists, depth - 1))),
                                     list_expr(lists, depth - 1)))
        if choice == 3:
            return E.Call(g("rev"), (list_expr(lists, depth - 1),))
        if choice == 4:
            shared = list_expr(lists, depth - 1)
            return E.Call(g("concat"), (shared, shared))
        if choice == 5:
            bound = irlib.var("l", list_int)
            return E.Let(bound, list_expr(lists, depth - 1), list_expr(lists + [bound], depth - 1))
        return E.Call(g("filter"), (lambda1(lambda x: irlib.greater(x, irlib.const(1))),
                                    list_expr(lists, depth - 1)))

    depth = draw(st.integers(1, 4))
    body = int_expr([xs], depth) if draw(st.booleans()) else list_expr([xs], depth)
    return E.Function([xs], body)


@settings(max_examples=20, deadline=None)
@given(list_programs())
def test_generated_adt_programs_roundtrip(main):
    # only @main is printed; the Prelude comes in as the initial module
    text = irlib.IRModule.from_expr(main).astext()
    back = irlib.parse(text, init_module=_PRELUDE.mod)
    typed = irlib.infer_type(main, _PRELUDE.mod)
    irlib.assert_structural_equal(back["main"], typed, map_free_vars=True)


# -- fixed modules ------------------------------------------------------------------------------

def test_prelude_nat_and_tensor_arrays_roundtrip():
    back = irlib.parse(_PRELUDE.mod.astext())
    irlib.assert_structural_equal(back, _PRELUDE.mod, map_free_vars=True)


def test_gradient_and_core_roundtrip():
    mod = irlib.IRModule()
    mod.import_from_std("gradient.rly")
    mod.import_from_std("core.rly")
    roundtrip_module(mod)


def test_conv_net_with_constants_roundtrips():
    data = irlib.var("data", shape=(1, 3, 16, 16))
    weight = irlib.const(np.random.default_rng(0).normal(size=(8, 3, 3, 3)).astype("float32"))
    bias = irlib.var("bias", shape=(8,))
    x = irlib.nn.conv2d(data, weight, padding=(1, 1, 1, 1), channels=8, kernel_size=(3, 3))
    x = irlib.nn.relu(irlib.nn.bias_add(x, bias))
    x = irlib.nn.max_pool2d(x, pool_size=(2, 2), strides=(2, 2))
    x = irlib.nn.batch_flatten(x)
    w2 = irlib.var("w2", shape=(10, 512))
    x = irlib.nn.softmax(irlib.nn.dense(x, w2, units=10))
    func = E.Function(list(irlib.analysis.free_vars(x)), x)
    back = roundtrip_module(irlib.IRModule.from_expr(func))
    conv = [n for n in post_order(back["main"]) if isinstance(n, E.Call)
            and getattr(n.op, "name", "") == "nn.conv2d"][0]
    assert conv.attrs.padding == (1, 1, 1, 1) and conv.attrs.strides == (1, 1)


def test_deep_let_chain_roundtrips():
    x = irlib.var("x", "float32")
    body = x
    for index in range(2000):
        bound = irlib.var(f"v{index}")
        body = E.Let(bound, irlib.add(x, irlib.const(float(index))), body)
    roundtrip_module(irlib.IRModule.from_expr(E.Function([x], body)))


def test_deep_nat_value_roundtrips():
    _, zero, succ = _PRELUDE.mod.get_type("nat")
    value = E.Call(zero, ())
    for _ in range(5000):
        value = E.Call(succ, (value,))
    back = roundtrip_expr(value, init_module=_PRELUDE.mod)
    assert back.op.name_hint == "succ"


def test_symbolic_shapes_refs_and_type_params_roundtrip():
    text = ('#[version = "0.0.5"]\n'
            "def @main[A](%x: Tensor[(n, 2*n + 1), float32], %a: A, %r: ref(A)) -> A {\n"
            "  let %y = ref_write(%r, %a);\n  ref_read(%r)\n}")
    mod = irlib.parse(text)
    roundtrip_module(mod)


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_higher_order_adt_programs_roundtrip(data):
    # irlib.testing.adt_strategies: closures, references, nested patterns, letrec, nats
    from irlib.testing.adt_strategies import adt_programs
    program = data.draw(adt_programs())
    mod = program.module()
    main_only = irlib.IRModule.from_expr(mod["main"])
    back = irlib.parse(main_only.astext(), init_module=_PRELUDE.mod)
    typed = irlib.infer_type(mod["main"], mod)
    irlib.assert_structural_equal(back["main"], typed, map_free_vars=True)
