"""Every public function, class and method in irlib's documented areas says what it does and
names its parameters (issue #20: "every public function/class has a docstring stating what,
why and its parameters").

Public means: defined at a module's top level (or in such a class's body) with a name that
does not start with an underscore, in any module of the areas below (private modules too:
their public names are what the package ``__init__`` files re-export). A function or method
with parameters (``self``/``cls``, ``*args``/``**kwargs`` and underscore names aside) must
name each of them in its docstring (an ``Args:`` section, or prose). A method that overrides
a documented method of a base class may go without (the base states the contract); a class's
``__init__`` parameters may be named in the class docstring instead; a parameter that the
module's or its package's docstring names in double backquotes (a convention stated once, such
as a converter's ``ctx``) counts as named in every function of the module; a docstring that
says its arguments are "as :func:`other`" (a function or method of the same module) borrows
the names ``other``'s docstring gives; hypothesis's ``draw`` is not a parameter of a
``@composite`` strategy's callers.
"""

import ast
import importlib
import inspect
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
AREAS = ("irlib/ir", "irlib/transform", "irlib/op", "irlib/text", "irlib/typeinf",
         "irlib/analysis", "irlib/dataflow_pattern", "irlib/frontend/nn",
         "irlib/frontend/torch", "irlib/frontend/stablehlo", "irlib/visualize",
         "irlib/testing")
ALLOWED = {}
"""``"module:qualname"`` -> why it stays undocumented (empty: nothing does)."""


def module_files():
    """The Python files of :data:`AREAS`."""
    for area in AREAS:
        yield from sorted((ROOT / area).rglob("*.py"))


def module_name(path: pathlib.Path) -> str:
    """The dotted module name of ``path``."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_composite(node) -> bool:
    """Whether ``node`` is decorated with hypothesis's ``composite`` (its first parameter,
    ``draw``, is hypothesis's, not the caller's)."""
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (isinstance(target, ast.Name) and target.id == "composite") or \
                (isinstance(target, ast.Attribute) and target.attr == "composite"):
            return True
    return False


def parameter_names(node) -> list:
    """The parameters a docstring must name: ``self``/``cls``, ``*args``/``**kwargs``,
    underscore names and a ``@composite`` strategy's ``draw`` aside."""
    args = node.args
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    if is_composite(node) and names and names[0] == "draw":
        names = names[1:]
    return [n for n in names if n not in ("self", "cls") and not n.startswith("_")]


def unnamed(doc: str, names) -> list:
    """The names in ``names`` that ``doc`` does not mention as a word."""
    return [n for n in names if not re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", doc)]


def inherited_doc(cls, name: str) -> bool:
    """Whether a base class of ``cls`` defines ``name`` with a docstring."""
    for base in cls.__mro__[1:]:
        if name in vars(base):
            member = vars(base)[name]
            member = getattr(member, "fget", None) or getattr(member, "__func__", member)
            if getattr(member, "__doc__", None):
                return True
    return False


def borrowed(doc: str, qualname: str, docs: dict) -> str:
    """The docstrings of the functions ``doc`` says its arguments are "as" (``as
    :func:`other```), looked up in ``docs`` (qualname -> docstring of the same module; a
    method's sibling methods first)."""
    owner = qualname.rsplit(".", 1)[0] + "." if "." in qualname else ""
    names = re.findall(r"as\s+:(?:func|meth):`[~.]?(?:[\w.]*\.)?(\w+)`", doc)
    return "\n".join(docs.get(owner + n, docs.get(n, "")) for n in names)


def definitions(tree):
    """``(class or None, function)`` for each top-level function and each method of a
    top-level class in ``tree``."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield None, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield node, item


def problems_of(path: pathlib.Path) -> list:
    """What is undocumented in the module at ``path``: ``module:qualname: what`` lines."""
    name = module_name(path)
    module = importlib.import_module(name)
    tree = ast.parse(path.read_text())
    package = path.parent / "__init__.py"
    package_doc = ast.get_docstring(ast.parse(package.read_text())) if package.exists() else ""
    package_doc = package_doc or ""
    conventions = " ".join(re.findall(r"``\w+``", (ast.get_docstring(tree) or "") + package_doc))
    docs = {f"{cls.name}.{item.name}" if cls else item.name: ast.get_docstring(item) or ""
            for cls, item in definitions(tree)}
    found = []

    def check_function(node, qualname, cls=None, class_doc=""):
        if any(isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter")
               for d in node.decorator_list):
            return      # a property's setter: the getter's docstring documents the property
        doc = ast.get_docstring(node)
        override = cls is not None and inherited_doc(cls, node.name)
        if doc is None:
            if not override:
                found.append(f"{name}:{qualname}: no docstring")
            return
        if override:
            return
        missing = unnamed("\n".join((doc, class_doc, conventions, borrowed(doc, qualname, docs))),
                          parameter_names(node))
        if missing:
            found.append(f"{name}:{qualname}: docstring does not name {missing}")

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            check_function(node, node.name)
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            class_doc = ast.get_docstring(node)
            if class_doc is None:
                found.append(f"{name}:{node.name}: no docstring")
                class_doc = ""
            cls = getattr(module, node.name, None)
            if not inspect.isclass(cls):
                continue
            for item in node.body:
                if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                if item.name == "__init__":
                    missing = unnamed(class_doc + "\n" + (ast.get_docstring(item) or "") + "\n"
                                      + conventions, parameter_names(item))
                    if missing:
                        found.append(f"{name}:{node.name}.__init__: neither the class nor "
                                     f"__init__ docstring names {missing}")
                elif not item.name.startswith("_"):
                    check_function(item, f"{node.name}.{item.name}", cls, class_doc="")
    return [p for p in found if p.split(": ")[0] not in ALLOWED]


@pytest.mark.parametrize("path", list(module_files()),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_public_names_are_documented(path):
    problems = problems_of(path)
    assert not problems, "\n".join(problems)


def test_the_checker_sees_missing_docstrings_and_parameters(tmp_path):
    # the checker's rules on a hand-written module, not on irlib itself
    tree = ast.parse('def f(a, b):\n    """Add a to the total."""\n')
    func = tree.body[0]
    assert parameter_names(func) == ["a", "b"]
    assert unnamed(ast.get_docstring(func), parameter_names(func)) == ["b"]
    assert unnamed("Args:\n    a: x.\n    b: y.", ["a", "b"]) == []
    assert unnamed("the a.b field", ["b"]) == ["b"]
    strategy = ast.parse("@st.composite\ndef s(draw, n):\n    pass\n").body[0]
    module = ast.parse('def g(a, b):\n    """Args:\n        a: x.\n        b: y."""\n'
                       'def h(a, b):\n    """Like g. Arguments as\n    :func:`g`."""\n')
    docs = {item.name: ast.get_docstring(item) for _, item in definitions(module)}
    assert unnamed(docs["h"], ["a", "b"]) == ["a", "b"]
    assert unnamed(borrowed(docs["h"], "h", docs), ["a", "b"]) == []
    assert borrowed("Arguments as :func:`missing`.", "h", docs) == ""
    assert parameter_names(strategy) == ["n"]
