"""irlib.ir.hooks: the IR's printing and std-library loading run through hooks the text and
Prelude layers install (the IR core imports neither, tests/test_layers.py)."""

import pytest

import irlib
from irlib.errors import IRError
from irlib.ir import hooks


def test_the_layers_install_every_hook_on_import():
    assert set(hooks._installed) == set(hooks.HOOKS)
    assert hooks._installed["import_std"] is irlib.prelude.import_std
    assert hooks._installed["astext"] is irlib.text.astext


def test_ir_methods_go_through_the_hooks(monkeypatch):
    calls = []
    monkeypatch.setitem(hooks._installed, "pretty_print", lambda node: calls.append(node) or "P")
    x = irlib.var("x", shape=(2,))
    assert str(x) == "P" and calls == [x]


def test_import_from_std_delegates_to_the_prelude():
    mod = irlib.IRModule()
    mod.import_from_std("prelude.rly")
    assert mod.get_type("List")[1].name_hint == "Cons"
    mod.import_from_std("prelude.rly")                      # again: nothing happens
    assert mod.imported_paths == {"prelude.rly"}
    with pytest.raises(irlib.errors.UnknownNameError, match="no std file 'nope.rly'"):
        mod.import_from_std("nope.rly")


def test_a_missing_hook_names_the_module_to_import(monkeypatch):
    monkeypatch.delitem(hooks._installed, "import_std")
    with pytest.raises(IRError, match="provided by irlib.prelude, which is not imported"):
        irlib.IRModule().import_from_std("nat.rly")


def test_unknown_hook_names_are_errors():
    with pytest.raises(IRError, match="no hook named 'parse'"):
        hooks.install("parse", print)
    with pytest.raises(IRError, match="no hook named 'parse'"):
        hooks.call("parse")
