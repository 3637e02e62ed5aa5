"""IR data structures: expressions, types, dims, attrs, modules, traversal."""

from .attrs import Attrs, make_attrs
from .dims import Any, AnyDim, DimExpr, floordiv, size_var
from .expr import (Call, Clause, Constant, Constructor, Expr, Function, GlobalVar, If, Let,
                   Match, Node, Op, Pattern, PatternConstructor, PatternTuple, PatternVar,
                   PatternWildcard, RefCreate, RefRead, RefWrite, Tuple, TupleGetItem,
                   TupleWrapper, Var, bind_tuple, const, var)
from .functor import ExprFunctor, ExprMutator, ExprVisitor, children, post_order, rebuild
from .module import IRModule
from . import scope_builder
from . import types as ty  # relay.ty
from .bind import bind
from .scope_builder import ScopeBuilder
from .span import SourceName, Span
from .type_functor import TypeMutator, TypeVisitor
from .types import (FuncType, GlobalTypeVar, IncompleteType, RefType, TensorType, TupleType,
                    Type, TypeCall, TypeData, TypeKind, TypeRelation, TypeVar, scalar_type)
