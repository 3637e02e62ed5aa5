"""``debug_io.call`` (the op behind nn's print_/debug_func): relation, reference, text
format, and the passes that must leave its calls alone."""

import numpy as np
import pytest

import interp
import irlib
from irlib.errors import TypeInferenceError
from irlib.ir import expr as E
from irlib.ir.functor import post_order
from irlib.op import debug_io

SEEN = []
debug_io.register_debug_func("tests.op.debug_io.keep", lambda line, *args: SEEN.append(args),
                             override=True)


def _token(name="t"):
    return irlib.var(name, shape=(), dtype="int64")


def _count(expr):
    return sum(1 for n in post_order(expr) if isinstance(n, E.Call)
               and isinstance(n.op, E.Op) and n.op.name == "debug_io.call")


def test_relation_checks_token_data_and_kinds():
    x = irlib.var("x", shape=(2,), dtype="float32")
    good = debug_io.debug_call(_token(), E.Tuple([x]), arg_kinds=["tensor", "int"], scalars=[1])
    assert irlib.infer_type(irlib.Function(list(irlib.analysis.free_vars(good)), good)) \
        .body.checked_type == debug_io.TOKEN_TYPE
    bad = [
        (debug_io.debug_call(irlib.var("t", shape=(1,), dtype="int64"), E.Tuple([])), "token"),
        (debug_io.debug_call(_token(), x, arg_kinds=["tensor"]), "tuple of tensors"),
        (debug_io.debug_call(_token(), E.Tuple([x]), arg_kinds=[]), "name 0 tensor"),
        (debug_io.debug_call(_token(), E.Tuple([]), arg_kinds=["float"]), "scalars 0"),
        (debug_io.debug_call(_token(), E.Tuple([]), arg_kinds=["blob"], scalars=[1]),
         "unknown arg_kinds"),
    ]
    for call, message in bad:
        func = irlib.Function(list(irlib.analysis.free_vars(call)), call)
        with pytest.raises(TypeInferenceError, match=message):
            irlib.infer_type(func)


def test_reference_counts_calls_and_passes_copies():
    SEEN.clear()
    t, x = _token(), irlib.var("x", shape=(2,), dtype="float32")
    first = debug_io.debug_call(t, E.Tuple([x]), func_name="tests.op.debug_io.keep",
                                arg_kinds=["str", "tensor", "float"], scalars=["a", 0.5])
    second = debug_io.debug_call(first, E.Tuple([]), func_name="tests.op.debug_io.keep",
                                 arg_kinds=["int"], scalars=[4])
    func = irlib.Function([t, x], E.Tuple([second, irlib.op.add(x, x)]))
    for kind in ("debug", "graph"):
        SEEN.clear()
        run = interp.create_executor(kind, irlib.IRModule.from_expr(func)).evaluate()
        value = np.array([1.0, 2.0], "float32")
        token, doubled = run(np.array(5, "int64"), value)
        assert int(token.numpy()) == 7
        run(np.array(0, "int64"), value * 10)
        assert [(a[0], a[1].numpy().tolist(), a[2]) for a in SEEN[0::2]] == \
            [("a", [1.0, 2.0], 0.5), ("a", [10.0, 20.0], 0.5)]   # first arrays not overwritten
        assert SEEN[1] == (4,) and SEEN[3] == (4,)


def test_text_format_round_trip():
    t, x = _token(), irlib.var("x", shape=(irlib.size_var("n"), 2), dtype="float32")
    call = debug_io.debug_call(t, E.Tuple([x]), func_name="my.fn", line_info="m.py:3",
                               arg_kinds=["tensor", "dim", "str", "float"],
                               scalars=[irlib.size_var("n"), "say hi", 1.5])
    mod = irlib.transform.InferType()(irlib.IRModule.from_expr(irlib.Function([t, x], call)))
    again = irlib.parse(mod.astext())
    assert irlib.structural_equal(again["main"], mod["main"])


def test_fold_constant_and_cse_leave_calls(capfd):
    token = E.Constant(np.array(0, "int64"))
    data = E.Tuple([irlib.const(np.array([1, 2], "int32"))])
    first = debug_io.debug_call(token, data, arg_kinds=["tensor"])
    twin = debug_io.debug_call(token, data, arg_kinds=["tensor"])    # identical call
    func = irlib.Function([], E.Tuple([first, twin]))
    mod = irlib.IRModule.from_expr(func)
    capfd.readouterr()
    for one in (irlib.transform.FoldConstant(), irlib.transform.EliminateCommonSubexpr(),
                irlib.transform.DeadCodeElimination(inline_once=True)):
        mod = irlib.transform.InferType()(one(mod))
    assert capfd.readouterr().out == ""                 # nothing ran at compile time
    assert _count(mod["main"].body) == 2
    interp.create_executor("debug", mod).evaluate()()
    assert capfd.readouterr().out == "array([1, 2], dtype=int32)\n" * 2
    assert irlib.op.get_def("debug_io.call").pattern == irlib.op.OpPattern.OPAQUE


def test_registry_errors():
    with pytest.raises(ValueError, match="not callable"):
        debug_io.register_debug_func("tests.op.debug_io.bad", 3)
    with pytest.raises(ValueError, match="non-empty str"):
        debug_io.register_debug_func("", print)
    with pytest.raises(irlib.errors.UnknownNameError, match="register_debug_func"):
        debug_io.get_debug_func("tests.op.debug_io.missing")
    assert debug_io.DEBUG_PRINT in debug_io.list_debug_funcs()
