"""``SubroutineMixin``: a module whose ``forward`` becomes a global function of its own.

Set ``define_subroutine = True`` on a Module subclass. While the model is exported, each call
of that module emits a call of a global function (named after the class, in snake case)
instead of inlining the module's ops; the function takes the call's tensor arguments followed
by the module's weights, so layers of the same class and argument types share one function
and pass their own weights. Outside an export the module runs as usual.
"""

from __future__ import annotations

import re

from ...ir import expr as E
from ...ir.types import FuncType, TensorType
from ...transform.infer_type import infer_type
from ._builder import emit_typed
from .errors import NNError


class SubroutineMixin:
    """Mixin marking a module as a subroutine; set ``define_subroutine = True``.

    ``Module`` already honours the flag; the mixin only documents it and sets it on.
    """

    define_subroutine: bool = True


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def call_as_subroutine(module, builder, args, kwargs):
    """Emit a call of ``module``'s forward as a global function (defining it on first use).

    Args:
        module: the module (``define_subroutine`` set).
        builder: the active builder.
        args: the positional arguments of the call (nn Tensors).
        kwargs: keyword arguments (must be empty).
    """
    from .core import Tensor
    if kwargs or not all(isinstance(arg, Tensor) for arg in args):
        raise NNError(f"{builder.where}: a subroutine module is called with nn Tensors as "
                      "positional arguments only")
    params = list(module.named_parameters())
    key = (type(module), tuple(arg._type for arg in args),
           tuple((name, p._type) for name, p in params))
    cache = builder.__dict__.setdefault("_subroutine_keys", {})
    if key not in cache:
        cache[key] = _define(module, builder, args, params)
    gvar, ret_type = cache[key]
    call = E.Call(gvar, [arg._expr for arg in args] + [p._expr for _, p in params])
    from .core import wrap_nested
    var = emit_typed(call, ret_type, _snake(type(module).__name__))
    if isinstance(ret_type, TensorType):
        return Tensor(_expr=var)
    return wrap_nested(var, _snake(type(module).__name__))


def _define(module, builder, args, params):
    from .core import Tensor
    from .exporter import _unwrap
    base = _snake(type(module).__name__)
    name, index = base, 1
    while name in builder.subroutines:
        name, index = f"{base}_{index}", index + 1
    arg_vars = [E.Var(f"x{i}" if len(args) > 1 else "x", arg._type) for i, arg in enumerate(args)]
    param_vars = [E.Var(pname.rsplit(".", 1)[-1], p._type) for pname, p in params]
    saved = [p._expr for _, p in params]
    builder.begin_scope()
    try:
        for (_, param), var in zip(params, param_vars):
            param._rebind(var)
        result = module.forward(*[Tensor(_expr=v) for v in arg_vars])
        body = builder.end_scope(_unwrap(result, f"subroutine {name}"))
    finally:
        for (_, param), expr in zip(params, saved):
            param._rebind(expr)
    from ...ir.module import IRModule
    func = infer_type(E.Function(arg_vars + param_vars, body, attrs={"num_input": len(arg_vars)}),
                      IRModule(dict(builder.subroutines)))
    gvar = E.GlobalVar(name)
    builder.subroutines[gvar] = func
    ret_type = func.checked_type.ret_type if isinstance(func.checked_type, FuncType) else \
        func.body.checked_type
    return gvar, ret_type
