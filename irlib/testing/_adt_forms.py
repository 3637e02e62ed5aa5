"""The expression forms :func:`irlib.testing.adt_strategies.adt_programs` draws from.

Each ``_<kind>_<form>(env, depth)`` method returns ``(expression, compute)`` where
``compute(values)`` is the oracle: Python code giving the expression's value from the values
of the variables in ``env`` (a tuple of ``(Var, kind)``). The first form of each kind is its
leaf (no sub-expressions); hypothesis shrinks towards it.
"""

from __future__ import annotations

from hypothesis import strategies as st

from ..ir import expr as E
from ..ir.types import FuncType
from ..op import registry

_BINARY = {"add": lambda a, b: a + b, "subtract": lambda a, b: a - b,
           "maximum": max, "minimum": min}
_COMPARE = {"less": lambda a, b: a < b, "greater": lambda a, b: a > b,
            "equal": lambda a, b: a == b, "less_equal": lambda a, b: a <= b}


def _op(name, *args):
    return registry.make_call(name, list(args))


def _int(value: int):
    return E.const(value, "int32")


def _pc(ctor, *patterns):
    return E.PatternConstructor(ctor, list(patterns))


def _pv(var):
    return E.PatternVar(var)


class AdtGenerator:
    """Draws one program's expressions (one instance per hypothesis example).

    Args:
        draw: hypothesis' ``draw``.
        names: the base module's types, constructors and globals (``_Names``).
    """

    def __init__(self, draw, names):
        self.draw = draw
        self.n = names
        self.counter = 0
        self.forms = {kind: [getattr(self, name) for name in sorted(dir(self))
                             if name.startswith(f"_{kind}_")] for kind in names.types}
        for kind, forms in self.forms.items():
            forms.sort(key=lambda method: method.__name__ != f"_{kind}_leaf")

    def var(self, hint: str, kind: str | None = None):
        """A fresh variable (annotated with ``kind``'s type when given).

        Args:
            hint: the name hint.
            kind: the value kind whose type annotates it, or None.
        """
        self.counter += 1
        annotation = self.n.types[kind] if kind is not None else None
        return E.Var(f"{hint}{self.counter}", annotation)

    def expr(self, kind: str, env: tuple, depth: int):
        """``(expression, compute)`` of ``kind`` using the variables of ``env``.

        Args:
            kind: the value kind wanted.
            env: the visible variables.
            depth: how much deeper the expression may nest.
        """
        forms = self.forms[kind]
        form = forms[0] if depth <= 0 else self.draw(st.sampled_from(forms))
        return form(env, depth - 1)

    def call(self, name: str, *args):
        """A call of the global function ``name`` with ``args``.

        Args:
            name: the global's name.
            args: the arguments.
        """
        return E.Call(self.n.gv(name), list(args))

    def adt(self, ctor, *args):
        """A constructor application ``ctor(args)``.

        Args:
            ctor: the constructor.
            args: its fields.
        """
        return E.Call(ctor, list(args))

    def typed(self, expr, kind: str):
        """``let %e: <kind's type> = expr; %e`` (pins the element type of ``Nil``/``None``)."""
        var = self.var("e", kind)
        return E.Let(var, expr, var)

    def pick_var(self, env, kind):
        """A variable of ``kind`` from ``env``, or None (drawn)."""
        candidates = [var for var, var_kind in env if var_kind == kind]
        return self.draw(st.sampled_from([None] + candidates))

    # -- int ----------------------------------------------------------------------------
    def _int_leaf(self, env, depth):
        var = self.pick_var(env, "int")
        if var is not None:
            return var, lambda values: values[var]
        value = self.draw(st.integers(-5, 5))
        return _int(value), lambda values: value

    def _int_binary(self, env, depth):
        name = self.draw(st.sampled_from(sorted(_BINARY)))
        (a, fa), (b, fb) = self.expr("int", env, depth), self.expr("int", env, depth)
        function = _BINARY[name]
        return _op(name, a, b), lambda values: function(fa(values), fb(values))

    def _int_if(self, env, depth):
        cond, fc = self.expr("bool", env, depth)
        (a, fa), (b, fb) = self.expr("int", env, depth), self.expr("int", env, depth)
        return E.If(cond, a, b), lambda values: fa(values) if fc(values) else fb(values)

    def _int_length(self, env, depth):
        xs, fx = self.expr("list", env, depth)
        return self.call("length", xs), lambda values: len(fx(values))

    def _int_sum(self, env, depth):
        xs, fx = self.expr("list", env, depth)
        return self.call("sum", xs), lambda values: sum(fx(values))

    def _int_size(self, env, depth):
        tree, ft = self.expr("tree", env, depth)

        def size(node):
            return 1 + sum(size(child) for child in node[1])
        return self.call("size", tree), lambda values: size(ft(values))

    def _int_apply(self, env, depth):
        (f, ff), (x, fx) = self.expr("fn", env, depth), self.expr("int", env, depth)
        return E.Call(f, [x]), lambda values: ff(values)(fx(values))

    def _int_tuple(self, env, depth):
        (a, fa), (b, fb) = self.expr("int", env, depth), self.expr("list", env, depth)
        if self.draw(st.booleans()):
            return E.TupleGetItem(E.Tuple([a, b]), 0), fa
        return self.call("length", E.TupleGetItem(E.Tuple([a, b]), 1)), \
            lambda values: len(fb(values))

    def _int_let(self, env, depth):
        kind = self.draw(st.sampled_from(("int", "list", "nat", "fn", "option")))
        value, fv = self.expr(kind, env, depth)
        var = self.var("v", kind if self.draw(st.booleans()) else None)
        body, fb = self.expr("int", env + ((var, kind),), depth)
        return E.Let(var, value, body), lambda values: fb({**values, var: fv(values)})

    def _int_match_option(self, env, depth):
        option, fo = self.expr("option", env, depth)
        x = self.var("x")
        some, fs = self.expr("int", env + ((x, "int"),), depth)
        none, fn = self.expr("int", env, depth)
        clauses = [E.Clause(_pc(self.n.some, _pv(x)), some), E.Clause(_pc(self.n.none), none)]

        def compute(values):
            got = fo(values)
            return fn(values) if got is None else fs({**values, x: got[1]})
        return E.Match(option, clauses), compute

    def _int_match_list(self, env, depth):
        xs, fx = self.expr("list", env, depth)
        h, h2, t = self.var("h"), self.var("h"), self.var("t")
        two, f2 = self.expr("int", env + ((h, "int"), (h2, "int")), depth)
        one, f1 = self.expr("int", env + ((h, "int"), (t, "list")), depth)
        other, fo = self.expr("int", env, depth)
        clauses = [
            E.Clause(_pc(self.n.cons, _pv(h), _pc(self.n.cons, _pv(h2), E.PatternWildcard())),
                     two),
            E.Clause(_pc(self.n.cons, _pv(h), _pv(t)), one),
            E.Clause(E.PatternWildcard(), other)]

        def compute(values):
            items = fx(values)
            if len(items) >= 2:
                return f2({**values, h: items[0], h2: items[1]})
            if items:
                return f1({**values, h: items[0], t: items[1:]})
            return fo(values)
        return E.Match(xs, clauses), compute

    def _int_count_nat(self, env, depth):
        nat, fn = self.expr("nat", env, depth)
        tail = self.draw(st.booleans())
        int_t, nat_t = self.n.types["int"], self.n.types["nat"]
        n, m = self.var("n", "nat"), self.var("m")
        if tail:    # count(n, acc): a loop
            counter = self.var("count")
            acc = self.var("acc", "int")
            body = E.Match(n, [E.Clause(_pc(self.n.zero), acc),
                               E.Clause(_pc(self.n.succ, _pv(m)),
                                        E.Call(counter, [m, _op("add", acc, _int(1))]))])
            func = E.Function([n, acc], body, int_t)
            call = E.Call(counter, [nat, _int(0)])
        else:       # count(n) = 1 + count(m): real recursion
            counter = E.Var(f"count{self.counter}", FuncType([nat_t], int_t))
            body = E.Match(n, [E.Clause(_pc(self.n.zero), _int(0)),
                               E.Clause(_pc(self.n.succ, _pv(m)),
                                        _op("add", _int(1), E.Call(counter, [m])))])
            func = E.Function([n], body, int_t)
            call = E.Call(counter, [nat])
        return E.Let(counter, func, call), fn

    def _int_foldl(self, env, depth):
        a, b = self.var("a", "int"), self.var("b", "int")
        body, fb = self.expr("int", env + ((a, "int"), (b, "int")), depth)
        (init, fi), (xs, fx) = self.expr("int", env, depth), self.expr("list", env, depth)
        step = E.Function([a, b], body, self.n.types["int"])

        def compute(values):
            acc = fi(values)
            for item in fx(values):
                acc = fb({**values, a: acc, b: item})
            return acc
        return self.call("foldl", step, init, xs), compute

    def _int_ref(self, env, depth):
        (first, f1), (second, f2) = self.expr("int", env, depth), self.expr("int", env, depth)
        ref, bump, x, unit, y = (self.var("r"), self.var("bump"), self.var("x", "int"),
                                 self.var("u"), self.var("y"))
        bump_body = E.Let(unit, E.RefWrite(ref, _op("add", E.RefRead(ref), x)), x)
        expr = E.Let(ref, E.RefCreate(first),
                     E.Let(bump, E.Function([x], bump_body, self.n.types["int"]),
                           E.Let(y, E.Call(bump, [second]),
                                 _op("add", E.RefRead(ref), y))))

        def compute(values):
            v1, v2 = f1(values), f2(values)
            return (v1 + v2) + v2
        return expr, compute

    # -- bool -----------------------------------------------------------------------------
    def _bool_leaf(self, env, depth):
        value = self.draw(st.booleans())
        return E.const(value), lambda values: value

    def _bool_compare(self, env, depth):
        name = self.draw(st.sampled_from(sorted(_COMPARE)))
        (a, fa), (b, fb) = self.expr("int", env, depth), self.expr("int", env, depth)
        function = _COMPARE[name]
        return _op(name, a, b), lambda values: function(fa(values), fb(values))

    # -- list -----------------------------------------------------------------------------
    def _list_leaf(self, env, depth):
        var = self.pick_var(env, "list")
        if var is not None:
            return var, lambda values: values[var]
        return self.typed(self.adt(self.n.nil), "list"), lambda values: ()

    def _list_cons(self, env, depth):
        (head, fh), (rest, fr) = self.expr("int", env, depth), self.expr("list", env, depth)
        return self.adt(self.n.cons, head, rest), lambda values: (fh(values),) + fr(values)

    def _list_map(self, env, depth):
        (f, ff), (xs, fx) = self.expr("fn", env, depth), self.expr("list", env, depth)

        def compute(values):
            function = ff(values)
            return tuple(function(item) for item in fx(values))
        return self.call("map", f, xs), compute

    def _list_rev(self, env, depth):
        xs, fx = self.expr("list", env, depth)
        return self.call("rev", xs), lambda values: tuple(reversed(fx(values)))

    def _list_concat(self, env, depth):
        (xs, fx), (ys, fy) = self.expr("list", env, depth), self.expr("list", env, depth)
        return self.call("concat", xs, ys), lambda values: fx(values) + fy(values)

    def _list_filter(self, env, depth):
        x = self.var("x", "int")
        body, fb = self.expr("bool", env + ((x, "int"),), depth)
        xs, fx = self.expr("list", env, depth)
        predicate = E.Function([x], body)

        def compute(values):
            return tuple(item for item in fx(values) if fb({**values, x: item}))
        return self.call("filter", predicate, xs), compute

    def _list_build(self, env, depth):
        count, fc = self.expr("int", env, depth)
        list_t = self.n.types["list"]
        build = self.var("build")
        n, acc = self.var("n", "int"), self.var("acc", "list")
        body = E.If(_op("less_equal", n, _int(0)), acc,
                    E.Call(build, [_op("subtract", n, _int(1)), self.adt(self.n.cons, n, acc)]))
        expr = E.Let(build, E.Function([n, acc], body, list_t),
                     E.Call(build, [_op("minimum", count, _int(4)), self.adt(self.n.nil)]))
        return expr, lambda values: tuple(range(1, min(fc(values), 4) + 1))

    # -- option ---------------------------------------------------------------------------
    def _option_leaf(self, env, depth):
        var = self.pick_var(env, "option")
        if var is not None:
            return var, lambda values: values[var]
        return self.typed(self.adt(self.n.none), "option"), lambda values: None

    def _option_some(self, env, depth):
        value, fv = self.expr("int", env, depth)
        return self.adt(self.n.some, value), lambda values: ("Some", fv(values))

    def _option_head(self, env, depth):
        xs, fx = self.expr("list", env, depth)
        h = self.var("h")
        clauses = [E.Clause(_pc(self.n.cons, _pv(h), E.PatternWildcard()),
                            self.adt(self.n.some, h)),
                   E.Clause(_pc(self.n.nil), self.adt(self.n.none))]

        def compute(values):
            items = fx(values)
            return ("Some", items[0]) if items else None
        return E.Match(xs, clauses), compute

    # -- nat ------------------------------------------------------------------------------
    def _nat_leaf(self, env, depth):
        var = self.pick_var(env, "nat")
        if var is not None:
            return var, lambda values: values[var]
        return self.adt(self.n.zero), lambda values: 0

    def _nat_succ(self, env, depth):
        nat, fn = self.expr("nat", env, depth)
        return self.adt(self.n.succ, nat), lambda values: fn(values) + 1

    def _nat_add(self, env, depth):
        (a, fa), (b, fb) = self.expr("nat", env, depth), self.expr("nat", env, depth)
        return self.call("nat_add", a, b), lambda values: fa(values) + fb(values)

    def _nat_double(self, env, depth):
        nat, fn = self.expr("nat", env, depth)
        return self.call("nat_double", nat), lambda values: 2 * fn(values)

    # -- tree -----------------------------------------------------------------------------
    def _tree_leaf(self, env, depth):
        var = self.pick_var(env, "tree")
        if var is not None:
            return var, lambda values: values[var]
        value, fv = self._int_leaf(env, depth)
        return self.adt(self.n.rose, value, self.adt(self.n.nil)), \
            lambda values: (fv(values), ())

    def _tree_node(self, env, depth):
        value, fv = self.expr("int", env, depth)
        (left, fl), (right, fr) = self.expr("tree", env, depth), self.expr("tree", env, depth)
        children = self.adt(self.n.cons, left, self.adt(self.n.cons, right, self.adt(self.n.nil)))
        return self.adt(self.n.rose, value, children), \
            lambda values: (fv(values), (fl(values), fr(values)))

    def _tree_tmap(self, env, depth):
        (f, ff), (tree, ft) = self.expr("fn", env, depth), self.expr("tree", env, depth)

        def apply(function, node):
            return (function(node[0]), tuple(apply(function, child) for child in node[1]))
        return self.call("tmap", f, tree), lambda values: apply(ff(values), ft(values))

    # -- fn: int32 -> int32 ---------------------------------------------------------------
    def _fn_leaf(self, env, depth):
        x = self.var("x", "int")
        offset = self.draw(st.integers(-2, 2))
        func = E.Function([x], _op("add", x, _int(offset)))
        return func, lambda values: (lambda v: v + offset)

    def _fn_lambda(self, env, depth):
        x = self.var("x", "int")
        body, fb = self.expr("int", env + ((x, "int"),), depth)
        func = E.Function([x], body, self.n.types["int"])
        return func, lambda values: (lambda v: fb({**values, x: v}))

    def _fn_compose(self, env, depth):
        (f, ff), (g, fg) = self.expr("fn", env, depth), self.expr("fn", env, depth)

        def compute(values):
            outer, inner = ff(values), fg(values)
            return lambda v: outer(inner(v))
        return self.call("compose", f, g), compute
