"""Size discipline: no source file over 600 code lines without a stated reason.

Run as a script (``python tests/test_code_size.py``) to print the table of code lines per file
and package, plus the op count.
"""

import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("irlib", "interp", "jitkernels", "zoo")
MAX_LINES = 600


def code_lines(path: pathlib.Path) -> int:
    """Lines that are neither blank, comments nor docstrings."""
    source = path.read_text()
    docstring_lines = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                docstring_lines.update(range(body[0].lineno, body[0].end_lineno + 1))
    count = 0
    for number, line in enumerate(source.splitlines(), start=1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#") and number not in docstring_lines:
            count += 1
    return count


def source_files():
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


def test_no_file_exceeds_the_size_limit_without_a_reason():
    too_big = []
    for path in source_files():
        if code_lines(path) > MAX_LINES and "# size-exception:" not in path.read_text()[:2000]:
            too_big.append(f"{path.relative_to(ROOT)}: {code_lines(path)} code lines")
    assert not too_big, "files over the limit:\n" + "\n".join(too_big)


if __name__ == "__main__":
    totals = {}
    for path in source_files():
        lines = code_lines(path)
        totals[path.relative_to(ROOT).parts[0]] = totals.get(path.relative_to(ROOT).parts[0], 0) + lines
        print(f"{lines:6d}  {path.relative_to(ROOT)}")
    for package, lines in totals.items():
        print(f"{lines:6d}  [{package}]")
    sys.path.insert(0, str(ROOT))
    import irlib
    print(f"ops registered: {len(irlib.op.list_ops())}")
