"""Generate the operator reference (docs/ops.md) from the op registry.

Everything comes from the registered :class:`~irlib.op.registry.OpDef` entries: name,
arguments, attributes with defaults, fusion pattern kind, whether a gradient is registered,
the defining module and the one-line description; the "kernels" column comes from the kernel
registry, which the caller passes in (``irlib`` does not import ``jitkernels``; the command
line passes ``jitkernels.kernel_index()``). Regenerate with::

    irlib ops --markdown > docs/ops.md
"""

from __future__ import annotations

from .registry import get_def, list_ops

__all__ = ["op_rows", "ops_listing", "ops_markdown"]

_HEADER = """# Operator reference

Generated from the op registry by `irlib ops --markdown` (`irlib/op/docgen.py`); do not edit
by hand. Every op has a type relation and a numpy reference implementation; "gradient" says
whether it has a gradient rule. Pattern kinds are Relay's fusion kinds (`ELEMWISE`,
`BROADCAST`, `INJECTIVE`, `COMM_REDUCE`, `OUT_ELEMWISE_FUSABLE`, `OPAQUE`). "defined in" is
the module under `irlib/op/` that registers the op. "kernels" lists the compiled code the
graph executor has for it besides the numpy reference: `cpu` (a numba kernel, `jitkernels/cpu`),
`cuda` (a numba.cuda kernel, `jitkernels/cuda`) and `fused` (the fused-group code generator,
`jitkernels/codegen`, inlines it into generated loops).

The `dyn.*` and `onnx.*` ops live in `irlib/op/frontend/`: the importers load them, and a
lookup of such a name (the text parser, an executor) loads them on first use; `import irlib`
alone does not.

Builders: top-level ops are `irlib.<name>`, `nn.*` ops are `irlib.nn.<name>`, `image.*` ops
are `irlib.image.<name>` and annotations are `irlib.annotation.<name>` (`on_device`,
`stop_fusion`, `compiler_begin`, `compiler_end`, `checkpoint`).

Not in Relay v0.16 (irlib additions, for ONNX and transformer models): `nn.attention`
(`softmax(query @ key^T * scale [+ causal mask]) @ value` on `(*batch, seq, dim)` tensors,
`scale` defaulting to `1/sqrt(dim)`, `causal` masking keys after the query position,
top-left aligned), `nn.rms_norm` (as Relax's), and `nn.lp_pool1d/2d/3d` (ONNX LpPool).
The ONNX ELU family (`irlib.nn.elu`, `selu`, `celu`, `softplus`, `softsign`, `hard_sigmoid`,
`hard_swish`, `thresholded_relu`) are builders composing the primitives below, and
`irlib.nonzero` is `transpose(argwhere(x))`.
"""


def _family(name: str) -> str:
    return name.split(".")[0] if "." in name else "tensor"


def _format_default(value) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, tuple):
        return "(" + ", ".join(_format_default(v) for v in value) + ("," if len(value) == 1
                                                                      else "") + ")"
    return repr(value)


def op_rows() -> list:
    """One dict per op: name, args, attrs, pattern, gradient, module, description."""
    rows = []
    for name in list_ops():
        op_def = get_def(name)
        attrs = [] if op_def.attrs is None else [
            f"{field}={_format_default(default)}"
            for field, default in op_def.attrs.defaults.items()]
        rows.append({"name": name, "args": list(op_def.arg_names), "attrs": attrs,
                     "pattern": op_def.pattern.name, "gradient": op_def.grad is not None,
                     "module": op_def.module.removeprefix("irlib.op."),
                     "description": op_def.description})
    return rows


def ops_listing() -> str:
    """Plain text: one line per op with its pattern kind (what ``irlib ops`` prints)."""
    rows = op_rows()
    width = max(len(row["name"]) for row in rows)
    lines = [f"{row['name']:<{width}}  {row['pattern']}" for row in rows]
    return "\n".join(lines) + f"\n{len(rows)} operators\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def ops_markdown(kernels: dict) -> str:
    """The full markdown reference (the content of docs/ops.md).

    Args:
        kernels: ``{op name: [backend, ...]}`` for the "kernels" column, as
            ``jitkernels.kernel_index()`` returns it (ops missing from it have none).
    """
    rows = op_rows()
    families: dict = {}
    for row in rows:
        families.setdefault(_family(row["name"]), []).append(row)
    out = [_HEADER, f"{len(rows)} operators.\n"]
    for family in sorted(families, key=lambda f: (f != "tensor", f)):
        title = {"tensor": "Tensor ops", "nn": "`nn` ops", "image": "`image` ops",
                 "annotation": "`annotation` ops"}.get(family, f"`{family}` ops")
        out.append(f"## {title}\n")
        out.append("| op | arguments | attributes (defaults) | pattern | gradient | defined in | "
                   "kernels | description |")
        out.append("|---|---|---|---|---|---|---|---|")
        for row in families[family]:
            attrs = ", ".join(f"`{a}`" for a in row["attrs"]) or "-"
            backends = ", ".join(kernels.get(row["name"], ())) or "-"
            out.append(f"| `{row['name']}` | {', '.join(row['args']) or '-'} | "
                       f"{_cell(attrs)} | {row['pattern']} | "
                       f"{'yes' if row['gradient'] else 'no'} | `{row['module']}` | "
                       f"{backends} | {_cell(row['description'])} |")
        out.append("")
    return "\n".join(out)
