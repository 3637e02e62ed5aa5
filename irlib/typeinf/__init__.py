"""Type inference: Hindley-Milner-style unification plus deferred op type relations.

The pieces, in the order they act:

* :mod:`.checker` walks each function (explicit stack) and gives every expression a type
  with holes, unifying where types must agree;
* :mod:`.unifier` is the union-find over holes;
* :mod:`.solver` runs op type relations and tuple projections once their inputs are known;
* :mod:`.patterns` and :mod:`.match_coverage` handle ``match``;
* :mod:`.resolver` rebuilds the program with the solved types;
* :mod:`.driver` orders the module's globals, generalises leftover holes of top-level
  functions into type parameters, and raises the collected errors.

The public entry points are :class:`irlib.transform.InferType` and :func:`irlib.infer_type`.
"""

from .driver import infer_expr, infer_module
from .match_coverage import missing_cases
from .unifier import UnificationError, Unifier

__all__ = ["infer_expr", "infer_module", "missing_cases", "UnificationError", "Unifier"]
