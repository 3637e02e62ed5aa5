"""Passes over IR modules (``irlib.transform``, mirroring ``tvm.relay.transform``).

Each pass lives in its own module; this package re-exports the public names. See
docs/passes.md for what each pass does, with before/after examples.
"""

from .infer_type import InferType, infer_type
from .pass_infra import (FunctionPass, ModulePass, Pass, PassContext, PassInfo, PrintIR,
                         Sequential, build_config, function_pass, get_pass, module_pass,
                         register_pass)
from .dead_code import DeadCodeElimination
from .eliminate_common_subexpr import EliminateCommonSubexpr
from .fold_constant import FoldConstant
from .inline import Inline
from .remove_unused_functions import RemoveUnusedFunctions
from .to_a_normal_form import ToANormalForm
from .to_basic_block_normal_form import ToBasicBlockNormalForm
from .to_graph_normal_form import ToGraphNormalForm
from .lambda_lift import LambdaLift
from .eta_expand import EtaExpand
# NOTE: the function shadows its module's name on the package, as in Relay.
from .gradient import gradient
from .to_cps import ToCPS, to_cps, un_cps
from .partial_evaluate import PartialEvaluate, partial_evaluate
from .lazy_gradient_init import LazyGradientInit

for _pass_class in (InferType, DeadCodeElimination, EliminateCommonSubexpr, FoldConstant,
                    Inline, RemoveUnusedFunctions, ToANormalForm, ToBasicBlockNormalForm,
                    ToGraphNormalForm, LambdaLift,
                    EtaExpand, ToCPS, PartialEvaluate, LazyGradientInit):
    register_pass(_pass_class.name, _pass_class)
del _pass_class

__all__ = ["InferType", "infer_type", "FunctionPass", "ModulePass", "Pass", "PassContext",
           "PassInfo", "PrintIR", "Sequential", "build_config", "function_pass",
           "module_pass", "get_pass", "register_pass", "DeadCodeElimination",
           "EliminateCommonSubexpr", "FoldConstant", "Inline", "RemoveUnusedFunctions",
           "ToANormalForm", "ToBasicBlockNormalForm", "ToGraphNormalForm", "LambdaLift", "EtaExpand", "gradient", "ToCPS", "to_cps", "un_cps",
           "PartialEvaluate", "partial_evaluate", "LazyGradientInit"]

# -- graph-level optimisation passes ---------------------------------------------------------
from .fuse_ops import FuseOps
from .fuse_attention import FuseAttention
from .fuse_layer_norm import FuseLayerNorm
from .lower_integer_matmul import LowerIntegerMatMul
from .simplify_inference import SimplifyInference
from .canonicalize_ops import CanonicalizeOps
from .canonicalize_cast import CanonicalizeCast
from .fast_math import FastMath
from .fold_scale_axis import BackwardFoldScaleAxis, FoldScaleAxis, ForwardFoldScaleAxis
from .convert_layout import ConvertLayout
from .legalize import Legalize
from .alter_op_layout import AlterOpLayout
from .change_batch import ChangeBatch
from .combine_parallel_conv2d import CombineParallelConv2D
from .combine_parallel_dense import CombineParallelDense
from .combine_parallel_batch_matmul import CombineParallelBatchMatmul
from .merge_composite import MergeComposite
from .annotate_target import AnnotateTarget, register_target_op
from .merge_compiler_regions import MergeCompilerRegions
from .partition_graph import PartitionGraph
from .rewrite_annotated_ops import RewriteAnnotatedOps
from .pipeline import bind_params, optimize

for _pass_class in (FuseOps, SimplifyInference, CanonicalizeOps, CanonicalizeCast, FastMath,
                    BackwardFoldScaleAxis, ForwardFoldScaleAxis, Legalize, AlterOpLayout,
                    CombineParallelConv2D, CombineParallelDense, CombineParallelBatchMatmul,
                    MergeCompilerRegions, PartitionGraph):
    register_pass(_pass_class.name, _pass_class)
del _pass_class
register_pass("FoldScaleAxis", FoldScaleAxis)
# passes whose parameters have no default are registered with neutral arguments
register_pass("ConvertLayout", lambda: ConvertLayout({}))
register_pass("ChangeBatch", lambda: ChangeBatch({}))
register_pass("MergeComposite", lambda: MergeComposite([]))
register_pass("AnnotateTarget", lambda: AnnotateTarget([]))
register_pass("RewriteAnnotatedOps", lambda: RewriteAnnotatedOps(1))

__all__ += ["FuseOps", "SimplifyInference", "CanonicalizeOps", "CanonicalizeCast", "FastMath",
            "BackwardFoldScaleAxis", "ForwardFoldScaleAxis", "FoldScaleAxis", "ConvertLayout",
            "Legalize", "AlterOpLayout", "ChangeBatch", "CombineParallelConv2D",
            "CombineParallelDense", "CombineParallelBatchMatmul", "MergeComposite",
            "AnnotateTarget", "register_target_op", "MergeCompilerRegions", "PartitionGraph",
            "RewriteAnnotatedOps", "optimize", "bind_params"]
__all__ += ["FuseAttention", "FuseLayerNorm"]
__all__ += ["LowerIntegerMatMul"]
