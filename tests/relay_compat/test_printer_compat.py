"""Relay-compatibility tests for the text printer (mirrors the behaviours of TVM's
``tests/python/relay/test_ir_text_printer.py``): scalar literals, graph-normal-form order,
let inlining, metadata, call attributes, variable names, unapplied constructors, ``None``
attributes, spans, type comments, ``/`` in identifiers, and printing zoo models. Every
printed program is parsed back and compared. Expected texts are written by hand from the
conventions in relay_spec.md §2.4.
"""

import numpy as np
import pytest

import irlib
from zoo import dcgan, densenet, inception_v3, lstm, mlp, mobilenet, resnet, squeezenet

SEMVER = '#[version = "0.0.5"]\n'


def astext(program):
    text = program.astext()
    if isinstance(program, irlib.IRModule):
        again = irlib.fromtext(text)
    else:
        again = irlib.parse_expr(text)
    irlib.assert_structural_equal(again, program, map_free_vars=True)
    return text


def assert_prints_as(expr, expected):
    # exact text: an expression's text has no trailing newline, as in Relay
    assert astext(expr) == SEMVER + expected


def test_scalars():
    assert_prints_as(irlib.const(42, "int16"), "42i16")
    assert_prints_as(irlib.const(42, "int32"), "42")
    assert_prints_as(irlib.const(42, "int64"), "42i64")
    assert_prints_as(irlib.const(3.0, "float16"), "3f16")
    assert_prints_as(irlib.const(3.0, "float32"), "3f")
    assert_prints_as(irlib.const(3.0, "float64"), "3f64")
    assert_prints_as(irlib.const(0.5, "float32"), "0.5f")
    assert_prints_as(irlib.const(True), "True")


def test_large_graph_and_shared_nodes():
    x, y = irlib.var("x", shape=(3, 2)), irlib.var("y")
    one = irlib.const(10e10, dtype="float32")
    z = irlib.add(x, one)
    for _ in range(3000):
        z = irlib.add(z, one)
    text = astext(irlib.Function([x, y], z))
    assert "%2999 = add(%2998, 1e+11f);" in text
    shared = irlib.add(x, one)
    text = astext(irlib.Function([x, y], irlib.add(shared, shared)))
    assert text.count("add(%x, 1e+11f)") == 1 and "add(%0, %0)" in text


def test_module_with_type_comments():
    x, y = irlib.var("x", "float32"), irlib.var("y", "float32")
    z = irlib.add(x, y)
    mod = irlib.IRModule()
    mod["myf"] = irlib.Function([x, y], irlib.add(z, z))
    mod = irlib.transform.InferType()(mod)
    text = astext(mod)
    for printed in (text, str(mod)):
        assert "def @myf" in printed
        assert "add(%0, %0) /* ty=float32 */" in printed
    assert not str(mod).startswith("#[version")
    custom = mod.astext(annotate=lambda node: str(node.checked_type.dtype)
                        if isinstance(node, irlib.Call) else None)
    assert "/* float32 */" in custom and "ty=" not in custom


def test_optional_info_counts_types():
    c = irlib.const(1)
    mod = irlib.transform.InferType()(irlib.IRModule.from_expr(irlib.add(c, c)))
    assert astext(mod).count("/* ty=int32 */") == 3


def test_meta_data():
    n = irlib.size_var("n")
    x = irlib.var("x", shape=(n, 10, 224, 224))
    w = irlib.var("w")
    f = irlib.Function([x, w], irlib.nn.conv2d(x, w, kernel_size=(3, 3), padding=(1, 1),
                                               channels=2))
    assert "channels=2" in astext(f) and "channels=2" in str(f)
    text = astext(irlib.const([1, 2, 3]))
    assert "meta[relay.Constant][0]" in text and "#[metadata]" in text
    assert "meta[relay.Constant][0]" in str(irlib.const([1, 2, 3]))
    assert "#[metadata]" not in str(irlib.const([1, 2, 3]))
    omitted = irlib.const([1, 2, 3]).astext(show_meta_data=False)
    assert "meta[relay.Constant][0]" in omitted and "#[metadata]" not in omitted


def test_call_attrs_print_only_non_defaults():
    x = irlib.var("x")
    assert "axis=2" in astext(irlib.nn.softmax(x, axis=2))
    assert "nn.softmax(%x)" in astext(irlib.nn.softmax(x))
    assert "num_newaxis=2" in astext(irlib.expand_dims(x, axis=2, num_newaxis=2))
    data, weight = irlib.var("d", shape=(2, 4)), irlib.var("w", shape=(3, 4))
    assert "nn.dense(%d, %w, units=None)" in astext(irlib.nn.dense(data, weight))


def test_let_if_scope():
    x, y = irlib.var("x", "float32"), irlib.var("y", "float32")
    cond = irlib.var("cond", "bool")
    sb = irlib.ScopeBuilder()
    with sb.if_scope(cond):
        v1 = sb.let("v", irlib.const(1, "float32"))
        v2 = sb.let("v", x)
        sb.ret(irlib.subtract(v1, v2))
    with sb.else_scope():
        v3 = irlib.var("v")
        let2 = irlib.Let(v3, y, v3)
        sb.ret(irlib.add(let2, let2))
    text = astext(irlib.Function([x, y, cond], sb.get()))
    assert text.count("{") == 3
    assert "%cond: bool" in text


def test_variable_names():
    assert "%v1" in astext(irlib.var("1"))
    text = astext(irlib.var("base/x") + irlib.var("base/y"))
    assert "%base/x" in text and "%base/y" in text
    a, b = irlib.var("a"), irlib.var("a")
    text = astext(irlib.Function([a, b], irlib.add(a, b)))
    assert "fn (%a, %a1)" in text


def test_call_node_order():
    x, y = irlib.var("x"), irlib.var("y")
    prog = irlib.Call(irlib.Function([x], x),
                      [irlib.Call(irlib.Function([y], y), [irlib.const(1)])])
    assert_prints_as(prog, "%0 = fn (%y) {\n"
                           "  %y\n"
                           "};\n"
                           "%1 = %0(1);\n"
                           "%2 = fn (%x) {\n"
                           "  %x\n"
                           "};\n"
                           "%2(%1)")


def test_let_inlining():
    tup = irlib.Tuple([irlib.const(0), irlib.const(0)])
    x = irlib.var("x")
    assert_prints_as(irlib.Let(x, tup, tup), "%0 = (0, 0);\nlet %x = %0;\n%0")
    assert_prints_as(irlib.Let(x, tup, x), "let %x = (0, 0);\n%x")


def test_ops_without_inputs_print():
    assert_prints_as(irlib.zeros([], "float32"), 'zeros(shape=[], dtype="float32")')


def test_unapplied_constructor():
    type_def = "type List[A] {\n  Cons(A, List[A]),\n  Nil,\n}"
    main_def = "def @main[A]() -> fn (A, List[A]) -> List[A] {\n  Cons\n}"
    mod = irlib.parse(SEMVER + type_def + "\n" + main_def)
    printed = str(mod)
    assert type_def in printed
    assert main_def in printed


def test_null_attribute():
    x, y = irlib.var("x"), irlib.var("y")
    func = irlib.Function([x], y).with_attr("TestAttribute", None)
    assert "TestAttribute=None" in astext(func)


def test_spans_given_by_the_user_are_printed():
    x, y = irlib.var("x", shape=(3, 2)), irlib.var("y")
    one = irlib.const(10e10, dtype="float32")
    z = irlib.add(x, one)
    z = irlib.Call(z.op, z.args, z.attrs, z.type_args,
                   span=irlib.Span(irlib.SourceName("Add0"), 0, 0, 0, 0))
    z = irlib.add(z, z)
    z = irlib.Call(z.op, z.args, z.attrs, z.type_args,
                   span=irlib.Span(irlib.SourceName("Add1"), 0, 0, 0, 0))
    text = astext(irlib.Function([x, y], z))
    assert "/* span=Add0:0:0 */" in text and "/* span=Add1:0:0 */" in text


def test_parsed_spans_are_not_printed():
    text = SEMVER + "def @main(%x: float32) -> float32 {\n  add(%x, %x) /* ty=float32 */\n}\n"
    mod = irlib.parse(text)
    assert mod["main"].body.span is not None
    assert mod.astext() == text


@pytest.mark.parametrize("make", [
    lambda: mlp.get_workload(batch_size=1),
    lambda: resnet.get_workload(batch_size=1, num_layers=18),
    lambda: mobilenet.get_workload(batch_size=1),
    lambda: dcgan.get_workload(batch_size=1),
    lambda: lstm.get_workload(1, 1),
    lambda: lstm.get_workload(4, 4),
    lambda: squeezenet.get_workload(batch_size=1, version="1.0"),
    lambda: squeezenet.get_workload(batch_size=1, version="1.1"),
], ids=["mlp", "resnet18", "mobilenet", "dcgan", "lstm1", "lstm4", "squeeze1.0", "squeeze1.1"])
def test_zoo_models_print_and_parse_back(make):
    mod, _ = make()
    astext(mod)


@pytest.mark.parametrize("make", [lambda: inception_v3.get_workload(batch_size=1),
                                  lambda: densenet.get_workload(batch_size=1)],
                         ids=["inception_v3", "densenet"])
def test_big_zoo_models_print(make):
    mod, _ = make()
    text = mod.astext()
    assert text.startswith(SEMVER) and "def @main" in text
