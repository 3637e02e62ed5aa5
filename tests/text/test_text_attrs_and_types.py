"""Printer: call and function attributes, a small conv net, type-annotation comments.

Expected texts are written by hand from docs/text-format.md.
"""

import numpy as np

import irlib
from irlib import Function, TensorType, const, var
from irlib.ir.attrs import Attrs
from irlib.ir.expr import Call
from irlib.op import registry

from text_test_helpers import check


def test_small_conv_net_prints_only_non_default_attrs():
    data = var("data", shape=(1, 3, 8, 8))
    weight = var("w1", shape=(4, 3, 3, 3))
    bias = var("b1", shape=(4,))
    conv = irlib.nn.conv2d(data, weight, padding=(1, 1), channels=4, kernel_size=(3, 3))
    net = Function([data, weight, bias], irlib.nn.relu(irlib.nn.bias_add(conv, bias)))
    check(str(net),
          "fn (%data: Tensor[(1, 3, 8, 8), float32], %w1: Tensor[(4, 3, 3, 3), float32], "
          "%b1: Tensor[(4), float32]) {\n"
          "  %0 = nn.conv2d(%data, %w1, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);\n"
          "  %1 = nn.bias_add(%0, %b1);\n"
          "  nn.relu(%1)\n"
          "}")


def test_attr_value_spellings_in_schema_order():
    x = var("x")
    fields = {"axis": (1, 2), "keepdims": True, "exclude": False, "eps": 1e-5,
              "layout": "NCHW", "units": None, "scale": 0.5, "size": irlib.size_var("n") * 2 + 1,
              "pads": ((1, 2), (3,)), "start": -1, "empty": (), "big": float("inf"),
              "whole": 3.0}
    defaults = {"exclude": False, "units": 3, "layout": "NHWC", "start": 0}
    call = Call(registry.get("exp"), (x,), Attrs(fields, "relay.attrs.TestAttrs", defaults))
    check(str(call), "free_var %x;\n"
                     'exp(%x, axis=[1, 2], keepdims=True, eps=1e-05f, layout="NCHW", '
                     "units=None, scale=0.5f, size=2*n + 1, pads=[[1, 2], [3]], start=-1, "
                     "empty=[], big=inff, whole=3f)")


def test_default_valued_attrs_are_omitted():
    x = var("x")
    call = Call(registry.get("exp"), (x,), Attrs({"axis": 1}, "relay.attrs.T", {"axis": 1}))
    check(str(call), "free_var %x;\nexp(%x)")


def test_non_op_call_with_attrs_names_the_type_key():
    f, x = irlib.GlobalVar("f"), var("x")
    call = Call(f, (x,), Attrs({"k": 1}, "relay.attrs.Custom"))
    check(str(call), 'free_var %x;\n@f(%x, attrs_type_key="relay.attrs.Custom", k=1)')


def test_array_attr_goes_to_metadata():
    x = var("x")
    # numpy arrays are normalised to nested tuples by Attrs; an NDArray is kept as it is.
    table = irlib.NDArray(np.zeros((2,), "float32"))
    call = Call(registry.get("exp"), (x,), Attrs({"table": table, "rows": np.eye(2)}, "A"))
    assert str(call) == ("free_var %x;\n"
                         "exp(%x, table=meta[relay.Constant][0], rows=[[1f, 0f], [0f, 1f]])")


def test_expression_attr_values():
    x = var("x")
    call = Call(registry.get("exp"), (x,), Attrs({"op": registry.get("add"), "c": const(2)}, "A"))
    assert str(call) == "free_var %x;\nexp(%x, op=add, c=2)"


def test_type_comments_after_inference():
    x = var("x", shape=(10,))
    one = const(1.0).with_type(TensorType((), "float32"))
    added = irlib.add(x, one).with_type(TensorType((10,), "float32"))
    relu = irlib.nn.relu(added).with_type(TensorType((10,), "float32"))
    check(str(relu), "free_var %x: Tensor[(10), float32];\n"
                     "%0 = add(%x, 1f /* ty=float32 */) /* ty=Tensor[(10), float32] */;\n"
                     "nn.relu(%0) /* ty=Tensor[(10), float32] */")


def test_type_comments_on_blocks_and_tuples():
    x = var("x", "float32")
    pair_type = irlib.TupleType([TensorType((), "float32")] * 2)
    pair = irlib.Tuple([x, x]).with_type(pair_type)
    func = Function([x], pair).with_type(irlib.FuncType([TensorType((), "float32")], pair_type))
    check(str(func), "fn (%x: float32) {\n"
                     "  (%x, %x) /* ty=(float32, float32) */\n"
                     "} /* ty=fn (float32) -> (float32, float32) */")


def test_custom_annotation_replaces_type_comments():
    x = var("x", shape=(10,))
    added = irlib.add(x, const(1.0)).with_type(TensorType((10,), "float32"))
    relu = irlib.nn.relu(added)
    text = irlib.astext(relu, annotate=lambda node: "call" if isinstance(node, Call) else None)
    check(text, '#[version = "0.0.5"]\n'
                "free_var %x: Tensor[(10), float32];\n"
                "%0 = add(%x, 1f) /* call */;\n"
                "nn.relu(%0) /* call */")


def test_custom_annotation_cannot_close_the_comment_early():
    x = var("x")
    text = irlib.pretty_print(irlib.exp(x))
    assert text == "free_var %x;\nexp(%x)"
    noted = irlib.astext(irlib.exp(x), annotate=lambda node: "a */ b")
    assert noted.endswith("exp(%x) /* a * / b */")


def test_every_binding_carries_its_type_after_infer_type():
    data = var("data", shape=(1, 3, 8, 8))
    weight = var("w1", shape=(4, 3, 3, 3))
    bias = var("b1", shape=(4,))
    conv = irlib.nn.conv2d(data, weight, padding=(1, 1), channels=4, kernel_size=(3, 3))
    net = Function([data, weight, bias], irlib.nn.relu(irlib.nn.bias_add(conv, bias)))
    mod = irlib.transform.InferType()(irlib.IRModule.from_expr(net))
    lines = mod.astext().split("\n")
    body = [line.strip() for line in lines[2:5]]
    out_type = "/* ty=Tensor[(1, 4, 8, 8), float32] */"
    assert body[0].startswith("%0 = nn.conv2d(%data, %w1, padding=[1, 1, 1, 1]")
    assert body[0].endswith(f") {out_type};")
    assert body[1] == f"%1 = nn.bias_add(%0, %b1) {out_type};"
    assert body[2] == f"nn.relu(%1) {out_type}"
