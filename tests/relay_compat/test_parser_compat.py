"""Relay-compatibility tests for the text-format parser (mirrors the behaviours of TVM's
``tests/python/relay/test_ir_parser.py``): literals and their suffixes and ranges, negative
literals, booleans, binary-operator precedence, vars / globals / ops, meta references,
let / sequence / graph bindings, tuples and projection, functions, definitions and recursion,
if scoping, references, calls and currying, every type form, ADT definitions (empty,
multiple constructors, type parameters, extern, duplicates), match and match?, constructor
expressions, the mlp round trip, std-file loading, call and function attributes, ``inff``,
and an init module with a meta table. Expected trees are built by hand with irlib's builders.
"""

import numpy as np
import pytest

import irlib
from irlib import ParseError
from irlib.errors import IRError
from zoo import mlp

SEMVER = '#[version = "0.0.5"]\n'
BINARY_OPS = {"*": irlib.multiply, "/": irlib.divide, "+": irlib.add, "-": irlib.subtract,
              "<": irlib.less, ">": irlib.greater, "<=": irlib.less_equal,
              ">=": irlib.greater_equal, "==": irlib.equal, "!=": irlib.not_equal}
TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
         "float32", "float64", "bool", "int8x4", "uint1x4", "float16x4"]
LIST_DEFN = """
type List[A] {
    Cons(A, List[A]),
    Nil,
}
"""
int32 = irlib.scalar_type("int32")
UNIT = irlib.Tuple([])


def graph_equal(lhs, rhs):
    return irlib.structural_equal(lhs, rhs, map_free_vars=True)


def parse_text(code):
    expr = irlib.parse_expr(code)
    # every parsed expression must survive print -> parse
    again = irlib.parse_expr(expr.astext(show_meta_data=False))
    irlib.assert_structural_equal(again, expr, map_free_vars=True)
    return expr


def assert_parses_as(code, expected):
    irlib.assert_structural_equal(parse_text(code), expected, map_free_vars=True)


def parse_module(code):
    mod = irlib.parse(SEMVER + code)
    irlib.assert_structural_equal(irlib.fromtext(mod.astext()), mod, map_free_vars=True)
    return mod


def assert_parse_module_as(code, mod):
    mod = irlib.transform.InferType()(mod)
    irlib.assert_structural_equal(parse_module(code), mod, map_free_vars=True)


def scalar(constant):
    return constant.data.numpy().item()


def test_comments_nest():
    assert_parses_as("// a line comment\n()", UNIT)
    assert_parses_as("/* a block\n still the block */ ()", UNIT)
    assert_parses_as("/* outer /* inner */ still outer */ ()", UNIT)


def test_int_literals():
    assert isinstance(parse_text("1"), irlib.Constant)
    assert isinstance(parse_text("1").data, irlib.NDArray)
    cases = {"1": 1, "10": 10, "0": 0, "-100": -100, "-05": -5, "-42i": -42, "-42i16": -42,
             "-42i32": -42, "-42i64": -42, "9223372036854775807": 9223372036854775807}
    for text, value in cases.items():
        assert scalar(parse_text(text)) == value
    for text, dtype in [("-42i16", "int16"), ("-42i32", "int32"), ("-42i", "int32"),
                        ("-42", "int32"), ("-42i64", "int64")]:
        assert_parses_as(text, irlib.const(-42, dtype))
    assert_parses_as("2147483647", irlib.const(2147483647, "int32"))
    assert_parses_as("2147483648", irlib.const(2147483648, "int64"))
    for bad in ["2147483648i32", "32768i16"]:
        with pytest.raises(ParseError):
            irlib.parse_expr(bad)


def test_float_literals():
    assert scalar(parse_text("1.0f")) == 1.0
    assert np.isclose(scalar(parse_text("1.56667f")), 1.56667)
    assert scalar(parse_text("-10.0f")) == -10.0
    for text, value in [("1e-1f", 0.1), ("1e+1f", 10.0), ("1E-1f", 0.1), ("1E+1f", 10.0),
                        ("1.0e-1f", 0.1), ("1.0E+1f", 10.0)]:
        assert np.isclose(scalar(parse_text(text)), value)
    for text, dtype in [("3f16", "float16"), ("3f32", "float32"), ("3f", "float32"),
                        ("3f64", "float64")]:
        assert_parses_as(text, irlib.const(3.0, dtype))
    for bad in ["3.40283e+38f32", "65505f16", "1.5"]:
        with pytest.raises(ParseError):
            irlib.parse_expr(bad)


def test_bool_and_negative_literals():
    assert scalar(parse_text("True")) is True and scalar(parse_text("False")) is False
    assert_parses_as("True", irlib.const(True, "bool"))
    assert scalar(parse_text("--10")) == 10
    assert scalar(parse_text("---10")) == -10


def test_inf_literals():
    assert scalar(irlib.parse_expr("inff")) == np.inf
    assert scalar(irlib.parse_expr("-inff")) == -np.inf
    x = irlib.var("x", shape=(3, 4))
    mod = irlib.IRModule.from_expr(irlib.Function([x], irlib.clip(x, -np.inf, np.inf)))
    again = irlib.parse(mod.astext())
    irlib.assert_structural_equal(again, irlib.transform.InferType()(mod))


def test_binary_ops_and_precedence():
    for text, op in BINARY_OPS.items():
        assert_parses_as(f"1 {text} 1", op(irlib.const(1), irlib.const(1)))
    assert graph_equal(parse_text("1 * 1 + 1"), parse_text("(1 * 1) + 1"))
    assert not graph_equal(parse_text("1 * 1 + 1"), parse_text("1 * (1 + 1)"))
    assert graph_equal(parse_text("1 * 1 + 1 < 1 == 1"),
                       parse_text("(((1 * 1) + 1) < 1) == 1"))
    assert graph_equal(parse_text("1 == 1 < 1 + 1 * 1"),
                       parse_text("1 == (1 < (1 + (1 * 1)))"))


def test_vars_globals_ops():
    let = parse_text("let %foo = (); %foo")
    assert isinstance(let.body, irlib.Var) and let.body.name_hint == "foo"
    gv = parse_text("@foo")
    assert isinstance(gv, irlib.GlobalVar) and gv.name_hint == "foo"
    op = parse_text("add")
    assert isinstance(op, irlib.Op) and op.name == "add"
    op = parse_text("nn.global_avg_pool2d")
    assert isinstance(op, irlib.Op) and op.name == "nn.global_avg_pool2d"
    with pytest.raises(ParseError):
        irlib.parse_expr("no_such_op_anywhere")


def test_meta_ref_without_table_is_an_error():
    with pytest.raises(ParseError):
        irlib.parse_expr("meta[type_key][1337]")


def test_let_seq_and_graph_bindings():
    x, y, wild = irlib.Var("x"), irlib.Var("y"), irlib.Var("_")
    assert_parses_as("let %x = 1; ()", irlib.Let(x, irlib.const(1), UNIT))
    assert_parses_as("let %x = 1;\nlet %y = 2;\n()",
                     irlib.Let(x, irlib.const(1), irlib.Let(y, irlib.const(2), UNIT)))
    assert_parses_as("(); ()", irlib.Let(wild, UNIT, UNIT))
    seq = irlib.parse_expr("(); ()")
    assert seq.var.name_hint == ""
    assert_parses_as("let %_ = 1; ()", irlib.Let(x, irlib.const(1), UNIT))
    graph = irlib.parse_expr("%0 = (); %1 = 1; (%0, %0, %1)")
    assert_parses_as("%0 = (); %1 = 1; (%0, %0, %1)",
                     irlib.Tuple([UNIT, UNIT, irlib.const(1)]))
    assert graph.fields[0] is graph.fields[1]          # a graph variable is shared
    assert_parses_as("%1 = (); %1", irlib.Tuple([]))
    for bad in ["let @x = 1; ()", "let x = 1; ()"]:
        with pytest.raises(ParseError):
            irlib.parse_expr(bad)


def test_tuples_and_projection():
    assert_parses_as("()", irlib.Tuple([]))
    assert_parses_as("(0,)", irlib.Tuple([irlib.const(0)]))
    assert_parses_as("(0, 1)", irlib.Tuple([irlib.const(0), irlib.const(1)]))
    assert_parses_as("(0, 1, 2)", irlib.Tuple([irlib.const(i) for i in range(3)]))
    assert_parses_as("(0)", irlib.const(0))
    x = irlib.var("x", shape=())
    assert_parses_as("free_var %x: float32; %x((%x,).0, %x)",
                     irlib.Call(x, [irlib.TupleGetItem(irlib.Tuple([x]), 0), x]))


def test_functions():
    x, y = irlib.Var("x"), irlib.Var("y")
    x_anno = irlib.Var("x", int32)
    assert_parses_as("fn () { 0 }", irlib.Function([], irlib.const(0), None, []))
    assert_parses_as("fn (%x) { %x }", irlib.Function([x], x, None, []))
    assert_parses_as("fn (%x, %y) { %x + %y }", irlib.Function([x, y], irlib.add(x, y)))
    assert_parses_as("fn (%x: int32) -> int32 { %x }",
                     irlib.Function([x_anno], x_anno, int32, []))


def test_definitions_and_recursion():
    mod = parse_module("def @id(%x: int32) -> int32 { %x }")
    assert isinstance(mod, irlib.IRModule)
    mod = parse_module("def @id(%x: int32) -> int32 { @id(%x) }")
    body = mod["id"].body
    assert isinstance(body, irlib.Call) and body.op is mod.get_global_var("id")
    with pytest.raises(ParseError):
        irlib.parse(SEMVER + "def @id(%x: int32) { %x }\ndef @id(%x: int32) { %x }")


def test_if_and_its_scopes():
    assert_parses_as("if (True) { 0 } else { 1 }",
                     irlib.If(irlib.const(True), irlib.const(0), irlib.const(1)))
    with pytest.raises(ParseError):
        irlib.parse_expr("if (True) { let %x = (); () } else { %x }")


def test_ref_ops():
    mod = irlib.parse(SEMVER + """
    def @main(%x: float32) {
        %0 = ref(%x);
        ref_write(%0, 1f);
        ref_read(%0)
    }""")
    body = mod["main"].body
    assert isinstance(body, irlib.Let) and isinstance(body.value, irlib.RefWrite)
    assert isinstance(body.body, irlib.RefRead)
    assert body.value.ref is body.body.ref and isinstance(body.body.ref, irlib.RefCreate)


def test_calls_and_currying():
    x, y = irlib.Var("x"), irlib.Var("y")
    ident, constant, mult, curried, wild = (irlib.Var(n) for n in
                                            ("id", "constant", "multiply", "curried", "_"))
    assert_parses_as("let %id = fn (%x) { %x };\n10 * %id(10)",
                     irlib.Let(ident, irlib.Function([x], x),
                               irlib.multiply(irlib.const(10),
                                              irlib.Call(ident, [irlib.const(10)]))))
    assert_parses_as("let %constant = fn () { 0 }; %constant()",
                     irlib.Let(constant, irlib.Function([], irlib.const(0)),
                               irlib.Call(constant, [], None, None)))
    assert_parses_as("let %multiply = fn (%x, %y) { %x * %y }; %multiply(0, 0)",
                     irlib.Let(mult, irlib.Function([x, y], irlib.multiply(x, y)),
                               irlib.Call(mult, [irlib.const(0), irlib.const(0)])))
    assert_parses_as("(fn (%x) { %x })(0)",
                     irlib.Call(irlib.Function([x], x), [irlib.const(0)]))
    assert_parses_as(
        "let %curried = fn (%x) { fn (%y) { %x * %y } };\n%curried(0);\n%curried(0)(0)",
        irlib.Let(curried, irlib.Function([x], irlib.Function([y], irlib.multiply(x, y))),
                  irlib.Let(wild, irlib.Call(curried, [irlib.const(0)]),
                            irlib.Call(irlib.Call(curried, [irlib.const(0)]),
                                       [irlib.const(0)]))))
    assert_parses_as("abs(1)", irlib.Call(irlib.op.get("abs"), [irlib.const(1)], None, None))


def test_types():
    wild = irlib.Var("_")
    assert_parses_as("let %_ : _ = (); ()", irlib.Let(wild, UNIT, UNIT))
    for dtype in TYPES:
        let = parse_text(f"let %_ : {dtype} = (); ()")
        assert let.var.type_annotation == irlib.TensorType((), dtype)
    for text, shape in [("()", ()), ("(1)", (1,)), ("(1, 1)", (1, 1)),
                        ("(?, 1)", (irlib.Any(), 1))]:
        assert_parses_as(f"let %_ : Tensor[{text}, float32] = (); ()",
                         irlib.Let(irlib.Var("_", irlib.TensorType(shape, "float32")), UNIT,
                                   UNIT))
    assert_parses_as("let %_: fn () -> int32 = fn () -> int32 { 0 }; ()",
                     irlib.Let(irlib.Var("_", irlib.FuncType([], int32, [], [])),
                               irlib.Function([], irlib.const(0), int32, []), UNIT))
    assert_parses_as(
        "let %_: fn (int32, int32) -> int32 = fn (%x: int32, %y: int32) -> int32 { 0 }; ()",
        irlib.Let(irlib.Var("_", irlib.FuncType([int32, int32], int32)),
                  irlib.Function([irlib.Var("x", int32), irlib.Var("y", int32)],
                                 irlib.const(0), int32), UNIT))
    assert_parses_as("let %_: () = (); ()", irlib.Let(irlib.Var("_", irlib.TupleType([])),
                                                      UNIT, UNIT))
    assert_parses_as("let %_: (int32,) = (0,); ()",
                     irlib.Let(irlib.Var("_", irlib.TupleType([int32])),
                               irlib.Tuple([irlib.const(0)]), UNIT))
    assert_parses_as("let %_: (int32, int32) = (0, 1); ()",
                     irlib.Let(irlib.Var("_", irlib.TupleType([int32, int32])),
                               irlib.Tuple([irlib.const(0), irlib.const(1)]), UNIT))


def test_adt_definitions():
    mod = irlib.IRModule()
    ayy = irlib.GlobalTypeVar("Ayy")
    mod[ayy] = irlib.TypeData(ayy, [], [irlib.Constructor("Nil", [], ayy)])
    assert_parse_module_as("type Ayy { Nil }", mod)

    mod = irlib.IRModule()
    ayy = irlib.GlobalTypeVar("Ayy")
    mod[ayy] = irlib.TypeData(ayy, [], [])
    assert_parse_module_as("type Ayy { }", mod)

    mod = irlib.IRModule()
    list_var, a = irlib.GlobalTypeVar("List"), irlib.TypeVar("A")
    mod[list_var] = irlib.TypeData(list_var, [a], [
        irlib.Constructor("Cons", [a, list_var(a)], list_var),
        irlib.Constructor("Nil", [], list_var)])
    assert_parse_module_as(LIST_DEFN, mod)

    mod = irlib.IRModule()
    either, a, b = irlib.GlobalTypeVar("Either"), irlib.TypeVar("A"), irlib.TypeVar("B")
    mod[either] = irlib.TypeData(either, [a, b], [irlib.Constructor("Left", [a], either),
                                                  irlib.Constructor("Right", [b], either)])
    assert_parse_module_as("type Either[A, B] {\n  Left(A),\n  Right(B),\n}", mod)

    mod = irlib.IRModule()
    extern, a = irlib.GlobalTypeVar("T"), irlib.TypeVar("A")
    mod[extern] = irlib.TypeData(extern, [a], [])
    assert_parse_module_as("extern type T[A]", mod)


def test_adt_with_any_dim():
    mod = parse_module("type my_dtype {\n  my_cons(Tensor[(?, 1), uint16]),\n}")
    items = mod.type_definitions.items()           # a list, as TVM's Map.items() is
    type_var, data = items[0]
    assert type_var.name_hint == "my_dtype"
    assert [c.name_hint for c in data.constructors] == ["my_cons"]
    shape = data.constructors[0].inputs[0].shape
    assert isinstance(shape[0], irlib.AnyDim) and shape[1] == 1


def test_duplicate_definitions_are_errors():
    with pytest.raises(ParseError):
        parse_module(LIST_DEFN + "\ntype List[A] {\n  Cons(A, List[A]),\n  Nil,\n}")
    with pytest.raises(ParseError, match="duplicate"):
        irlib.parse(SEMVER + "type Ayy { Lmao }\ntype Haha { Lmao }")
    # type definitions are not expressions
    for text in ["type Ayy { Lmao }\ntype Haha { Lmao }", "type Ayy { Lmao }\ntype Lmao { Ayy }"]:
        with pytest.raises(ParseError):
            irlib.parse_expr(text)


@pytest.mark.parametrize("keyword, complete", [("match", True), ("match?", False)])
def test_match(keyword, complete):
    mod = irlib.IRModule()
    list_var, a = irlib.GlobalTypeVar("List"), irlib.TypeVar("A")
    cons = irlib.Constructor("Cons", [a, list_var(a)], list_var)
    nil = irlib.Constructor("Nil", [], list_var)
    mod[list_var] = irlib.TypeData(list_var, [a], [cons, nil])
    length = irlib.GlobalVar("length")
    b = irlib.TypeVar("A")
    xs, rest = irlib.Var("xs", list_var(b)), irlib.Var("rest")
    cons_case = irlib.Let(irlib.var(""), UNIT,
                          irlib.add(irlib.const(1), irlib.Call(length, [rest])))
    body = irlib.Match(xs, [
        irlib.Clause(irlib.PatternConstructor(cons, [irlib.PatternWildcard(),
                                                     irlib.PatternVar(rest)]), cons_case),
        irlib.Clause(irlib.PatternConstructor(nil, []), irlib.const(0))], complete=complete)
    mod[length] = irlib.Function([xs], body, int32, [b])
    assert_parse_module_as(LIST_DEFN + f"""
        def @length[A](%xs: List[A]) -> int32 {{
          {keyword} (%xs) {{
            Cons(_, %rest : List[A]) => {{
              ();
              1 + @length(%rest)
            }},
            Nil => 0,
          }}
        }}""", mod)


def test_constructor_expressions():
    mod = irlib.IRModule()
    list_var, a = irlib.GlobalTypeVar("List"), irlib.TypeVar("A")
    cons = irlib.Constructor("Cons", [a, list_var(a)], list_var)
    nil = irlib.Constructor("Nil", [], list_var)
    mod[list_var] = irlib.TypeData(list_var, [a], [cons, nil])
    x = irlib.Var("x", int32)
    mod[irlib.GlobalVar("make_singleton")] = irlib.Function([x], cons(x, nil()), list_var(int32))
    assert_parse_module_as(LIST_DEFN + """
        def @make_singleton(%x: int32) -> List[int32] {
          Cons(%x, Nil)
        }""", mod)
    parsed = irlib.parse(SEMVER + LIST_DEFN + "def @f() { Cons }")
    assert isinstance(parsed["f"].body, irlib.Constructor)   # unapplied: a function value


def test_tuple_return_value_and_if_in_binding():
    parse_module("""
    type Box[T] {
        constructor(T)
    }

    def @example() {
        %0 = ();
        %1 = constructor(%0);
        %2 = constructor(0f);
        (%1, %2,)
    }""")
    parse_module("def @example(%b: bool) {\n %0 = if (%b) { 1 } else { 0 };\n %0\n}")


def test_mlp_round_trip():
    mod, _ = mlp.get_workload(1)
    irlib.assert_structural_equal(mod, irlib.parse(mod.astext()))


def test_mlp_with_inlined_params_round_trip():
    mod, params = mlp.get_workload(1)
    main = mod["main"]
    by_name = {p.name_hint: p for p in main.params}
    body = irlib.bind(main.body, {by_name[n]: irlib.const(v) for n, v in params.items()})
    mod["main"] = irlib.Function(irlib.analysis.free_vars(body), body)
    mod = irlib.transform.InferType()(mod)
    irlib.assert_structural_equal(mod, irlib.parse(mod.astext()))


def test_std_files_load_and_round_trip():
    mod = irlib.IRModule()
    mod.import_from_std("gradient.rly")
    mod = irlib.IRModule()
    mod.import_from_std("prelude.rly")
    irlib.parse(mod.astext())


def test_op_string_attrs():
    call = parse_text("""
        free_var %x: Tensor[(1, 32, 32, 3), float32];
        free_var %y: Tensor[(1, 1, 3, 3), float32];
        nn.conv2d(%x, %y, data_layout="NHWC", kernel_layout="HWIO")""")
    assert isinstance(call.op, irlib.Op) and call.op.name == "nn.conv2d"
    assert call.attrs.data_layout == "NHWC" and call.attrs.kernel_layout == "HWIO"
    assert list(call.attrs.strides) == [1, 1]          # unset fields take their defaults


def test_call_attrs_on_a_function_callee():
    program = """
    def @main(%p0: Tensor[(2, 4), float32], %p1: Tensor[(2, 4), float32]) {
      %2 = fn (%data: Tensor[(2, 4), float32], %weight: Tensor[(2, 4), float32]) {
        %0 = nn.dense(%data, %weight, units=None);
        %1 = nn.relu(%0);
        add(%1, 1f)
      };
      %2(%p0, %p1, name="func_call_attrs", attrs_type_key="attrs.TestAttrs")
    }"""
    call = parse_module(program)["main"].body
    assert call.attrs.name == "func_call_attrs"
    assert call.attrs.type_key == "attrs.TestAttrs"
    with pytest.raises(ParseError):
        irlib.parse(SEMVER + "def @main(%x: float32) {\n %0 = fn (%y: float32) { %y };\n"
                    " %0(%x, name=\"a\")\n}")


def test_function_attrs_round_trip():
    x = irlib.var("x", shape=(2, 3))
    func = irlib.Function([x], irlib.reshape(x, (-1,)),
                          attrs={"Primitive": 1, "relay.reshape_only": 1})
    parsed = parse_text(func.astext())
    irlib.assert_structural_equal(parsed, func, map_free_vars=True)
    assert parsed.attrs["Primitive"] == 1


def test_init_module_and_meta_table():
    data = np.arange(6, dtype="float32").reshape(2, 3)
    init_meta = {"relay.Constant": [irlib.const(data)]}
    init_module = irlib.fromtext(SEMVER + """
        def @f(%y : Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32] {
          negative(%y)
        }""")
    mod = irlib.parse(SEMVER + """
        def @main(%x: Tensor[(2, 3), float32]) {
          add(@f(%x), meta[relay.Constant][0])
        }""", "from_string", init_module, init_meta)
    assert set(g.name_hint for g in mod.get_global_vars()) == {"f", "main"}
    constant = mod["main"].body.args[1]
    np.testing.assert_array_equal(constant.data.numpy(), data)
    irlib.assert_structural_equal(irlib.fromtext(mod.astext()), mod)


def test_parse_errors_carry_line_and_column():
    with pytest.raises(ParseError) as info:
        irlib.parse(SEMVER + "def @main() {\n  %undefined\n}")
    assert "3:" in str(info.value) or "line 3" in str(info.value)
    with pytest.raises(ParseError):
        irlib.parse("def @main() { 0 }")                  # a module needs the version header
