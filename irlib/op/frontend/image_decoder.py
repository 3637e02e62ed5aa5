"""``onnx.image_decoder(encoded, pixel_format)``: decode one encoded image (a 1-D uint8 tensor
holding a JPEG, PNG, BMP, TIFF, PNM, WebP or JPEG 2000 file) into ``[H, W, 3]`` (``RGB`` or
``BGR``) or ``[H, W, 1]`` (``Grayscale``) uint8 pixels, with a Pillow-based reference.
Decoding needs Pillow; without it the op raises :class:`~irlib.errors.OpImplError` (and the
ONNX converter refuses the node at import time).
"""

from __future__ import annotations

import io

import numpy as np

from ...errors import OpImplError, TypeInferenceError
from ...ir.dims import Any
from ...ir.types import TensorType
from ..registry import register_opaque
from ..type_relations import expect_tensor

__all__ = ['PIXEL_FORMATS', 'pillow_available']


#: The pixel formats of ImageDecoder and their channel counts.
PIXEL_FORMATS = {"RGB": 3, "BGR": 3, "Grayscale": 1}


# -- ImageDecoder -------------------------------------------------------------------------------

def pillow_available() -> bool:
    """Whether Pillow (``PIL``), which ``onnx.image_decoder`` decodes with, can be imported."""
    try:
        import PIL.Image  # noqa: F401
    except ImportError:
        return False
    return True


def _image_decoder_rel(arg_types, attrs):
    op = "onnx.image_decoder"
    encoded = expect_tensor(arg_types[0], f"{op}: encoded_stream")
    if encoded.ndim != 1 or encoded.dtype != "uint8":
        raise TypeInferenceError(f"{op}: encoded_stream must be 1-D uint8, got {encoded}")
    channels = PIXEL_FORMATS.get(attrs["pixel_format"])
    if channels is None:
        raise TypeInferenceError(f"{op}: pixel_format {attrs['pixel_format']!r} is not one "
                                 f"of {sorted(PIXEL_FORMATS)}")
    return TensorType((Any, Any, channels), "uint8")


def _image_decoder_ref(encoded, pixel_format="RGB"):
    op = "onnx.image_decoder"
    try:
        import PIL.Image
    except ImportError:
        raise OpImplError(f"{op}: decoding images needs Pillow (pip install pillow)",
                          op=op) from None
    try:
        image = PIL.Image.open(io.BytesIO(np.ascontiguousarray(encoded).tobytes()))
        image.load()
    except Exception as error:  # Pillow raises many kinds for unknown or corrupt data
        raise OpImplError(f"{op}: cannot decode the {encoded.size}-byte stream: {error}",
                          op=op) from None
    if pixel_format == "Grayscale":
        return (np.asarray(image.convert("L"), "uint8")[:, :, None],)
    pixels = np.asarray(image.convert("RGB"), "uint8")
    if pixel_format == "BGR":
        pixels = pixels[:, :, ::-1]
    return (np.ascontiguousarray(pixels),)


register_opaque("onnx.image_decoder", ("encoded",),
                ("onnx.attrs.ImageDecoderAttrs", [("pixel_format", "RGB")]),
                _image_decoder_rel, _image_decoder_ref,
                "ONNX ImageDecoder: decode an encoded image file into [H, W, C] uint8 pixels "
                "(needs Pillow)")
