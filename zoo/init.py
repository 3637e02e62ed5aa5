"""Parameter initializers and :func:`create_workload` (``relay.testing.init``).

An initializer is called as ``initializer(name, array)`` and fills ``array`` in place,
choosing the rule from the parameter name's suffix, in this order: ``weight`` (the
initializer's own rule), ``bias`` 0, ``gamma`` 1, ``beta`` 0, ``mean`` 0 (so
``moving_mean``), ``var`` 1 (so ``moving_var``); any other name is an error.
"""

from __future__ import annotations

import numpy as np

import irlib
from irlib.ir.types import TensorType


class Initializer:
    """Base class: dispatches on the parameter-name suffix; subclasses give weights a rule.

    Args:
        **kwargs: remembered as ``self._kwargs`` (the subclass's settings).
    """

    def __init__(self, **kwargs):
        self._kwargs = kwargs

    def __call__(self, desc, arr):
        """Fill ``arr`` in place according to the name ``desc``.

        Args:
            desc: the parameter name, e.g. ``"conv0_weight"``.
            arr: a writable numpy array.

        Raises:
            ValueError: if the name matches no rule.
        """
        for suffix, method in _SUFFIX_RULES:
            if desc.endswith(suffix):
                getattr(self, method)(desc, arr)
                return
        self._init_default(desc, arr)

    def _init_bias(self, _, arr):
        arr[...] = 0.0

    def _init_gamma(self, _, arr):
        arr[...] = 1.0

    def _init_beta(self, _, arr):
        arr[...] = 0.0

    def _init_mean(self, _, arr):
        arr[...] = 0.0

    def _init_var(self, _, arr):
        arr[...] = 1.0

    def _init_weight(self, name, arr):
        raise NotImplementedError(f"{type(self).__name__} has no rule for weights ({name})")

    def _init_default(self, name, _):
        raise ValueError(
            f"Unknown initialization pattern for {name}. Default initialization is limited to "
            '"weight", "bias", "gamma" (1.0), "beta" (0.0), "mean" (0.0) and "var" (1.0).')


_SUFFIX_RULES = (("weight", "_init_weight"), ("bias", "_init_bias"), ("gamma", "_init_gamma"),
                 ("beta", "_init_beta"), ("mean", "_init_mean"), ("var", "_init_var"))


class Xavier(Initializer):
    """Xavier (Glorot) uniform initialisation of weights.

    Values are uniform in ``[-s, s]`` with ``s = sqrt(magnitude / factor)``, where for a
    weight of shape ``(out, in, *kernel)`` and ``hw = prod(kernel)``, ``factor`` is
    ``(fan_in + fan_out) / 2`` (``"avg"``), ``fan_in = in * hw`` (``"in"``) or
    ``fan_out = out * hw`` (``"out"``); a name containing ``"depthwise"`` uses ``hw``.

    Args:
        rnd_type: only ``"uniform"`` is supported.
        factor_type: ``"avg"``, ``"in"`` or ``"out"``.
        magnitude: the scale numerator.
    """

    def __init__(self, rnd_type="uniform", factor_type="avg", magnitude=3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def _init_weight(self, name, arr):
        shape = arr.shape
        if len(shape) < 2:
            raise ValueError(f"Xavier initializer cannot be applied to vector {name}. "
                             "It requires at least 2D.")
        hw_scale = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
        fan_in, fan_out = shape[1] * hw_scale, shape[0] * hw_scale
        factors = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}
        if self.factor_type not in factors:
            raise ValueError(f"Incorrect factor type {self.factor_type!r}; "
                             "expected 'avg', 'in' or 'out'")
        factor = factors[self.factor_type]
        # NOTE: depthwise kernels connect one input channel each (the reference's mobilenet
        # rule), so only the window counts.
        if "depthwise" in name:
            factor = hw_scale
        scale = np.sqrt(self.magnitude / factor)
        if self.rnd_type != "uniform":
            raise ValueError(f"Unknown random type {self.rnd_type!r}; only 'uniform' is supported")
        arr[...] = np.random.uniform(-scale, scale, size=shape)


class Constant(Initializer):
    """Every weight element is ``1 / number_of_elements`` (used by the synthetic model)."""

    def _init_weight(self, name, arr):
        arr[...] = 1.0 / arr.size


def create_workload(net, initializer=None, seed=0):
    """A module and initialised parameters for a network function.

    Args:
        net: the network (a Function; its parameter named ``data`` is the input).
        initializer: the Initializer (default :class:`Xavier`).
        seed: the numpy seed for the initialisation.

    Returns:
        ``(mod, params)``: the type-checked module whose ``main`` is ``net``, and a dict from
        parameter name to :class:`irlib.NDArray`, in parameter order, without ``data``.
        Parameters with the same name collapse to one entry (the LSTM's ``data`` vars).

    Raises:
        TypeInferenceError: if ``net`` does not type-check.
        ValueError: if the initializer has no rule for a parameter name.
    """
    mod = irlib.IRModule.from_expr(net)
    mod = irlib.transform.InferType()(mod)
    param_types = {param.name_hint: param.checked_type for param in mod["main"].params}
    np.random.seed(seed)
    initializer = initializer if initializer else Xavier()
    params = {}
    for name, ty in param_types.items():
        if name == "data":
            continue
        if not isinstance(ty, TensorType) or not all(isinstance(d, int) for d in ty.shape):
            continue  # a symbolic shape has no concrete array to initialise
        value = np.zeros(tuple(ty.shape), dtype=ty.dtype)
        initializer(name, value)
        params[name] = irlib.NDArray(value, irlib.cpu(0))
    return mod, params
