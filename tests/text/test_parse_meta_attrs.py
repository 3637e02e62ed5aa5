"""A lone trailing ``meta[AttrsKey][k]`` call argument is the call's attrs (relay_spec §2.3)."""

import pytest

import irlib
from irlib.ir import expr as E
from irlib.ir.attrs import Attrs

HEADER = '#[version = "0.0.5"]\n'


def test_op_call_takes_attrs_from_the_metadata_section():
    text = HEADER + """def @main(%x: Tensor[(1, 1, 4, 4), float32]) {
  nn.max_pool2d(%x, meta[relay.attrs.MaxPool2DAttrs][0])
}
#[metadata]
{"relay.attrs.MaxPool2DAttrs": [{"pool_size": [2, 2], "strides": [2, 2]}]}
"""
    mod = irlib.parse(text)
    call = mod["main"].body
    assert call.attrs.type_key == "relay.attrs.MaxPool2DAttrs"
    assert call.attrs.pool_size == (2, 2) and call.attrs.strides == (2, 2)
    # the op's other fields take their defaults, as with keyword attrs
    keyword = irlib.parse_expr("fn (%x) { nn.max_pool2d(%x, pool_size=[2, 2], strides=[2, 2]) }")
    assert call.attrs == keyword.body.attrs
    assert call.attrs.defaults == keyword.body.attrs.defaults
    assert mod["main"].checked_type.ret_type == irlib.TensorType((1, 1, 2, 2), "float32")


def test_non_op_call_with_trailing_comma_and_init_meta_table():
    attrs = Attrs({"level": 3}, "my.Attrs")
    expr = irlib.parse_expr("fn (%x) { %x }(1, meta[my.Attrs][0],)",
                            init_meta_table={"my.Attrs": [attrs]})
    assert isinstance(expr, E.Call) and len(expr.args) == 1
    assert expr.attrs is attrs


def test_entries_from_the_text_come_before_init_meta_table():
    text = """fn (%x) { %x }(meta[my.Attrs][1])
#[metadata]
{"my.Attrs": [{"a": 1}]}
"""
    expr = irlib.parse_expr(text, init_meta_table={"my.Attrs": [{"a": [2, 3]}]})
    assert expr.args == ()
    assert expr.attrs == Attrs({"a": (2, 3)}, "my.Attrs")


@pytest.mark.parametrize("text, column, message", [
    ("add(1, meta[my.Attrs][0])", 8, "add takes no attributes, not my.Attrs"),
    ("nn.relu(1f, meta[my.Attrs][0])", 13, "takes no attributes"),
    ("nn.max_pool2d(1f, meta[my.Attrs][0])", 19,
     "takes relay.attrs.MaxPool2DAttrs, not my.Attrs"),
    ("fn (%x) { %x }(meta[my.Attrs][3])", 16, "out of range"),
    ("fn (%x) { %x }(meta[my.Attrs][0], 1)", 16, "is not a constant"),
    ("fn (%x) { %x }(1, a=1, meta[my.Attrs][0])", 24, "both as keywords and as metadata"),
    ("fn (%x) { %x }(meta[my.Bad][0])", 16, "must be an object of attribute fields"),
    ("fn (%x) { %x }(meta[my.Nested][0])", 16, "must be a number, string"),
    ("meta[my.Attrs][0]", 1, "is not a constant"),
])
def test_errors(text, column, message):
    table = {"my.Attrs": [{"a": 1}], "my.Bad": [[1, 2]], "my.Nested": [{"a": {"b": 1}}]}
    with pytest.raises(irlib.ParseError) as info:
        irlib.parse_expr(text, init_meta_table=table)
    assert message in str(info.value)
    assert f":1:{column}:" in str(info.value)


def test_constructor_call_rejects_meta_attrs():
    prelude = irlib.IRModule()
    prelude.import_from_std("prelude.rly")
    with pytest.raises(irlib.ParseError, match="constructor call takes no attributes"):
        irlib.parse_expr("Some(1, meta[my.Attrs][0])", init_module=prelude,
                         init_meta_table={"my.Attrs": [{"a": 1}]})
