"""The errors the nn builder raises, each naming the module path where it happened.

::

    IRError
     └── NNError                      any misuse of the nn builder
          ├── SpecError               a spec that does not fit the method it describes
          ├── ParameterError          parameter data of the wrong shape/dtype, missing data
          ├── StateDictError          load_state_dict with missing/unexpected keys (strict)
          └── OpError                 an op applied to tensors it cannot take (dtypes, shapes)

A message starts with the dotted path of the module whose code raised it, as
``model.layers.3.attn.q_proj: ...`` (the path ``model`` is the exported module itself), so a
user finds the layer at fault without a debugger.
"""

from __future__ import annotations

from ...errors import IRError


class NNError(IRError):
    """Base class of the nn builder's errors."""


class SpecError(NNError, TypeError):
    """A spec names an argument the method does not take, or describes it wrongly."""


class ParameterError(NNError, ValueError):
    """Parameter data of the wrong shape or dtype, or a parameter without data where data is
    needed (``jit``)."""


class StateDictError(NNError, KeyError):
    """``load_state_dict(strict=True)`` met missing or unexpected keys.

    Args:
        message: the error message.
        missing_keys: as the attribute.
        unexpected_keys: as the attribute.

    Attributes:
        missing_keys: parameter names the state dict lacks.
        unexpected_keys: state dict keys that name no parameter.
    """

    def __init__(self, message: str, missing_keys=(), unexpected_keys=()):
        super().__init__(message)
        self.missing_keys = list(missing_keys)
        self.unexpected_keys = list(unexpected_keys)

    def __str__(self) -> str:          # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class OpError(NNError, TypeError):
    """An nn op was applied to tensors it cannot take (mismatched dtypes, bad shapes, bad
    attributes); the message names the op and the module path."""


__all__ = ["NNError", "SpecError", "ParameterError", "StateDictError", "OpError"]
