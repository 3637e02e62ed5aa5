"""Round trip of the model zoo's modules: ``parse(mod.astext())`` equals the typed module."""

import pytest

import irlib
import zoo

WORKLOADS = {
    "mlp": lambda: zoo.mlp.get_workload(batch_size=1),
    "resnet": lambda: zoo.resnet.get_workload(batch_size=1),
    "dcgan": lambda: zoo.dcgan.get_workload(batch_size=1),
    "mobilenet": lambda: zoo.mobilenet.get_workload(batch_size=1),
    "squeezenet": lambda: zoo.squeezenet.get_workload(batch_size=1),
    "densenet": lambda: zoo.densenet.get_workload(batch_size=1),
    "inception_v3": lambda: zoo.inception_v3.get_workload(batch_size=1),
    "lstm": lambda: zoo.lstm.get_workload(iterations=3, num_hidden=8, batch_size=1),
}


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_zoo_module_roundtrips(name):
    mod, _ = WORKLOADS[name]()
    back = irlib.parse(mod.astext(), source_name=f"{name}.rly")
    irlib.assert_structural_equal(back, irlib.transform.InferType()(mod), map_free_vars=True)
