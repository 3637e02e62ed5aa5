"""numba CPU kernels; importing this package registers them (and imports numba)."""

from . import conv, gemm, norm, pool, reduce, resize  # noqa: F401
