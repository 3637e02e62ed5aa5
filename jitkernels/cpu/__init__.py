"""numba CPU kernels; importing this package registers them (and imports numba).

Importing it also applies the process's threading policy (:func:`jitkernels.threads.configure`).
"""

from ..threads import configure as _configure_threads

_configure_threads()

from . import conv, gemm, indexing, norm, pool, reduce, resize  # noqa: E402,F401
from . import layout_preference  # noqa: E402,F401  (registered with the kernel registry)
