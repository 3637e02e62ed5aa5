"""Passes over IR modules (``irlib.transform``, mirroring ``tvm.relay.transform``).

Each pass lives in its own module; this package re-exports the public names.
"""

from .infer_type import InferType, infer_type
from .pass_infra import ModulePass, Pass, PassInfo

__all__ = ["InferType", "infer_type", "ModulePass", "Pass", "PassInfo"]
