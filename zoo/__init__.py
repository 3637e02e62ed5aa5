"""Model definitions mirroring ``tvm.relay.testing`` (mlp, resnet, ...); they arrive with the
model-zoo issue. ``zoo`` imports only ``irlib``."""
