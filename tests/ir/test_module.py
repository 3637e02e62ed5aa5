"""IRModule: functions and type definitions by name, errors that list known names."""

import pytest

from irlib import (Call, Constructor, Function, GlobalTypeVar, GlobalVar, IRModule, Let,
                   TensorType, Tuple, TypeCall, TypeData, TypeVar, UnknownNameError, analysis,
                   const, var)

F32 = TensorType((), "float32")


def list_definition(name="List"):
    list_type, a = GlobalTypeVar(name), TypeVar("A")
    cons = Constructor("Cons", [a, TypeCall(list_type, [a])], list_type)
    nil = Constructor("Nil", [], list_type)
    return list_type, TypeData(list_type, [a], [cons, nil]), cons, nil


def test_from_expr_wraps_free_vars_in_first_occurrence_order():
    x, y, t = var("x", F32), var("y", F32), var("t")
    body = Let(t, y + x, t * y)
    mod = IRModule.from_expr(body)
    main = mod["main"]
    assert isinstance(main, Function)
    assert list(main.params) == [y, x]
    assert main.body is body
    function = Function([x], x)
    assert IRModule.from_expr(function)["main"] is function


def test_from_expr_takes_extra_functions_and_types():
    list_type, data, cons, nil = list_definition()
    helper = Function([var("z", F32)], const(1.0))
    mod = IRModule.from_expr(Call(GlobalVar("helper"), [const(2.0)]),
                             functions={"helper": helper}, type_defs={list_type: data})
    assert mod["helper"] is helper
    assert mod[list_type] is data
    assert [g.name_hint for g in mod.get_global_vars()] == ["helper", "main"]


def test_unknown_global_lists_the_known_ones():
    mod = IRModule()
    mod["f"] = Function([], const(1.0))
    mod["g"] = Function([], const(2.0))
    with pytest.raises(UnknownNameError, match=r"'h'.*globals: f, g"):
        mod.get_global_var("h")
    with pytest.raises(UnknownNameError, match=r"globals: f, g"):
        mod["h"]
    with pytest.raises(LookupError):
        mod[GlobalVar("h")]
    with pytest.raises(UnknownNameError, match=r"types: none"):
        mod.get_global_type_var("List")


def test_global_vars_are_interned_by_name():
    mod = IRModule()
    mod["f"] = Function([], const(1.0))
    gvar = mod.get_global_var("f")
    mod["f"] = Function([], const(2.0))
    assert mod.get_global_var("f") is gvar
    assert mod[gvar].body.data.numpy() == 2.0
    assert len(mod) == 1


def test_membership_and_sorted_iteration():
    list_type, data, _, _ = list_definition()
    mod = IRModule()
    for name in ("zeta", "alpha", "mid"):
        mod[name] = Function([], const(0.0))
    mod[list_type] = data
    assert [g.name_hint for g in mod] == ["alpha", "mid", "zeta"]
    assert [g.name_hint for g, _ in mod.items()] == ["alpha", "mid", "zeta"]
    assert "alpha" in mod and "List" in mod and "nope" not in mod
    assert mod.get_global_var("mid") in mod and list_type in mod
    assert GlobalVar("alpha") not in mod   # a different GlobalVar object
    assert 42 not in mod


def test_type_definitions_and_constructors():
    list_type, data, cons, nil = list_definition()
    mod = IRModule()
    mod[list_type] = data
    assert mod.get_type("List") == (list_type, cons, nil)
    assert mod.get_constructor(cons.tag) is cons
    assert mod.get_constructor(nil.tag) is nil
    assert cons.tag != nil.tag
    assert mod.lookup_constructor("Nil") is nil
    assert mod["List"] is data
    with pytest.raises(UnknownNameError, match=r"no constructor with tag"):
        mod.get_constructor(-5)
    with pytest.raises(UnknownNameError, match=r"'Some'"):
        mod.lookup_constructor("Some")
    # Redefining the type forgets the old constructors.
    _, data2, cons2, _ = list_definition()
    mod[list_type] = TypeData(list_type, data2.type_vars, data2.constructors)
    with pytest.raises(UnknownNameError):
        mod.get_constructor(cons.tag)
    assert mod.get_constructor(cons2.tag) is cons2


def test_update_merges_and_replaces_by_name():
    first, second = IRModule(), IRModule()
    first["f"] = Function([], const(1.0))
    first["g"] = Function([], const(1.0))
    second["g"] = Function([], const(2.0))
    list_type, data, _, _ = list_definition()
    second[list_type] = data
    first.update(second)
    assert [g.name_hint for g in first.get_global_vars()] == ["f", "g"]
    assert first["g"].body.data.numpy() == 2.0
    assert first.get_global_type_vars() == [list_type]


def test_add_remove_and_copy():
    mod = IRModule()
    gvar = mod.add("f", Function([], const(1.0)))
    assert isinstance(gvar, GlobalVar) and gvar.name_hint == "f"
    with pytest.raises(ValueError, match="already defined"):
        mod.add("f", Function([], const(2.0)), update=False)
    copy = mod.copy()
    copy["h"] = Function([], const(3.0))
    assert "h" not in mod
    mod.remove("f")
    assert "f" not in mod and "f" in copy
    with pytest.raises(UnknownNameError):
        mod.remove("f")


def test_non_function_values_are_wrapped():
    x = var("x", F32)
    mod = IRModule()
    mod["main"] = Tuple([x])
    assert list(mod["main"].params) == [x]
    assert analysis.free_vars(mod["main"]) == []
    with pytest.raises(TypeError):
        mod["bad"] = 3
    with pytest.raises(TypeError):
        IRModule.from_expr("not an expr")
