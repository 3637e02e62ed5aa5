"""The operator registry: one entry per op, everything about the op in one place.

An entry (:class:`OpDef`) holds the op's name, its argument names, its attribute schema (with
defaults), its type relation, its numpy reference implementation, its gradient, its fusion
pattern kind and its layout hook. Other packages attach to ops *by name* through this table
(``jitkernels`` registers kernels against ``"exp"``; the interpreter calls
``get_def("exp").impl``); nothing discovers ops by scanning modules.

Registering an op::

    exp = register_op("exp", arg_names=("data",), type_rel=elemwise_rel,
                      pattern=OpPattern.ELEMWISE)

    @exp.def_impl
    def _exp_ref(data):          # numpy reference: inputs in, tuple of outputs out
        return (np.exp(data),)

    @exp.def_grad
    def _exp_grad(call, out_grad):   # one adjoint expression per input
        return [out_grad * call]

Registration is strict: a name belongs to the module that registered it first, and another
module registering it raises :class:`~irlib.errors.OpRegistrationError`. The same module
registering it again (a re-import through ``importlib.reload``) replaces the definition, so
reloading an op module is harmless. ``OpDef.module`` records the defining module.

Frontend namespaces: the ops that exist for the importers (Relay's ``dyn.*`` ops with run-time
shape arguments and the ``onnx.*`` ops with ONNX-only semantics) live in
:mod:`irlib.op.frontend`, which ``import irlib`` does not load. The importers load it; and
:func:`get_def` / :func:`is_registered` load it on the first lookup of an unknown name in one
of those namespaces (:data:`FRONTEND_NAMESPACES`), so a text program naming ``dyn.reshape``
parses and a graph naming ``onnx.resize`` runs without an explicit import.
:func:`list_ops` lists them too (it loads them).

Contracts:

* ``type_rel(arg_types, attrs) -> Type``: called once every argument type is known; raises
  :class:`~irlib.errors.TypeInferenceError` with a plain message (the type checker adds the
  expression and span) when the inputs are unacceptable.
* ``impl(*inputs, **attrs) -> tuple``: numpy arrays in (a tuple argument arrives as a tuple of
  arrays), a tuple of numpy arrays out. :func:`evaluate` checks the contract and converts
  numpy exceptions to :class:`~irlib.errors.OpImplError`.
* ``grad(call, out_grad) -> list[Expr]``: one adjoint per argument (Relay's FPrimalGradient).
* ``arg_types_rel(arg_types, attrs) -> list`` (optional, :meth:`OpDef.def_arg_types`):
  called while some argument types are still unknown (passed as None; the known ones fully
  resolved). Returns one entry per argument: a proposed :class:`~irlib.ir.types.Type` for an
  unknown argument, or None (no proposal, e.g. the attrs or the data type it needs are
  missing; entries for known arguments are ignored). The checker unifies each proposal with
  the argument's type and then runs ``type_rel`` as usual; this is how Relay's relations
  assign the type of an unannotated weight (``nn.conv2d``'s from ``channels`` and
  ``kernel_size``). It may raise :class:`~irlib.errors.TypeInferenceError` like
  ``type_rel``. ``arg_types_attrs`` names the attributes it needs, for the error message
  when an argument stays unknown.
"""

from __future__ import annotations

import difflib
import enum
import importlib
import sys
from typing import Callable, Optional

import numpy as np

from ..errors import OpImplError, OpRegistrationError, UnknownNameError
from ..ir.attrs import Attrs
from ..ir.expr import Call, Op


class OpPattern(enum.IntEnum):
    """Fusion pattern kinds (Relay's ``OpPatternKind``), used by FuseOps."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


class AttrSchema:
    """The attribute fields of an op, in order, with defaults.

    Args:
        type_key: the attrs type name, e.g. ``"relay.attrs.Conv2DAttrs"``.
        fields: ``(name, default)`` pairs in declaration order.
    """

    __slots__ = ("type_key", "defaults")

    def __init__(self, type_key: str, fields=()):
        self.type_key = type_key
        self.defaults = dict(fields)

    def make(self, op_name: str, values: dict) -> Attrs:
        """An :class:`Attrs` with ``values`` over the defaults.

        Args:
            op_name: the op, for the error message.
            values: the call's attribute values.

        Raises:
            TypeError: if ``values`` names a field the schema does not have.
        """
        unknown = [k for k in values if k not in self.defaults]
        if unknown:
            raise TypeError(f"{op_name} got unexpected attribute(s) {unknown}; "
                            f"its attributes are {list(self.defaults)}")
        merged = dict(self.defaults)
        merged.update(values)
        return Attrs(merged, self.type_key, self.defaults)


class OpDef:
    """Everything the system knows about one op. Create with :func:`register_op`.

    Args:
        name: the op name.
        arg_names: the argument names.
        attrs: the attribute schema, or None.
        type_rel: the type relation ``(arg_types, attrs) -> type``.
        pattern: the fusion pattern kind.
        description: one line for docs/ops.md.
        support_level: Relay's support level.
        tuple_output: whether the op returns a tuple.
        module: the module that registers it (docs' "defined in").
    """

    def __init__(self, name: str, arg_names: tuple, attrs: Optional[AttrSchema],
                 type_rel: Optional[Callable], pattern: OpPattern, description: str,
                 support_level: int, tuple_output: bool, module: str = ""):
        self.name = name
        self.module = module
        self.tuple_output = tuple_output
        self.arg_names = tuple(arg_names)
        self.attrs = attrs
        self.type_rel = type_rel
        self.pattern = OpPattern(pattern)
        self.description = description
        self.support_level = support_level
        self.impl: Optional[Callable] = None
        self.grad: Optional[Callable] = None
        self.layout_rule: Optional[Callable] = None
        self.arg_types_rel: Optional[Callable] = None
        self.arg_types_attrs: tuple = ()
        self.extra: dict = {}
        self.op = Op(name)

    @property
    def num_inputs(self) -> int:
        """Number of arguments the op takes."""
        return len(self.arg_names)

    # -- decorators ------------------------------------------------------------------------
    def def_impl(self, fn: Callable) -> Callable:
        """Register ``fn`` as the numpy reference implementation; returns ``fn``."""
        self.impl = fn
        return fn

    def def_type_rel(self, fn: Callable) -> Callable:
        """Register ``fn`` as the type relation; returns ``fn``."""
        self.type_rel = fn
        return fn

    def def_grad(self, fn: Callable) -> Callable:
        """Register ``fn`` as the gradient rule; returns ``fn``."""
        self.grad = fn
        return fn

    def def_arg_types(self, fn: Optional[Callable] = None, *, needs=()):
        """Register ``fn`` as the argument-type hook (see the module docstring).

        Usable as ``op_def.def_arg_types(fn)`` or as a decorator, with or without
        ``needs=("channels", "kernel_size")``, the attributes the hook needs to propose a
        type (named in the error when an argument type stays unknown).

        Returns:
            ``fn`` (or, without ``fn``, a decorator that registers and returns its argument).
        """
        def register(hook: Callable) -> Callable:
            self.arg_types_rel = hook
            self.arg_types_attrs = tuple(needs)
            return hook
        return register(fn) if fn is not None else register

    def def_layout(self, fn: Callable) -> Callable:
        """Register ``fn`` as the layout inference/alteration hook; returns ``fn``."""
        self.layout_rule = fn
        return fn

    def set_attr(self, key: str, value) -> None:
        """Attach an extra named property (e.g. an alter-layout hook) to the op.

        Args:
            key: the property's name.
            value: its value.
        """
        self.extra[key] = value

    def get_attr(self, key: str, default=None):
        """An extra property, or one of ``TOpPattern``, ``FTVMCompute``-style aliases.

        Args:
            key: the property's name.
            default: what to return when it is not set.
        """
        aliases = {"TOpPattern": self.pattern, "FPrimalGradient": self.grad,
                   "FTypeRelation": self.type_rel, "FReference": self.impl}
        if key in aliases:
            return aliases[key]
        return self.extra.get(key, default)

    # -- use ---------------------------------------------------------------------------------
    def make_attrs(self, values: Optional[dict] = None) -> Optional[Attrs]:
        """Attrs for a call of this op with ``values`` over the defaults (None if attr-less)."""
        if self.attrs is None:
            if values:
                raise TypeError(f"{self.name} takes no attributes, got {sorted(values)}")
            return None
        return self.attrs.make(self.name, dict(values or {}))

    def __call__(self, *args, **attrs) -> Call:
        """Build a call of this op."""
        return make_call(self.name, args, attrs)

    def __repr__(self):
        return f"OpDef({self.name!r})"


_REGISTRY: dict = {}

FRONTEND_NAMESPACES = {"dyn": "irlib.op.frontend", "onnx": "irlib.op.frontend"}
"""Op-name namespaces (the part before the first dot) whose ops live outside the core
registry, mapped to the package that registers them; loaded on first lookup."""


def _caller_module() -> str:
    """The module that registers: the innermost module whose top-level code is running (so a
    helper such as ``register_unary`` in one module, called by another module's top level,
    counts as the caller's), else the innermost calling module outside this one."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    if frame is None:
        return ""
    caller = frame.f_globals.get("__name__", "")
    package = caller.split(".")[0]
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if frame.f_code.co_name == "<module>" and name.split(".")[0] == package:
            return name
        frame = frame.f_back
    return caller


def register_op(name: str, arg_names=("data",), attrs=None, type_rel=None,
                pattern: OpPattern = OpPattern.OPAQUE, description: str = "",
                support_level: int = 10, tuple_output: bool = False,
                module: Optional[str] = None) -> OpDef:
    """Register a new op and return its :class:`OpDef`.

    Args:
        name: the op name (``"nn.conv2d"``).
        arg_names: names of the positional arguments, in order.
        attrs: an :class:`AttrSchema`, a ``(type_key, [(field, default), ...])`` pair, or None.
        type_rel: the type relation (see the module docstring).
        pattern: the fusion pattern kind.
        description: one line on what the op computes.
        support_level: Relay's support level (informational).
        tuple_output: whether the op returns a tuple (``split``, ``batch_norm``, ...).
        module: the defining module's name (``OpDef.module``, the "defined in" column of
            docs/ops.md); by default the calling module.

    Raises:
        OpRegistrationError: if another module already registered ``name``. The same module
            registering it again (``importlib.reload``) replaces the old definition.
    """
    module = module or _caller_module()
    existing = _REGISTRY.get(name)
    if existing is not None and existing.module != module:
        raise OpRegistrationError(
            f"op {name!r} is already registered (by module {existing.module}); "
            f"module {module} cannot register it again: pick another name")
    if isinstance(attrs, tuple) and len(attrs) == 2 and isinstance(attrs[0], str):
        attrs = AttrSchema(attrs[0], attrs[1])
    op_def = OpDef(name, arg_names, attrs, type_rel, pattern, description, support_level,
                   tuple_output, module)
    _REGISTRY[name] = op_def
    return op_def


def register_opaque(name: str, arg_names, attrs, type_rel, impl, description: str,
                    tuple_output: bool = False) -> OpDef:
    """Register an ``OPAQUE`` op with its numpy implementation in one call.

    The frontend op families (``dyn.*``, ``onnx.*``, :mod:`irlib.op.frontend`) use it.
    Strict as :func:`register_op`.

    Args:
        name, arg_names, attrs, type_rel, description, tuple_output: as :func:`register_op`.
        impl: the numpy implementation (see :meth:`OpDef.def_impl`).

    Returns:
        The new :class:`OpDef`.

    Raises:
        OpRegistrationError: if another module already registered ``name``.
    """
    op_def = register_op(name, arg_names, attrs=attrs, type_rel=type_rel,
                         pattern=OpPattern.OPAQUE, description=description,
                         tuple_output=tuple_output, module=_caller_module())
    op_def.def_impl(impl)
    return op_def


def _ensure_loaded() -> None:
    # The op definitions register themselves on import of irlib.op; make sure they are in.
    if not _REGISTRY or "add" not in _REGISTRY:
        from . import _load_all  # noqa: F401


def load_namespace(name: str) -> bool:
    """Load the package registering the frontend namespace of op ``name``, if it has one.

    Args:
        name: an op name (``"dyn.reshape"``) or a bare namespace (``"onnx"``).

    Returns:
        Whether ``name`` is in one of :data:`FRONTEND_NAMESPACES` (its package is then loaded).
    """
    package = FRONTEND_NAMESPACES.get(name.split(".", 1)[0])
    if package is None:
        return False
    importlib.import_module(package)
    return True


def load_frontend_ops() -> None:
    """Register every frontend op namespace (:data:`FRONTEND_NAMESPACES`): what an importer
    calls before it emits ``dyn.*``/``onnx.*`` calls, and what :func:`list_ops` does."""
    for package in sorted(set(FRONTEND_NAMESPACES.values())):
        importlib.import_module(package)


def get_def(name: str) -> OpDef:
    """The :class:`OpDef` of op ``name``.

    Raises:
        UnknownNameError: if no op has that name (the message suggests close names).
    """
    op_def = _REGISTRY.get(name)
    if op_def is None:
        _ensure_loaded()
        op_def = _REGISTRY.get(name)
    if op_def is None and load_namespace(name):
        op_def = _REGISTRY.get(name)
    if op_def is None:
        close = difflib.get_close_matches(name, _REGISTRY, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UnknownNameError(f"unknown operator {name!r}{hint}")
    return op_def


def get(name: str) -> Op:
    """The interned :class:`~irlib.ir.expr.Op` node of op ``name`` (``relay.op.get``)."""
    return get_def(name).op


def is_registered(name: str) -> bool:
    """Whether an op called ``name`` exists (loading its frontend namespace if it has one)."""
    _ensure_loaded()
    if name not in _REGISTRY:
        load_namespace(name)
    return name in _REGISTRY


def list_ops() -> list:
    """Names of every op, sorted: the core ops and the frontend namespaces (loaded here)."""
    _ensure_loaded()
    load_frontend_ops()
    return sorted(_REGISTRY)


def make_call(name: str, args, attrs: Optional[dict] = None, span=None) -> Call:
    """``Call(get(name), args, attrs)`` with the attrs filled from the op's schema.

    Args:
        name: the op name.
        args: the arguments.
        attrs: the attribute values (missing ones take the schema's defaults).
        span: the source location, if any.

    Raises:
        TypeError: on a wrong number of arguments or an unknown attribute.
    """
    op_def = get_def(name)
    args = tuple(args)
    if len(args) != op_def.num_inputs:
        raise TypeError(f"{name} takes {op_def.num_inputs} argument(s) "
                        f"({', '.join(op_def.arg_names)}), got {len(args)}")
    return Call(op_def.op, args, op_def.make_attrs(attrs), span=span)


def evaluate(name: str, inputs, attrs: Optional[Attrs] = None):
    """Run op ``name``'s reference implementation.

    Args:
        name: the op name.
        inputs: the argument values (numpy arrays, or tuples of them for tuple arguments).
        attrs: the call's attrs (None for attr-less ops).

    Returns:
        A numpy array, or a tuple of arrays for an op registered with ``tuple_output``.

    Raises:
        OpImplError: if the op has no implementation, or the implementation fails or breaks
            its contract.
    """
    op_def = get_def(name)
    if op_def.impl is None:
        raise OpImplError(f"reference implementation of {name!r} is not registered", op=name)
    kwargs = dict(attrs) if attrs is not None else {}
    try:
        result = op_def.impl(*inputs, **kwargs)
    except IMPL_ERRORS as error:
        raise impl_failure(name, error, inputs) from error
    return checked_result(op_def, result)


IMPL_ERRORS = (TypeError, ValueError, IndexError, ArithmeticError, np.linalg.LinAlgError)
"""The exceptions of a reference implementation that mean "these inputs are unacceptable"
(numpy's own errors); :func:`impl_failure` turns them into an OpImplError."""


def impl_failure(name: str, error: Exception, inputs) -> OpImplError:
    """The OpImplError reporting that op ``name``'s implementation raised ``error``.

    Args:
        name: the op name.
        error: one of :data:`IMPL_ERRORS`.
        inputs: the argument values (their shapes go into the message).
    """
    shapes = [getattr(x, "shape", type(x).__name__) for x in inputs]
    return OpImplError(f"{name}: {error} (input shapes {shapes})", op=name)


def checked_result(op_def: "OpDef", result):
    """``result`` of ``op_def``'s implementation unpacked (one array, or the tuple of a
    tuple-output op), or an OpImplError when it breaks the contract.

    Args:
        op_def: the op's registry entry.
        result: what its implementation returned.
    """
    name = op_def.name
    if not isinstance(result, tuple):
        raise OpImplError(f"{name}: reference implementation must return a tuple, "
                          f"got {type(result).__name__}", op=name)
    if op_def.tuple_output:
        return result
    if len(result) != 1:
        raise OpImplError(f"{name}: reference implementation returned {len(result)} outputs "
                          f"for a single-output op", op=name)
    return result[0]
