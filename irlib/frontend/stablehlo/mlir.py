"""The MLIR side of the StableHLO importer: parsing, types, attributes, locations.

Everything here goes through the MLIR Python bindings that jaxlib ships
(``jaxlib.mlir.ir`` and ``jaxlib.mlir.dialects.stablehlo``); nothing parses MLIR text itself.
The bindings change between jaxlib releases, so the importer touches only their generic
surface: ``Operation.name/attributes/regions/operands/results``, ``RankedTensorType``,
``DenseElementsAttr`` and the StableHLO attribute classes (``DotDimensionNumbers``, ...).
"""

from __future__ import annotations

import numpy as np

from .errors import StableHLOConversionError, StableHLOOpNotImplemented

_CONTEXT = None

# MLIR element type (as printed) -> irlib dtype name.
_DTYPES = {
    "i1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "ui8": "uint8", "ui16": "uint16", "ui32": "uint32", "ui64": "uint64",
    "f16": "float16", "f32": "float32", "f64": "float64", "bf16": "bfloat16",
    "complex<f32>": "complex64", "complex<f64>": "complex128",
}


def bindings():
    """``(ir, stablehlo)``: the jaxlib MLIR modules.

    Raises:
        StableHLOConversionError: when jaxlib is not installed (``pip install irlib[jax]``).
    """
    try:
        from jaxlib.mlir import ir
        from jaxlib.mlir.dialects import stablehlo
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise StableHLOConversionError(
            "the StableHLO frontend needs jaxlib's MLIR bindings: pip install 'irlib[jax]'"
        ) from error
    return ir, stablehlo


def context():
    """A shared MLIR context with the func/StableHLO/CHLO dialects registered (created once)."""
    global _CONTEXT
    if _CONTEXT is None:
        ir, stablehlo = bindings()
        ctx = ir.Context()
        try:  # the upstream dialects (func, arith, ...) jaxlib bundles
            from jaxlib.mlir._mlir_libs import _jax_mlir_ext
            registry = ir.DialectRegistry()
            _jax_mlir_ext.register_dialects(registry)
            ctx.append_dialect_registry(registry)
            ctx.load_all_available_dialects()
        except (ImportError, AttributeError):  # pragma: no cover - older/newer jaxlib
            pass
        stablehlo.register_dialect(ctx)
        for name in ("chlo", "sdy", "mhlo"):  # what jax's own context registers
            try:
                module = __import__(f"jaxlib.mlir.dialects.{name}", fromlist=[name])
                register = getattr(module, "register_dialect", None) or \
                    getattr(module, "register_mhlo_dialect", None)
                if register is not None:
                    register(ctx)
            except (ImportError, AttributeError, RuntimeError):  # pragma: no cover
                pass
        # attributes of dialects we do not know (sharding rules, backend configs) still
        # parse; the operations using them are checked against the converter registry.
        ctx.allow_unregistered_dialects = True
        _CONTEXT = ctx
    return _CONTEXT


def parse_module(source):
    """``source`` (MLIR text, MLIR bytecode such as ``jax.export``'s
    ``mlir_module_serialized``, or an ``ir.Module``) as an ``ir.Module``.

    Raises:
        StableHLOConversionError: text MLIR cannot parse (MLIR's diagnostic in the message),
            or an object of another kind.
    """
    ir, stablehlo = bindings()
    if isinstance(source, ir.Module):
        return source
    if isinstance(source, (bytes, bytearray)) and bytes(source[:4]) == b"ML\xefR":
        # MLIR bytecode: jax.export's mlir_module_serialized (a portable artifact)
        try:
            return stablehlo.deserialize_portable_artifact(context(), bytes(source))
        except Exception as error:  # the bindings raise their own error types
            raise StableHLOConversionError(
                f"cannot read the serialized StableHLO module: {error}") from error
    if isinstance(source, (bytes, bytearray)):
        source = bytes(source).decode("utf-8", errors="replace")
    if not isinstance(source, str):
        raise StableHLOConversionError(
            f"from_stablehlo expects MLIR text or an mlir.ir.Module, got {type(source).__name__}")
    with context():
        try:
            return ir.Module.parse(source)
        except Exception as error:  # MLIRError: the diagnostics say where
            raise StableHLOConversionError(f"cannot parse the StableHLO module: {error}") \
                from error


def location(op) -> str:
    """The MLIR location of ``op`` as text (``loc("jit(f)/add"(...))``, ``loc("-":3:10)``)."""
    text = str(op.location)
    return text[4:-1] if text.startswith("loc(") and text.endswith(")") else text


def element_dtype(element_type) -> str:
    """The irlib dtype of an MLIR element type.

    Args:
        element_type: the MLIR element type.

    Raises:
        StableHLOOpNotImplemented: for element types irlib has no dtype for.
    """
    name = str(element_type)
    dtype = _DTYPES.get(name)
    if dtype is None:
        raise StableHLOOpNotImplemented(f"element type {name} is not supported", [])
    return dtype


def tensor_info(mlir_type):
    """``(shape, dtype)`` of a ranked tensor type; ``None`` for a ``?`` dim. Raises
    StableHLOOpNotImplemented for unranked tensors, tokens and other types.

    Args:
        mlir_type: the MLIR type.
    """
    ir, _ = bindings()
    try:
        ranked = ir.RankedTensorType(mlir_type)
    except (ValueError, TypeError) as error:
        raise StableHLOOpNotImplemented(f"values of type {mlir_type} are not supported", []) \
            from error
    shaped = ir.ShapedType(mlir_type)
    shape = tuple(None if shaped.is_dynamic_dim(i) else int(shaped.get_dim_size(i))
                  for i in range(ranked.rank))
    return shape, element_dtype(ranked.element_type)


def is_tuple_type(mlir_type) -> bool:
    """Whether ``mlir_type`` is an MLIR ``tuple<...>``."""
    return cast(mlir_type, "TupleType") is not None


def dense_value(attr, mlir_type) -> np.ndarray:
    """The numpy value of a dense elements attribute of tensor type ``mlir_type``.

    Args:
        attr: the attribute.
        mlir_type: its tensor type.

    Raises:
        StableHLOOpNotImplemented: for element types the bindings cannot hand over (bf16 or
            complex non-splat constants).
    """
    ir, _ = bindings()
    shape, dtype = tensor_info(mlir_type)
    if dtype == "bfloat16":
        import ml_dtypes
        dense = ir.DenseElementsAttr(attr)
        if dense.is_splat:
            value = ir.FloatAttr(dense.get_splat_value()).value
            return np.full(shape, value, dtype=ml_dtypes.bfloat16)
        return _bfloat16_bits(attr, mlir_type, shape).view(ml_dtypes.bfloat16)
    try:
        array = np.array(attr)
    except Exception as error:  # the bindings refuse complex and other element types
        raise StableHLOOpNotImplemented(f"constants of type {mlir_type} are not supported",
                                        []) from error
    if array.shape != shape:
        array = np.broadcast_to(array.reshape(()) if array.size == 1 else array, shape)
    return np.array(array, dtype=dtype, order="C")


def _bfloat16_bits(attr, mlir_type, shape) -> np.ndarray:
    """The bit patterns (int16) of a non-splat bfloat16 constant, which the bindings cannot
    hand over as an array: StableHLO's own reference interpreter (``eval_module``) evaluates
    a ``bitcast_convert`` of it to i16."""
    ir, stablehlo = bindings()
    bits_type = "tensor<" + "".join(f"{d}x" for d in shape) + "i16>"
    text = (f"func.func @main() -> {bits_type} {{\n"
            f"  %0 = stablehlo.constant {attr}\n"
            f"  %1 = stablehlo.bitcast_convert %0 : ({mlir_type}) -> {bits_type}\n"
            f"  return %1 : {bits_type}\n}}")
    try:
        with context():
            result = stablehlo.eval_module(ir.Module.parse(text), [])
        return np.array(result[0], dtype=np.int16).reshape(shape)
    except Exception as error:  # the bindings raise their own error types
        raise StableHLOOpNotImplemented(f"cannot read the bfloat16 constant: {error}",
                                        []) from error


def attributes(op) -> dict:
    """The attributes of ``op`` as ``{name: Attribute}``."""
    attrs = op.attributes
    found = {}
    for item in attrs:  # names in recent bindings, NamedAttribute objects in older ones
        if isinstance(item, str):
            found[item] = attrs[item]
        else:
            found[item.name] = item.attr
    return found


def cast(obj, kind: str):
    """``obj`` as binding class ``ir.<kind>`` (``"OpResult"``, ``"ArrayAttr"``, ...), or None
    when it is not one (the bindings raise on a failed cast; older ones had ``isinstance``)."""
    ir, _ = bindings()
    cls = getattr(ir, kind, None)
    if cls is None:
        return None
    if isinstance(obj, cls):
        return obj
    try:
        return cls(obj)
    except (ValueError, TypeError):
        return None


def int_list(attr) -> list:
    """The integers of a ``DenseI64ArrayAttr``/``DenseIntElementsAttr``/``ArrayAttr``/
    ``DenseBoolArrayAttr`` as a list (``[]`` for None).

    Args:
        attr: the attribute, or None.
    """
    if attr is None:
        return []
    ir, _ = bindings()
    for kind in ("DenseI64ArrayAttr", "DenseI32ArrayAttr", "DenseBoolArrayAttr"):
        found = cast(attr, kind)
        if found is not None:
            return [int(v) for v in found]
    found = cast(attr, "DenseIntElementsAttr")
    if found is not None:
        return [int(v) for v in np.array(found).reshape(-1)]
    found = cast(attr, "ArrayAttr")
    if found is not None:
        return [int(ir.IntegerAttr(v).value) for v in found]
    found = cast(attr, "IntegerAttr")
    if found is not None:
        return [int(found.value)]
    raise StableHLOConversionError(f"expected a list of integers, got {attr}")


def int_value(attr, default=None):
    """The value of an ``IntegerAttr`` (``default`` for None).

    Args:
        attr: the attribute, or None.
        default: the value for None.
    """
    return _plain_value(attr, default, "IntegerAttr", int)


def _plain_value(attr, default, kind: str, convert):
    """``convert`` of the value of ``attr`` read as an attribute of class ``kind``, or
    ``default`` when ``attr`` is None."""
    if attr is None:
        return default
    ir, _ = bindings()
    return convert(getattr(ir, kind)(attr).value)


def float_value(attr, default=None):
    """The value of a ``FloatAttr`` (``default`` for None).

    Arguments as :func:`int_value`.
    """
    return _plain_value(attr, default, "FloatAttr", float)


def str_value(attr, default=None):
    """The value of a ``StringAttr`` or a symbol reference (``default`` for None).

    Arguments as :func:`int_value`.
    """
    if attr is None:
        return default
    for kind in ("StringAttr", "FlatSymbolRefAttr"):
        found = cast(attr, kind)
        if found is not None:
            return found.value
    return str(attr)


def bool_value(attr, default=False) -> bool:
    """The value of a ``BoolAttr`` (``default`` for None).

    Arguments as :func:`int_value`.
    """
    return _plain_value(attr, default, "BoolAttr", bool)


def enum_value(attr, kind: str) -> str:
    """The value of a StableHLO enum attribute (``kind``: ``"ComparisonDirectionAttr"``,
    ``"ComparisonTypeAttr"``, ...), e.g. ``"LT"``.

    Args:
        attr: the attribute.
        kind: its attribute class name.
    """
    _, stablehlo = bindings()
    return str(getattr(stablehlo, kind)(attr).value)


def dim_numbers(attr, kind: str):
    """The StableHLO dimension-numbers attribute ``attr`` as its binding class ``kind``
    (``"DotDimensionNumbers"``, ``"ConvDimensionNumbers"``, ``"GatherDimensionNumbers"``,
    ``"ScatterDimensionNumbers"``)."""
    _, stablehlo = bindings()
    return getattr(stablehlo, kind)(attr)


def padding_pairs(attr, rank: int) -> list:
    """A ``(rank, 2)`` padding attribute as ``[(low, high), ...]`` (zeros for None).

    Args:
        attr: the attribute, or None.
        rank: the operand's rank.
    """
    if attr is None:
        return [(0, 0)] * rank
    values = int_list(attr)
    return [(values[2 * i], values[2 * i + 1]) for i in range(len(values) // 2)]
