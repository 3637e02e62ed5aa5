"""The code generator behind :func:`interp.to_python`: IR functions to Python ``def`` s.

Each IR function becomes one Python function; ``let`` becomes an assignment statement,
``if`` an ``if`` statement (or a conditional expression when both branches are plain
expressions), ``match`` an ``if``/``elif`` chain on constructor tags ending in ``raise
no_match(...)``, and a self tail call of a global or let-bound function a jump back to the
top of a ``while True`` loop (see :func:`_loop_plan` for when).

NOTE: [No recursion over the IR] The generator runs on an explicit stack, like the
interpreter: each ``_value_<kind>`` / ``_tail_<kind>`` method is a generator that ``yield`` s
a :class:`_Request` for a sub-expression and receives its Python expression, and
:meth:`Codegen._drive` keeps the pending generators on a list. A ``_Value`` request compiles
an expression to a Python expression, appending the statements it needs to ``block``; a
``_Tail`` request compiles it to statements that leave the function (``return``, a loop's
``continue`` or ``raise``). Let chains are flattened into one block and nested calls are
bound to names every :data:`MAX_INLINE_DEPTH` levels, so the Python compiler (which
recurses) sees shallow expressions however deep the IR is.

NOTE: [Evaluation order] The interpreter evaluates operands left to right, then the callee.
Operands compiled to plain expressions are evaluated when the Python call runs; when a later
operand needs statements first (a ``let``, an ``if``), earlier non-trivial operands are bound
to names before those statements, and a non-trivial callee makes every non-trivial argument
bound first, so effects (reference writes inside called closures) happen in the same order.

NOTE: [Size variables] A function whose parameter types carry symbolic dims (or that has a
``"size_params"`` attribute) starts with ``sizes = bind_sizes(_objects[i], (params...),
outer_sizes)``, binding its size variables as the interpreter does
(:mod:`interp.size_binding`); inner functions read the enclosing ``sizes`` through Python's
own closures. An op call with symbolic attributes or type calls a ``symbolic_op_caller``
with that ``sizes`` as its first argument.
"""

from __future__ import annotations

import ast
from irlib.errors import IRError
from irlib.ir import expr as E
from irlib.ir.functor import children, post_order

from .describe import describe_span
from .interpreter import IDENTITY_OPS
from .py_ast import assign as _assign, atom as _atom, call as _call, dtype_spec as _dtype_spec
from .py_ast import literal, locate as _locate, name as _name, tuples as _tuples
from .py_names import Namespace
from .size_binding import function_sizes, symbolic_call

#: Nested Python expressions deeper than this are bound to a name first.
MAX_INLINE_DEPTH = 12
#: Constants with more elements than this are passed in ``_objects`` instead of as literals.
MAX_LITERAL_ELEMENTS = 4096

RUNTIME_NAMES = ("NDArray", "TupleValue", "ConstructorValue", "RefValue", "MatchError",
                 "numpy", "constructor", "op_caller", "make_ref", "no_match")
#: Imported too when a function binds size variables (see the note on size variables).
SIZE_RUNTIME_NAMES = ("bind_sizes", "symbolic_op_caller")
OBJECTS = "_objects"
OUTPUT = "_py_out"


class _Value:
    __slots__ = ("expr", "block", "scope")

    def __init__(self, expr, block, scope):
        self.expr, self.block, self.scope = expr, block, scope


class _Tail:
    __slots__ = ("expr", "block", "scope", "fn")

    def __init__(self, expr, block, scope, fn):
        self.expr, self.block, self.scope, self.fn = expr, block, scope, fn


class _Scope:
    """Names already holding the values of shared nodes, for one block and those inside it.

    ``sizes`` is the Python name holding the size-variable bindings in force (inherited from
    the enclosing scope; None where no function binds any).
    """

    __slots__ = ("names", "parent", "sizes")

    def __init__(self, parent=None):
        self.names = {}
        self.parent = parent
        self.sizes = parent.sizes if parent is not None else None

    def get(self, node):
        scope = self
        while scope is not None:
            name = scope.names.get(node)
            if name is not None:
                return name
            scope = scope.parent
        return None


class _FnContext:
    """The Python function being generated: what a self tail call looks like in it."""

    __slots__ = ("self_ref", "params", "loop")

    def __init__(self, self_ref, params, loop):
        self.self_ref, self.params, self.loop = self_ref, params, loop

    def is_self_call(self, callee) -> bool:
        ref = self.self_ref
        if ref is None:
            return False
        if callee is ref:
            return True
        return (type(callee) is E.GlobalVar and type(ref) is E.GlobalVar
                and callee.name_hint == ref.name_hint)


def _loop_plan(func, self_ref) -> bool:
    """Whether ``func`` (bound to ``self_ref``) is generated as a ``while True`` loop.

    It is when a tail position of its body calls ``self_ref`` and its body defines no
    function: Python closures see later assignments to the variables they capture, and the
    loop reassigns them each iteration, whereas an IR closure keeps the values it captured.
    """
    if self_ref is None:
        return False
    context = _FnContext(self_ref, (), False)
    found = False
    pending = [func.body]
    while pending:
        node = pending.pop()
        kind = type(node)
        if kind is E.Let:
            pending.append(node.body)
        elif kind is E.If:
            pending += (node.true_branch, node.false_branch)
        elif kind is E.Match:
            pending += (clause.rhs for clause in node.clauses)
        elif kind is E.Call and context.is_self_call(node.op):
            found = True
            break
    if not found:
        return False
    return not any(type(node) is E.Function for node in post_order(func.body))


class Codegen:
    """Generates one Python module from an entry expression of a type-checked module.

    Args:
        mod: the type-checked :class:`~irlib.IRModule` (its globals are looked up by name).
    """

    def __init__(self, mod):
        self.mod = mod
        self.names = Namespace(RUNTIME_NAMES + SIZE_RUNTIME_NAMES + (OBJECTS, OUTPUT, "_"))
        self._uses_sizes = False
        self.objects: list = []
        self.header: list = []         # constructors, op callers, constants
        self.functions: list = []      # global defs
        self._constants: dict = {}
        self._ops: dict = {}
        self._constructors: dict = {}
        self._globals: dict = {}
        self._pending_globals: list = []
        self._shared: set = set()
        self._seen_for_sharing: set = set()

    # -- entry point --------------------------------------------------------------------
    def module(self, entry, kind: str) -> ast.Module:
        """The Python module computing ``entry`` into ``_py_out``.

        Args:
            entry: a Function (``kind="function"``: ``_py_out`` is its Python function, or
                ``kind="body"``: ``_py_out`` is its body's value, for a function without
                parameters) or a GlobalVar (``kind="global"``).
            kind: see ``entry``.
        """
        if kind == "global":
            out = _name(self.global_name(entry))
        else:
            main = self.names.fresh("main")
            self._note_sharing(entry)
            self._drive_gen(self._function_def(entry, main, None, self.functions, _Scope()))
            out = _name(main)
            if kind == "body":
                out = ast.Call(out, [], [])
        while self._pending_globals:
            gvar, name = self._pending_globals.pop()
            func = self.mod[gvar.name_hint]
            self._note_sharing(func)
            self._drive_gen(self._function_def(func, name, gvar, self.functions, _Scope()))
        imported = RUNTIME_NAMES + (SIZE_RUNTIME_NAMES if self._uses_sizes else ())
        imports = ast.ImportFrom("interp.py_runtime", [ast.alias(n) for n in imported], 0)
        body = [imports] + self.header + self.functions + [_assign(OUTPUT, out)]
        return _locate(ast.Module(body, []))

    def _note_sharing(self, root):
        """Record nodes reachable along two paths (their value is computed once per scope)."""
        seen = self._seen_for_sharing
        stack = [root]
        while stack:
            node = stack.pop()
            for child in children(node):
                if child in seen:
                    if type(child) not in _LEAVES:
                        self._shared.add(child)
                else:
                    seen.add(child)
                    stack.append(child)

    # -- module-level names -------------------------------------------------------------
    def global_name(self, gvar) -> str:
        """The Python name of a global function (converted once it is referenced)."""
        name = self._globals.get(gvar.name_hint)
        if name is None:
            name = self._globals[gvar.name_hint] = self.names.fresh(gvar.name_hint)
            self._pending_globals.append((gvar, name))
        return name

    def _object(self, obj) -> ast.expr:
        self.objects.append(obj)
        return ast.Subscript(_name(OBJECTS), ast.Constant(len(self.objects) - 1), ast.Load())

    def constructor_name(self, ctor) -> str:
        name = self._constructors.get(ctor)
        if name is None:
            name = self._constructors[ctor] = self.names.fresh(ctor.name_hint)
            self.header.append(_assign(name, _call("constructor", [self._object(ctor)])))
        return name

    def constant_name(self, node) -> str:
        name = self._constants.get(node)
        if name is not None:
            return name
        array = node.data.numpy()
        # equal small constants share one module-level array (values are never mutated)
        key = (array.dtype.name, array.shape, array.tobytes()) if array.size <= 16 else node
        name = self._constants.get(key)
        if name is None:
            name = self._constants[key] = self.names.fresh("const")
            if array.size > MAX_LITERAL_ELEMENTS:
                value = self._object(node.data)
            else:
                data = literal(_tuples(array.tolist()))
                value = _call("NDArray", [ast.Call(
                    ast.Attribute(_name("numpy"), "array", ast.Load()),
                    [data], [ast.keyword("dtype", ast.Constant(array.dtype.name))])])
            self.header.append(_assign(name, value))
        self._constants[node] = name
        return name

    def symbolic_op_name(self, call, symbolic) -> str:
        """The Python name of a ``symbolic_op_caller`` for one op call (see the notes)."""
        name = self._ops.get(("symbolic", call))
        self._uses_sizes = True
        if name is None:
            name = self._ops[("symbolic", call)] = self.names.fresh(call.op.name)
            self.header.append(_assign(name, _call("symbolic_op_caller", [
                self._object(symbolic), literal(_dtype_spec(call._checked_type))])))
        return name

    def op_name(self, call) -> str:
        attrs = dict(call.attrs) if call.attrs is not None else {}
        spec = _dtype_spec(call._checked_type)
        key = (call.op.name, repr(sorted(attrs.items())), spec)
        name = self._ops.get(key)
        if name is None:
            name = self._ops[key] = self.names.fresh(call.op.name)
            keys, values = [], []
            for attr, value in attrs.items():
                keys.append(ast.Constant(attr))
                values.append(literal(value) or self._object(value)
                              if value is not None else ast.Constant(None))
            self.header.append(_assign(name, _call("op_caller", [
                ast.Constant(call.op.name), ast.Dict(keys, values), literal(spec)])))
        return name

    # -- the driver ---------------------------------------------------------------------
    def _drive_gen(self, generator):
        """Run a generator of requests to completion on an explicit stack."""
        stack = [generator]
        sent = None
        while stack:
            try:
                request = stack[-1].send(sent)
            except StopIteration as stop:
                stack.pop()
                sent = stop.value
                continue
            started = self._start(request)
            if type(started) is tuple:
                sent = started
            else:
                stack.append(started)
                sent = None
        return sent

    def _start(self, request):
        """A finished ``(expr, depth)`` for a leaf, else a generator compiling ``request``."""
        node = request.expr
        kind = type(node)
        leaf = _LEAVES.get(kind)
        if leaf is not None:
            value = getattr(self, leaf)(node)
            if type(request) is _Tail:
                return self._return(value, request.block)
            return value
        if node in self._shared:
            name = request.scope.get(node)
            if name is not None:
                if type(request) is _Tail:
                    return self._return(_atom(name), request.block)
                return _atom(name)
            if type(request) is _Value:
                return self._memoized(request)
        if type(request) is _Tail:
            method = getattr(self, "_tail_" + _KINDS[kind], None)
            if method is not None:
                return method(node, request.block, request.scope, request.fn)
            return self._tail_default(request)
        return getattr(self, "_value_" + _KINDS[kind])(node, request.block, request.scope)

    @staticmethod
    def _return(value, block):
        block.append(ast.Return(value[0]))

        def done():
            return None
            yield  # noqa: unreachable - makes this a generator
        return done()

    def _memoized(self, request):
        node, block, scope = request.expr, request.block, request.scope
        value = yield from getattr(self, "_value_" + _KINDS[type(node)])(node, block, scope)
        if value[1] == 0 and type(value[0]) is ast.Name:
            scope.names[node] = value[0].id
            return value
        name = self.names.fresh("shared")
        block.append(_assign(name, value[0]))
        scope.names[node] = name
        return _atom(name)

    def _tail_default(self, request):
        value = yield _Value(request.expr, request.block, request.scope)
        request.block.append(ast.Return(value[0]))

    def spill(self, value, block, hint: str = "t"):
        """Bind a non-trivial ``(expr, depth)`` to a new name; returns the name's value."""
        if value[1] == 0:
            return value
        name = self.names.fresh(hint)
        block.append(_assign(name, value[0]))
        return _atom(name)

    def operands(self, exprs, block, scope):
        """Compile operands left to right (see the note on evaluation order)."""
        values = []
        for expr in exprs:
            mark = len(block)
            value = yield _Value(expr, block, scope)
            if len(block) > mark and any(earlier[1] for earlier in values):
                # bind the earlier operands before the statements this one needed
                spills = []
                values = [self.spill(earlier, spills) for earlier in values]
                block[mark:mark] = spills
            if value[1] >= MAX_INLINE_DEPTH:
                value = self.spill(value, block)
            values.append(value)
        return values

    # -- leaves ---------------------------------------------------------------------------
    def leaf_var(self, node):
        return _atom(self.names.name_of(node, node.name_hint))

    def leaf_global_var(self, node):
        return _atom(self.global_name(node))

    def leaf_constant(self, node):
        return _atom(self.constant_name(node))

    def leaf_constructor(self, node):
        return _atom(self.constructor_name(node))

    def leaf_op(self, node):
        raise IRError(f"to_python: operator {node.name} is used as a value; ops can only be "
                      f"called (wrap it: fn (%x) {{ {node.name}(%x) }})")

    # -- functions ----------------------------------------------------------------------
    def _function_def(self, func, name, self_ref, block, scope):
        """Emit ``def name(params): ...`` for ``func`` into ``block``."""
        params = [self.names.name_of(p, p.name_hint) for p in func.params]
        loop = _loop_plan(func, self_ref)
        fn = _FnContext(self_ref, params, loop)
        body = []
        inner = _Scope(scope)
        where = f"@{self_ref.name_hint}" if type(self_ref) is E.GlobalVar \
            else f"the function at {describe_span(func)}"
        binder = function_sizes(func, where)
        if binder is not None:
            self._uses_sizes = True
            inner.sizes = self.names.fresh("sizes")
            outer = _name(scope.sizes) if scope.sizes is not None else ast.Constant(None)
            arguments = ast.Tuple([_name(p) for p in params], ast.Load())
            body.append(_assign(inner.sizes, _call("bind_sizes", [
                self._object(binder), arguments, outer])))
        yield _Tail(func.body, body, inner, fn)
        if loop:
            body = [ast.While(ast.Constant(True), body, [])]
        arguments = ast.arguments([], [ast.arg(p) for p in params], None, [], [], None, [])
        block.append(ast.FunctionDef(name, arguments, body, [], None))
        return _atom(name)

    def _value_function(self, node, block, scope):
        name = self.names.fresh("fn")
        return (yield from self._function_def(node, name, None, block, scope))

    # -- let --------------------------------------------------------------------------------
    def _bind(self, let, block, scope):
        if type(let.value) is E.Function and let.value not in self._shared:
            name = self.names.name_of(let.var, let.var.name_hint)
            yield from self._function_def(let.value, name, let.var, block, scope)
            return
        value = yield _Value(let.value, block, scope)
        block.append(_assign(self.names.name_of(let.var, let.var.name_hint), value[0]))

    def _value_let(self, node, block, scope):
        while type(node) is E.Let:
            yield from self._bind(node, block, scope)
            node = node.body
        return (yield _Value(node, block, scope))

    def _tail_let(self, node, block, scope, fn):
        while type(node) is E.Let:
            yield from self._bind(node, block, scope)
            node = node.body
        yield _Tail(node, block, scope, fn)

    # -- if -----------------------------------------------------------------------------
    def _condition(self, node, block, scope):
        cond = yield _Value(node.cond, block, scope)
        return ast.Call(ast.Attribute(cond[0], "numpy", ast.Load()), [], [])

    def _value_if(self, node, block, scope):
        test = yield from self._condition(node, block, scope)
        branches = []
        for branch in (node.true_branch, node.false_branch):
            statements = []
            value = yield _Value(branch, statements, _Scope(scope))
            branches.append((statements, value))
        (true_block, true_value), (false_block, false_value) = branches
        if not true_block and not false_block:
            depth = 1 + max(true_value[1], false_value[1])
            return (ast.IfExp(test, true_value[0], false_value[0]), depth)
        result = self.names.fresh("if_value")
        true_block.append(_assign(result, true_value[0]))
        false_block.append(_assign(result, false_value[0]))
        block.append(ast.If(test, true_block, false_block))
        return _atom(result)

    def _tail_if(self, node, block, scope, fn):
        test = yield from self._condition(node, block, scope)
        true_block, false_block = [], []
        yield _Tail(node.true_branch, true_block, _Scope(scope), fn)
        yield _Tail(node.false_branch, false_block, _Scope(scope), fn)
        block.append(ast.If(test, true_block, false_block))

    # -- match --------------------------------------------------------------------------
    def _match(self, node, block, scope, compile_rhs):
        data = yield _Value(node.data, block, scope)
        data = self.spill(data, block, "data")
        arms = []
        for clause in node.clauses:
            test, bindings = self._pattern(clause.lhs, data[0].id)
            arm = list(bindings)
            yield from compile_rhs(clause.rhs, arm, _Scope(scope))
            arms.append((test, arm))
            if test is None:
                break
        where = f"`match` at {describe_span(node)}"
        chain = [ast.Raise(_call("no_match", [ast.Constant(where), data[0]]), None)]
        for test, arm in reversed(arms):
            chain = arm if test is None else [ast.If(test, arm, chain)]
        block.extend(chain)

    def _value_match(self, node, block, scope):
        result = self.names.fresh("match_value")

        def arm_value(rhs, arm, arm_scope):
            value = yield _Value(rhs, arm, arm_scope)
            arm.append(_assign(result, value[0]))
        yield from self._match(node, block, scope, arm_value)
        return _atom(result)

    def _tail_match(self, node, block, scope, fn):
        def arm_tail(rhs, arm, arm_scope):
            yield _Tail(rhs, arm, arm_scope, fn)
        yield from self._match(node, block, scope, arm_tail)

    def _pattern(self, pattern, data: str):
        """``(test or None, binding statements)`` for matching ``pattern`` against ``data``."""
        subs = getattr(pattern, "patterns", ())
        if type(pattern) is E.PatternConstructor and subs and all(
                type(sub) in (E.PatternVar, E.PatternWildcard) for sub in subs):
            # the common ``C(%a, _, %b)``: one tag test and one unpacking
            targets = [_name(self.names.name_of(sub.var, sub.var.name_hint), store=True)
                       if type(sub) is E.PatternVar else _name("_", store=True) for sub in subs]
            target = ast.Tuple(targets, ast.Store())
            fields = ast.Attribute(_name(data), "fields", ast.Load())
            return self._tag_test(_name(data), pattern.constructor), [ast.Assign([target], fields)]
        tests, bindings = [], []
        stack = [(pattern, _name(data))]
        while stack:
            current, path = stack.pop()
            kind = type(current)
            if kind is E.PatternVar:
                name = self.names.name_of(current.var, current.var.name_hint)
                bindings.append(_assign(name, path))
            elif kind is E.PatternConstructor:
                tests.append(self._tag_test(path, current.constructor))
                fields = ast.Attribute(path, "fields", ast.Load())
                for index in range(len(current.patterns) - 1, -1, -1):
                    item = ast.Subscript(fields, ast.Constant(index), ast.Load())
                    stack.append((current.patterns[index], item))
            elif kind is E.PatternTuple:
                for index in range(len(current.patterns) - 1, -1, -1):
                    stack.append((current.patterns[index],
                                  ast.Subscript(path, ast.Constant(index), ast.Load())))
            elif kind is not E.PatternWildcard:
                raise IRError(f"to_python: unknown pattern kind {kind.__name__}")
        if not tests:
            return None, bindings
        test = tests[0] if len(tests) == 1 else ast.BoolOp(ast.And(), tests)
        return test, bindings

    def _tag_test(self, path, ctor):
        tag = ast.Attribute(_name(self.constructor_name(ctor)), "tag", ast.Load())
        return ast.Compare(ast.Attribute(path, "tag", ast.Load()), [ast.Eq()], [tag])

    # -- tuples and references ------------------------------------------------------------
    def _value_tuple(self, node, block, scope):
        fields = yield from self.operands(node.fields, block, scope)
        return (_call("TupleValue", [f[0] for f in fields]), 1 + max([0] + [f[1] for f in fields]))

    def _value_tuple_get_item(self, node, block, scope):
        value = yield _Value(node.tuple_value, block, scope)
        if value[1] >= MAX_INLINE_DEPTH:
            value = self.spill(value, block)
        return (ast.Subscript(value[0], ast.Constant(node.index), ast.Load()), value[1] + 1)

    def _value_ref_create(self, node, block, scope):
        value = yield from self.operands([node.value], block, scope)
        return (_call("make_ref", [value[0][0]]), value[0][1] + 1)

    def _value_ref_read(self, node, block, scope):
        (ref,) = yield from self.operands([node.ref], block, scope)
        return (ast.Attribute(ref[0], "value", ast.Load()), ref[1] + 1)

    def _value_ref_write(self, node, block, scope):
        ref, value = yield from self.operands([node.ref, node.value], block, scope)
        # the cell is evaluated before the value (Python would evaluate a target last)
        ref = self.spill(ref, block, "ref")
        block.append(ast.Assign([ast.Attribute(ref[0], "value", ast.Store())], value[0]))
        return (_call("TupleValue", []), 1)

    # -- calls ----------------------------------------------------------------------------
    def _value_call(self, node, block, scope):
        callee = node.op
        kind = type(callee)
        if kind is E.Op:
            args = yield from self.operands(node.args, block, scope)
            if callee.name in IDENTITY_OPS:
                return args[0]
            symbolic = symbolic_call(node)
            if symbolic is not None:
                sizes = _atom(scope.sizes) if scope.sizes is not None \
                    else (ast.Constant(None), 0)
                return self._apply(self.symbolic_op_name(node, symbolic), [sizes] + args)
            return self._apply(self.op_name(node), args)
        if kind is E.Constructor:
            args = yield from self.operands(node.args, block, scope)
            return self._apply(self.constructor_name(callee), args)
        values = yield from self.operands(tuple(node.args) + (callee,), block, scope)
        args, function = values[:-1], values[-1]
        if function[1] > 0:
            args = [self.spill(arg, block) for arg in args]
        depth = 1 + max([function[1]] + [a[1] for a in args])
        return (ast.Call(function[0], [a[0] for a in args], []), depth)

    @staticmethod
    def _apply(function: str, args):
        return (_call(function, [a[0] for a in args]), 1 + max([0] + [a[1] for a in args]))

    def _tail_call(self, node, block, scope, fn):
        if not (fn.loop and fn.is_self_call(node.op)):
            yield from self._tail_default(_Tail(node, block, scope, fn))
            return
        args = yield from self.operands(node.args, block, scope)
        if fn.params:
            targets = ast.Tuple([_name(p, store=True) for p in fn.params], ast.Store())
            block.append(ast.Assign([targets], ast.Tuple([a[0] for a in args], ast.Load())))
        block.append(ast.Continue())


_LEAVES = {E.Var: "leaf_var", E.GlobalVar: "leaf_global_var", E.Constant: "leaf_constant",
           E.Constructor: "leaf_constructor", E.Op: "leaf_op"}
_KINDS = {E.Tuple: "tuple", E.TupleGetItem: "tuple_get_item", E.Call: "call", E.Let: "let",
          E.If: "if", E.RefCreate: "ref_create", E.RefRead: "ref_read",
          E.RefWrite: "ref_write", E.Match: "match", E.Function: "function"}
