"""The dataflow pattern language (Relay's ``tvm.relay.dataflow_pattern``).

Patterns describe subgraphs of an expression; ``pattern.match(expr)`` tests one expression,
``pattern.partition(expr)`` extracts every match into a function, and
``rewrite(callbacks, expr)`` replaces matches by what :class:`DFPatternCallback` s return.
See docs/patterns.md.
"""

from .pattern import (AltPattern, AttrPattern, CallPattern, ConstantPattern, DataTypePattern,
                      DFPattern, DominatorPattern, ExprPattern, FunctionPattern, IfPattern,
                      LetPattern, ShapePattern, TupleGetItemPattern, TuplePattern, TypePattern,
                      VarPattern, WildcardPattern, dominates, has_attr, has_dtype, has_shape,
                      has_type, is_constant, is_expr, is_if, is_let, is_op, is_tuple,
                      is_tuple_get_item, is_var, wildcard)
from .rewrite import DFPatternCallback, group_matches, partition, rewrite
from .matcher import Matcher

__all__ = ["AltPattern", "AttrPattern", "CallPattern", "ConstantPattern", "DataTypePattern",
           "DFPattern", "DominatorPattern", "ExprPattern", "FunctionPattern", "IfPattern",
           "LetPattern", "ShapePattern", "TupleGetItemPattern", "TuplePattern", "TypePattern",
           "VarPattern", "WildcardPattern", "dominates", "has_attr", "has_dtype", "has_shape",
           "has_type", "is_constant", "is_expr", "is_if", "is_let", "is_op", "is_tuple",
           "is_tuple_get_item", "is_var", "wildcard", "DFPatternCallback", "group_matches",
           "partition", "rewrite", "Matcher"]
