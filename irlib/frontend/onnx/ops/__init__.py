"""Converter modules, one per op family; importing this package registers them all."""

from . import elementwise  # noqa: F401
from . import shape  # noqa: F401
from . import indexing  # noqa: F401
from . import reduce  # noqa: F401
from . import nn  # noqa: F401
from . import normalization  # noqa: F401
from . import rnn  # noqa: F401
from . import control  # noqa: F401
from . import loss  # noqa: F401
from . import quantize  # noqa: F401
from . import attention  # noqa: F401
from . import image  # noqa: F401
from . import misc  # noqa: F401
from . import loops  # noqa: F401
from . import sequence  # noqa: F401
from . import contrib  # noqa: F401
from . import signal  # noqa: F401
from . import vision  # noqa: F401
from . import contrib_bert  # noqa: F401
from . import text_train  # noqa: F401
from . import ml  # noqa: F401
from . import flex_attention  # noqa: F401
