"""``python -m irlib`` runs the command line, which lives in ``interp.cli`` (the runtime
side: ``irlib`` itself never imports ``interp``; this entry script is not part of the
library's import graph)."""

import sys

from interp.cli import main

sys.exit(main())
