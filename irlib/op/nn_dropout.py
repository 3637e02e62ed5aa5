"""``nn.dropout``: evaluated in inference mode (the identity; the mask is all ones), as
Relay's reference does.

Before/after in the text format::

    nn.dropout(%x, rate=0.5)                 -> (Tensor[(2, 3), float32], Tensor[(2, 3), float32])
"""

from __future__ import annotations

import numpy as np

from ..errors import TypeInferenceError
from ..ir.expr import TupleGetItem, TupleWrapper
from ..ir.types import TupleType
from ._composite import arg_types
from .registry import OpPattern, make_call, register_op
from .type_relations import expect_tensor

__all__ = ["dropout", "dropout_raw"]


# -- dropout -----------------------------------------------------------------------------------

def _dropout_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.dropout: data")
    if not 0.0 <= attrs["rate"] < 1.0:
        raise TypeInferenceError(f"nn.dropout: rate must be in [0, 1), got {attrs['rate']}")
    return TupleType([data, data])


_DROPOUT = register_op("nn.dropout", ("data",),
                       attrs=("relay.attrs.DropoutAttrs", [("rate", 0.5)]),
                       type_rel=_dropout_rel, pattern=OpPattern.OPAQUE, tuple_output=True,
                       description="dropout (inference: identity); returns (out, mask)")
_DROPOUT.def_impl(lambda data, rate=0.5: (np.array(data), np.ones_like(data)))
_DROPOUT.def_grad(lambda call, out_grad: [TupleGetItem(out_grad, 0)])


def dropout_raw(data, rate=0.5):
    """Dropout returning both outputs ``(out, mask)`` as a TupleWrapper.

    Args:
        data: the input tensor.
        rate: the probability of dropping an element.
    """
    return TupleWrapper(make_call("nn.dropout", (data,), {"rate": float(rate)}), 2)


def dropout(data, rate=0.5):
    """Dropout; returns field 0 of the ``nn.dropout`` call (``relay.nn.dropout``).

    Args:
        data: the input tensor.
        rate: the probability of dropping an element.

    Returns:
        A TupleGetItem of the ``nn.dropout`` call.
    """
    return dropout_raw(data, rate)[0]
