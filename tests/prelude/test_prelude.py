"""The Prelude: loading, structure, and the type of every definition (relay_spec.md §1).

The expected types are built by hand with the type constructors (not parsed), and compared
with ``structural_equal``, which maps the type parameters.
"""

import pytest

import irlib
from irlib import FuncType, TensorType, TupleType, TypeCall, TypeVar, UnknownNameError
from irlib.ir import expr as E
from irlib.ir.dims import Any
from irlib.prelude import GLOBAL_FUNCTIONS, TENSOR_ARRAY_DTYPES, Prelude

INT32 = TensorType((), "int32")
BOOL = TensorType((), "bool")


@pytest.fixture(scope="module")
def prelude():
    p = Prelude()
    p.mod.import_from_std("nat.rly")
    return p


def fn(args, ret, params=()):
    return FuncType(args, ret, params)


def expected_types(mod):
    lst = lambda t: TypeCall(mod.get_global_type_var("List"), [t])      # noqa: E731
    opt = lambda t: TypeCall(mod.get_global_type_var("Option"), [t])    # noqa: E731
    tree = lambda t: TypeCall(mod.get_global_type_var("Tree"), [t])     # noqa: E731
    nat = TypeCall(mod.get_global_type_var("nat"), [])
    a, b, c = TypeVar("A"), TypeVar("B"), TypeVar("C")
    acc_map = fn([fn([a, b], TupleType([a, c])), a, lst(b)], TupleType([a, lst(c)]), [a, b, c])
    unfold = fn([fn([a], opt(TupleType([a, b]))), a], lst(b), [a, b])
    return {
        "id": fn([a], a, [a]),
        "compose": fn([fn([b], c), fn([a], b)], fn([a], c), [a, b, c]),
        "flip": fn([fn([a, b], c)], fn([b, a], c), [a, b, c]),
        "hd": fn([lst(a)], a, [a]),
        "tl": fn([lst(a)], lst(a), [a]),
        "nth": fn([lst(a), INT32], a, [a]),
        "length": fn([lst(a)], INT32, [a]),
        "update": fn([lst(a), INT32, a], lst(a), [a]),
        "map": fn([fn([a], b), lst(a)], lst(b), [a, b]),
        "foldl": fn([fn([a, b], a), a, lst(b)], a, [a, b]),
        "foldr": fn([fn([a, b], b), b, lst(a)], b, [a, b]),
        "foldr1": fn([fn([a, a], a), lst(a)], a, [a]),
        "sum": fn([lst(INT32)], INT32),
        "concat": fn([lst(a), lst(a)], lst(a), [a]),
        "filter": fn([fn([a], BOOL), lst(a)], lst(a), [a]),
        "zip": fn([lst(a), lst(b)], lst(TupleType([a, b])), [a, b]),
        "rev": fn([lst(a)], lst(a), [a]),
        "map_accumr": acc_map,
        "map_accuml": acc_map,
        "unfoldr": unfold,
        "unfoldl": unfold,
        "tmap": fn([fn([a], b), tree(a)], tree(b), [a, b]),
        "size": fn([tree(a)], INT32, [a]),
        "iterate": fn([fn([a], a), INT32], fn([a], a), [a]),
        "nat_double": fn([nat], nat),
        "nat_add": fn([nat, nat], nat),
        "nat_nth": fn([lst(a), nat], a, [a]),
        "nat_update": fn([lst(a), nat, a], lst(a), [a]),
        "nat_iterate": fn([fn([a], a), nat], fn([a], a), [a]),
    }


def test_every_global_has_the_specified_type(prelude):
    expected = expected_types(prelude.mod)
    assert set(GLOBAL_FUNCTIONS) <= set(expected)
    for name, ty in expected.items():
        actual = prelude.mod[name].checked_type
        assert irlib.structural_equal(actual, ty), f"@{name}: {actual} != {ty}"


def test_adts_and_constructor_order(prelude):
    mod = prelude.mod
    lst, cons, nil = mod.get_type("List")
    assert (cons.name_hint, nil.name_hint) == ("Cons", "Nil")
    a = mod[lst].type_vars[0]
    assert cons.inputs[0] is a and cons.inputs[1] == TypeCall(lst, [a])
    option, some, none = mod.get_type("Option")
    assert (some.name_hint, none.name_hint, none.inputs) == ("Some", "None", ())
    tree, rose = mod.get_type("Tree")
    assert rose.inputs[1] == TypeCall(lst, [TypeCall(tree, [mod[tree].type_vars[0]])])
    nat, zero, succ = mod.get_type("nat")
    assert (zero.name_hint, succ.name_hint) == ("zero", "succ")
    assert len({c.tag for c in (cons, nil, some, none, rose, zero, succ)}) == 7


def test_partial_functions_use_partial_match(prelude):
    for name in ("hd", "tl", "foldr1"):
        assert isinstance(prelude.mod[name].body, E.Match)
        assert not prelude.mod[name].body.complete
    assert prelude.mod["length"].body.complete


def test_nat_update_keeps_the_elements_before_the_index(prelude):
    # the intended behaviour, not Relay's QUIRK: the succ case re-conses the head
    _, cons, _ = prelude.mod.get_type("List")
    succ_clause = prelude.mod["nat_update"].body.clauses[1]
    assert succ_clause.rhs.op is cons
    assert succ_clause.rhs.args[0].op is prelude.hd


def test_attributes_and_legacy_aliases(prelude):
    for name in GLOBAL_FUNCTIONS:
        assert getattr(prelude, name) is prelude.mod.get_global_var(name)
    assert prelude.l is prelude.mod.get_global_type_var("List")
    assert prelude.cons.name_hint == "Cons" and prelude.nil.name_hint == "Nil"
    assert prelude.optional.name_hint == "Option"
    assert (prelude.some.name_hint, prelude.none.name_hint) == ("Some", "None")
    assert (prelude.tree.name_hint, prelude.rose.name_hint) == ("Tree", "Rose")


def test_loading_twice_is_idempotent(prelude):
    count = len(prelude.mod)
    types = len(prelude.mod.type_definitions)
    cons = prelude.cons
    again = Prelude(prelude.mod)
    prelude.mod.import_from_std("nat.rly")
    assert len(prelude.mod) == count and len(prelude.mod.type_definitions) == types
    assert again.cons is cons and again.map is prelude.map


def test_prelude_into_an_existing_module_keeps_its_functions():
    mod = irlib.parse('#[version = "0.0.5"]\ndef @main() -> int32 { 1 }')
    p = Prelude(mod)
    assert p.mod is mod and "main" in mod and "map" in mod


def test_std_files_gradient_and_core():
    mod = irlib.IRModule()
    mod.import_from_std("gradient.rly")
    mod.import_from_std("core.rly")
    cell, raw, one, zero = mod.get_type("GradCell")
    t = mod[cell].type_vars[0]
    assert raw.inputs == (t,)
    assert one.inputs == (FuncType([], t),) and zero.inputs == (FuncType([], t),)
    assert mod.get_type("Storage")[1:] == ()
    with pytest.raises(UnknownNameError, match="no std file"):
        mod.import_from_std("missing.rly")


# -- dynamic tensor arrays -------------------------------------------------------------------

def test_names_follow_the_canonical_scheme(prelude):
    assert prelude.get_name("tensor_t", "int8") == "tensor_int8_t"
    assert prelude.get_name("tensor_array_read", "float32") == "tensor_array_read_float32"
    assert prelude.get_name("tensor_nil", "int32") == "tensor_nil_int32"


@pytest.mark.parametrize("dtype", TENSOR_ARRAY_DTYPES)
def test_tensor_array_adt_and_functions_exist_for_each_dtype(prelude, dtype):
    tensor_t = prelude.get_type("tensor_t", dtype)
    ctors = prelude.mod.get_type(tensor_t.name_hint)[1:]
    assert [c.name_hint for c in ctors] == [f"tensor_nil_{dtype}"] + [
        f"tensor{rank}_{dtype}" for rank in range(7)]
    for rank in range(7):
        ctor = prelude.get_tensor_ctor(f"tensor{rank}", dtype)
        assert ctor.inputs == (TensorType((Any,) * rank, dtype),)
    for canonical in ("tensor_take", "tensor_expand_dims", "tensor_concatenate", "tensor_array",
                      "tensor_array_read", "tensor_array_write", "tensor_array_scatter",
                      "tensor_array_split", "tensor_array_concat", "tensor_array_stack",
                      "tensor_array_unstack_tensor1", "tensor_array_unstack_tensor6"):
        assert prelude.get_global_var(canonical, dtype).name_hint == f"{canonical}_{dtype}"


def test_tensor_array_function_types(prelude):
    mod = prelude.mod
    t = TypeCall(prelude.get_type("tensor_t", "float32"), [])
    ta = TypeCall(mod.get_global_type_var("List"), [t])
    vec_int = TensorType((Any,), "int32")
    expected = {
        "tensor_take": fn([t, INT32, INT32], t),
        "tensor_expand_dims": fn([t], t),
        "tensor_concatenate": fn([t, t], t),
        "tensor_array": fn([INT32], ta),
        "tensor_array_read": fn([ta, INT32], t),
        "tensor_array_write": fn([ta, INT32, t], ta),
        "tensor_array_scatter": fn([ta, vec_int, ta], ta),
        "tensor_array_split": fn([ta, t, vec_int], ta),
        "tensor_array_concat": fn([ta], t),
        "tensor_array_stack": fn([ta], t),
        "tensor_array_unstack_tensor2": fn([TensorType((Any, Any), "float32")], ta),
    }
    for canonical, ty in expected.items():
        actual = mod[prelude.get_name(canonical, "float32")].checked_type
        assert irlib.structural_equal(actual, ty), f"{canonical}: {actual} != {ty}"


def test_get_ctor_errors(prelude):
    with pytest.raises(UnknownNameError, match="could not find tensor9_float32"):
        prelude.get_tensor_ctor("tensor9", "float32")
