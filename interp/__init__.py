"""Running IR: values, the reference interpreter, nat helpers and ``interp.testing``.

* ``interp.create_executor(kind="debug", mod=None, device=interp.cpu(0), target="cpu")``:
  Relay's executor API over the reference interpreter (:mod:`interp.executor`);
* values (:mod:`interp.values`): ``NDArray``, ``TupleValue``, ``Closure``, ``RecClosure``,
  ``RefValue``, ``ConstructorValue``;
* ``interp.to_python(expr, mod)`` / ``interp.run_as_python(expr, mod)``: IR as a readable
  Python program (:mod:`interp.py_codegen`, run time in :mod:`interp.py_runtime`);
* :mod:`interp.nat`: Peano naturals; :mod:`interp.nd`: ``nd.array``;
  :mod:`interp.testing`: the ``relay.testing`` facade;
* ``save_param_dict`` / ``load_param_dict`` (:mod:`interp.params`): TVM's parameter blob;
* ``build(mod, target, params)``, ``load_module(path)``, ``run_model`` and
  :mod:`interp.graph_executor`: compiling to and running on the graph executor;
  :mod:`interp.debug_executor`: the same, timed node by node (``profile_model``).

This package imports ``irlib``; ``irlib`` never imports it at module import time.
"""

from irlib.ndarray import Device, NDArray, cpu, cuda  # noqa: F401

from . import nat, nd, testing, values  # noqa: F401
from . import graph_executor  # noqa: F401
from . import debug_executor  # noqa: F401
from . import distributed  # noqa: F401  (installs the MPI provider of the ccl ops)
from .build import build, load_module, run_model  # noqa: F401
from .executor import BoundFunction, Executor, create_executor  # noqa: F401
from .interpreter import Interpreter  # noqa: F401
from .params import load_param_dict, save_param_dict  # noqa: F401
from .to_python import run_as_python, to_python  # noqa: F401
from .values import (Closure, ConstructorValue, RecClosure, RefValue, TupleValue,  # noqa: F401
                     as_value, format_value)
