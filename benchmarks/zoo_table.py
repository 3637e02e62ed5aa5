"""Print (or write to docs/zoo.md) the table of zoo models: parameters, FLOPs, output shape.

Every model is built at its default size and type-checked; nothing is run and no weights are
initialised. Parameter counts sum the element counts of ``main``'s parameters other than
``data``. FLOPs count 2 x the multiply-adds of ``nn.conv2d``, ``nn.conv2d_transpose`` and
``nn.dense`` (other ops are ignored), read from the inferred types.

Usage::

    python benchmarks/zoo_table.py            # print the Markdown table
    python benchmarks/zoo_table.py --write    # also regenerate docs/zoo.md
"""

from __future__ import annotations

import argparse
import math
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import irlib  # noqa: E402
from irlib.ir import expr as E  # noqa: E402
from irlib.ir.functor import post_order  # noqa: E402

import zoo  # noqa: E402

# (table name, call shown in the table, builder returning the network Function)
MODELS = [
    ("mlp", "mlp.get_net(1)", lambda: zoo.mlp.get_net(1)),
    *[(f"resnet{n}", f"resnet.get_net(1, 1000, {n})", (lambda n=n: zoo.resnet.get_net(1, 1000, n)))
      for n in (18, 34, 50, 101, 152)],
    ("mobilenet", "mobilenet.mobile_net()", lambda: zoo.mobilenet.mobile_net()),
    ("dcgan", "dcgan.get_net(1)", lambda: zoo.dcgan.get_net(1)),
    ("lstm", "lstm.get_net(10, 512)", lambda: zoo.lstm.get_net(10, 512)),
    ("inception_v3", "inception_v3.get_net(1, 1000, (3, 299, 299), 'float32')",
     lambda: zoo.inception_v3.get_net(1, 1000, (3, 299, 299), "float32")),
    *[(f"squeezenet{v}", f"squeezenet.get_net(1, (3, 224, 224), 1000, '{v}', 'float32')",
       (lambda v=v: zoo.squeezenet.get_net(1, (3, 224, 224), 1000, v, "float32")))
      for v in ("1.0", "1.1")],
    *[(f"vgg{n}", f"vgg.get_net(1, (3, 224, 224), 1000, 'float32', {n})",
       (lambda n=n: zoo.vgg.get_net(1, (3, 224, 224), 1000, "float32", n)))
      for n in (11, 13, 16, 19)],
    *[(f"densenet{n}", f"densenet.get_net({n})", (lambda n=n: zoo.densenet.get_net(n)))
      for n in (121, 161, 169, 201)],
]


def _shape(ty) -> tuple:
    return tuple(int(d) for d in ty.shape)


def _multiply_adds(call) -> int:
    """Multiply-adds of one conv2d / conv2d_transpose / dense call (0 for other ops)."""
    name = call.op.name
    attrs = call.attrs
    if name == "nn.dense":
        return math.prod(_shape(call.checked_type)) * _shape(call.args[0].checked_type)[-1]
    if name not in ("nn.conv2d", "nn.conv2d_transpose"):
        return 0
    layout = attrs.data_layout
    kernel_layout = attrs.kernel_layout
    weight = _shape(call.args[1].checked_type)
    window = weight[kernel_layout.index("H")] * weight[kernel_layout.index("W")]
    groups = int(attrs.groups)
    if name == "nn.conv2d":
        in_channels = _shape(call.args[0].checked_type)[layout.index("C")]
        return math.prod(_shape(call.checked_type)) * (in_channels // groups) * window
    out_channels = _shape(call.checked_type)[layout.index("C")]
    return math.prod(_shape(call.args[0].checked_type)) * (out_channels // groups) * window


def summarize(net) -> dict:
    """Parameter count, FLOPs and output type of a network Function.

    Args:
        net: the network Function.

    Returns:
        ``{"params": int, "flops": int, "output": str, "input": str}``.
    """
    mod = irlib.transform.InferType()(irlib.IRModule.from_expr(net))
    main = mod["main"]
    seen = {}
    for param in main.params:
        if param.name_hint != "data":
            seen[param.name_hint] = math.prod(_shape(param.checked_type))
    data = next(p for p in main.params if p.name_hint == "data")
    macs = sum(_multiply_adds(node) for node in post_order(main)
               if isinstance(node, E.Call) and isinstance(node.op, E.Op))
    ret = main.checked_type.ret_type
    output = f"{_shape(ret)} {ret.dtype}" if hasattr(ret, "dtype") else str(ret)
    return {"params": sum(seen.values()), "flops": 2 * macs, "output": output, "input": str(_shape(data.checked_type))}


def _human(count: int) -> str:
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if count >= size:
            return f"{count / size:.2f} {unit}"
    return str(count)


def table() -> str:
    """The Markdown table of every model."""
    rows = ["| model | built with | input | parameters | FLOPs | output |",
            "|---|---|---|---:|---:|---|"]
    for name, call, build in MODELS:
        info = summarize(build())
        rows.append(f"| {name} | `zoo.{call}` | {info['input']} | {info['params']:,} "
                    f"({_human(info['params'])}) | {_human(info['flops'])} | {info['output']} |")
    return "\n".join(rows)


HEADER = """# The model zoo

`zoo` mirrors `tvm.relay.testing`: each module (`mlp`, `resnet`, `dcgan`, `mobilenet`, `lstm`,
`inception_v3`, `squeezenet`, `vgg`, `densenet`) has `get_net(...)`, which returns the network
as an `irlib.Function` whose first parameter is the input `data`, and `get_workload(...)`,
which returns `(mod, params)`: the type-checked `IRModule` and a dict from parameter name to
`irlib.NDArray` initialised by `zoo.create_workload` (Xavier-uniform weights; biases, betas
and moving means 0; gammas and moving variances 1; seed 0). Signatures, defaults and
parameter names are those of Relay's `relay.testing`.

Weights are bare variables, as in the reference; type inference gives them their types from
the data type and the attributes (like Relay's conv2d, dense, batch_norm and bias_add
relations).

The table below lists every model at its default size (batch 1; DenseNet's default batch is
4). FLOPs count 2 x the multiply-adds of conv2d, conv2d_transpose and dense; other ops are not
counted. Shapes come from type inference; nothing is run. DenseNet follows the reference's
quirk (a dense block outputs only its layers' concatenation), so its counts are smaller than
the published DenseNet's. The LSTM has no default size; the row uses 10 steps of 512 units.

Regenerate with `python benchmarks/zoo_table.py --write`.

"""


def main(argv=None) -> int:
    """Print the table; with ``--write`` also write docs/zoo.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="regenerate docs/zoo.md")
    args = parser.parse_args(argv)
    text = table()
    print(text)
    if args.write:
        (ROOT / "docs" / "zoo.md").write_text(HEADER + text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
