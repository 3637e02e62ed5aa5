"""irlib: a readable, pure-Python deep-learning IR toolkit in the spirit of TVM's Relay.

The top level mirrors ``tvm.relay``: node classes and builders (``irlib.var``,
``irlib.const``, ``irlib.Function``, ...), types, ``IRModule``, operators (``irlib.add``,
``irlib.nn.conv2d``), structural equality, type inference, and the ``transform`` and
``analysis`` namespaces. See docs/index.md for a tour.
"""

from . import errors
from .errors import (InterpreterError, IRError, MatchError, OpImplError, ParamsFormatError,
                     ParseError, PassError, TypeInferenceError, UnknownNameError,
                     UnsupportedOpError, UntypedError, WellFormedError)
from .errors import ArgumentShapeError, UnboundSizeVarError
from .ir import *  # noqa: F401,F403
from .ir import (Any, Attrs, Call, Clause, Constant, Constructor, Expr, FuncType, Function,
                 GlobalTypeVar, GlobalVar, If, IncompleteType, IRModule, Let, Match, Op,
                 Pattern, PatternConstructor, PatternTuple, PatternVar, PatternWildcard,
                 RefCreate, RefRead, RefType, RefWrite, Span, TensorType, Tuple, TupleGetItem,
                 TupleType, TupleWrapper, Type, TypeCall, TypeData, TypeKind, TypeVar, Var,
                 const, scalar_type, size_var, var)
from .ndarray import NDArray, cpu, cuda
from . import op
from .op import *  # noqa: F401,F403
from .op import nn  # noqa: F401
from .ir.structural import assert_structural_equal, structural_equal, structural_hash
from . import transform, analysis
from .transform.infer_type import infer_type
from .text.printer import astext, pretty_print
from .text.parser import fromtext, parse, parse_expr
from . import prelude  # noqa: F401  (irlib.prelude.Prelude)

__version__ = "0.1.0"
