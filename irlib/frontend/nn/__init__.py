"""A PyTorch-like model builder (Relax's ``relax.frontend.nn``).

Write a model as a :class:`Module` subclass with :class:`Parameter` weights and a
``forward`` made of nn ops (:mod:`irlib.frontend.nn.op`, re-exported here), then

* ``mod, params = model.export_tvm(spec)`` turns the spec'd methods into functions of an
  :class:`~irlib.IRModule` (weights as trailing parameters; see
  :mod:`irlib.frontend.nn.exporter`), or
* ``runner = model.jit(spec)`` compiles them and binds the weights' data, so
  ``runner.forward(x)`` runs the model.

Tutorial: docs/nn.md.
"""

from . import spec
from .core import (Effect, Module, ModuleList, Object, Parameter, Tensor, get_default_dtype,
                   set_default_dtype, wrap_nested)
from .errors import NNError, OpError, ParameterError, SpecError, StateDictError
from .exporter import add_extern
from .extern import (ExternCompileError, ExternError, ExternInferenceError, ExternLibrary,
                     ExternModule, ExternSymbolError, ObjectModule, SourceModule,
                     register_extern_func)
from .effects import IOEffect, KVCache, debug_func, print_, register_debug_func
from .jit import JitError, JitModule
from .op import *  # noqa: F401,F403
from .subroutine import SubroutineMixin
from .visitor import Mutator
from typing import TypeVar  # noqa: E402  (re-exported as Relax does)

from .modules import *  # noqa: F401,F403,E402  (layers)
