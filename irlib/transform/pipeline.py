"""The optimisation pipeline of ``relay.build``: :func:`optimize` and :func:`bind_params`.

:func:`optimize` binds the given parameters as constants, then runs Relay's build prefix as
one :class:`~irlib.transform.Sequential` under the current :class:`PassContext`, so each
pass runs only when the context's ``opt_level`` reaches the pass's level (or the pass is
named in ``required_pass``; ``disabled_pass`` wins). The levels are Relay's
``OPT_PASS_LEVEL`` table:

=========================================================================  =====
SimplifyInference                                                          0
FuseOps (Relay's OpFusion; with ``fuse_opt_level=-1`` it fuses according    0
to the context level: at 0 every op gets a function of its own)
FoldConstant                                                               2
FoldScaleAxis, AlterOpLayout, CanonicalizeOps, CanonicalizeCast,           3
EliminateCommonSubexpr, FuseLayerNorm, FuseAttention (irlib's own),
LowerIntegerMatMul (irlib's own)
CombineParallelConv2d, CombineParallelDense, CombineParallelBatchMatmul,   4
FastMath
=========================================================================  =====

(Relay ≤0.7 registered FuseOps at level 1; it is 0 from 0.8 on, which is what lets the graph
executor run an opt-level-0 build: every op call must sit in a ``Primitive`` function.)

Order (0.16's ``GetPassPrefix`` without the passes irlib has no counterpart of)::

    RemoveUnusedFunctions, Legalize, SimplifyInference, EliminateCommonSubexpr,
    CombineParallelConv2d, CombineParallelDense, CombineParallelBatchMatmul, FoldConstant,
    FoldScaleAxis, CanonicalizeCast, CanonicalizeOps, InferType, AlterOpLayout, FastMath,
    FoldConstant, LowerIntegerMatMul, FuseLayerNorm, FuseAttention (irlib's own, level 3:
    lower_integer_matmul.py, fuse_layer_norm.py, fuse_attention.py), FuseOps
"""

from __future__ import annotations

import numpy as np

from ..errors import IRError
from ..ir import expr as E
from ..ir.module import IRModule
from ..ir.rewrite import substitute
from .pass_infra import PassContext, Sequential, get_pass


def bind_params(func: E.Function, params: dict) -> E.Function:
    """``func`` with the parameters named in ``params`` replaced by constants (Relay's
    ``bind_params_by_name``).

    Args:
        func: the function.
        params: parameter name -> array (numpy, NDArray or anything ``np.asarray`` takes).

    Returns:
        The function without those parameters; the others keep their order.

    Raises:
        IRError: if a name matches more than one parameter.
    """
    if not params:
        return func
    by_name: dict = {}
    for param in func.params:
        by_name.setdefault(param.name_hint, []).append(param)
    mapping = {}
    for name, value in params.items():
        matches = by_name.get(name, [])
        if len(matches) > 1:
            raise IRError(f"bind_params: {len(matches)} parameters are named {name!r}")
        if matches:
            data = value.numpy() if hasattr(value, "numpy") else np.asarray(value)
            mapping[matches[0]] = E.Constant(data)
    if not mapping:
        return func
    kept = tuple(p for p in func.params if p not in mapping)
    return func.replace(params=kept, body=substitute(func.body, mapping))


PIPELINE = ("RemoveUnusedFunctions", "Legalize", "SimplifyInference", "EliminateCommonSubexpr",
            "CombineParallelConv2d", "CombineParallelDense", "CombineParallelBatchMatmul",
            "FoldConstant", "FoldScaleAxis", "CanonicalizeCast", "CanonicalizeOps", "InferType",
            "AlterOpLayout", "FastMath", "FoldConstant", "LowerIntegerMatMul", "FuseLayerNorm",
            "FuseAttention", "FuseOps")
"""The pass names :func:`optimize` runs, in order; each must be registered (a name that is not
makes :func:`build_pipeline` raise, rather than silently skip a pass)."""


def build_pipeline(fuse: bool = True, layouts: tuple | None = None) -> Sequential:
    """The Sequential of :data:`PIPELINE` (without FuseOps if not ``fuse``; with the target
    ``layouts`` of :func:`optimize` in AlterOpLayout).

    Raises:
        PassError: naming a pipeline pass that is not registered (and the registered ones).
    """
    from .alter_op_layout import TargetAlterOpLayout
    passes = []
    for name in PIPELINE:
        if name == "FuseOps" and not fuse:
            continue
        if name == "AlterOpLayout" and layouts:
            passes.append(TargetAlterOpLayout(desired_layouts=dict(layouts[0]),
                                              accept=layouts[1]))
        else:
            passes.append(get_pass(name))
    return Sequential(passes, opt_level=0, name="optimize")


def optimize(mod: IRModule, params: dict | None = None, fuse: bool = True,
             layouts: tuple | None = None) -> IRModule:
    """Run the build optimisation pipeline on ``mod`` under the current PassContext.

    Args:
        mod: the module (not mutated); its ``main`` is the entry function.
        params: parameter name -> value, bound into ``main`` as constants first.
        fuse: whether to finish with FuseOps (the graph executor needs it).
        layouts: the target's layout preference, ``(desired_layouts, accept)``: AlterOpLayout
            then also converts those calls (see
            :class:`~irlib.transform.alter_op_layout.TargetAlterOpLayout`).

    Returns:
        The optimised, type-checked module.

    Raises:
        PassError: naming the pass that failed, or a pipeline pass that is not registered.
    """
    if params:
        mod = mod.copy()
        gvar = mod.get_global_var("main")
        mod[gvar] = bind_params(mod[gvar], params)
    ctx = PassContext.current()
    result = build_pipeline(fuse, layouts)(mod, ctx)
    return get_pass("InferType")(result, ctx)
