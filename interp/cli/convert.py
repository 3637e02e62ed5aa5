"""``irlib convert INPUT OUTPUT...``: write a model in other formats.

INPUT is an ``.onnx`` file, a ``.rly`` text file (``--params`` binds its weights) or a zoo
name. Each OUTPUT is chosen by its extension: ``.rly`` (the text format), ``.onnx``
(``irlib.frontend.onnx.to_onnx``) or ``.params`` (the weights as ``interp.save_param_dict``
bytes). When a ``.params`` output is given, the weights stay parameters of ``main`` in the
``.rly`` text and go to the params file; without one they are written into the text as
constants (its metadata section). ``irlib convert m.rly --params m.params m.onnx`` reads such
a pair back.
"""

from __future__ import annotations

import os

from .argcheck import common_checks
from .common import CLIInputError, load_model, typed

FORMATS = (".rly", ".onnx", ".params")


def add_parser(sub) -> None:
    """Register ``irlib convert`` on the subparsers ``sub``."""
    convert = sub.add_parser("convert", help="convert a model to .rly, .onnx and/or .params",
                             description=__doc__.split("\n\n")[1].replace("\n", " "))
    convert.add_argument("input", help="an .onnx file, a .rly file or a zoo model name")
    convert.add_argument("outputs", nargs="+", metavar="OUTPUT",
                         help="output files: .rly, .onnx or .params (one or more)")
    convert.add_argument("--params", default=None, metavar="FILE.params",
                         help="weights of a .rly input (from `irlib convert ... x.params`)")
    convert.add_argument("--batch", type=int, default=1,
                         help="batch size of a zoo model or of an ONNX model's unknown "
                              "first dims (default 1)")
    convert.set_defaults(handler=convert_command)


def _bound(mod, params):
    """``mod`` with ``params`` bound into ``main`` as constants (type-checked)."""
    from irlib.transform.pipeline import bind_params
    if not params:
        return mod
    mod = mod.copy()
    gvar = mod.get_global_var("main")
    mod[gvar] = bind_params(mod[gvar], params)
    return typed(mod)


def convert_command(args) -> int:
    """Load the input and write each output; print one line per file written."""
    for path in args.outputs:
        if os.path.splitext(path)[1] not in FORMATS:
            raise CLIInputError(f"cannot write {path}: the output format is chosen by the "
                                f"extension, one of {', '.join(FORMATS)}")
    if args.params and not args.input.endswith(".rly"):
        raise CLIInputError("--params goes with a .rly input")
    common_checks(args)
    split = any(path.endswith(".params") for path in args.outputs)
    mod, params = load_model(args.input, args.batch, keep_params=split,
                             params_file=args.params)
    mod = typed(mod)
    for path in args.outputs:
        if path.endswith(".params"):
            from interp.params import save_param_dict
            data = save_param_dict(params)
            what = f"{len(params)} arrays"
        elif path.endswith(".rly"):
            data = (mod if split else _bound(mod, params)).astext().encode("utf-8")
            what = "text format"
        else:
            from irlib.frontend.onnx import to_onnx
            data = to_onnx(mod, params).SerializeToString()
            what = "ONNX"
        with open(path, "wb") as handle:
            handle.write(data)
        print(f"wrote {path} ({what}, {len(data)} bytes)")
    return 0
