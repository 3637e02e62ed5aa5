"""Each op the fused-group generator inlines has one record (jitkernels.codegen.scalar_ops.RULES)
and every record is consistent: a registered op, an index rule and a combine rule the emitter
has, literal attributes the op's schema declares, and a template over the op's arguments."""

from __future__ import annotations

import string

import irlib
from jitkernels.codegen.generator import _Emitter
from jitkernels.codegen.scalar_ops import RULES, OpRule, supported


def test_every_record_is_consistent_with_the_op_and_the_emitter():
    for name, rule in RULES.items():
        assert isinstance(rule, OpRule)
        op_def = irlib.op.get_def(name)
        assert supported(name)
        assert callable(getattr(_Emitter, "index_" + rule.index, None)), (name, rule.index)
        if rule.combine is not None:
            assert callable(getattr(_Emitter, "combine_" + rule.combine, None)), name
        schema = op_def.attrs.defaults if op_def.attrs is not None else {}
        assert set(rule.literal_attrs) <= set(schema), name
        for template in (rule.template, rule.float32_template):
            if template is None:
                continue
            fields = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
            positions = {int(f) for f in fields if f.isdigit()}
            assert positions <= set(range(op_def.num_inputs)), (name, template)
            assert fields - {str(p) for p in positions} <= \
                {"dtype", "zero", "one"} | set(rule.literal_attrs), (name, template)


def test_ops_without_a_record_are_not_inlined():
    assert not supported("nn.conv2d") and not supported("sum") and not supported("onnx.det")
