"""Relay-compatibility tests for type calls (mirrors the behaviours of TVM's
``test_typecall.py``): instantiating a polymorphic function at a call, and an ADT applied to
a type argument (``id_type(b)``) flowing through a function-typed parameter.
"""

import irlib
from irlib import transform


def test_dup_type():
    a = irlib.TypeVar("a")
    av = irlib.Var("av", a)
    make_pair = irlib.Function([av], irlib.Tuple([av, av]), None, [a])
    t = irlib.scalar_type("float32")
    b = irlib.Var("b", t)
    mod = transform.InferType()(irlib.IRModule.from_expr(make_pair(b)))
    assert mod["main"].body.checked_type == irlib.TupleType([t, t])


def test_id_type():
    mod = irlib.IRModule()
    id_type = irlib.GlobalTypeVar("id")
    a = irlib.TypeVar("a")
    mod[id_type] = irlib.TypeData(id_type, [a], [])
    b = irlib.TypeVar("b")
    make_id = irlib.Var("make_id", irlib.FuncType([b], id_type(b), [b]))
    t = irlib.scalar_type("float32")
    x = irlib.Var("b", t)
    mod["main"] = irlib.Function([make_id, x], make_id(x))
    mod = transform.InferType()(mod)
    assert mod["main"].body.checked_type == id_type(t)
    assert mod["main"].body.checked_type == irlib.TypeCall(id_type, [t])
    assert mod["main"].body.checked_type != id_type(irlib.scalar_type("int32"))
