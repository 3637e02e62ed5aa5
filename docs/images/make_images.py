"""Regenerate the pictures of docs/quickstart.md with ``irlib show``.

Run from the repository root: ``python docs/images/make_images.py``. Each picture is written
as the DOT source ``irlib show`` produces (``NAME.dot``, checked by a test to be current) and
the SVG that Graphviz's ``dot`` renders from it (``NAME.svg``, what the page shows).
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent

PICTURES = {
    "quickstart_mlp": ["mlp"],
    "quickstart_mlp_fused": ["mlp", "--fused"],
}
"""Picture name -> the ``irlib show`` arguments that draw it."""


def show(args: list, output: pathlib.Path) -> None:
    """Run ``irlib show ARGS -o OUTPUT`` (with this Python)."""
    subprocess.run([sys.executable, "-m", "interp", "show", *args, "-o", str(output)],
                   check=True, capture_output=True, text=True)


def main() -> None:
    """Write every picture's .dot and .svg next to this script."""
    for name, args in PICTURES.items():
        show(args, HERE / f"{name}.dot")
        show(args, HERE / f"{name}.svg")
        print(f"wrote docs/images/{name}.dot and .svg")


if __name__ == "__main__":
    main()
