"""Run one ONNX node with onnxruntime: an independent oracle for op tests.

onnxruntime is a test-only dependency and is imported lazily.
"""

from __future__ import annotations

import numpy as np

_ONNX_TYPES = {"float32": 1, "uint8": 2, "int8": 3, "int32": 6, "int64": 7, "bool": 9,
               "float64": 11}


def run_node(op_type: str, inputs: list, attrs: dict | None = None, outputs: int = 1,
             opset: int = 18, output_types=None):
    """Outputs of a one-node ONNX model ``op_type(inputs, **attrs)`` run by onnxruntime.

    Args:
        op_type: the ONNX operator, e.g. ``"Resize"``.
        inputs: numpy arrays, or None for an omitted optional input.
        attrs: the node's attributes.
        outputs: how many outputs the node has.
        opset: the default-domain opset of the model.
        output_types: the ONNX element type names of the outputs (default: input 0's).

    Returns:
        A list of numpy arrays.
    """
    import onnxruntime
    from onnx import helper

    names, graph_inputs, feeds = [], [], {}
    for i, value in enumerate(inputs):
        if value is None:
            names.append("")
            continue
        value = np.asarray(value)
        name = f"x{i}"
        names.append(name)
        graph_inputs.append(helper.make_tensor_value_info(
            name, _ONNX_TYPES[value.dtype.name], value.shape))
        feeds[name] = value
    first = np.asarray(inputs[0]).dtype.name
    output_types = output_types or [first] * outputs
    out_names = [f"y{i}" for i in range(outputs)]
    graph_outputs = [helper.make_tensor_value_info(n, _ONNX_TYPES[t], None)
                     for n, t in zip(out_names, output_types)]
    node = helper.make_node(op_type, names, out_names, **(attrs or {}))
    graph = helper.make_graph([node], "oracle", graph_inputs, graph_outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 10)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                           providers=["CPUExecutionProvider"])
    return session.run(out_names, feeds)
