"""The core of the nn builder: Tensor, Parameter, Object, Effect, Module and ModuleList.

A :class:`Tensor` wraps an irlib expression (an emitted, type-annotated variable, a
constant or a function parameter) whose type is a tensor type, so its ``shape`` (ints and
symbolic :class:`~irlib.ir.dims.DimExpr` dims) and ``dtype`` are known as soon as an op
creates it. A :class:`Parameter` is a tensor that is a weight of a :class:`Module`: while a
method is exported it stands for a parameter of the exported function, and it may hold data
(``param.data``) that ``jit`` passes in. Modules nest by attribute assignment, as in PyTorch;
their parameters are named by the attribute path (``layers.0.attn.q_proj.weight``).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from ...ir import expr as E
from ...ir.dims import AnyDim, DimExpr, size_var
from ...ir.types import TensorType, TupleType, normalize_dtype
from ...ndarray import NDArray
from ._builder import Builder, emit, infer_expr_type
from ._tensor_ops import TensorOps
from .errors import NNError, ParameterError, StateDictError

_DEFAULT_DTYPE = "float32"


def get_default_dtype() -> str:
    """The dtype of parameters created without one (``float32`` unless changed)."""
    return _DEFAULT_DTYPE


def set_default_dtype(dtype: str) -> None:
    """Set the dtype that parameters created without one get.

    Args:
        dtype: a dtype name such as ``"float16"``.
    """
    global _DEFAULT_DTYPE
    _DEFAULT_DTYPE = normalize_dtype(dtype)


def _normalize_shape(shape) -> tuple:
    """A shape with ``str`` dims turned into size variables; ints checked non-negative."""
    if isinstance(shape, (int, np.integer, str, DimExpr)):
        shape = (shape,)
    dims = []
    for dim in shape:
        if isinstance(dim, str):
            dims.append(size_var(dim))
        elif isinstance(dim, (int, np.integer)) and not isinstance(dim, bool):
            if dim < 0:
                raise NNError(f"shape {tuple(shape)} has a negative dim {dim}")
            dims.append(int(dim))
        elif isinstance(dim, DimExpr):
            dims.append(dim)
        else:
            raise NNError(f"shape {tuple(shape)}: each dim must be an int, a str (a symbolic "
                          f"size) or a size expression, got {dim!r}")
    return tuple(dims)


class Tensor(TensorOps):
    """A symbolic tensor of the model being built: an irlib expression of tensor type.

    Never holds data; ops applied to it emit calls and return new tensors whose shape and
    dtype are inferred at once. Build one with :meth:`placeholder`, :meth:`from_const` or
    :meth:`from_scalar`, or get one from a spec'd input or an op.

    Args:
        _expr: the wrapped expression (keyword-only; not for users).
    """

    def __init__(self, *, _expr: E.Expr):
        ty = infer_expr_type(_expr)
        if not isinstance(ty, TensorType):
            raise NNError(f"nn.Tensor wraps tensor-typed expressions; got type {ty}")
        self._expr = _expr
        self._type = ty

    @staticmethod
    def placeholder(shape: Sequence, dtype: str, name: str = "tensor") -> "Tensor":
        """A tensor standing for a value not known yet (an input, or an extern's result).

        Args:
            shape: dims as ints, strs (a str names a symbolic size variable) or DimExprs.
            dtype: the element dtype.
            name: the variable's name hint.
        """
        return Tensor(_expr=E.Var(name, TensorType(_normalize_shape(shape), dtype)))

    @staticmethod
    def from_const(data) -> "Tensor":
        """A constant tensor holding ``data`` (a numpy array, list or NDArray)."""
        array = data.numpy() if isinstance(data, NDArray) else np.asarray(data)
        return Tensor(_expr=E.Constant(array))

    @staticmethod
    def from_scalar(data, dtype: str) -> "Tensor":
        """A rank-0 constant tensor of the given dtype.

        Args:
            data: an int or float.
            dtype: the element dtype.
        """
        return Tensor(_expr=E.Constant(np.array(data, dtype=normalize_dtype(dtype))))

    @property
    def shape(self) -> List:
        """The dims: Python ints for static sizes, DimExprs for symbolic ones."""
        return list(self._type.shape)

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self._type.shape)

    @property
    def dtype(self) -> str:
        """The element dtype."""
        return self._type.dtype

    def __repr__(self) -> str:
        return f'Tensor({self.shape}, "{self.dtype}")'


class Parameter(Tensor):
    """A weight of a module: a tensor that may be bound to data.

    While a method is exported, the parameter stands for a parameter of the exported function
    (named by its attribute path); ``data`` holds its value for ``jit``.

    Args:
        shape: dims as ints, strs (symbolic sizes) or DimExprs.
        dtype: the element dtype; :func:`get_default_dtype` when None.
    """

    def __init__(self, shape: Sequence, dtype: Optional[str] = None):
        dtype = get_default_dtype() if dtype is None else dtype
        super().__init__(_expr=E.Var("param", TensorType(_normalize_shape(shape), dtype)))
        self._data: Optional[NDArray] = None

    @property
    def data(self) -> Optional[NDArray]:
        """The bound value as an :class:`~irlib.ndarray.NDArray`, or None when unbound.

        Assign a numpy array, an NDArray, a torch tensor (or any DLPack tensor), or None to
        unbind. The value's dtype and its static dims must match the parameter's.
        """
        return self._data

    @data.setter
    def data(self, value) -> None:
        if value is None:
            self._data = None
            return
        self._data = _as_ndarray(value, self.shape, self.dtype, "parameter")

    def _rebind(self, expr: E.Expr) -> None:
        """Make the parameter stand for ``expr`` (the exported function's parameter)."""
        self._expr = expr
        self._type = infer_expr_type(expr)

    def to(self, dtype: Optional[str] = None) -> None:
        """Change the dtype of an unbound parameter (a bound one raises ParameterError).

        Args:
            dtype: the new dtype; None keeps it.
        """
        if dtype is None:
            return
        if self._data is not None:
            raise ParameterError("cannot change the dtype of a parameter that holds data "
                                 f"({self.dtype} -> {dtype}); convert the data instead")
        self._rebind(E.Var("param", TensorType(self._type.shape, dtype)))


def _as_ndarray(value, shape, dtype: str, what: str) -> NDArray:
    """``value`` (numpy, NDArray, torch/DLPack tensor) as an NDArray, checked against the
    declared shape (static dims only) and dtype."""
    if isinstance(value, Parameter):
        value = value.data
        if value is None:
            raise ParameterError(f"{what}: the given Parameter holds no data")
    if isinstance(value, NDArray):
        array = value.numpy()
    elif isinstance(value, np.ndarray):
        array = value
    elif hasattr(value, "detach") and hasattr(value, "numpy"):          # torch.Tensor
        array = value.detach().cpu().numpy()
    elif hasattr(value, "__dlpack__"):
        array = np.from_dlpack(value)
    else:
        raise ParameterError(f"{what}: cannot take data of type {type(value).__name__} "
                             "(give a numpy array, an NDArray or a torch tensor)")
    if len(array.shape) != len(shape) or any(
            isinstance(want, int) and want != got for want, got in zip(shape, array.shape)):
        raise ParameterError(f"{what}: data of shape {tuple(array.shape)} does not match the "
                             f"declared shape {tuple(shape)}")
    if str(array.dtype) != dtype:
        raise ParameterError(f"{what}: data of dtype {array.dtype} does not match the declared "
                             f"dtype {dtype}")
    return NDArray(np.ascontiguousarray(array))


class Object:
    """A non-tensor value of the model (a KV-cache state, an IO token): an expression with
    its name.

    Args:
        _expr: the wrapped expression.
        _name: its name.
    """

    def __init__(self, *, _expr: E.Expr, _name: str):
        self._expr = _expr
        self._name = _name

    def __repr__(self) -> str:
        return f"Object({self._name})"


class Effect:
    """A side effect threaded through exported functions (printing, a KV cache).

    An effect's state is made explicit: :meth:`create` makes the function parameters that
    carry the state in, :meth:`set_state` hands them to the effect before the method runs,
    and :meth:`finalize` returns the expressions that carry the state out (the exported
    function returns them after its result). :meth:`emit_init` builds the initial state in
    the module's ``_initialize_effect`` function. Subclasses implement all four.
    """

    def emit_init(self, name_hint: str, builder) -> List[E.Expr]:
        """Expressions of the initial state (emitted in ``_initialize_effect``).

        Args:
            name_hint: the effect's attribute path, for variable names.
            builder: the active :class:`~irlib.frontend.nn._builder.Builder`.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement emit_init")

    def create(self, name_hint: str) -> List[E.Var]:
        """The function parameters that carry the state into a method.

        Args:
            name_hint: the effect's attribute path, for variable names.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement create")

    def set_state(self, state_vars: List[E.Expr]) -> None:
        """Make ``state_vars`` the effect's current state.

        Args:
            state_vars: the expressions (parameters at first) that hold the state.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement set_state")

    def finalize(self) -> List[E.Expr]:
        """The expressions holding the state at the end of the method."""
        raise NotImplementedError(f"{type(self).__name__} must implement finalize")

    def to(self, dtype: Optional[str] = None) -> None:
        """Convert the effect's state to ``dtype``; most effects ignore it.

        Args:
            dtype: the new dtype, or None.
        """


def _children(node):
    """``(name, item)`` of a module's attributes, or ``(index, module)`` of a ModuleList."""
    if isinstance(node, ModuleList):
        return [(str(index), module) for index, module in enumerate(node.modules)]
    return list(node.__dict__.items())


def _attribute_finder(root, prefix: str, condition: Callable[[Any], bool]):
    """``(path, item)`` for every attribute below ``root`` (through submodules and module
    lists) for which ``condition(item)`` holds, in attribute order."""
    for name, item in _children(root):
        path = prefix + name
        if condition(item):
            yield path, item
        if isinstance(item, Module):
            yield from _attribute_finder(item, path + ".", condition)


class Module:
    """Base class of models and layers: subclass it, assign parameters and submodules as
    attributes, and write ``forward`` with nn ops.

    ``export_tvm`` turns the methods named by a spec into functions of an
    :class:`~irlib.IRModule`; ``jit`` also compiles them and binds the parameters' data.
    """

    define_subroutine: bool = False

    def __call__(self, *args, **kwargs):
        """Run ``forward`` (as its own global function when ``define_subroutine`` is set
        and the module is being exported)."""
        forward = getattr(self, "forward", None)
        if forward is None:
            raise NNError(f"module {type(self).__name__} has no forward method")
        builder = Builder.current()
        if builder is None:
            return forward(*args, **kwargs)
        builder.enter_module(self)
        try:
            if self.define_subroutine:
                from .subroutine import call_as_subroutine
                return call_as_subroutine(self, builder, args, kwargs)
            return forward(*args, **kwargs)
        finally:
            builder.exit_module()

    def named_modules(self, prefix: str = "") -> Iterator[Tuple[str, "Module"]]:
        """``(path, module)`` for every submodule below this one (not itself).

        Args:
            prefix: prepended to every path.
        """
        yield from _attribute_finder(self, prefix, lambda item: isinstance(item, Module))

    def named_parameters(self, prefix: str = "") -> Iterator[Tuple[str, Parameter]]:
        """``(name, parameter)`` for every parameter, named by attribute path.

        Args:
            prefix: prepended to every name.
        """
        yield from _attribute_finder(self, prefix, lambda item: isinstance(item, Parameter))

    def parameters(self) -> Iterator[Parameter]:
        """Every parameter of the module and its submodules."""
        for _, param in self.named_parameters():
            yield param

    def state_dict(self, *, prefix: str = "",
                   destination: Optional[Dict[str, Parameter]] = None) -> Dict[str, Parameter]:
        """The parameters by name (references, not copies).

        Args:
            prefix: prepended to every name.
            destination: a dict to fill; a new OrderedDict when None.
        """
        destination = OrderedDict() if destination is None else destination
        for name, param in self.named_parameters(prefix):
            destination[name] = param
        return destination

    def load_state_dict(self, state_dict: Dict[str, Any],
                        strict: bool = True) -> Tuple[List[str], List[str]]:
        """Bind parameters to the values of ``state_dict``.

        The values may be Parameters holding data, numpy arrays, NDArrays or torch tensors
        (so a PyTorch model's ``state_dict()`` loads directly when the names match).

        Args:
            state_dict: name -> value.
            strict: raise StateDictError when keys are missing or unexpected.

        Returns:
            ``(missing_keys, unexpected_keys)``.

        Raises:
            StateDictError: ``strict`` and some keys missing or unexpected (nothing is bound).
            ParameterError: a value of the wrong shape or dtype (names the key).
        """
        own = self.state_dict()
        unexpected = [key for key in state_dict if key not in own]
        missing = [key for key in own if key not in state_dict]
        if strict and (missing or unexpected):
            raise StateDictError(f"load_state_dict: missing keys {missing}, unexpected keys "
                                 f"{unexpected}", missing, unexpected)
        converted = {}
        for key, value in state_dict.items():
            if key in own:
                param = own[key]
                converted[key] = _as_ndarray(value, param.shape, param.dtype, key)
        for key, array in converted.items():
            own[key]._data = array
        return missing, unexpected

    def to(self, dtype: Optional[str] = None) -> None:
        """Convert every parameter and effect to ``dtype``, recursively.

        Args:
            dtype: the new dtype; None changes nothing.
        """
        for item in list(self.__dict__.values()):
            if isinstance(item, (Parameter, Module, Effect)):
                item.to(dtype=dtype)
        if dtype is not None and isinstance(getattr(self, "dtype", None), str):
            self.dtype = dtype

    def export_tvm(self, spec, debug: bool = False, allow_extern: bool = False):
        """Export the methods named by ``spec`` as functions of an IRModule.

        Each method becomes a global function of the same name taking, in order, the spec'd
        inputs, the effects' state (when the module has effects or ``debug``), and the
        parameters (in ``named_parameters`` order; see ``"$": {"param_mode": ...}``). Its
        ``num_input`` attribute counts inputs plus effect states. See docs/nn.md.

        Args:
            spec: ``{method_name: {arg_name: nn.spec.Tensor(...) | int | ...}}``.
            debug: thread an IO effect through every method so ``print_``/``debug_func``
                work.
            allow_extern: return the extern modules added with ``add_extern`` as a third
                result (an error when they exist and this is False).

        Returns:
            ``(mod, [(name, Parameter), ...])``, plus the list of ExternModules when
            ``allow_extern``.
        """
        from .exporter import export
        mod, params, extern_mods = export(self, spec, debug=debug)
        if allow_extern:
            return mod, params, extern_mods
        if extern_mods:
            raise NNError("the model adds extern modules (nn.add_extern); export it with "
                          "allow_extern=True")
        return mod, params

    export = export_tvm

    def jit(self, spec, device="cpu", pipeline="default_build", out_format: str = "torch",
            debug: bool = False):
        """Export, compile and bind the parameters: an object whose methods run the model.

        Args:
            spec: as for :meth:`export_tvm`.
            device: ``"cpu"`` (graph executor with numba kernels) or ``"python"`` (the
                reference interpreter).
            pipeline: ``"default_build"`` (optimise at opt-level 3), ``"zero"`` (no
                optimisation) or a pass to run before building.
            out_format: ``"torch"`` (torch tensors out) or ``"numpy"``.
            debug: as for :meth:`export_tvm`.
        """
        from .jit import jit_module
        return jit_module(self, spec, device=device, pipeline=pipeline, out_format=out_format,
                          debug=debug)


class ModuleList(Module):
    """A list of submodules (named ``<attr>.<index>``).

    Args:
        modules: the submodules.
    """

    def __init__(self, modules: List[Module]):
        self.modules = list(modules)

    def __iter__(self):
        return iter(self.modules)

    def __getitem__(self, index):
        return self.modules[index]

    def __setitem__(self, index, module) -> None:
        self.modules[index] = module

    def __len__(self) -> int:
        return len(self.modules)

    def append(self, module: Module) -> None:
        """Add ``module`` at the end."""
        self.modules.append(module)

    def to(self, dtype: Optional[str] = None) -> None:
        """Convert every submodule to ``dtype``."""
        for module in self.modules:
            module.to(dtype=dtype)

    def forward(self, x):
        """Apply the submodules in order.

        Args:
            x: the input of the first submodule.
        """
        for module in self.modules:
            x = module(x)
        return x


def wrap_nested(expr: E.Expr, name: str):
    """Emit ``expr`` and wrap the result: a :class:`Tensor`, or a tuple of them (nested as
    the expression's tuple type is) for a tuple-typed expression.

    Args:
        expr: the expression to bind (an op call, a tuple, ...).
        name: the name hint of the bound variable.
    """
    var = emit(expr, name)
    ty = var.type_annotation
    if isinstance(ty, TensorType):
        return Tensor(_expr=var)
    if isinstance(ty, TupleType):
        return tuple(wrap_nested(E.TupleGetItem(var, index), f"{name}.{index}")
                     for index in range(len(ty.fields)))
    return Object(_expr=var, _name=name)


def is_symbolic(dim) -> bool:
    """Whether ``dim`` is a symbolic size (a DimExpr) or unknown (Any)."""
    return isinstance(dim, (DimExpr, AnyDim))
