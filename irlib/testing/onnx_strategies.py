"""Hypothesis strategy for small, valid ONNX models, to test an ONNX importer.

:func:`onnx_models` draws a ``ModelProto`` built with ``onnx.helper``: float32 inputs of one
base shape (optionally with a symbolic batch dim), a chain of nodes drawn from
:data:`ONNX_OPS` (elementwise and broadcasting ops, MatMul/Gemm against initializer weights,
Softmax, Transpose, Reshape, Concat, reductions, Unsqueeze), each node reading earlier values,
and one or two graph outputs whose shapes the generator computes. Every model passes
``onnx.checker.check_model(model, full_check=True)``.

The drawn :class:`OnnxCase` carries the model, an input strategy and an independent oracle:
``case.reference(feeds)`` runs the model on onnxruntime (when installed). Its ``repr`` is the
graph in ONNX's text syntax (``onnx.printer``), so a failing case prints readably.

Example::

    from irlib.testing import sample
    from irlib.testing.onnx_strategies import onnx_models
    case = sample(onnx_models(ops=("Add", "Relu", "MatMul"), max_nodes=4), seed=1)
    print(case)                             # the graph
    mod, params = from_onnx(case.model)     # irlib's importer under test
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

__all__ = ["onnx_models", "OnnxCase", "ONNX_OPS"]

_UNARY = ("Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Exp", "Identity")
_BINARY = ("Add", "Sub", "Mul", "Max", "Min")
_OTHER = ("MatMul", "Gemm", "Softmax", "Transpose", "Reshape", "Concat", "ReduceSum",
          "ReduceMean", "ReduceMax", "Unsqueeze", "Flatten")
#: The op types the generator can emit (``ops=`` selects a subset).
ONNX_OPS = _UNARY + _BINARY + _OTHER


@dataclass(frozen=True, eq=False)
class OnnxCase:
    """A generated ONNX model with its inputs.

    Attributes:
        model: the ``onnx.ModelProto``.
        inputs: ``{input name: static shape}`` of the graph inputs (a symbolic batch dim is
            given its drawn size here).
        opset: the default-domain opset the model declares.
    """

    model: object
    inputs: dict
    opset: int

    def inputs_strategy(self):
        """Strategy for feeds ``{name: float32 array}`` with values in ``[-1, 1]``."""
        elements = st.floats(-1.0, 1.0, width=32)
        return st.fixed_dictionaries({name: hnp.arrays("float32", shape, elements=elements)
                                      for name, shape in self.inputs.items()})

    def random_inputs(self, seed: int = 0) -> dict:
        """Feeds ``{name: float32 array}`` drawn uniformly from ``[-1, 1]``.

        Args:
            seed: the numpy random seed.
        """
        rng = np.random.default_rng(seed)
        return {name: rng.uniform(-1, 1, size=shape).astype("float32")
                for name, shape in self.inputs.items()}

    def reference(self, feeds: dict) -> list:
        """The outputs onnxruntime computes for ``feeds`` (the independent oracle)."""
        import onnxruntime
        session = onnxruntime.InferenceSession(self.model.SerializeToString(),
                                               providers=["CPUExecutionProvider"])
        return session.run(None, feeds)

    def __repr__(self) -> str:
        shapes = ", ".join(f"{n}: {list(s)}" for n, s in self.inputs.items())
        try:
            from onnx.printer import to_text
            text = to_text(self.model.graph)
        except ImportError:       # onnx before 1.14
            from onnx.helper import printable_graph
            text = printable_graph(self.model.graph)
        return f"OnnxCase(opset {self.opset}; inputs {shapes})\n{text}"


class _Graph:
    """One model under construction: values with their shapes, nodes and initializers."""

    def __init__(self, draw, ops, opset, batch):
        self.draw, self.ops, self.opset = draw, ops, opset
        # With a symbolic batch dim, every value keeps it as axis 0: no op may move,
        # merge or reduce axis 0, and constants have extent 1 there.
        self.first = 1 if batch else 0
        self.values: list = []          # (name, shape)
        self.nodes: list = []
        self.initializers: list = []
        self.count = 0

    def fresh(self, prefix="t") -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def pick(self, items):
        return items[self.draw(st.integers(0, len(items) - 1))]

    def weight(self, shape, low=-1.0, high=1.0) -> str:
        from onnx import numpy_helper
        rng = np.random.default_rng(self.draw(st.integers(0, 2 ** 16)))
        name = self.fresh("w")
        data = rng.uniform(low, high, size=shape).astype("float32")
        self.initializers.append(numpy_helper.from_array(data, name))
        return name

    def int_constant(self, values) -> str:
        from onnx import numpy_helper
        name = self.fresh("c")
        self.initializers.append(numpy_helper.from_array(np.asarray(values, "int64"), name))
        return name

    def emit(self, op, inputs, shape, **attrs):
        from onnx import helper
        out = self.fresh()
        self.nodes.append(helper.make_node(op, list(inputs), [out], **attrs))
        self.values.append((out, tuple(shape)))

    # -- one node --------------------------------------------------------------------------
    def step(self):
        op = self.draw(st.sampled_from(self.ops))
        candidates = self.values if op in _UNARY + _BINARY else \
            [v for v in self.values if len(v[1]) >= 1 + self.first]
        if not candidates:
            return None          # only scalars so far: nothing this op can read
        name, shape = self.pick(candidates)
        rank = len(shape)
        if op in _UNARY:
            return self.emit(op, [name], shape)
        if op in _BINARY:
            partners = [v for v in self.values if v[1] == shape]
            if self.draw(st.booleans()):       # a broadcast constant (a suffix of the shape)
                keep = self.draw(st.integers(0, rank))
                const_shape = tuple(d if self.draw(st.booleans()) and axis >= self.first
                                    else 1 for axis, d in enumerate(shape)
                                    if axis >= rank - keep)
                return self.emit(op, [name, self.weight(const_shape)], shape)
            return self.emit(op, [name, self.pick(partners)[0]], shape)
        return getattr(self, "op_" + op)(name, shape)

    def op_MatMul(self, name, shape):
        units = self.draw(st.integers(1, 4))
        weight = self.weight((shape[-1], units))
        self.emit("MatMul", [name, weight], shape[:-1] + (units,))

    def op_Gemm(self, name, shape):
        if len(shape) != 2:
            return self.op_MatMul(name, shape)
        units, trans_b = self.draw(st.integers(1, 4)), int(self.draw(st.booleans()))
        weight = self.weight((units, shape[1]) if trans_b else (shape[1], units))
        self.emit("Gemm", [name, weight, self.weight((units,))], (shape[0], units),
                  transB=trans_b, alpha=self.draw(st.sampled_from((1.0, 0.5))))

    def op_Softmax(self, name, shape):
        axis = self.draw(st.integers(-len(shape), len(shape) - 1))
        self.emit("Softmax", [name], shape, axis=axis)

    def op_Transpose(self, name, shape):
        perm = list(range(self.first)) + list(
            self.draw(st.permutations(range(self.first, len(shape)))))
        self.emit("Transpose", [name], tuple(shape[p] for p in perm), perm=perm)

    def op_Reshape(self, name, shape):
        if self.first or self.draw(st.booleans()):    # 0 copies the input's extent
            target, new = [0, -1], (shape[0], int(np.prod(shape[1:])))
        else:
            target, new = list(shape[::-1]), tuple(shape[::-1])
        self.emit("Reshape", [name, self.int_constant(target)], new)

    def op_Flatten(self, name, shape):
        axis = self.draw(st.integers(self.first, len(shape)))
        new = (int(np.prod(shape[:axis])), int(np.prod(shape[axis:])))
        self.emit("Flatten", [name], new, axis=axis)

    def op_Concat(self, name, shape):
        partner = self.pick([v for v in self.values if v[1] == shape])[0]
        axis = self.draw(st.integers(self.first, len(shape) - 1))
        new = shape[:axis] + (2 * shape[axis],) + shape[axis + 1:]
        self.emit("Concat", [name, partner], new, axis=axis)

    def _reduce(self, op, name, shape):
        axis = self.draw(st.integers(self.first, len(shape) - 1))
        keep = int(self.draw(st.booleans()))
        new = shape[:axis] + ((1,) if keep else ()) + shape[axis + 1:]
        if op == "ReduceSum" or self.opset >= 18:      # axes became an input
            return self.emit(op, [name, self.int_constant([axis])], new, keepdims=keep)
        return self.emit(op, [name], new, axes=[axis], keepdims=keep)

    def op_ReduceSum(self, name, shape):
        return self._reduce("ReduceSum", name, shape)

    def op_ReduceMean(self, name, shape):
        return self._reduce("ReduceMean", name, shape)

    def op_ReduceMax(self, name, shape):
        return self._reduce("ReduceMax", name, shape)

    def op_Unsqueeze(self, name, shape):
        axis = self.draw(st.integers(self.first, len(shape)))
        self.emit("Unsqueeze", [name, self.int_constant([axis])],
                  shape[:axis] + (1,) + shape[axis:])


@st.composite
def onnx_models(draw, ops=ONNX_OPS, max_nodes: int = 6, max_inputs: int = 2,
                min_rank: int = 1, max_rank: int = 3, max_dim: int = 4,
                opsets=(13, 17), dynamic_batch: bool = False) -> OnnxCase:
    """Strategy for small valid ONNX models (see the module docstring).

    Args:
        ops: op types to use (a subset of :data:`ONNX_OPS`).
        max_nodes: the most nodes (at least one).
        max_inputs: the most graph inputs (at least one), float32, of one base shape.
        min_rank, max_rank, max_dim: the base shape's rank range and largest dim.
        opsets: the default-domain opsets to choose from (13 to 18 are generated right).
        dynamic_batch: declare the first dim of every input as the symbolic ``"N"`` and the
            outputs with unknown dims (the case's ``inputs`` still give N a size); ops then
            keep N as axis 0 (ranks are one higher, Reshape uses ``0`` for it).

    Returns:
        A strategy of :class:`OnnxCase`.
    """
    from onnx import TensorProto, checker, helper
    unknown = sorted(set(ops) - set(ONNX_OPS))
    if unknown or not ops:
        raise ValueError(f"onnx_models: unknown ops {unknown}; choose from {list(ONNX_OPS)}")
    opset = draw(st.sampled_from(tuple(opsets)))
    low_rank = max(min_rank, 1 if set(ops) & set(_OTHER) else 0)
    if dynamic_batch:
        low_rank = max(low_rank + 1, 1)
    rank = draw(st.integers(low_rank, max(low_rank, max_rank)))
    shape = tuple(draw(st.integers(1, max_dim)) for _ in range(rank))
    graph = _Graph(draw, tuple(sorted(ops)), opset, dynamic_batch)
    count = draw(st.integers(1, max(1, max_inputs)))
    inputs = {f"in{i}": shape for i in range(count)}
    graph.values.extend(inputs.items())
    for _ in range(draw(st.integers(1, max(1, max_nodes)))):
        graph.step()
    produced = graph.values[count:] or [graph.values[0]]
    outputs = [produced[-1]]
    if len(produced) > 1 and draw(st.booleans()):
        outputs.insert(0, graph.pick(produced[:-1]))

    def declared(dims):
        dims = list(dims)
        if dynamic_batch and dims:
            dims[0] = "N"
        return dims
    graph_proto = helper.make_graph(
        graph.nodes, "generated",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, declared(s))
         for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT,
                                       [None] * len(s) if dynamic_batch else list(s))
         for n, s in outputs],
        graph.initializers)
    model = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=8)
    checker.check_model(model, full_check=True)
    return OnnxCase(model, inputs, opset)
