"""The supported-op table of docs/torch.md, rendered from the converter registry."""

from __future__ import annotations

from . import registry

_HEADINGS = {"module": "`torch.nn` modules (FX `call_module`)",
             "function": "Functions (FX `call_function`: `torch.*`, `torch.nn.functional.*`, "
                         "`operator.*`)",
             "method": "Tensor methods (FX `call_method`)",
             "aten": "ATen operators (`torch.export` programs)"}


def supported_ops_table() -> str:
    """The Markdown listing every registered torch target, grouped by how it is called.

    Returns:
        The text between the ``<!-- optable -->`` markers of docs/torch.md: one section per
        kind (modules, functions, methods, ATen overloads) with the target names, sorted,
        written as comma-separated inline code.
    """
    groups: dict = {}
    for kind, name, _ in registry.registered_targets():
        groups.setdefault(kind, []).append(name)
    lines = []
    for kind in ("module", "function", "method", "aten"):
        names = sorted(set(groups.get(kind, [])))
        lines.append(f"### {_HEADINGS[kind]} ({len(names)})")
        lines.append("")
        lines.append(", ".join(f"`{name}`" for name in names))
        lines.append("")
    return "\n".join(lines)
