"""RewriteAnnotatedOps: on_device annotations become device_copy calls on cross-device edges
(the cases of Relay v0.7's test_pass_annotation.py, expected programs written by hand)."""

import numpy as np
import pytest

import irlib
from irlib import Function, IRModule, var
from irlib.errors import IRError
from irlib.ndarray import Device, cpu
from irlib.transform import InferType, RewriteAnnotatedOps
from irlib.transform.rewrite_annotated_ops import rewrite_annotated_ops

from _graph_opt_helpers import assert_close, op_names, run

on_device = irlib.annotation.on_device

PARAMS = "%x: Tensor[(3), float32], %y: Tensor[(3), float32], %z: Tensor[(3), float32]"
X, Y, Z = (np.array(v, "float32") for v in ([1.0, 2.0, 3.0], [0.5, 1.5, 4.0], [2.0, 1.0, 0.25]))


def xyz():
    return tuple(var(n, shape=(3,)) for n in "xyz")


def copy(text, src, dst):
    return f'device_copy({text}, src_virtual_device="{src}", dst_virtual_device="{dst}")'


def rewrite(func, fallback):
    return RewriteAnnotatedOps(fallback)(IRModule.from_expr(func))


def assert_rewrites_to(func, fallback, expected_body, params=PARAMS):
    out = rewrite(func, fallback)
    expected = irlib.parse_expr(f"fn ({params}) {{ {expected_body} }}")
    expected = InferType()(IRModule.from_expr(expected))["main"]
    assert irlib.structural_equal(out["main"], expected, map_free_vars=True), \
        irlib.astext(out["main"])
    assert "on_device" not in op_names(out["main"])
    return out


def test_annotated_body_gets_a_copy_from_its_unannotated_producer():
    x, y, z = xyz()
    add = on_device(irlib.add(x, y), "cpu")
    func = Function([x, y, z], on_device(irlib.subtract(add, z), "cuda"))
    out = assert_rewrites_to(func, 1, f"subtract({copy('add(%x, %y)', 'cpu', 'cuda')}, %z)")
    assert_close(run(out, [X, Y, Z]), X + Y - Z)


def test_each_consumer_gets_its_own_copy():
    x, y, z = xyz()
    add = irlib.add(x, y)
    sub1 = irlib.subtract(on_device(add, "cuda"), z)
    sub2 = irlib.subtract(on_device(add, "cuda"), z)
    out = assert_rewrites_to(Function([x, y, z], irlib.Tuple([sub1, sub2])), 1,
                             f"%0 = add(%x, %y); "
                             f"(subtract({copy('%0', 'cuda', 'cpu')}, %z), "
                             f"subtract({copy('%0', 'cuda', 'cpu')}, %z))")
    assert op_names(out["main"]).count("device_copy") == 2
    assert_close(run(out, [X, Y, Z]), (X + Y - Z, X + Y - Z))


def test_everything_on_one_device_needs_no_copy():
    x, y, z = xyz()
    add = on_device(irlib.add(x, y), "cuda")
    func = Function([x, y, z], on_device(irlib.subtract(add, z), "cuda"))
    assert_rewrites_to(func, 2, "subtract(add(%x, %y), %z)")
    assert_rewrites_to(func, "cuda", "subtract(add(%x, %y), %z)")


def test_unannotated_function_is_returned_unchanged():
    x, y, z = xyz()
    func = Function([x, y, z], irlib.subtract(irlib.add(x, y), z))
    assert rewrite_annotated_ops(func, 1) is func


def test_conv_network_alternating_devices():
    # v0.7 test_conv_network: two convs on device 2, their sum on device 1, a third conv on
    # device 2; the fallback (opencl, 4) is used by nothing.
    data1, data2 = var("d1", shape=(1, 2, 4, 4)), var("d2", shape=(1, 2, 4, 4))
    weight = var("w", shape=(2, 2, 3, 3))

    def conv(data):
        return irlib.nn.conv2d(data, weight, padding=(1, 1))
    conv1 = on_device(conv(data1), "cuda")
    conv2 = on_device(conv(data2), "cuda")
    add = on_device(irlib.add(conv1, conv2), "cpu")
    func = Function([data1, data2, weight], on_device(conv(add), "cuda"))
    conv_text = "nn.conv2d({}, %w, padding=[1, 1, 1, 1])"
    body = (f"%0 = {copy(conv_text.format('%d1'), 'cuda', 'cpu')}; "
            f"%1 = {copy(conv_text.format('%d2'), 'cuda', 'cpu')}; "
            + conv_text.format(copy("add(%0, %1)", "cpu", "cuda")))
    params = ("%d1: Tensor[(1, 2, 4, 4), float32], %d2: Tensor[(1, 2, 4, 4), float32], "
              "%w: Tensor[(2, 2, 3, 3), float32]")
    out = assert_rewrites_to(func, 4, body, params)
    assert op_names(out["main"]).count("device_copy") == 3


def test_unannotated_ops_take_the_fallback_device():
    # v0.7 test_check_run: add/log/subtract unannotated (cpu), sqrt and exp on the device.
    x, y = var("x", shape=(3,)), var("y", shape=(3,))
    add = irlib.add(x, y)
    sqrt = on_device(irlib.sqrt(add), "cuda")
    subtract = irlib.subtract(sqrt, irlib.log(add))
    func = Function([x, y], on_device(irlib.exp(subtract), "cuda"))
    body = (f"%0 = add(%x, %y); "
            f"%1 = sqrt({copy('%0', 'cpu', 'cuda')}); "
            f"%2 = subtract({copy('%1', 'cuda', 'cpu')}, log(%0)); "
            f"exp({copy('%2', 'cpu', 'cuda')})")
    out = assert_rewrites_to(func, cpu(0), body,
                             "%x: Tensor[(3), float32], %y: Tensor[(3), float32]")
    assert_close(run(out, [X, Y]), np.exp(np.sqrt(X + Y) - np.log(X + Y)), rtol=1e-6)


def test_tuple_fields_on_another_device_are_copied_to_the_tuple():
    x, y, z = xyz()
    func = Function([x, y, z], irlib.Tuple([on_device(irlib.add(x, y), "cuda"),
                                            on_device(irlib.subtract(x, z), "cpu")]))
    out = assert_rewrites_to(func, "cpu", f"({copy('add(%x, %y)', 'cuda', 'cpu')}, "
                                          f"subtract(%x, %z))")
    assert_close(run(out, [X, Y, Z]), (X + Y, X - Z))


def test_projection_inherits_the_device_of_its_tuple():
    x = var("x", shape=(4,))
    parts = on_device(irlib.split(x, 2), "cuda")
    func = Function([x], irlib.exp(irlib.TupleGetItem(parts, 0)))
    projection = "split(%x, indices_or_sections=2).0"
    out = assert_rewrites_to(func, 1, f"exp({copy(projection, 'cuda', 'cpu')})",
                             "%x: Tensor[(4), float32]")
    value = np.arange(4, dtype="float32")
    assert_close(run(out, [value]), np.exp(value[:2]))


def test_let_value_and_if_branches_move_to_their_consumer():
    x, y, z = xyz()
    bound = var("a", shape=(3,))
    cond = var("c", shape=(), dtype="bool")
    body = irlib.If(cond, on_device(irlib.multiply(bound, z), "cuda"), bound)
    func = Function([x, y, z, cond], irlib.Let(bound, on_device(irlib.add(x, y), "cuda"), body))
    expected = (f"let %a = {copy('add(%x, %y)', 'cuda', 'cpu')}; "
                f"if (%c) {{ {copy('multiply(%a, %z)', 'cuda', 'cpu')} }} else {{ %a }}")
    out = assert_rewrites_to(func, 1, expected, PARAMS + ", %c: bool")
    for flag, oracle in ((True, (X + Y) * Z), (False, X + Y)):
        assert_close(run(out, [X, Y, Z, np.array(flag)]), oracle)


def test_annotated_variables_are_copied_but_plain_ones_never():
    x, y, z = xyz()
    func = Function([x, y, z], irlib.add(on_device(x, "cuda"), on_device(irlib.multiply(y, z),
                                                                      "cpu")))
    assert_rewrites_to(func, 1, f"add({copy('%x', 'cuda', 'cpu')}, multiply(%y, %z))")


def test_two_devices_on_one_expression_are_rejected():
    x, y, z = xyz()
    add = irlib.add(x, y)
    func = Function([x, y, z], irlib.subtract(on_device(add, "cuda"), on_device(add, "cpu")))
    with pytest.raises(IRError, match="two devices"):
        rewrite(func, 1)


def test_device_spellings_agree():
    x, y, z = xyz()
    func = Function([x, y, z], irlib.subtract(on_device(irlib.add(x, y), "cuda(0)"), z))
    expected = f"subtract({copy('add(%x, %y)', 'cuda', 'cpu')}, %z)"
    for fallback in (1, "cpu", "llvm", None, Device("cpu", 0)):
        assert_rewrites_to(func, fallback, expected)
    on_cpu = Function([x, y, z], on_device(irlib.subtract(irlib.add(x, y), z), "cpu"))
    for fallback in (2, "gpu", Device("cuda", 0)):
        assert_rewrites_to(on_cpu, fallback,
                           f"subtract({copy('add(%x, %y)', 'cuda', 'cpu')}, %z)")


def test_deep_alternating_chain_is_rewritten_without_recursion():
    x = var("x", shape=(3,))
    body = x
    depth = 20_000
    for index in range(depth):
        body = on_device(irlib.negative(body), "cuda" if index % 2 else "cpu")
    out = rewrite(Function([x], body), 1)
    names = op_names(out["main"])
    assert names.count("negative") == depth and names.count("device_copy") == depth - 1
    assert "on_device" not in names
