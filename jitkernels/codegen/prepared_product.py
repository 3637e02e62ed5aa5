"""The product of a fused group's ``nn.dense``/``nn.matmul`` anchor, prepared once per set
of arrays.

A graph passes the same arrays to a node on every run, so the checks of the anchor's
kernel (dtypes, layouts, the int8 and packed-weight decisions, the weight's packed form)
give the same answer every time. For a product that runs on the packed few-row kernel
(:mod:`jitkernels.cpu.packed_gemm`) they cost ~8-10 us of Python per call, about a sixth
of a GPT-2 step's 16 x 384 x 384 projection; :class:`PreparedProduct` makes them once per
set of arrays (per thread) and keeps a callable that runs the micro-kernel driver directly.
A product that would not take the packed path (an int8-valued weight, a writable one, too
many rows, ``IRLIB_PACKED_GEMM=0``) is left to the kernel's ordinary path.
"""

from __future__ import annotations

import threading

__all__ = ["PreparedProduct", "prepared_product"]


class PreparedProduct:
    """Runs ``out = data @ weight`` (``weight.T`` for ``nn.dense`` or ``transpose_b``) on a
    prepared packed-kernel call, per thread for the last set of arrays.

    Args:
        transposed: whether the weight is stored ``(N, K)``.
    """

    def __init__(self, transposed: bool):
        self.transposed = transposed
        self._local = threading.local()

    def run(self, data, weight, out) -> bool:
        """Compute into ``out`` (the anchor's buffer); False, nothing written, where the
        packed path does not apply (the caller then runs the anchor's kernel)."""
        from ..cpu import packed_gemm
        if not packed_gemm.available():
            return False
        local = self._local
        entry = getattr(local, "entry", None)
        if entry is None or entry[0] is not data or entry[1] is not weight \
                or entry[2] is not out:
            entry = local.entry = (data, weight, out, self._prepare(data, weight, out))
        runner = entry[3]
        if runner is None:
            return False
        runner()
        return True

    def _prepare(self, data, weight, out):
        from ..cpu import int8_vnni, packed_gemm
        if data.ndim < 2 or out.ndim != data.ndim or not data.flags.c_contiguous:
            return None
        rows = data.reshape(-1, data.shape[-1])
        flat = out.reshape(-1, out.shape[-1])
        if int8_vnni.available() and int8_vnni.packed_weight(weight, self.transposed) \
                is not None:
            return None                 # the exact int8 kernel takes it
        return packed_gemm.prepare(rows, weight, self.transposed, flat)


def prepared_product(op_name: str, attrs: dict):
    """A :class:`PreparedProduct` for an anchor ``op_name`` with ``attrs``, or None when
    the anchor is not a float product the packed kernel could run (a transposed data
    operand, another op, a different output dtype)."""
    if op_name == "nn.dense":
        transposed = True
    elif op_name == "nn.matmul" and not attrs.get("transpose_a"):
        transposed = bool(attrs.get("transpose_b"))
    else:
        return None
    if attrs.get("out_dtype") not in (None, "", "float32"):
        return None
    return PreparedProduct(transposed)
