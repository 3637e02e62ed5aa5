"""Make ``campaigns`` importable from the fuzz tests (the folder is not a package path)."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
