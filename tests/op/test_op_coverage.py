"""Every registered op has a relation, a reference implementation, a gradient (or is a
gradient helper) and a table-driven test."""

import irlib

import test_op_construct
import test_op_indexing
import test_op_layout_matmul
import test_op_new_nn
import test_op_new_tensor
import test_op_nn_more
import test_op_table
import test_op_table_more

# Ops that only appear inside gradients; they are checked through the gradients they serve.
GRADIENT_HELPERS = {"nn.conv2d_backward_weight", "nn.max_pool2d_grad", "nn.avg_pool2d_grad"}
# Ops without a gradient rule of their own: grid_sample (Relay v0.16 has none either; its
# data adjoint depends on the grid), and ops with data-dependent or integer outputs.
NO_GRADIENT = GRADIENT_HELPERS | {"image.grid_sample", "unique", "argwhere",
                                  "call_dps_packed",  # an opaque extern function
                                  "debug_io.call",  # an IO call: no values flow through it
                                  # collectives: the adjoint depends on how the per-worker
                                  # losses combine (tests/distributed)
                                  "ccl.allreduce", "ccl.allgather",
                                  "ccl.broadcast_from_worker0", "ccl.scatter_from_worker0",
                                  # Winograd convolution: like Relay, no gradient (a build
                                  # rewrites inference convolutions into them)
                                  "nn.contrib_conv2d_winograd_weight_transform",
                                  "nn.contrib_conv2d_winograd_without_weight_transform"}
# Ops tested outside the tables (see the named tests).
TESTED_ELSEWHERE = {"strided_set",  # test_op_indexing.test_strided_set_reference
                    "arange",  # test_op_construct.test_arange
                    "argwhere",  # test_op_new_tensor.test_argwhere_matches_onnx_nonzero
                    "call_dps_packed",  # tests/op/test_extern_call.py
                    "debug_io.call",  # tests/op/test_debug_io.py, tests/frontend/nn/test_effects.py
                    "ccl.allreduce", "ccl.allgather",  # tests/distributed (one and two
                    "ccl.broadcast_from_worker0", "ccl.scatter_from_worker0",  # processes)
                    # tests/jitkernels/test_winograd.py (against a direct convolution)
                    "nn.contrib_conv2d_winograd_weight_transform",
                    "nn.contrib_conv2d_winograd_without_weight_transform"}


# dyn.* ops (Relay's dynamic-shape namespace) and onnx.* ops (irlib/op/frontend/) were added
# with the ONNX frontend and are tested alongside it (tests/frontend/onnx, tests/op/test_onnx_*.py), not in these
# tables.
FRONTEND_OPS_PREFIX = ("dyn.", "onnx.")  # tuples work with str.startswith


def library_ops():
    """Registered ops this suite covers (every op but the frontend's dyn.* ones)."""
    return [n for n in irlib.op.list_ops() if not n.startswith(FRONTEND_OPS_PREFIX)]


def _table_names():
    names = set()
    for module in (test_op_table, test_op_table_more, test_op_indexing, test_op_construct,
                   test_op_nn_more, test_op_layout_matmul, test_op_new_tensor, test_op_new_nn):
        names |= {record.name for record in module.RECORDS}
    return names


def test_every_registered_op_has_a_relation_an_implementation_and_a_gradient():
    for name in library_ops():
        op_def = irlib.op.get_def(name)
        assert op_def.impl is not None, name
        assert op_def.type_rel is not None, name
        assert op_def.grad is not None or name in NO_GRADIENT, name


def test_every_registered_op_is_tested():
    missing = set(library_ops()) - _table_names() - GRADIENT_HELPERS - TESTED_ELSEWHERE
    assert not missing, f"ops without a table test: {sorted(missing)}"
