"""Running IR: values, the reference interpreter, to_python, build() and the graph executor.

This package grows with the interpreter and executor issues. It imports ``irlib``; ``irlib``
never imports it at module import time.
"""

from irlib.ndarray import Device, NDArray, cpu, cuda  # noqa: F401
