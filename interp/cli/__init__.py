"""The ``irlib`` command line (``irlib COMMAND ...`` or ``python -m interp COMMAND ...``).

Commands, one module each: ``run`` (build and time a model), ``show`` (draw its dataflow
graph), ``bench`` (latency next to onnxruntime / torch), ``convert`` (.onnx <-> .rly/.params),
``check`` (parse + type-check .rly files), ``models`` and ``ops`` (listings). The reference
page docs/cli.md is generated from these parsers (:mod:`interp.cli.reference`).

Errors: a usage error prints one ``irlib COMMAND: error: ...`` line and exits 2; a problem
with the input (a missing file, garbage bytes, a parse or type error, a wrong-shaped
``--input``) prints one ``irlib COMMAND: ...`` line and exits 1. No traceback is shown unless
``--debug`` is given.
"""

from __future__ import annotations

import argparse
import sys

from irlib.errors import IRError, TypeInferenceError

from . import bench, check, convert, listing, run, show
from .common import CLIInputError

__all__ = ["main", "build_parser", "CLIInputError"]


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line (``PROG: error: ...``), exit 2."""

    def error(self, message):
        """Print the one-line usage error and exit with status 2."""
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``irlib`` command (every subcommand registered)."""
    parser = _Parser(prog="irlib",
                     description="irlib: a readable deep-learning IR toolkit and runtime.")
    parser.add_argument("--debug", action="store_true",
                        help="show the Python traceback of an error")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    run.add_parser(sub)
    show.add_parser(sub)
    bench.add_parser(sub)
    convert.add_parser(sub)
    check.add_parser(sub)
    listing.add_parsers(sub)
    for command in sub.choices.values():       # --debug is accepted after the command too
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                             help="show the Python traceback of an error")
    return parser


def error_line(error: BaseException) -> str:
    """One line describing ``error``: a type error's first report with its ``file:line:col``,
    the first line of other irlib errors, ``Type: message`` for anything else."""
    if isinstance(error, TypeInferenceError) and error.errors:
        report = error.errors[0]
        where = f"{report.span}: " if report.span is not None else ""
        more = f" (and {len(error.errors) - 1} more)" if len(error.errors) > 1 else ""
        return f"type error: {where}{' '.join(str(report.message).split())}{more}"
    if isinstance(error, IRError):
        text = getattr(error, "message", None) if hasattr(error, "span") else None
        if text is not None and getattr(error, "span", None) is not None:
            return f"{error.span}: {' '.join(str(text).split())}"
        lines = str(error).strip().splitlines()
        return lines[0] if lines else type(error).__name__
    if isinstance(error, OSError) and error.filename:
        return f"{error.strerror or error}: {error.filename}"
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def main(argv=None) -> int:
    """Entry point of the ``irlib`` console script: parse ``argv``, run the command.

    Returns:
        The exit status: 0 on success, 1 for a problem with the input, 2 for a usage error
        (argparse exits with it directly), 130 on Ctrl-C.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "handler", None) is None:
        parser.print_help()
        return 0
    try:
        return args.handler(args)
    except KeyboardInterrupt:
        if args.debug:
            raise
        print(f"irlib {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as error:       # every failure becomes one line (--debug: traceback)
        if args.debug:
            raise
        # an OSError names the file the user gave (no such folder, disk full): no hint
        hint = "" if isinstance(error, (IRError, OSError)) else \
            " (rerun with --debug for the traceback)"
        print(f"irlib {args.command}: {error_line(error)}{hint}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
