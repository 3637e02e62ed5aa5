"""ONNX importer: ``from_onnx(model) -> (mod, params)`` (Relax's ``relax.frontend.onnx``).

::

    mod, params = irlib.frontend.onnx.from_onnx("model.onnx")
    run = interp.create_executor("debug", mod=mod).evaluate()
    out = run(x)
    model = irlib.frontend.onnx.to_onnx(mod, params)   # and back to ONNX

See docs/onnx.md for the supported ops and what is left out.
"""

from __future__ import annotations

from .. import ConversionError, ModelFormatError, OpNotImplemented

__all__ = ["from_onnx", "to_onnx", "OpNotImplemented", "ModelFormatError", "ConversionError"]


def to_onnx(mod, params=None, opset=17):
    """Export ``mod["main"]`` (dataflow: vars, constants, op calls, tuples, lets, calls of
    function literals) as an ``onnx.ModelProto`` checked by ``onnx.checker``.

    See :func:`irlib.frontend.onnx.exporter.to_onnx` (params become initializers).
    """
    from .exporter import to_onnx as export
    return export(mod, params, opset)


def from_onnx(model, shape_dict=None, dtype_dict="float32", opset=None,
              keep_params_in_input=False, sanitize_input_names=True):
    """Convert an ONNX model into an ``IRModule`` whose ``main`` computes the graph.

    Args:
        model: an ``onnx.ModelProto`` or a path to a ``.onnx`` file (external data loads).
        shape_dict: ``{input_name: shape}`` overriding the shapes the model declares; a dim
            may be an int, a string (a named size variable) or None/-1/``Any`` (unknown).
        dtype_dict: the dtype (str) or ``{input_name: dtype}`` of inputs whose element type
            the model leaves open.
        opset: overrides the default-domain opset the model declares.
        keep_params_in_input: False (default): initializers are folded into ``main`` as
            constants. True: they become trailing parameters of ``main`` (bind them from
            ``params``, e.g. ``create_executor(..., params=params)``), and ``main`` carries
            the frontends' keep-params attributes: ``num_input`` (the number of graph inputs,
            which come first) and ``params`` (the initializers' ``NDArray`` s in the order of
            the trailing parameters), so ``irlib.frontend.detach_params(mod)`` detaches them.
        sanitize_input_names: make input names valid identifiers (``input:0`` -> ``input_0``).

    Returns:
        ``(mod, params)``: the module (with ``main``; the Prelude's List/Option when the model
        uses sequences or optionals) and ``{name: NDArray}`` of the initializers (keyed by the
        parameter name of ``main`` when ``keep_params_in_input``).

    Raises:
        OpNotImplemented: listing every node whose op type has no converter (or the first
            node using an unsupported variant of a supported op).
        ModelFormatError: when the model cannot be loaded or fails ``onnx.checker``.
        ConversionError: when a node fails to convert (names the node), or for any other
            failure inside the importer: no exception other than these (all
            :class:`irlib.errors.IRError` subclasses) leaves ``from_onnx``. Malformed
            initializer data (larger than its dims, an unknown ``data_type``) and names that
            are not UTF-8 are ModelFormatError.
    """
    from . import importer, ops  # noqa: F401  (ops registers the converters)
    from ...errors import IRError
    proto = importer.load_model(model)
    try:
        return _import(importer, proto, shape_dict, dtype_dict, opset, keep_params_in_input,
                       sanitize_input_names)
    except IRError:
        raise
    except RecursionError as error:
        raise ConversionError(f"the model is nested too deeply to import: {error}") from error
    except Exception as error:  # the last guard: no foreign exception leaves from_onnx
        raise ConversionError(f"cannot import the model: {type(error).__name__}: "
                              f"{error}") from error


def _import(importer, proto, shape_dict, dtype_dict, opset, keep_params_in_input,
            sanitize_input_names):
    """The steps of :func:`from_onnx` after loading: op scan, checker, conversion."""
    versions = importer.opset_map(proto, opset)
    missing = importer.find_unsupported(proto, versions)
    if missing:
        kinds = sorted({(op, dom) for _, op, dom, _ in missing})
        listed = ", ".join(f"{dom + '.' if dom else ''}{op}" for op, dom in kinds)
        nodes = "; ".join(f"{op} (node {name!r}, opset {ver})"
                          for name, op, _, ver in missing)
        raise OpNotImplemented(
            f"{len(kinds)} ONNX op type(s) not supported: {listed}. Nodes: {nodes}",
            [(name, op, ver) for name, op, _, ver in missing])
    # NOTE: after the op scan, so that a valid model using ops we lack (or ops of a domain
    # the checker does not know) gets the complete OpNotImplemented list, not one checker error.
    importer.check_model(proto)
    return importer.Importer(proto, shape_dict, dtype_dict, opset, keep_params_in_input,
                             sanitize_input_names).run()
