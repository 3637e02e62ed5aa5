"""``python -m interp`` runs the ``irlib`` command line (:mod:`interp.cli`); the ``irlib``
console script is the same program."""

import sys

from interp.cli import main

sys.exit(main())
