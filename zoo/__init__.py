"""Model definitions mirroring ``tvm.relay.testing``, and :func:`create_workload`.

Each model module has ``get_net(...)`` (the bare network Function, input var ``data``) and
``get_workload(...)`` (``(mod, params)``), with the reference's signatures and defaults:
``mlp``, ``resnet``, ``dcgan``, ``mobilenet``, ``lstm``, ``inception_v3``, ``squeezenet``,
``vgg`` and ``densenet``. ``layers`` holds the weight-creating layer helpers and ``init``
the initializers. ``zoo`` imports only ``irlib``.
"""

from . import init, layers
from .init import Constant, Initializer, Xavier, create_workload
from . import dcgan, densenet, inception_v3, lstm, mlp, mobilenet, resnet, squeezenet, vgg

__all__ = ["create_workload", "Initializer", "Xavier", "Constant", "init", "layers",
           "mlp", "resnet", "dcgan", "mobilenet", "lstm", "inception_v3", "squeezenet", "vgg",
           "densenet"]
