"""Expression nodes of the IR.

Every node is a frozen, slotted dataclass with **identity** equality and hashing
(``eq=False``): ``==`` is O(1) and never recursive, so nodes are cheap dictionary keys even in
100,000-deep programs. Structural comparison is a separate function,
:func:`irlib.structural_equal`.

Nodes are immutable. ``node.replace(field=new)`` is the one rebuild helper: it returns ``node``
itself when nothing changes and otherwise keeps the span. After type inference each node
carries its type in ``checked_type``.

Operator overloading follows Relay: ``a + b``, ``a - b``, ``a * b``, ``a / b``, ``-a``,
``a < b``, ``a <= b``, ``a > b``, ``a >= b`` build op calls; ``f(x, y)`` builds a call;
``==`` stays identity (use :func:`irlib.equal` for the op).
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..errors import UntypedError
from ..ndarray import NDArray
from . import hooks
from .attrs import Attrs
from .span import Span
from .types import TensorType, Type, normalize_dtype


_node = dataclass(frozen=True, eq=False, slots=True)


@_node
class Node:
    """Base of expressions, patterns and clauses: a span and an inferred type slot."""

    span: Optional[Span] = field(default=None, kw_only=True, repr=False)
    _checked_type: Optional[Type] = field(default=None, init=False, repr=False)

    @property
    def checked_type(self) -> Type:
        """The type inference gave this node.

        Raises:
            UntypedError: if the node has not been through type inference.
        """
        if self._checked_type is None:
            raise UntypedError(
                f"the type checker has not populated checked_type for this "
                f"{type(self).__name__}; run irlib.transform.InferType() or irlib.infer_type()")
        return self._checked_type

    def with_type(self, ty: Type):
        """Set the inferred type. Meant for type inference only, on freshly built nodes.

        Args:
            ty: the type inferred for this node.
        """
        object.__setattr__(self, "_checked_type", ty)
        return self

    def __bool__(self):
        return True

    def replace(self, **changes):
        """A copy with some fields changed, or ``self`` if every value is already there.

        The span is kept unless ``span=`` is given; the inferred type is dropped on a copy.
        """
        for name, value in changes.items():
            if getattr(self, name) is not value:
                return dataclasses.replace(self, **changes)
        return self

    def astext(self, show_meta_data: bool = True, annotate=None) -> str:
        """The node in the text format (with the version header).

        Arguments (``show_meta_data``, ``annotate``) as :func:`irlib.text.printer.astext`.
        """
        return hooks.call("astext", self, show_meta_data=show_meta_data, annotate=annotate)

    def __str__(self) -> str:
        return hooks.call("pretty_print", self)


@_node
class Expr(Node):
    """Base class of expressions."""

    def show(self, params=None):
        """The dataflow graph of this expression (a ``GraphView``: SVG in a notebook, text
        listing elsewhere); ``params`` names the weights drawn folded (irlib.visualize)."""
        from ..visualize import show
        return show(self, params)

    # -- operator overloading (Relay's ExprWithOp) -----------------------------------------
    def _binary(self, other, op_name: str, reflected: bool = False):
        if not isinstance(other, Expr):
            raise TypeError(f"cannot apply {op_name!r} to an Expr and {type(other).__name__}; "
                            f"convert the value with irlib.const(...) first")
        from ..op import registry
        lhs, rhs = (other, self) if reflected else (self, other)
        return Call(registry.get(op_name), (lhs, rhs))

    def __add__(self, other):
        return self._binary(other, "add")

    def __radd__(self, other):
        return self._binary(other, "add", reflected=True)

    def __sub__(self, other):
        return self._binary(other, "subtract")

    def __rsub__(self, other):
        return self._binary(other, "subtract", reflected=True)

    def __mul__(self, other):
        return self._binary(other, "multiply")

    def __rmul__(self, other):
        return self._binary(other, "multiply", reflected=True)

    def __truediv__(self, other):
        return self._binary(other, "divide")

    def __rtruediv__(self, other):
        return self._binary(other, "divide", reflected=True)

    def __neg__(self):
        from ..op import registry
        return Call(registry.get("negative"), (self,))

    def __lt__(self, other):
        return self._binary(other, "less")

    def __le__(self, other):
        return self._binary(other, "less_equal")

    def __gt__(self, other):
        return self._binary(other, "greater")

    def __ge__(self, other):
        return self._binary(other, "greater_equal")

    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __call__(self, *args, **attrs):
        """Build a call of this expression (a function, global, op or constructor)."""
        from ..op import registry
        if isinstance(self, Op):
            return registry.make_call(self.name, args, attrs)
        if attrs:
            raise TypeError("keyword attributes are only allowed when calling an op")
        return Call(self, args)

    def astype(self, dtype: str):
        """``cast(self, dtype)``."""
        from ..op import registry
        return registry.make_call("cast", (self,), {"dtype": dtype})


@_node
class Var(Expr):
    """A local variable.

    Args:
        name_hint: the name used when printing (not significant for equality).
        type_annotation: the declared type, or None to let inference find it.
    """

    name_hint: str
    type_annotation: Optional[Type] = None

    def __post_init__(self):
        if not isinstance(self.name_hint, str):
            raise TypeError(f"Var name_hint must be a str, got {self.name_hint!r}")
        if self.type_annotation is not None and not isinstance(self.type_annotation, Type):
            raise TypeError(f"Var type_annotation must be a Type, got {self.type_annotation!r}")

    @property
    def vid(self):
        """Relay compatibility: the variable itself (it carries ``name_hint``)."""
        return self


@_node
class GlobalVar(Expr):
    """The name of a global function in an :class:`~irlib.ir.module.IRModule`.

    Args:
        name_hint: the function's name.
        type_annot: optional declared type.
    """

    name_hint: str
    type_annot: Optional[Type] = None


@_node
class Constant(Expr):
    """A constant tensor.

    Args:
        data: an :class:`~irlib.ndarray.NDArray` or anything ``np.asarray`` accepts; the data is
            copied into a read-only array.
    """

    data: NDArray

    def __post_init__(self):
        array = np.array(self.data.numpy() if isinstance(self.data, NDArray) else self.data)
        if array.dtype == object:
            raise TypeError("Constant data must be numeric or bool, not object")
        array.flags.writeable = False
        object.__setattr__(self, "data", NDArray(array))

    @property
    def tensor_type(self) -> TensorType:
        """The type of the constant (known without inference)."""
        return TensorType(self.data.shape, self.data.dtype)


@_node
class Tuple(Expr):
    """A tuple of expressions.

    Args:
        fields: the element expressions.
    """

    fields: tuple

    def __post_init__(self):
        object.__setattr__(self, "fields", _as_expr_tuple(self.fields, "Tuple field"))

    def __getitem__(self, index):
        return self.fields[index]

    def __len__(self):
        return len(self.fields)

    def astuple(self):
        """Relay compatibility: the tuple itself."""
        return self


@_node
class TupleGetItem(Expr):
    """Projection ``tuple_value.index``.

    Args:
        tuple_value: an expression of tuple type.
        index: the field index (an int).
    """

    tuple_value: Expr
    index: int

    def __post_init__(self):
        _check_expr(self.tuple_value, "TupleGetItem tuple_value")
        object.__setattr__(self, "index", int(self.index))


@_node
class Call(Expr):
    """A call of an op, function, global or constructor.

    Args:
        op: the callee.
        args: the argument expressions.
        attrs: the op's :class:`~irlib.ir.attrs.Attrs` (None for non-op callees).
        type_args: explicit type arguments (filled by type inference).
    """

    op: Expr
    args: tuple = ()
    attrs: Optional[Attrs] = None
    type_args: tuple = ()

    def __post_init__(self):
        _check_expr(self.op, "Call op")
        object.__setattr__(self, "args", _as_expr_tuple(self.args, "Call argument"))
        object.__setattr__(self, "type_args", tuple(self.type_args or ()))
        if self.attrs is not None and not isinstance(self.attrs, Attrs):
            object.__setattr__(self, "attrs", Attrs(dict(self.attrs)))


@_node
class Let(Expr):
    """``let var = value; body``. A let-bound function may call itself (letrec).

    Args:
        var: the bound :class:`Var`.
        value: its value.
        body: the expression in which ``var`` is in scope.
    """

    var: Var
    value: Expr
    body: Expr

    def __post_init__(self):
        if not isinstance(self.var, Var):
            raise TypeError(f"Let var must be a Var, got {self.var!r}")
        _check_expr(self.value, "Let value")
        _check_expr(self.body, "Let body")


@_node
class If(Expr):
    """``if (cond) { true_branch } else { false_branch }``; ``cond`` is a 0-d bool tensor.

    Args:
        cond: the condition.
        true_branch: evaluated when it holds.
        false_branch: evaluated otherwise.
    """

    cond: Expr
    true_branch: Expr
    false_branch: Expr

    def __post_init__(self):
        _check_expr(self.cond, "If cond")
        _check_expr(self.true_branch, "If true_branch")
        _check_expr(self.false_branch, "If false_branch")


@_node
class Function(Expr):
    """A function ``fn [type_params](params) -> ret_type { body }``.

    Args:
        params: the parameter :class:`Var` s.
        body: the function body.
        ret_type: declared result type, or None.
        type_params: the :class:`~irlib.ir.types.TypeVar` s it is polymorphic in.
        attrs: function attributes (``Primitive``, ``Compiler``, ``global_symbol``, ...), a
            dict or :class:`~irlib.ir.attrs.Attrs`, or None.
    """

    params: tuple
    body: Expr
    ret_type: Optional[Type] = None
    type_params: tuple = ()
    attrs: Optional[Attrs] = None

    def __post_init__(self):
        params = tuple(self.params)
        for p in params:
            if not isinstance(p, Var):
                raise TypeError(f"Function parameter must be a Var, got {p!r}")
        object.__setattr__(self, "params", params)
        _check_expr(self.body, "Function body")
        object.__setattr__(self, "type_params", tuple(self.type_params or ()))
        if self.attrs is not None and not isinstance(self.attrs, Attrs):
            object.__setattr__(self, "attrs", Attrs(dict(self.attrs)))
        if self.attrs is not None and len(self.attrs) == 0:
            object.__setattr__(self, "attrs", None)

    def with_attr(self, key: str, value) -> "Function":
        """A copy with function attribute ``key`` set to ``value``."""
        fields = dict(self.attrs or {})
        fields[key] = value
        return dataclasses.replace(self, attrs=Attrs(fields))

    def get_attr(self, key: str, default=None):
        """Function attribute ``key``, or ``default``."""
        return (self.attrs or {}).get(key, default)

    @property
    def func_type_annotation(self):
        """The function type spelled out by its annotations (IncompleteType for gaps)."""
        from .types import FuncType, IncompleteType
        return FuncType([p.type_annotation or IncompleteType() for p in self.params],
                        self.ret_type or IncompleteType(), self.type_params)


@_node
class Op(Expr):
    """A primitive operator. Get one with ``irlib.op.get(name)``: ops are interned."""

    name: str

    @property
    def op_def(self):
        """The registry entry (:class:`~irlib.op.registry.OpDef`) of this op."""
        from ..op import registry
        return registry.get_def(self.name)

    def __repr__(self):
        return f"Op({self.name})"


_constructor_tags = itertools.count()


@_node
class Constructor(Expr):
    """A constructor of an algebraic data type (also usable as a function value).

    Args:
        name_hint: the constructor name (``Cons``).
        inputs: the types of its fields (may mention the ADT's type variables).
        belong_to: the :class:`~irlib.ir.types.GlobalTypeVar` of its ADT.

    ``tag`` is a process-wide unique int assigned at construction; runtime values carry it.
    """

    name_hint: str
    inputs: tuple
    belong_to: object
    tag: int = field(default=-1, init=False)

    def __post_init__(self):
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "tag", next(_constructor_tags))

    def __repr__(self):
        return f"Constructor({self.name_hint})"


@_node
class RefCreate(Expr):
    """``ref(value)``: a new mutable cell holding ``value``."""

    value: Expr

    def __post_init__(self):
        _check_expr(self.value, "RefCreate value")


@_node
class RefRead(Expr):
    """``ref_read(ref)``: the current contents of a cell."""

    ref: Expr

    def __post_init__(self):
        _check_expr(self.ref, "RefRead ref")


@_node
class RefWrite(Expr):
    """``ref_write(ref, value)``: store ``value``; evaluates to the unit tuple."""

    ref: Expr
    value: Expr

    def __post_init__(self):
        _check_expr(self.ref, "RefWrite ref")
        _check_expr(self.value, "RefWrite value")


# -- patterns and match ------------------------------------------------------------------------

@_node
class Pattern(Node):
    """Base class of match patterns."""


@_node
class PatternWildcard(Pattern):
    """``_``: matches anything, binds nothing."""


@_node
class PatternVar(Pattern):
    """``%x``: matches anything and binds it to ``var``."""

    var: Var

    def __post_init__(self):
        if not isinstance(self.var, Var):
            raise TypeError(f"PatternVar needs a Var, got {self.var!r}")


@_node
class PatternConstructor(Pattern):
    """``Cons(p1, p2)``: matches a value built by ``constructor`` whose fields match."""

    constructor: Constructor
    patterns: tuple = ()

    def __post_init__(self):
        if not isinstance(self.constructor, Constructor):
            raise TypeError(f"PatternConstructor needs a Constructor, got {self.constructor!r}")
        object.__setattr__(self, "patterns", _as_pattern_tuple(self.patterns))


@_node
class PatternTuple(Pattern):
    """``(p1, p2)``: matches a tuple whose fields match."""

    patterns: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "patterns", _as_pattern_tuple(self.patterns))


@_node
class Clause(Node):
    """One ``pattern => body`` arm of a match."""

    lhs: Pattern
    rhs: Expr

    def __post_init__(self):
        if not isinstance(self.lhs, Pattern):
            raise TypeError(f"Clause lhs must be a Pattern, got {self.lhs!r}")
        _check_expr(self.rhs, "Clause rhs")


@_node
class Match(Expr):
    """``match (data) { clauses }``; ``complete=False`` is the partial ``match?``.

    Args:
        data: the scrutinee.
        clauses: the :class:`Clause` s, tried in order.
        complete: whether inference checks that the clauses cover every case.
    """

    data: Expr
    clauses: tuple
    complete: bool = True

    def __post_init__(self):
        _check_expr(self.data, "Match data")
        clauses = tuple(self.clauses)
        for clause in clauses:
            if not isinstance(clause, Clause):
                raise TypeError(f"Match clause must be a Clause, got {clause!r}")
        object.__setattr__(self, "clauses", clauses)
        object.__setattr__(self, "complete", bool(self.complete))


class TupleWrapper:
    """The multi-output result of an op (``split``, ``batch_norm``): index it to project.

    Args:
        tuple_value: the expression producing the tuple.
        size: its number of fields.
    """

    __slots__ = ("tuple_value", "size")

    def __init__(self, tuple_value: Expr, size: int):
        self.tuple_value = tuple_value
        self.size = size

    def astuple(self) -> Expr:
        """The underlying tuple-valued expression."""
        return self.tuple_value

    def astext(self) -> str:
        """The underlying expression in the text format."""
        return self.tuple_value.astext()

    def __getitem__(self, index: int) -> TupleGetItem:
        if not -self.size <= index < self.size:
            raise IndexError(f"tuple index {index} out of range for a {self.size}-tuple")
        return TupleGetItem(self.tuple_value, index % self.size)

    def __len__(self):
        return self.size

    def __iter__(self):
        return (self[i] for i in range(self.size))

    def __repr__(self):
        return f"TupleWrapper({self.tuple_value!r}, {self.size})"


# -- helpers -------------------------------------------------------------------------------------

def _check_expr(value, what: str):
    if not isinstance(value, Expr):
        raise TypeError(f"{what} must be an Expr, got {type(value).__name__}: {value!r}")


def _as_expr_tuple(values, what: str) -> tuple:
    items = tuple(v.astuple() if isinstance(v, TupleWrapper) else v for v in values)
    for v in items:
        _check_expr(v, what)
    return items


def _as_pattern_tuple(values) -> tuple:
    items = tuple(values or ())
    for p in items:
        if not isinstance(p, Pattern):
            raise TypeError(f"sub-pattern must be a Pattern, got {p!r}")
    return items


# -- builders ------------------------------------------------------------------------------------

def var(name_hint: str, type_annotation=None, shape=None, dtype: str = "float32") -> Var:
    """A local variable, as ``relay.var``.

    Args:
        name_hint: the printed name.
        type_annotation: a Type, or a dtype string (meaning a scalar of that dtype).
        shape: if given (and no type_annotation), the variable is a tensor of this shape.
        dtype: the dtype used with ``shape`` (default ``"float32"``).
    """
    if type_annotation is not None and shape is not None:
        raise ValueError("give either type_annotation or shape, not both")
    if isinstance(type_annotation, str):
        type_annotation = TensorType((), type_annotation)
    if shape is not None:
        type_annotation = TensorType(shape, dtype)
    return Var(name_hint, type_annotation)


_DEFAULT_CONST_DTYPES = {np.dtype("int64"): "int32", np.dtype("float64"): "float32"}


def const(value, dtype: Optional[str] = None, span: Optional[Span] = None) -> Constant:
    """A constant, as ``relay.const``.

    Python ints become int32, floats float32, bools bool; an int64/float64 numpy array
    becomes int32/float32 unless ``dtype`` says otherwise; any other numpy dtype is kept.

    Args:
        value: a Python scalar, list, numpy array or NDArray.
        dtype: the dtype to convert to.
        span: the source location, if any.
    """
    if isinstance(value, NDArray):
        value = value.numpy()
    if isinstance(value, (bool, int, float, list, np.generic)) and not isinstance(value, np.ndarray):
        value = np.array(value, dtype=normalize_dtype(dtype) if dtype else None)
    if not isinstance(value, np.ndarray):
        raise TypeError(f"const expects a number, list or array, got {type(value).__name__}")
    if dtype is None:
        dtype = _DEFAULT_CONST_DTYPES.get(value.dtype)
    if dtype is not None:
        value = value.astype(normalize_dtype(dtype))
    return Constant(value, span=span)


def bind_tuple(expr: Expr, size: int) -> TupleWrapper:
    """Wrap a tuple-valued expression so that ``result[i]`` projects field ``i``.

    Args:
        expr: the tuple-valued expression.
        size: its number of fields.
    """
    return TupleWrapper(expr, size)
