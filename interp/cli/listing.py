"""``irlib models`` and ``irlib ops``: what the zoo and the operator registry hold."""

from __future__ import annotations

import sys


def add_parsers(sub) -> None:
    """Register ``irlib models`` and ``irlib ops`` on the subparsers ``sub``."""
    models = sub.add_parser("models", help="list the model names `irlib run` accepts",
                            description="Print the zoo model names, one a line.")
    models.set_defaults(handler=models_command)
    ops = sub.add_parser("ops", help="list the registered operators with their pattern kinds",
                         description="Print each registered operator with its fusion pattern "
                                     "kind, or the full operator reference.")
    ops.add_argument("--markdown", action="store_true",
                     help="print the full operator reference (the content of docs/ops.md)")
    ops.set_defaults(handler=ops_command)


def ops_command(args) -> int:
    """Print the registered ops and pattern kinds, or with --markdown the docs/ops.md text."""
    from irlib.op import docgen
    if args.markdown:
        import jitkernels
        sys.stdout.write(docgen.ops_markdown(jitkernels.kernel_index()))
    else:
        sys.stdout.write(docgen.ops_listing())
    return 0


def models_command(args) -> int:
    """Print the zoo model names, one a line."""
    from zoo import catalog
    print("\n".join(catalog.names()))
    return 0
