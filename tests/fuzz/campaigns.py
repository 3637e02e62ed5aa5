"""Mutation-based fuzz campaigns (issue #19): parser, ONNX importer, params format.

Each campaign feeds mutated inputs to one public entry point and records every outcome that is
not success or an :class:`irlib.errors.IRError` with a message: another exception, an empty
message, a hang (ONNX: a worker past its time limit) or a crash (a worker that died).
``tests/fuzz/test_*.py`` run each campaign with a small budget; ``benchmarks/fuzz.py
--minutes N`` runs them for long.

Every campaign returns a :class:`Report`; ``report.failures`` lists ``(input, description)``.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import random
import subprocess
import sys
import time

import numpy as np

PARSER_SEEDS = [
    '#[version = "0.0.5"]\ndef @main(%x: Tensor[(2, 3), float32], %y: float32) -> '
    'Tensor[(2, 3), float32] {\n  %0 = add(%x, %y);\n  nn.relu(%0)\n}\n',
    '#[version = "0.0.5"]\ntype List[A] {\n  Cons(A, List[A]),\n  Nil,\n}\n'
    'def @len[A](%l: List[A]) -> int32 {\n  match (%l) {\n    Cons(_, %t) => add(1, @len(%t)),'
    '\n    Nil => 0,\n  }\n}\n',
    '#[version = "0.0.5"]\ndef @f(%c: bool, %a: (float32, int64)) {\n  let %r = ref(%a.0);\n'
    '  if (%c) { ref_write(%r, 2f); ref_read(%r) } else { -1.5e3f }\n}\n',
    '#[version = "0.0.5"]\ndef @g(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), '
    'float32]) {\n  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=4, '
    'kernel_size=[3, 3]);\n  %1 = fn (%p: Tensor[(1, 4, 8, 8), float32]) { sum(%p, axis=[1]) };'
    '\n  %1(%0)\n}\n',
    '#[version = "0.0.5"]\ndef @h[T](%x: T, %n: Tensor[(?, 4), float16]) -> (T, int8) {\n'
    '  (%x, 3i8) /* block */ // line\n}\n',
]

_TOKENS = ["(", ")", "{", "}", "[", "]", ",", ";", "%", "@", "=", "=>", "->", "fn", "let", "if",
           "else", "match", "match?", "type", "def", "ref", "free_var", "meta[relay.Constant][0]",
           "#[metadata]", "Tensor", "?", "1f", "-0", "1e99f", "inff", "-nanf", "3i8", "2u64",
           "\"s", "/*", "*/", "//", "\n", " ", "é", "\r", "\t", "%0", "%999999", "_", ".0",
           "float64", "bool", "int4", "(,)", "-->", "@main", "True"]


@dataclasses.dataclass
class Report:
    """The outcome of one campaign.

    Attributes:
        name: the campaign.
        cases: inputs tried.
        ok: inputs accepted.
        irlib_errors: inputs rejected with an IRError carrying a message.
        failures: ``[(input, description)]`` for anything else.
        seconds: wall time.
    """

    name: str
    cases: int = 0
    ok: int = 0
    irlib_errors: int = 0
    failures: list = dataclasses.field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        """One line: counts and time."""
        return (f"{self.name}: {self.cases} cases, {self.ok} ok, {self.irlib_errors} irlib "
                f"errors, {len(self.failures)} failures, {self.seconds:.1f}s")


def classify(report: Report, case, call) -> None:
    """Run ``call()`` and count its outcome in ``report`` (``case`` names the input)."""
    from irlib.errors import IRError
    report.cases += 1
    try:
        call()
    except IRError as error:
        if str(error).strip():
            report.irlib_errors += 1
        else:
            report.failures.append((case, f"{type(error).__name__} with an empty message"))
    except Exception as error:  # noqa: BLE001 - recording what escaped is the point
        report.failures.append((case, f"{type(error).__name__}: {error}"[:300]))
    else:
        report.ok += 1


def mutate_text(text: str, rng: random.Random) -> str:
    """One to four random edits of ``text``: delete, insert/replace a char or token, copy or
    swap a slice."""
    for _ in range(rng.randint(1, 4)):
        pos = rng.randrange(len(text) + 1)
        kind = rng.randrange(6)
        if kind == 0 and text:
            end = min(len(text), pos + rng.randint(1, 8))
            text = text[:pos] + text[end:]
        elif kind == 1:
            text = text[:pos] + rng.choice(_TOKENS) + text[pos:]
        elif kind == 2 and pos < len(text):
            text = text[:pos] + chr(rng.randrange(32, 0x250)) + text[pos + 1:]
        elif kind == 3 and text:
            start = rng.randrange(len(text))
            piece = text[start:start + rng.randint(1, 30)]
            text = text[:pos] + piece + text[pos:]
        elif kind == 4 and pos < len(text):
            text = text[:pos] + rng.choice(_TOKENS) + text[pos + rng.randint(1, 4):]
        else:
            text = text[:pos] + str(rng.choice([0, -1, 2 ** 31, 2 ** 64, 10 ** 9])) + text[pos:]
    return text


def parser_campaign(count: int, seed: int = 0, seeds=PARSER_SEEDS) -> Report:
    """Parse ``count`` mutants of ``seeds``: each must parse or raise an IRError."""
    import irlib
    rng = random.Random(seed)
    report = Report("parser")
    start = time.perf_counter()
    for _ in range(count):
        text = mutate_text(rng.choice(seeds), rng)
        classify(report, text, lambda: irlib.parse(text))
    report.seconds = time.perf_counter() - start
    return report


# -- params format ------------------------------------------------------------------------

def params_seeds() -> list:
    """Blobs of a few parameter dicts (several dtypes, ranks 0-4, empty names)."""
    from interp.params import save_param_dict
    rng = np.random.default_rng(0)
    dicts = [
        {"w": rng.standard_normal((2, 3)).astype("float32"), "b": np.arange(3, dtype="int64")},
        {"": np.float16(1.5) * np.ones((), "float16"), "x.y": np.zeros((1, 0, 2), "uint8")},
        {"k": rng.integers(0, 2, (2, 2, 1, 3)).astype("bool"), "é": np.ones(4, "float64")},
    ]
    return [save_param_dict({k: np.asarray(v) for k, v in d.items()}) for d in dicts]


def mutate_bytes(blob: bytes, rng: random.Random) -> bytes:
    """One to four random edits of ``blob``: flip, set to an extreme, delete, insert, cut."""
    data = bytearray(blob)
    for _ in range(rng.randint(1, 4)):
        if not data:
            data += bytes([rng.randrange(256)])
            continue
        pos = rng.randrange(len(data))
        kind = rng.randrange(6)
        if kind == 0:
            data[pos] ^= 1 << rng.randrange(8)
        elif kind == 1:
            data[pos] = rng.choice([0, 0x7F, 0x80, 0xFF])
        elif kind == 2:
            del data[pos:pos + rng.randint(1, 16)]
        elif kind == 3:
            data[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif kind == 4:
            del data[pos:]
        else:   # a little-endian 8-byte field set to an extreme
            value = rng.choice([0, 1, 2 ** 63 - 1, 2 ** 64 - 1, 2 ** 40, 255])
            data[pos:pos + 8] = value.to_bytes(8, "little")
    return bytes(data)


def params_campaign(count: int, seed: int = 0) -> Report:
    """Load ``count`` byte mutants of :func:`params_seeds` with ``interp.load_param_dict``."""
    from interp.params import load_param_dict
    rng = random.Random(seed)
    seeds = params_seeds()
    report = Report("params")
    start = time.perf_counter()
    for _ in range(count):
        blob = mutate_bytes(rng.choice(seeds), rng)
        classify(report, blob, lambda: load_param_dict(blob))
    report.seconds = time.perf_counter() - start
    return report


# -- ONNX importer (in subprocesses) -------------------------------------------------------

def onnx_seeds() -> list:
    """Serialized small ONNX models: elementwise with initializers, Conv, Gemm, shape ops
    (ConstantOfShape, Range, Expand, Tile, Reshape), If with subgraphs."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    f32 = TensorProto.FLOAT

    def model(nodes, inputs, outputs, inits=(), opset=17):
        graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])

    def vi(name, shape, elem=f32):
        return helper.make_tensor_value_info(name, elem, shape)

    w = numpy_helper.from_array(np.arange(6, dtype="float32").reshape(2, 3), "w")
    models = [
        model([helper.make_node("Add", ["x", "w"], ["a"]), helper.make_node("Relu", ["a"], ["y"])],
              [vi("x", [2, 3])], [vi("y", [2, 3])], [w]),
        model([helper.make_node("Conv", ["x", "k"], ["y"], pads=[1, 1, 1, 1], strides=[1, 1])],
              [vi("x", [1, 2, 5, 5])], [vi("y", [1, 3, 5, 5])],
              [numpy_helper.from_array(np.ones((3, 2, 3, 3), "float32"), "k")]),
        model([helper.make_node("Gemm", ["x", "w", "c"], ["y"], transB=1, alpha=0.5)],
              [vi("x", [4, 3])], [vi("y", [4, 2])],
              [w, numpy_helper.from_array(np.ones(2, "float32"), "c")]),
        model([helper.make_node("ConstantOfShape", ["s"], ["z"],
                                value=numpy_helper.from_array(np.array([2.0], "float32"))),
               helper.make_node("Range", ["r0", "r1", "r2"], ["r"]),
               helper.make_node("Expand", ["x", "s"], ["e"]),
               helper.make_node("Tile", ["x", "t"], ["t2"]),
               helper.make_node("Reshape", ["t2", "rs"], ["y"])],
              [vi("x", [1, 3])], [vi("z", [2, 3]), vi("r", [5]), vi("e", [2, 3]),
                                  vi("y", [6, 3])],
              [numpy_helper.from_array(np.array([2, 3], "int64"), "s"),
               numpy_helper.from_array(np.array(0, "float32"), "r0"),
               numpy_helper.from_array(np.array(5, "float32"), "r1"),
               numpy_helper.from_array(np.array(1, "float32"), "r2"),
               numpy_helper.from_array(np.array([3, 2], "int64"), "t"),
               numpy_helper.from_array(np.array([6, 3], "int64"), "rs")]),
        model([helper.make_node("If", ["c"], ["y"],
                                then_branch=helper.make_graph(
                                    [helper.make_node("Neg", ["x"], ["o"])], "t", [],
                                    [vi("o", [3])]),
                                else_branch=helper.make_graph(
                                    [helper.make_node("Abs", ["x"], ["o2"])], "e", [],
                                    [vi("o2", [3])]))],
              [vi("c", [], TensorProto.BOOL), vi("x", [3])], [vi("y", [3])]),
    ]
    for m in models:
        onnx.checker.check_model(m)
    return [m.SerializeToString() for m in models]


def mutate_onnx(blob: bytes, rng: random.Random) -> bytes:
    """A byte mutant (half the time) or a semantic mutant of a serialized model: a tensor's
    dims/data_type/raw data, a value's element type or dims, a name with bytes that are not
    UTF-8, an attribute's value, a node's op type or inputs."""
    if rng.random() < 0.5:
        return mutate_bytes(blob, rng)
    import onnx
    model = onnx.ModelProto()
    model.ParseFromString(blob)
    graph = model.graph
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(7)
        if kind == 0 and graph.initializer:
            init = rng.choice(graph.initializer)
            which = rng.randrange(3)
            if which == 0 and init.dims:
                init.dims[rng.randrange(len(init.dims))] = rng.choice(
                    [0, 1, 7, -1, 10 ** 6, 10 ** 12])
            elif which == 1:
                init.data_type = rng.choice([0, 2, 7, 8, 9, 10, 14, 16, 17, 23, 99, 1000])
            else:
                raw = init.raw_data or bytes(8)
                init.raw_data = raw[:rng.randrange(len(raw) + 1)] + bytes(rng.randrange(9))
        elif kind == 1:
            value = rng.choice(list(graph.input) + list(graph.output))
            tensor = value.type.tensor_type
            if rng.random() < 0.5:
                tensor.elem_type = rng.choice([0, 2, 7, 8, 9, 10, 14, 15, 16, 99])
            elif tensor.shape.dim:
                tensor.shape.dim[rng.randrange(len(tensor.shape.dim))].dim_value = rng.choice(
                    [0, -1, 10 ** 6, 10 ** 12, 2 ** 62])
        elif kind == 2:
            target = rng.choice(list(graph.input) + list(graph.node) + list(graph.initializer))
            target.name = target.name + "\udcff" if False else target.name
            raw = rng.choice([b"\xff\xfe", b"\xc3", b"x\x00y", "é".encode()])
            # protobuf refuses str with surrogates; write the bytes through the wire format
            target.name = raw.decode("latin-1")
        elif kind == 3 and graph.node:
            node = rng.choice(graph.node)
            if node.attribute:
                attr = rng.choice(node.attribute)
                if attr.ints:
                    attr.ints[rng.randrange(len(attr.ints))] = rng.choice([-5, 0, 10 ** 9])
                elif attr.type == onnx.AttributeProto.INT:
                    attr.i = rng.choice([-5, 0, 2, 10 ** 9])
                elif attr.type == onnx.AttributeProto.FLOAT:
                    attr.f = rng.choice([float("nan"), float("inf"), -0.0, 1e30])
                elif attr.type == onnx.AttributeProto.TENSOR:
                    attr.t.data_type = rng.choice([1, 7, 9, 14, 99])
        elif kind == 4 and graph.node:
            node = rng.choice(graph.node)
            node.op_type = rng.choice(["Add", "Relu", "Range", "Tile", "Expand", "Conv",
                                       "ConstantOfShape", "Reshape", "Gemm", "Identity"])
        elif kind == 5 and graph.node:
            node = rng.choice(graph.node)
            names = [v.name for v in graph.input] + [i.name for i in graph.initializer] + [""]
            if node.input:
                node.input[rng.randrange(len(node.input))] = rng.choice(names)
        elif kind == 6 and graph.initializer:
            init = rng.choice(graph.initializer)
            big = rng.choice([np.array([10 ** 6, 10 ** 6], "int64"), np.array(1e12, "float32"),
                              np.array([3, 10 ** 9], "int64"), np.array(-4, "float32")])
            init.CopyFrom(onnx.numpy_helper.from_array(big, init.name))
    try:
        return model.SerializeToString()
    except Exception:  # noqa: BLE001 - a name protobuf cannot encode: keep the byte mutant
        return mutate_bytes(blob, rng)


_WORKER = r"""
import pickle, sys, traceback
sys.setrecursionlimit(20000)
from irlib.errors import IRError
from irlib.frontend.onnx import from_onnx
import onnx
blobs = pickle.load(sys.stdin.buffer)
results = []
for blob in blobs:
    try:
        model = onnx.ModelProto()
        model.ParseFromString(blob)
    except Exception:
        results.append(("unparsable", ""))
        continue
    try:
        from_onnx(model)
    except IRError as error:
        results.append(("irlib", type(error).__name__ if str(error).strip() else "empty"))
    except BaseException as error:
        results.append(("foreign", f"{type(error).__name__}: {error}"[:300]))
    else:
        results.append(("ok", ""))
    print(len(results), flush=True, file=sys.stderr)
pickle.dump(results, sys.stdout.buffer)
"""


def onnx_campaign(count: int, seed: int = 0, batch: int = 200, timeout: float = 120.0) -> Report:
    """Import ``count`` mutants of :func:`onnx_seeds` with ``from_onnx``, ``batch`` per
    worker subprocess (a worker that dies or passes ``timeout`` seconds is a failure)."""
    rng = random.Random(seed)
    seeds = onnx_seeds()
    report = Report("onnx")
    start = time.perf_counter()
    env = dict(os.environ, IRLIB_MAX_TENSOR_BYTES=os.environ.get("IRLIB_MAX_TENSOR_BYTES",
                                                                  str(2 ** 30)))
    done = 0
    while done < count:
        blobs = [mutate_onnx(rng.choice(seeds), rng) for _ in range(min(batch, count - done))]
        done += len(blobs)
        try:
            proc = subprocess.run([sys.executable, "-c", _WORKER], input=pickle.dumps(blobs),
                                  capture_output=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired as error:
            finished = (error.stderr or b"").decode().split()
            at = int(finished[-1]) if finished else 0
            report.cases += len(blobs)
            report.failures.append((blobs[at] if at < len(blobs) else None,
                                    f"hang: worker passed {timeout}s at case {at}"))
            continue
        if proc.returncode != 0:
            finished = proc.stderr.decode(errors="replace").split()
            at = int(finished[-1]) if finished and finished[-1].isdigit() else 0
            report.cases += len(blobs)
            report.failures.append((blobs[at] if at < len(blobs) else None,
                                    f"crash: worker exit {proc.returncode}: "
                                    f"{proc.stderr.decode(errors='replace')[-300:]}"))
            continue
        for blob, (kind, detail) in zip(blobs, pickle.loads(proc.stdout)):
            report.cases += 1
            if kind in ("ok", "unparsable"):
                report.ok += 1
            elif kind == "irlib" and detail != "empty":
                report.irlib_errors += 1
            else:
                report.failures.append((blob, detail or "IRError with an empty message"))
    report.seconds = time.perf_counter() - start
    return report
