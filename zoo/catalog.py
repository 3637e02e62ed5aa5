"""Named workloads: the model names ``irlib run`` accepts, each mapped to its builder.

``workload(name, batch_size)`` returns ``(mod, params)`` at the model's reference default
size, with the batch size given.
"""

from __future__ import annotations

from functools import partial

from irlib.errors import UnknownNameError

from . import dcgan, densenet, inception_v3, lstm, mlp, mobilenet, resnet, squeezenet, vgg


def _catalog() -> dict:
    models = {
        "mlp": lambda batch: mlp.get_workload(batch),
        "mobilenet": lambda batch: mobilenet.get_workload(batch_size=batch),
        "squeezenet1.0": lambda batch: squeezenet.get_workload(batch_size=batch, version="1.0"),
        "squeezenet1.1": lambda batch: squeezenet.get_workload(batch_size=batch, version="1.1"),
        "inception_v3": lambda batch: inception_v3.get_workload(batch_size=batch),
        "dcgan": lambda batch: dcgan.get_workload(batch),
        "lstm": lambda batch: lstm.get_workload(10, 128, batch_size=batch),
    }
    for layers in (18, 34, 50, 101, 152):
        models[f"resnet{layers}"] = partial(
            lambda batch, n: resnet.get_workload(batch_size=batch, num_layers=n), n=layers)
    for layers in (11, 13, 16, 19):
        models[f"vgg{layers}"] = partial(
            lambda batch, n: vgg.get_workload(batch, num_layers=n), n=layers)
    for size in (121, 161, 169, 201):
        models[f"densenet{size}"] = partial(
            lambda batch, n: densenet.get_workload(densenet_size=n, batch_size=batch), n=size)
    return models


MODELS = _catalog()
"""Model name -> ``builder(batch_size) -> (mod, params)``."""


def names() -> list:
    """The known model names, sorted."""
    return sorted(MODELS)


def workload(name: str, batch_size: int = 1):
    """``(mod, params)`` of the named model.

    Args:
        name: a name from :func:`names` (``"resnet18"``, ``"mobilenet"``, ...).
        batch_size: the batch dimension of the input.

    Raises:
        UnknownNameError: for an unknown name (the message lists the known ones).
    """
    if name not in MODELS:
        raise UnknownNameError(f"unknown model {name!r}; known models: {', '.join(names())}")
    return MODELS[name](batch_size)
