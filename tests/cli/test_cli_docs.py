"""docs/cli.md is generated from the parsers, and the quick-start pictures are what
``irlib show`` draws now."""

from __future__ import annotations

import pathlib
import re

from interp.cli import main
from interp.cli.reference import markdown

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"


def test_docs_cli_md_is_current():
    assert (DOCS / "cli.md").read_text() == markdown(), \
        "docs/cli.md is stale: python -m interp.cli.reference > docs/cli.md"


def test_cli_md_documents_every_command_and_option():
    from interp.cli import build_parser
    text = (DOCS / "cli.md").read_text()
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, command in sub.choices.items():
        assert f"## `irlib {name}`" in text
        for action in command._actions:
            for flag in action.option_strings:
                if flag in ("-h", "--help"):
                    continue
                assert f"`{flag}`" in text, (name, flag)


def test_quickstart_pictures_are_current(tmp_path):
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_images",
                                                  DOCS / "images" / "make_images.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    PICTURES = script.PICTURES
    for name, args in PICTURES.items():
        assert main(["show", *args, "-o", str(tmp_path / "now.dot")]) == 0
        assert (tmp_path / "now.dot").read_text() == (DOCS / "images" / f"{name}.dot")\
            .read_text(), f"docs/images/{name}.dot is stale: python docs/images/make_images.py"
        dot_nodes = set(re.findall(r"^\s*(n\d+) \[", (DOCS / "images" / f"{name}.dot")
                                   .read_text(), re.M))
        svg = (DOCS / "images" / f"{name}.svg").read_text()
        assert set(re.findall(r"<title>(n\d+)</title>", svg)) == dot_nodes
        assert f"images/{name}.svg" in (DOCS / "quickstart.md").read_text()
