"""The layer rules of DESIGN.md, checked statically on every import of the source tree.

Each ``.py`` file under ``irlib/``, ``interp/``, ``jitkernels/`` and ``zoo/`` is parsed with
:mod:`ast`; every import in it -- at module level or inside a function, ``import x``,
``from x import y`` (``y`` may be a submodule), relative imports resolved against the file's
package, and ``importlib.import_module("x")`` / ``__import__("x")`` with a literal name -- is
checked against the rules below. A lazy import breaks a rule just as a module-level one does;
the only way past a rule is an entry in ``ALLOWED`` that names the file, the import and why.

The rules:

* ``irlib`` never imports ``interp``, ``jitkernels`` or ``zoo``: the IR toolkit runs on the
  op registry's numpy references, never on the runtime;
* ``irlib/ir`` never imports the passes (``irlib.transform``), the text format
  (``irlib.text``: the parser, and the printer, whose package loads the parser) or the
  Prelude: services the IR offers on top of those (``mod.import_from_std``, ``astext()``)
  go through hooks that the higher layer installs (:mod:`irlib.ir.hooks`);
* ``jitkernels`` never imports ``interp`` (or ``zoo``): kernels are found by ``interp``, not
  the reverse;
* ``zoo`` imports only ``irlib``: model definitions are IR.
"""

from __future__ import annotations

import ast
import functools
import pathlib
from dataclasses import dataclass

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("irlib", "interp", "jitkernels", "zoo")


@dataclass(frozen=True)
class Rule:
    """Modules under ``source`` must not import modules under any of ``forbidden``."""
    source: str
    forbidden: tuple
    why: str


RULES = (
    Rule("irlib", ("interp", "jitkernels", "zoo"),
         "the IR toolkit never depends on the runtime, the kernels or the model zoo"),
    Rule("irlib.ir", ("irlib.transform", "irlib.text", "irlib.prelude", "irlib.prelude_static"),
         "the IR core never imports the passes, the text format or the Prelude"),
    Rule("jitkernels", ("interp", "zoo"), "kernels never import the runtime that calls them"),
    Rule("zoo", ("interp", "jitkernels"), "model definitions are IR: zoo imports only irlib"),
)

#: (file relative to the repository, imported module) -> why the exception is right. Each
#: allowed import must sit inside a function (never at module level).
ALLOWED = {
    ("irlib/frontend/nn/jit.py", "interp"):
        "nn.Module.jit compiles and runs the exported module: a frontend entry point that "
        "executes code, importing the runtime only when called",
    ("irlib/frontend/torch/dynamo.py", "interp"):
        "the torch.compile backend (relax_dynamo) builds and runs each captured graph; it "
        "imports the runtime only when torch calls it",
}

#: Violations left to work in progress, (file, module) -> the issue that removes it; each entry
#: must still be a violation (test_every_exception_is_still_needed says when one is fixed).
#: Empty: the last ones (the ONNX suite runner in irlib, ir/bind.py importing transform) were
#: fixed by issue #19/#20 (interp/onnx_suite.py, irlib/ir/rewrite.py).
KNOWN: dict = {}


@dataclass(frozen=True)
class Import:
    """One import found in a file."""
    path: str          # relative to the repository, with "/"
    line: int
    module: str        # the absolute module name imported
    in_function: bool  # inside a def/lambda (a lazy import) rather than at module level


def module_name(path: pathlib.Path, root: pathlib.Path = ROOT) -> str:
    """The dotted module name of a source file under ``root`` (a package's ``__init__`` is
    the package)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def resolve(path: pathlib.Path, level: int, module: str | None,
            root: pathlib.Path = ROOT) -> str:
    """The absolute name ``from <level dots><module> import ...`` means in ``path``."""
    if level == 0:
        return module or ""
    package = module_name(path, root).split(".")
    if path.name != "__init__.py":
        package.pop()                      # a module's package is its parent
    if level - 1 > len(package):
        raise ValueError(f"{path}: relative import beyond the top-level package")
    base = package[:len(package) - (level - 1)]
    return ".".join(base + ([module] if module else []))


class _ImportCollector(ast.NodeVisitor):
    """Collects every import of one file, noting whether it sits inside a function."""

    def __init__(self, path: pathlib.Path, root: pathlib.Path):
        self.path = path
        self.root = root
        self.rel = path.relative_to(root).as_posix()
        self.depth = 0
        self.found: list[Import] = []

    def _add(self, node, module):
        self.found.append(Import(self.rel, node.lineno, module, self.depth > 0))

    def _function(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_Import(self, node):
        for alias in node.names:
            self._add(node, alias.name)

    def visit_ImportFrom(self, node):
        base = resolve(self.path, node.level, node.module, self.root)
        self._add(node, base)
        for alias in node.names:          # `from pkg import sub` may import a submodule
            if alias.name != "*":
                self._add(node, f"{base}.{alias.name}")

    def visit_Call(self, node):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if (name in ("import_module", "__import__") and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            self._add(node, node.args[0].value)
        self.generic_visit(node)


def source_files():
    """Every .py file of the four packages."""
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


def imports_of(path: pathlib.Path, root: pathlib.Path = ROOT) -> list[Import]:
    """Every import of one file under ``root``."""
    collector = _ImportCollector(path, root)
    collector.visit(ast.parse(path.read_text(), filename=str(path)))
    return collector.found


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _allowed_key(imp: Import, table: dict):
    """The ``table`` entry covering ``imp`` (an entry names a module and covers its
    submodules), or None."""
    for (path, module), _why in table.items():
        if path == imp.path and _under(imp.module, module):
            return (path, module)
    return None


@functools.lru_cache(maxsize=1)
def violations():
    """(import, rule) for every import statement of the tree that breaks a rule (one entry per
    statement: ``from x import y`` is reported once, as ``x`` or ``x.y``); computed once per
    test session (both tests below read it)."""
    found, seen = [], set()
    for path in source_files():
        source = module_name(path)
        for imp in imports_of(path):
            for rule in RULES:
                if (imp.path, imp.line) in seen or not _under(source, rule.source):
                    continue
                if any(_under(imp.module, bad) for bad in rule.forbidden):
                    found.append((imp, rule))
                    seen.add((imp.path, imp.line))
    return tuple(found)


def _describe(imp: Import, rule: Rule) -> str:
    where = "inside a function" if imp.in_function else "at module level"
    return (f"{imp.path}:{imp.line} imports {imp.module} ({where}): {rule.source} -> "
            f"{', '.join(rule.forbidden)} is forbidden ({rule.why})")


def test_no_import_breaks_a_layer_rule():
    bad = []
    for imp, rule in violations():
        if _allowed_key(imp, KNOWN):
            continue
        key = _allowed_key(imp, ALLOWED)
        if key is not None and imp.in_function:
            continue
        bad.append(_describe(imp, rule))
    assert not bad, "layer rules broken:\n" + "\n".join(bad)


def test_every_exception_is_still_needed():
    """An ALLOWED or KNOWN entry that no longer matches an import is stale: remove it."""
    used = set()
    for imp, _rule in violations():
        for table in (ALLOWED, KNOWN):
            key = _allowed_key(imp, table)
            if key is not None:
                used.add(key)
    stale = sorted((set(ALLOWED) | set(KNOWN)) - used)
    assert not stale, f"exceptions that match no import any more (remove them): {stale}"


# -- the checker itself -------------------------------------------------------------------------

def _imports_in_snippet(tmp_path, rel, code):
    """(module, in_function) for each import the checker finds in ``code`` placed at ``rel``."""
    target = tmp_path / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(code)
    return [(imp.module, imp.in_function) for imp in imports_of(target, tmp_path)]


@pytest.mark.parametrize("rel, code, expected", [
    ("irlib/ir/module.py", "from ..text.parser import parse\n",
     [("irlib.text.parser", False), ("irlib.text.parser.parse", False)]),
    ("irlib/ir/__init__.py", "from . import expr\n", [("irlib.ir", False),
                                                      ("irlib.ir.expr", False)]),
    ("irlib/op/nn.py", "def f():\n    import interp.values as v\n",
     [("interp.values", True)]),
    ("jitkernels/cpu/k.py", "import importlib\nimportlib.import_module('interp')\n",
     [("importlib", False), ("interp", False)]),
    ("irlib/testing/s.py", "f = lambda: __import__('zoo')\n", [("zoo", True)]),
])
def test_the_checker_resolves_imports(tmp_path, rel, code, expected):
    assert _imports_in_snippet(tmp_path, rel, code) == expected


def test_resolve_rejects_a_relative_import_beyond_the_top(tmp_path):
    with pytest.raises(ValueError):
        resolve(tmp_path / "irlib" / "a.py", 3, "x", tmp_path)
