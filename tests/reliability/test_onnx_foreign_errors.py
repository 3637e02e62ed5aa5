"""Regression (issue #19): from_onnx lets no foreign exception out.

Each case is a model the mutation campaign found raising ValueError/KeyError/TypeError/
UnicodeDecodeError from onnx or numpy inside the importer; each must now be a documented
ModelFormatError/ConversionError naming the initializer, input or node.
"""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from irlib.errors import IRError
from irlib.frontend import ConversionError, ModelFormatError
from irlib.frontend.onnx import from_onnx


def add_model(init=None, elem=TensorProto.FLOAT, x_name="x"):
    init = init if init is not None else numpy_helper.from_array(np.ones(3, "float32"), "w")
    graph = helper.make_graph([helper.make_node("Add", [x_name, init.name], ["y"], name="add0")],
                              "g", [helper.make_tensor_value_info(x_name, elem, [3])],
                              [helper.make_tensor_value_info("y", elem, [3])], [init])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_initializer_data_larger_than_dims():
    init = numpy_helper.from_array(np.ones(3, "float32"), "w")
    init.raw_data = init.raw_data + bytes(8)
    with pytest.raises(ModelFormatError, match="initializer 'w'"):
        from_onnx(add_model(init))


def test_unknown_initializer_data_type():
    init = numpy_helper.from_array(np.ones(3, "float32"), "w")
    init.data_type = 99
    with pytest.raises(IRError) as info:
        from_onnx(add_model(init))
    assert "99" in str(info.value) or "'w'" in str(info.value)


def test_complex64_input_is_an_irlib_error():
    with pytest.raises(IRError) as info:
        from_onnx(add_model(numpy_helper.from_array(np.ones(3, "complex64"), "w"),
                            elem=TensorProto.COMPLEX64))
    assert str(info.value)


@pytest.mark.parametrize("raw", [b"\xff\xfe", b"\xc3Q"])
def test_names_that_are_not_utf8(raw):
    # protobuf's Python API refuses such names; write them into the wire bytes (same length)
    blob = add_model(x_name="QQ").SerializeToString().replace(b"QQ", raw)
    mutant = onnx.ModelProto()
    mutant.ParseFromString(blob)
    with pytest.raises((ModelFormatError, ConversionError)) as info:
        from_onnx(mutant)
    assert str(info.value)


def test_attribute_tensor_with_bad_data_names_the_node():
    value = numpy_helper.from_array(np.array([2.0], "float32"))
    value.raw_data = bytes(3)
    node = helper.make_node("ConstantOfShape", ["s"], ["y"], name="cos0", value=value)
    graph = helper.make_graph([node], "g", [], [helper.make_tensor_value_info(
        "y", TensorProto.FLOAT, [2])], [numpy_helper.from_array(np.array([2], "int64"), "s")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(IRError, match="cos0|attribute 'value'"):
        from_onnx(model)


def test_valid_model_still_imports():
    mod, params = from_onnx(add_model())
    assert "main" in [g.name_hint for g in mod.get_global_vars()]
