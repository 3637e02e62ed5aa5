"""numba kernels for the hot ops (cpu/ and cuda/), registered against op names.

Kernels arrive with the kernels issue; the interpreter falls back to the numpy reference
implementations of ``irlib.op`` for every op without a kernel.
"""

KERNELS: dict = {}
"""Op name -> kernel callable; empty until kernels are registered."""
