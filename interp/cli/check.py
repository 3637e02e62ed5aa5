"""``irlib check FILE.rly...``: parse and type-check text-format files, for editors and CI.

Each problem is printed as one ``file:line:col: message`` line on stderr (a parse error, or
every type error the checker found); the exit code is 1 when any file has a problem, 0 when
all are well-typed (then one ``file: ok`` line each, with the functions' count).
"""

from __future__ import annotations

from irlib.errors import ParseError, TypeInferenceError

from .common import CLIInputError, require_file


def add_parser(sub) -> None:
    """Register ``irlib check`` on the subparsers ``sub``."""
    check = sub.add_parser("check", help="parse and type-check .rly files (exit 1 on errors)",
                           description=__doc__.split("\n\n")[1].replace("\n", " "))
    check.add_argument("files", nargs="+", metavar="FILE.rly", help="text-format files")
    check.set_defaults(handler=check_command)


def problems(path: str) -> list:
    """The ``file:line:col: message`` lines of what is wrong with the text file ``path``
    (empty when it parses and type-checks)."""
    import irlib
    require_file(path)
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except UnicodeDecodeError:
        raise CLIInputError(f"{path} is not a UTF-8 text file") from None
    try:
        irlib.parse(text, source_name=path)
    except ParseError as error:
        where = error.span if error.span is not None else path
        return [f"{where}: {error.message}"]
    except TypeInferenceError as error:
        lines = []
        for report in error.errors or ():
            where = report.span if report.span is not None else path
            lines.append(f"{where}: {' '.join(str(report.message).split())}")
        return lines or [f"{path}: {str(error).splitlines()[0]}"]
    return []


def check_command(args) -> int:
    """Check every file; print the problems (stderr) or ``ok`` lines (stdout)."""
    import sys
    failed = 0
    for path in args.files:
        found = problems(path)
        for line in found:
            print(line, file=sys.stderr)
        if found:
            failed += 1
        else:
            print(f"{path}: ok")
    return 1 if failed else 0
