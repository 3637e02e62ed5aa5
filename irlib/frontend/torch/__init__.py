"""PyTorch frontend (Relax's ``relax.frontend.torch``): ``torch.fx`` graphs and
``torch.export`` programs to irlib IRModules.

* :func:`from_fx` converts a ``torch.fx.GraphModule`` (``torch.fx.symbolic_trace``) given the
  shapes and dtypes of its inputs;
* :func:`from_exported_program` converts a ``torch.export.ExportedProgram`` (ATen ops, before
  or after ``run_decompositions()``), with ``torch.export.Dim`` dims as size variables.

* :func:`dynamo_capture_subgraphs` captures the graphs ``torch.compile`` (TorchDynamo)
  extracts, one function per graph break;
* :func:`relax_dynamo` is a ``torch.compile`` backend running them on the graph executor.

All bind the weights as constants, or keep them as trailing parameters of ``main`` with the
``num_input``/``params`` attributes that :func:`irlib.frontend.detach_params` consumes.
Every op is converted by a small function in the converter table (:mod:`.registry`);
:func:`supported_ops_table` renders that table as the Markdown of docs/torch.md. A graph
with unsupported targets raises :class:`TorchOpNotImplemented` listing all of them.

Importing this package imports ``torch``. Every converter and helper in its modules takes
``ctx``, the :class:`~irlib.frontend.torch.context.Context` of the graph being converted (it
emits the irlib calls and knows each value's type).
"""

from . import ops_elementwise, ops_nn, ops_shape, ops_index, ops_create, ops_reduce  # noqa: F401
from . import ops_modules, ops_rnn  # noqa: F401  (register the converters)
from .dynamo import dynamo_capture_subgraphs, relax_dynamo
from .errors import TorchConversionError, TorchOpNotImplemented
from .exported import from_exported_program
from .fx_importer import from_fx
from .optable import supported_ops_table

__all__ = ["from_fx", "from_exported_program", "dynamo_capture_subgraphs", "relax_dynamo",
           "TorchOpNotImplemented",
           "TorchConversionError", "supported_ops_table"]
