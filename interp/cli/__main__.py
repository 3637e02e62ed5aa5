"""``python -m interp.cli`` runs the ``irlib`` command line."""

import sys

from . import main

sys.exit(main())
