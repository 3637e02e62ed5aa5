"""``irlib show MODEL``: draw a model's dataflow graph.

Ops are boxes with their output shape and dtype; weights and constants are folded into the
box of the op using them; ``--fused`` draws the groups FuseOps makes (what the graph
executor compiles) as dashed clusters. ``-o`` picks the output by extension: ``.svg``,
``.png``, ``.html`` (these need the Graphviz ``dot`` program), ``.dot`` or ``.txt``. Without
``-o``, or when ``dot`` is missing, the graph is printed as a text listing.
"""

from __future__ import annotations

import sys

from .argcheck import common_checks
from .common import load_model, typed

RENDERED = (".svg", ".png", ".html")


def add_parser(sub) -> None:
    """Register ``irlib show`` on the subparsers ``sub``."""
    show = sub.add_parser("show", help="draw a model's dataflow graph (Graphviz or text)",
                          description=__doc__.split("\n\n")[1].replace("\n", " "))
    show.add_argument("model", help="a zoo model name, a .rly file or an .onnx file")
    show.add_argument("-o", "--output", default=None, metavar="FILE",
                      help="write the drawing: .svg, .png, .html, .dot or .txt (default: "
                           "print the text listing)")
    show.add_argument("--fused", action="store_true",
                      help="run the build pipeline (at --opt-level, default 3) and draw the "
                           "fused groups as clusters")
    show.add_argument("--opt-level", type=int, default=None, metavar="N",
                      help="draw the module after the build pipeline at this level (without "
                           "--fused: without its last pass, FuseOps); default: as loaded")
    show.add_argument("--params", default=None, metavar="FILE.params",
                      help="weights of a .rly model: drawn folded into their ops")
    show.add_argument("--batch", type=int, default=1, help="batch size (default 1)")
    show.set_defaults(handler=show_command)


def prepared(args):
    """The typed module and weight names to draw, optimized as ``args`` ask."""
    import irlib
    from irlib.transform.pipeline import optimize
    common_checks(args)
    mod, params = load_model(args.model, args.batch, params_file=args.params)
    mod = typed(mod)
    if args.fused or args.opt_level is not None:
        level = 3 if args.opt_level is None else args.opt_level
        with irlib.transform.PassContext(opt_level=level):
            mod = optimize(mod, params, fuse=args.fused)
        params = {}
    return mod, params


def show_command(args) -> int:
    """Draw the model; write ``-o`` or print the text listing."""
    from irlib.visualize import DrawingError, have_dot, show
    output = args.output
    if output is not None and not output.lower().endswith(RENDERED + (".dot", ".gv", ".txt")):
        raise DrawingError(f"cannot draw to {output}: the format is chosen by the extension, "
                           "one of .svg, .png, .html, .dot, .txt")
    mod, params = prepared(args)
    view = show(mod, params)
    graph = view.graph
    summary = (f"{graph.count()} nodes ({graph.count('input')} inputs, {graph.count('op')} "
               f"ops, {graph.count('output')} outputs), {len(graph.groups)} fused groups")
    if output is None:
        sys.stdout.write(view.text())
        return 0
    if output.lower().endswith(RENDERED) and not have_dot():
        sys.stdout.write(view.text())
        raise DrawingError(f"{output} not written: the Graphviz `dot` program is not "
                           "installed (apt-get install graphviz); the text listing is above")
    view.save(output)
    print(f"wrote {output}: {summary}")
    return 0
