"""Regenerate ``tests/api_surface.json`` from the seed API reference (STYLE.md section 9.13).

Usage::

    python tests/api_surface_gen.py [REFERENCE_DIR]      # default: ../shared/reference

The reference files (``*-api.txt``) are TVM's rendered API pages as plain text. Every line of
the form ``[class |static ]tvm.<module>.<Name>(<params>)[ <return annotation>]`` is a
documented signature; an unqualified ``name(<params>)`` line that follows a ``class`` line is a
method of that class. Abbreviated summary lines (``f(x[, y])``, ``…``) are skipped: the full
line appears further down. Only names in scope of irlib (``SCOPE``) are kept, each mapped to
the irlib name(s) that must carry the same signature (DESIGN.md's API map).

A few documented callables have no signature line in the text (the renderer dropped it); their
signatures are reconstructed in ``RECONSTRUCTED`` from the description and TVM v0.14, and
marked so in the output. Deliberate deviations of irlib from the documented signature live in
``DEVIATIONS`` with a reason; the golden test accepts exactly those.

The output is deterministic: rerunning the script on the same reference gives the same bytes.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_REFERENCE = HERE.parent.parent / "shared" / "reference"
OUTPUT = HERE / "api_surface.json"

REFERENCE_FILES = (
    "relay-transform-api.txt",
    "relay-testing-api.txt",
    "graph-executor-api.txt",
    "relax-frontend-api.txt",
)

ZOO_MODELS = ("mlp", "resnet", "dcgan", "mobilenet", "lstm", "inception_v3", "squeezenet",
              "vgg", "densenet")


def _testing_targets(name: str) -> list[str] | None:
    """irlib names for ``tvm.relay.testing.<name>`` (DESIGN.md's API map)."""
    head, _, rest = name.partition(".")
    if head in ZOO_MODELS and rest:
        return [f"zoo.{head}.{rest}", f"interp.testing.{head}.{rest}"]
    if head == "Prelude":
        suffix = "." + rest if rest else ""
        return ["irlib.prelude.Prelude" + suffix, "interp.testing.Prelude" + suffix]
    return {
        "create_workload": ["zoo.create_workload", "interp.testing.create_workload"],
        "count": ["interp.nat.count", "interp.testing.count"],
        "make_nat_value": ["interp.nat.make_nat_value", "interp.testing.make_nat_value"],
        "make_nat_expr": ["interp.nat.make_nat_expr", "interp.testing.make_nat_expr"],
        "to_python": ["interp.to_python", "interp.testing.to_python"],
        "run_as_python": ["interp.run_as_python", "interp.testing.run_as_python"],
        "gradient": ["irlib.transform.gradient", "interp.testing.gradient"],
        "check_grad": ["interp.testing.check_grad"],
        "enabled_targets": ["interp.testing.enabled_targets"],
        "count_ops": ["interp.testing.count_ops"],
    }.get(name)


def map_seed_name(seed: str) -> list[str] | None:
    """Return the irlib names a documented seed name maps to, or None when out of scope."""
    if seed.startswith("tvm.relay.transform."):
        return ["irlib.transform." + seed[len("tvm.relay.transform."):]]
    if seed.startswith("tvm.relay.testing."):
        return _testing_targets(seed[len("tvm.relay.testing."):])
    if seed.startswith("tvm.contrib.graph_executor."):
        return ["interp.graph_executor." + seed[len("tvm.contrib.graph_executor."):]]
    if seed.startswith("tvm.relax.frontend.nn."):
        return ["irlib.frontend.nn." + seed[len("tvm.relax.frontend.nn."):]]
    if seed.startswith("tvm.relax.frontend.torch."):
        return ["irlib.frontend.torch." + seed[len("tvm.relax.frontend.torch."):]]
    if seed.startswith("tvm.relax.frontend.stablehlo."):
        return ["irlib.frontend.stablehlo." + seed[len("tvm.relax.frontend.stablehlo."):]]
    return {
        "tvm.relax.frontend.onnx.from_onnx": ["irlib.frontend.onnx.from_onnx"],
        "tvm.relax.frontend.detach_params": ["irlib.frontend.detach_params"],
    }.get(seed)


# Documented callables whose signature line the rendered text lost: (seed name, kind,
# parameter text, where the description is). Signatures as in TVM v0.14.
RECONSTRUCTED = (
    ("tvm.relay.testing.enabled_targets", "function", "",
     "relay-testing-api.txt: 'Get all enabled targets with associated devices.'"),
    ("tvm.relay.testing.count_ops", "function", "expr",
     "relay-testing-api.txt: 'count number of times a given op is called in the graph'"),
    ("tvm.relay.testing.Prelude.load_prelude", "method", "",
     "relay-testing-api.txt: 'Parses the Prelude from Relay's text format into a module.'"),
    ("tvm.contrib.graph_executor.GraphModule.run", "method", "**input_dict",
     "graph-executor-api.txt: 'Run forward execution of the graph'"),
    ("tvm.contrib.graph_executor.GraphModule.get_num_outputs", "method", "",
     "graph-executor-api.txt: 'Get the number of outputs from the graph'"),
    ("tvm.contrib.graph_executor.GraphModule.get_num_inputs", "method", "",
     "graph-executor-api.txt: 'Get the number of inputs to the graph'"),
    ("tvm.contrib.graph_executor.GraphModule.get_input_index", "method", "name",
     "graph-executor-api.txt: 'Get inputs index via input name.'"),
    ("tvm.contrib.graph_executor.GraphModule.get_input_info", "method", "",
     "graph-executor-api.txt: \"Return the 'shape' and 'dtype' dictionaries of the graph.\""),
    ("tvm.contrib.graph_executor.GraphModule.load_params", "method", "params_bytes",
     "graph-executor-api.txt: 'Load parameters from serialized byte array of parameter dict.'"),
)

# Deliberate differences between irlib and the documented signature. Keyed by seed name;
# each item names one parameter and what irlib has instead ("default": the irlib default as
# Python source; "absent": irlib has no such parameter), with the reason.
DEVIATIONS = {
    "tvm.relay.testing.to_python": [
        {"param": "target", "default": "'cpu'",
         "reason": "the seed's default target is llvm, i.e. the CPU; irlib spells it 'cpu' "
                   "(targets are 'cpu' | 'cuda' | 'python', with 'llvm' accepted as an alias)"},
    ],
    "tvm.relay.testing.run_as_python": [
        {"param": "target", "default": "'cpu'",
         "reason": "the seed's default target is llvm, i.e. the CPU; irlib spells it 'cpu' "
                   "(targets are 'cpu' | 'cuda' | 'python', with 'llvm' accepted as an alias)"},
    ],
    "tvm.relay.transform.PassContext": [
        {"param": "fallback_device", "default": "None",
         "reason": "no device object at pass level in irlib (irlib never imports interp); "
                   "None means the CPU, as tvm.cpu(0) does"},
    ],
    "tvm.relay.transform.ToCPS": [
        {"param": "expr", "absent": True,
         "reason": "the seed documents ToCPS(expr, mod) as returning a Pass; irlib's ToCPS() "
                   "is that pass (applied to a Function it returns the CPS Function, as the "
                   "seed's ToCPS(expr) does), and to_cps(func, mod) is the expression form"},
        {"param": "mod", "absent": True, "reason": "see expr"},
    ],
    "tvm.relay.transform.build_config": [
        {"param": "fallback_device", "default": "None",
         "reason": "same as PassContext: None means the CPU (tvm.cpu(0))"},
    ],
}

_QUALIFIED = re.compile(r"^(?:(class|static) )?(tvm\.[\w.]+)(?:\((.*)\))?(?: (\S.*))?$")
_METHOD = re.compile(r"^(?:(static) )?([A-Za-z_]\w*)\((.*)\)(?: (\S.*))?$")


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split ``text`` at ``sep`` characters outside brackets and string quotes."""
    parts, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def parse_params(text: str) -> list[dict]:
    """Parse a documented parameter list into ``[{"name", "kind"[, "default"]}]``.

    Annotations are dropped (irlib is not typed like TVM). A default keeps its source text;
    the test evaluates it with ``ast.literal_eval`` (non-literal ones need a deviation).
    """
    params, keyword_only = [], False
    for piece in split_top_level(text):
        if piece == "*":
            keyword_only = True
            continue
        if piece.startswith("**"):
            params.append({"name": piece[2:].split(":")[0].strip(), "kind": "VAR_KEYWORD"})
            continue
        if piece.startswith("*"):
            params.append({"name": piece[1:].split(":")[0].strip(), "kind": "VAR_POSITIONAL"})
            keyword_only = True
            continue
        # The first "=" ends the name (and annotation); a default may contain more ("llvm
        # -keys=cpu").
        head, eq, default = piece.partition("=")
        entry = {"name": head.split(":")[0].strip(),
                 "kind": "KEYWORD_ONLY" if keyword_only else "POSITIONAL_OR_KEYWORD"}
        if eq:
            entry["default"] = default.strip()
        params.append(entry)
    return params


def _is_abbreviated(params_text: str) -> bool:
    """A summary-table line: optional parameters in brackets (``x[, y]``) or elided."""
    return bool(re.search(r"\[\s*,|…|\.\.\.", params_text))


def scan_file(path: Path) -> list[dict]:
    """Return the documented signatures of one reference file, in file order."""
    found, current_class = [], None
    for lineno, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        qualified = _QUALIFIED.match(line)
        if qualified:
            keyword, seed, params_text = qualified.group(1), qualified.group(2), qualified.group(3)
            current_class = seed if keyword == "class" else None
            if params_text is None and keyword != "class":
                continue  # a module heading or a bare type name ("tvm.relay.Pass")
            kind = "class" if keyword == "class" else "function"
            found.append({"seed": seed, "kind": kind, "params_text": params_text,
                          "source": f"{path.name}:{lineno}"})
            continue
        if current_class and line.startswith("property "):
            found.append({"seed": f"{current_class}.{line.split()[1].rstrip(':')}", "kind": "property",
                          "params_text": None, "source": f"{path.name}:{lineno}"})
            continue
        method = _METHOD.match(line)
        if method and current_class and not _is_abbreviated(method.group(3)):
            kind = "staticmethod" if method.group(1) else "method"
            found.append({"seed": f"{current_class}.{method.group(2)}", "kind": kind,
                          "params_text": method.group(3), "source": f"{path.name}:{lineno}"})
    return found


def build(reference_dir: Path) -> dict:
    """Build the golden data structure from the reference files."""
    entries: dict[str, dict] = {}
    for name in REFERENCE_FILES:
        for item in scan_file(reference_dir / name):
            targets = map_seed_name(item["seed"])
            if targets is None:
                continue
            params = None if item["params_text"] is None else parse_params(item["params_text"])
            seed = item["seed"]
            previous = entries.get(seed)
            # A repeated method ("current()" then "static current()") keeps the fuller line.
            if previous and previous["kind"] == "staticmethod":
                continue
            entries[seed] = {"seed": seed, "irlib": targets, "kind": item["kind"],
                             "params": params, "source": item["source"]}
    for seed, kind, params_text, note in RECONSTRUCTED:
        if seed in entries:
            raise ValueError(f"{seed} is documented now; drop it from RECONSTRUCTED")
        entries[seed] = {"seed": seed, "irlib": map_seed_name(seed), "kind": kind,
                         "params": parse_params(params_text),
                         "source": "reconstructed (signature line missing): " + note}
    for seed, deviations in DEVIATIONS.items():
        documented = {p["name"] for p in entries[seed]["params"]}
        for deviation in deviations:
            if deviation["param"] not in documented:
                raise ValueError(f"deviation for unknown parameter {seed}({deviation['param']})")
        entries[seed]["deviations"] = deviations
    return {
        "generated_by": "tests/api_surface_gen.py from shared/reference/*-api.txt; "
                        "edit the generator, not this file",
        "entries": [entries[k] for k in sorted(entries)],
    }


def main(argv: list[str]) -> int:
    """Write ``tests/api_surface.json`` and report how many entries it holds."""
    reference_dir = Path(argv[1]) if len(argv) > 1 else DEFAULT_REFERENCE
    data = build(reference_dir)
    OUTPUT.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUTPUT} ({len(data['entries'])} entries)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
