"""The ops that exist for the importers, outside the core registry: ``dyn.*`` and ``onnx.*``.

* ``dyn.*`` (:mod:`.dynamic_shape`): Relay's dynamic namespace, core ops whose shape-like
  arguments (a reshape target, slice bounds, reduction axes, ...) are run-time tensors;
* ``onnx.*``: ops with ONNX semantics that no core op composition expresses, one module per
  concept: :mod:`.attention`, :mod:`.resampling` (Resize, GridSample, AffineGrid),
  :mod:`.bilinear_sampling` (DeformConv, RoiAlign), :mod:`.sliding_windows` (Col2Im, MaxPool
  with indices, MaxUnpool), :mod:`.spectral` (STFT, MelWeightMatrix, DFT, windows),
  :mod:`.scatter` (ScatterND, TensorScatter), :mod:`.scan` (CumProd), :mod:`.unique`,
  :mod:`.detection` (NonMaxSuppression), :mod:`.bitcast`, :mod:`.linalg` (Det),
  :mod:`.crop_pad` (CenterCropPad), :mod:`.text` (string ops, TfIdfVectorizer),
  :mod:`.image_decoder`, :mod:`.random_values` (random draws, training Dropout) and
  :mod:`.classic_ml` (``ai.onnx.ml`` LabelEncoder, TreeEnsemble).

``import irlib`` does not import this package. Importing it registers every op here; the
ONNX, StableHLO and ``nn`` frontends do that before they emit such calls, and
:func:`irlib.op.registry.get_def`/``is_registered`` do it on the first lookup of an unknown
``dyn.``/``onnx.`` name (so the text parser and the executors find these ops in a program
without an explicit import). Each op has a type relation and a numpy reference; all are
``OPAQUE`` to fusion.
"""

from .. import _load_all  # noqa: F401  (the core ops first: some relations reuse them)
from ..registry import FRONTEND_NAMESPACES, _REGISTRY
from . import dynamic_shape  # noqa: F401
from . import attention, resampling, bilinear_sampling, sliding_windows  # noqa: F401
from . import spectral, scatter, scan, unique, detection, bitcast, linalg  # noqa: F401
from . import crop_pad, text, image_decoder, random_values, classic_ml  # noqa: F401


def _name_relation_errors() -> None:
    from .._load_all import name_relation_errors
    name_relation_errors([name for name in list(_REGISTRY)
                          if name.split(".", 1)[0] in FRONTEND_NAMESPACES])


_name_relation_errors()
