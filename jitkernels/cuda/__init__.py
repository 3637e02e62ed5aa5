"""numba.cuda kernels; importing this package registers them (and imports numba.cuda).

The kernels run one GPU thread per output element. Their host wrappers have the reference
implementations' contract (numpy arrays in, a tuple of numpy arrays out: inputs are copied
to the device and results back), so the tests compare them with the CPU kernels and the
numpy references directly. Without a GPU, ``NUMBA_ENABLE_CUDASIM=1`` (set before numba.cuda
is first imported) runs them on numba's CUDA simulator, slowly: tests use tiny shapes.
"""

from numba import cuda

from . import elementwise, nn  # noqa: F401


def available() -> bool:
    """True when a CUDA GPU (or numba's CUDA simulator) can run the kernels."""
    try:
        return bool(cuda.is_available())
    except Exception:    # a broken driver install reads as "no GPU"
        return False
