"""Op registration is strict, and the frontend namespaces (``dyn.*``, ``onnx.*``) load on demand.

* registering a name another module registered raises OpRegistrationError naming the op and
  both modules; re-executing the defining module (``importlib.reload``) is allowed;
* ``import irlib`` alone registers no ``dyn.*``/``onnx.*`` op (checked in a fresh process);
  the ONNX importer registers them, and so does the first lookup of such a name (the text
  parser reading ``dyn.reshape``).
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import irlib
from irlib.errors import IRError, OpRegistrationError, UnknownNameError
from irlib.op import registry


def test_registering_a_taken_name_from_another_module_raises():
    with pytest.raises(OpRegistrationError) as info:
        registry.register_op("add", arg_names=("lhs", "rhs"))
    message = str(info.value)
    assert "'add'" in message and "irlib.op.tensor" in message and __name__ in message
    assert isinstance(info.value, IRError)
    assert registry.get_def("add").module == "irlib.op.tensor"  # the original is untouched


def test_register_opaque_is_strict_too():
    registry.load_frontend_ops()
    with pytest.raises(OpRegistrationError, match="onnx.det"):
        registry.register_opaque("onnx.det", ("data",), None, None,
                                 lambda data: (data,), "a second determinant")
    assert registry.get_def("onnx.det").module == "irlib.op.frontend.linalg"


def test_an_explicit_module_that_differs_is_refused():
    with pytest.raises(OpRegistrationError, match="nn.conv2d"):
        registry.register_op("nn.conv2d", module="some.plugin")


def test_reloading_the_defining_module_replaces_its_ops():
    from irlib.op.frontend import linalg
    before = registry.get_def("onnx.det")
    importlib.reload(linalg)
    after = registry.get_def("onnx.det")
    assert after is not before and after.module == "irlib.op.frontend.linalg"
    matrix = np.array([[2.0, 1.0], [1.0, 3.0]], "float32")  # det = 2 * 3 - 1 * 1 = 5
    np.testing.assert_allclose(registry.evaluate("onnx.det", [matrix]), 5.0, rtol=1e-6)


def test_unknown_name_in_a_frontend_namespace_is_an_unknown_name_error():
    with pytest.raises(UnknownNameError, match="onnx.no_such_op"):
        registry.get_def("onnx.no_such_op")
    assert not registry.is_registered("dyn.no_such_op")


_FRESH_PROCESS = textwrap.dedent("""
    import sys
    import irlib
    from irlib.op import registry
    print(sorted(n for n in registry._REGISTRY if n.startswith(("onnx.", "dyn."))))
    print("irlib.op.frontend" in sys.modules)
    fn = irlib.parse_expr("fn (%x: Tensor[(2, 3), float32], %s: Tensor[(2), int64]) "
                          "{ dyn.reshape(%x, %s) }")
    print(irlib.infer_type(fn).checked_type.ret_type)
    print(registry.get_def("onnx.resize").module)
""")


def test_import_irlib_registers_no_frontend_op_and_the_parser_loads_them():
    out = subprocess.run([sys.executable, "-c", _FRESH_PROCESS], capture_output=True,
                         text=True, timeout=120, check=True).stdout.splitlines()
    assert out[0] == "[]"
    assert out[1] == "False"
    assert out[2] == "Tensor[(?, ?), float32]"
    assert out[3] == "irlib.op.frontend.resampling"


@pytest.mark.parametrize("importer", ["irlib.frontend.onnx.importer",
                                      "irlib.frontend.stablehlo.importer"])
def test_the_importers_register_the_frontend_ops(importer):
    code = (f"import {importer}\nfrom irlib.op import registry\n"
            "print('onnx.attention' in registry._REGISTRY, 'dyn.reshape' in registry._REGISTRY)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    assert out == ["True", "True"]


def test_every_op_names_its_defining_module():
    for name in irlib.op.list_ops():
        module = irlib.op.get_def(name).module
        assert module.startswith("irlib.op."), (name, module)
        namespace = name.split(".")[0]
        assert module.startswith("irlib.op.frontend.") == (namespace in ("dyn", "onnx")), name
