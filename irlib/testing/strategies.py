"""Hypothesis strategies that generate well-typed IR programs, each with its own numpy oracle.

Property tests of type inference, of the interpreter and of every pass draw programs from
here. A drawn :class:`GeneratedProgram` carries the expression, its free input variables,
the type every generated node must get (``program.types``), and an *independent* numpy
evaluation (``program.reference(inputs)``), written in :mod:`irlib.testing.generator_ops`
and not through the op registry, so it is an oracle for the code under test. Values are
tracked as intervals while generating, so on inputs drawn by ``program.random_inputs`` or
``program.inputs_strategy()`` every intermediate value is finite (``log`` and ``sqrt`` see
positive numbers, divisors stay away from zero, ``exp`` stays small).

Typical use::

    from hypothesis import given, settings, strategies as st
    from irlib.testing import strategies as irst

    @settings(max_examples=50, deadline=None)
    @given(program=irst.tensor_exprs(), data=st.data())
    def test_pass_preserves_meaning(program, data):
        inputs = data.draw(program.inputs_strategy())     # {Var: np.ndarray}
        expected = program.reference(inputs)
        mod = SomePass()(program.module())
        actual = run(mod, [inputs[p] for p in program.params])
        np.testing.assert_allclose(actual, expected, rtol=1e-5)

* :func:`tensor_types` / :func:`shapes`: static tensor types.
* :func:`tensor_exprs`: dataflow expressions: elementwise and broadcasting ops, constants,
  shared subexpressions (DAGs), lets (annotated or not), tuples and projections, and every
  shape op of :data:`~irlib.testing.generator_ops.STRUCTURAL_OPS` that is registered.
* :func:`programs`: the same plus ``if`` on a comparison, let-bound closures, higher-order
  functions (a lambda taking a function), calls of global functions of a module, and
  recursive let-bound loops.

* :func:`adt_programs` (from :mod:`irlib.testing.adt_strategies`): higher-order programs over
  the Prelude's ``List``/``Option``/``Tree``/``nat`` with let, if, closures, references,
  match and bounded recursion, with :func:`plain_adt_values` drawing inputs in the plain
  form of :mod:`irlib.testing.runners` (``interp.testing.adt_values`` draws interpreter
  values) and an independent Python oracle (``program.reference(inputs)``, ``program.decode(value)``).

``tensor_exprs`` and ``programs`` take a :class:`ProgramConfig` (or its fields as keyword arguments) to restrict what is
generated, e.g. ``tensor_exprs(dtypes=("int32",), allow_lets=False, max_steps=4)``. Drawing is
arranged so that hypothesis shrinks towards few steps, the oldest operands and the simplest
step kinds. New node kinds are added as new step methods of ``_Generator``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Mapping, Optional

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ..ir import expr as E
from ..ir.module import IRModule
from ..ir.types import FuncType, TensorType, TupleType, Type
from ..op import registry
from . import generator_ops as G
from ._control_steps import ControlSteps
from .generator_core import Entry as _Entry, Scope as _Scope, as_array, value_of


# -- plain type strategies ----------------------------------------------------------------------

def shapes(min_rank: int = 0, max_rank: int = 3, max_dim: int = 4):
    """Strategy for static shapes (tuples of ints in ``[1, max_dim]``).

    Args:
        min_rank: the least rank.
        max_rank: the greatest rank.
        max_dim: the greatest dim.
    """
    return st.lists(st.integers(1, max_dim), min_size=min_rank, max_size=max_rank).map(tuple)


def tensor_types(dtypes=("float32",), min_rank: int = 0, max_rank: int = 3, max_dim: int = 4):
    """Strategy for static :class:`~irlib.ir.types.TensorType` s.

    Args:
        dtypes: the dtypes to choose from.
        min_rank: smallest rank.
        max_rank: largest rank.
        max_dim: largest extent of a dimension.
    """
    return st.builds(TensorType, shapes(min_rank, max_rank, max_dim), st.sampled_from(dtypes))


# -- configuration and result --------------------------------------------------------------------

@dataclass(frozen=True)
class ProgramConfig:
    """What the generators may produce.

    Attributes:
        dtypes: one is chosen per program (``float*`` or ``int*``).
        min_inputs, max_inputs: number of free input variables.
        min_rank, max_rank, max_dim: the base shape every input broadcasts to.
        max_steps: number of generation steps (each adds about one node).
        ops: if given, only these op names are used.
        allow_lets, allow_tuples, allow_constants, allow_shape_ops: dataflow features.
        allow_if, allow_lambdas, allow_higher_order, allow_globals, allow_recursion: control
            features (``programs`` turns them on); recursion is a let-bound loop function.
        positive_inputs: draw every input from ``[0.5, 2]`` (otherwise some from ``[-2, 2]``).
    """

    dtypes: tuple = ("float32",)
    min_inputs: int = 1
    max_inputs: int = 3
    min_rank: int = 0
    max_rank: int = 3
    max_dim: int = 4
    max_steps: int = 8
    ops: Optional[tuple] = None
    allow_lets: bool = True
    allow_tuples: bool = True
    allow_constants: bool = True
    allow_shape_ops: bool = True
    allow_if: bool = False
    allow_lambdas: bool = False
    allow_higher_order: bool = False
    allow_globals: bool = False
    allow_recursion: bool = False
    positive_inputs: bool = False


@dataclass(frozen=True, eq=False)
class GeneratedProgram:
    """A generated expression with its inputs, expected types and numpy oracle.

    Attributes:
        expr: the expression; its free variables are exactly ``params``.
        params: the free input :class:`~irlib.ir.expr.Var` s (annotated with static types).
        param_bounds: the value interval ``(lo, hi)`` each input must be drawn from.
        result_type: the type of ``expr``.
        types: expected type of every node the generator built (keys compare by identity).
        global_functions: global functions ``expr`` calls (GlobalVar -> Function).
    """

    expr: E.Expr
    params: tuple
    param_bounds: tuple
    result_type: Type
    types: Mapping
    global_functions: Mapping
    _compute: Callable = dataclasses.field(repr=False)

    @property
    def function(self) -> E.Function:
        """``fn (params) { expr }``."""
        return E.Function(self.params, self.expr)

    def module(self) -> IRModule:
        """A module with ``main = fn (params) { expr }`` and the global functions."""
        return IRModule.from_expr(self.function, functions=dict(self.global_functions))

    def random_inputs(self, seed: int = 0) -> dict:
        """Inputs (Var -> numpy array) drawn uniformly inside the input intervals.

        Args:
            seed: the numpy random seed.
        """
        rng = np.random.default_rng(seed)
        values = {}
        for param, (lo, hi) in zip(self.params, self.param_bounds):
            ty = param.type_annotation
            if np.issubdtype(np.dtype(ty.dtype), np.integer):
                data = rng.integers(int(lo), int(hi) + 1, size=ty.shape)
            else:
                data = rng.uniform(lo, hi, size=ty.shape)
            values[param] = np.asarray(data, dtype=ty.dtype)
        return values

    def inputs_strategy(self):
        """Strategy for inputs (Var -> numpy array) inside the input intervals."""
        fields = {}
        for param, (lo, hi) in zip(self.params, self.param_bounds):
            ty = param.type_annotation
            if np.issubdtype(np.dtype(ty.dtype), np.integer):
                elements = st.integers(int(lo), int(hi))
            else:
                width = 32 if ty.dtype == "float32" else 64
                elements = st.floats(lo, hi, width=width)
            fields[param] = hnp.arrays(ty.dtype, ty.shape, elements=elements)
        return st.fixed_dictionaries(fields)

    def __repr__(self) -> str:
        # Hypothesis prints this for a failing example: show the program as text.
        try:
            text = self.module().astext(show_meta_data=False)
        except Exception:  # noqa: BLE001 - a printer failure must not hide the test failure
            text = f"<unprintable program with {len(self.types)} generated nodes>"
        bounds = ", ".join(f"%{p.name_hint} in [{lo}, {hi}]"
                           for p, (lo, hi) in zip(self.params, self.param_bounds))
        return f"GeneratedProgram(inputs: {bounds})\n{text}"

    def input_list(self, inputs: dict) -> list:
        """The values of ``inputs`` in ``params`` order."""
        return [inputs[p] for p in self.params]

    def reference(self, inputs: dict):
        """The value of ``expr`` on ``inputs`` computed by the independent numpy oracle.

        Returns:
            A numpy array, or a (nested) tuple of arrays.
        """
        return self._compute(dict(inputs))


# -- the generator ---------------------------------------------------------------------------------

class _Generator(ControlSteps):
    """Grows one program step by step from hypothesis draws (one instance per example)."""

    def __init__(self, draw, config: ProgramConfig):
        self.draw = draw
        self.config = config
        self.counter = 0
        self.types: dict = {}
        self.globals: dict = {}
        self.dtype = draw(st.sampled_from(config.dtypes))
        self.is_float = not np.issubdtype(np.dtype(self.dtype), np.integer)
        rank = draw(st.integers(config.min_rank, config.max_rank))
        self.base_shape = tuple(draw(st.integers(1, config.max_dim)) for _ in range(rank))

    # -- helpers -----------------------------------------------------------------------------
    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def choose(self, items):
        return items[self.draw(st.integers(0, len(items) - 1))]

    def flag(self) -> bool:
        return self.draw(st.booleans())

    def usable(self, name: str) -> bool:
        if self.config.ops is not None and name not in self.config.ops:
            return False
        return registry.is_registered(name)

    def entry(self, expr, ty, bounds, compute) -> _Entry:
        self.types[expr] = ty
        return _Entry(expr, ty, bounds, compute)

    def var_entry(self, var: E.Var, ty, bounds) -> _Entry:
        return self.entry(var, ty, bounds, lambda env: env[var])

    def variant_shape(self) -> tuple:
        """A shape that broadcasts to the base shape (a suffix, some dims set to 1)."""
        keep = self.draw(st.integers(0, len(self.base_shape)))
        suffix = self.base_shape[len(self.base_shape) - keep:]
        return tuple(d if self.flag() else 1 for d in suffix)

    def input_bounds(self) -> tuple:
        positive = self.config.positive_inputs or self.flag()
        if self.is_float:
            return (0.5, 2.0) if positive else (-2.0, 2.0)
        return (1, 5) if positive else (-5, 5)

    def maybe_bind(self, scope: _Scope, entry: _Entry, force: bool = False) -> _Entry:
        """Either use ``entry`` inline or bind it with a let (possibly annotated)."""
        if not force and not (self.config.allow_lets and self.flag()):
            return entry
        annotate = self.flag()
        var = E.Var(self.fresh("v"), entry.ty if annotate else None)
        scope.bindings.append((var, entry))
        return self.var_entry(var, entry.ty, entry.bounds)

    def finish(self, scope: _Scope, result: _Entry):
        """Wrap ``result`` in the scope's lets; returns (expr, compute)."""
        expr = result.expr
        for var, value in reversed(scope.bindings):
            expr = E.Let(var, value.expr, expr)
            self.types[expr] = result.ty
            self.types[var] = value.ty
        bindings = list(scope.bindings)

        def compute(env):
            for var, value in bindings:
                env[var] = value_of(value, env)
            return value_of(result, env)
        return expr, compute

    # -- the main loop ---------------------------------------------------------------------------
    def step_kinds(self, scope: _Scope) -> list:
        cfg = self.config
        kinds = ["unary", "binary"]
        if cfg.allow_constants:
            kinds.append("constant")
        if cfg.allow_tuples:
            kinds += ["tuple", "project"]
        if cfg.allow_shape_ops:
            kinds += ["reduce", "shape", "where", "cast"]
            if self.is_float:
                kinds += ["dense", "softmax"]
        if scope.depth < 2:
            if cfg.allow_if:
                kinds.append("if")
            if cfg.allow_lambdas:
                kinds.append("lambda")
            if cfg.allow_higher_order:
                kinds.append("higher_order")
            if cfg.allow_recursion:
                kinds.append("loop")
            if cfg.allow_globals and scope.depth == 0:
                kinds.append("global")
        return kinds

    def grow(self, scope: _Scope, steps: int) -> None:
        kinds = self.step_kinds(scope)
        for _ in range(steps):
            kind = self.draw(st.sampled_from(kinds))
            made = getattr(self, "step_" + kind)(scope)
            if made is not None:
                scope.entries.append(self.maybe_bind(scope, made, force=isinstance(
                    made.ty, FuncType)))

    def pick_result(self, scope: _Scope, first_local: int) -> _Entry:
        candidates = [e for e in scope.entries[first_local:] if not isinstance(e.ty, FuncType)]
        if not candidates:
            candidates = [e for e in scope.entries if not isinstance(e.ty, FuncType)]
        how = self.draw(st.integers(0, 2)) if self.config.allow_tuples else 0
        if how == 1 and len(candidates) >= 2:
            return self.make_tuple([candidates[-1], self.choose(candidates[:-1])])
        if how == 2:
            return self.choose(candidates)
        return candidates[-1]

    # -- dataflow steps ------------------------------------------------------------------------
    def apply_unary(self, operand: _Entry, same_type_only: bool = False) -> Optional[_Entry]:
        lo, hi = operand.bounds
        ops = [op for op in G.UNARY if self.usable(op.name) and (self.is_float or op.integer_ok)
               and op.safe(lo, hi) and G.within(op.bounds(lo, hi))]
        if not ops:
            return None
        op = self.choose(ops)
        dtype = operand.ty.dtype
        return self.entry(registry.make_call(op.name, (operand.expr,)), operand.ty,
                          op.bounds(lo, hi),
                          lambda env: as_array(op.numpy_fn(value_of(operand, env)), dtype))

    def apply_binary(self, lhs: _Entry, rhs: _Entry, same_type_only=False) -> Optional[_Entry]:
        shape = G.broadcast(lhs.ty.shape, rhs.ty.shape)
        if shape is None or (same_type_only and shape != lhs.ty.shape):
            return None
        ops = [op for op in G.BINARY if self.usable(op.name)
               and (self.is_float or op.integer_ok) and op.safe(lhs.bounds, rhs.bounds)
               and G.within(op.bounds(lhs.bounds, rhs.bounds))
               and not (same_type_only and op.comparison)]
        if not ops:
            return None
        op = self.choose(ops)
        dtype = "bool" if op.comparison else lhs.ty.dtype
        return self.entry(
            registry.make_call(op.name, (lhs.expr, rhs.expr)), TensorType(shape, dtype),
            op.bounds(lhs.bounds, rhs.bounds),
            lambda env: as_array(op.numpy_fn(value_of(lhs, env), value_of(rhs, env)), dtype))

    def step_unary(self, scope):
        operands = scope.tensors(numeric=True)
        return self.apply_unary(self.choose(operands)) if operands else None

    def step_binary(self, scope):
        operands = scope.tensors(numeric=True)
        if not operands:
            return None
        lhs = self.choose(operands)
        partners = [e for e in operands if e.ty.dtype == lhs.ty.dtype
                    and G.broadcast(lhs.ty.shape, e.ty.shape) is not None]
        return self.apply_binary(lhs, self.choose(partners))

    def make_constant(self, shape: tuple, bounds=None) -> _Entry:
        seed = self.draw(st.integers(0, 2 ** 16))
        rng = np.random.default_rng(seed)
        lo, hi = bounds or self.input_bounds()
        if self.is_float:
            data = rng.uniform(lo, hi, size=shape).astype(self.dtype)
        else:
            data = rng.integers(int(lo), int(hi) + 1, size=shape).astype(self.dtype)
        node = E.const(data, dtype=self.dtype)
        actual = (float(data.min()), float(data.max())) if data.size else (lo, hi)
        return self.entry(node, TensorType(shape, self.dtype), actual, lambda env: data)

    def step_constant(self, scope):
        return self.make_constant(self.variant_shape())

    def make_tuple(self, items) -> _Entry:
        node = E.Tuple(tuple(e.expr for e in items))
        return self.entry(node, TupleType([e.ty for e in items]),
                          tuple(e.bounds for e in items),
                          lambda env: tuple(value_of(e, env) for e in items))

    def step_tuple(self, scope):
        values = [e for e in scope.entries if not isinstance(e.ty, FuncType)]
        count = self.draw(st.integers(1, 3))
        return self.make_tuple([self.choose(values) for _ in range(count)]) if values else None

    def step_project(self, scope):
        tuples = [e for e in scope.entries if isinstance(e.ty, TupleType) and e.ty.fields]
        # Without a tuple in scope, project from a fresh one: ``(a, b).1``.
        source = self.choose(tuples) if tuples else self.step_tuple(scope)
        if source is None:
            return None
        index = self.draw(st.integers(0, len(source.ty.fields) - 1))
        return self.entry(E.TupleGetItem(source.expr, index), source.ty.fields[index],
                          source.bounds[index], lambda env: value_of(source, env)[index])

    def call_op(self, name, args, attrs, ty, bounds, compute) -> Optional[_Entry]:
        """A call of an op whose attribute names may not match ours: skipped if rejected."""
        if not self.usable(name):
            return None
        try:
            node = registry.make_call(name, args, attrs)
        except TypeError:
            return None
        return self.entry(node, ty, bounds, compute)

    def step_reduce(self, scope):
        operands = [e for e in scope.tensors(numeric=True) if e.ty.shape]
        if not operands:
            return None
        x = self.choose(operands)
        name = self.draw(st.sampled_from(("sum", "mean", "max", "min")))
        if name == "mean" and not self.is_float:
            return None
        axis, keepdims = self.draw(st.integers(0, x.ty.ndim - 1)), self.flag()
        shape = list(x.ty.shape)
        extent = shape[axis]
        if keepdims:
            shape[axis] = 1
        else:
            del shape[axis]
        lo, hi = x.bounds
        bounds = (lo * extent, hi * extent) if name == "sum" else (lo, hi)
        if not G.within(bounds):
            return None
        fn = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}[name]
        dtype = x.ty.dtype
        return self.call_op(name, (x.expr,), {"axis": (axis,), "keepdims": keepdims},
                            TensorType(tuple(shape), dtype), bounds,
                            lambda env: as_array(fn(value_of(x, env), axis=axis,
                                                     keepdims=keepdims), dtype))

    def step_shape(self, scope):
        operands = [e for e in scope.tensors() if e.ty.shape]
        if not operands:
            return None
        x = self.choose(operands)
        shape, ndim = tuple(x.ty.shape), x.ty.ndim
        which = self.draw(st.sampled_from(("reshape", "transpose", "concatenate",
                                           "expand_dims")))
        if which == "reshape":
            new = (int(np.prod(shape)),) if self.flag() else shape[::-1]
            return self.call_op("reshape", (x.expr,), {"newshape": new},
                                TensorType(new, x.ty.dtype), x.bounds,
                                lambda env: value_of(x, env).reshape(new))
        if which == "transpose":
            axes = tuple(self.draw(st.permutations(range(ndim))))
            return self.call_op("transpose", (x.expr,), {"axes": axes},
                                TensorType(tuple(shape[a] for a in axes), x.ty.dtype),
                                x.bounds, lambda env: np.transpose(value_of(x, env), axes))
        if which == "expand_dims":
            axis = self.draw(st.integers(0, ndim))
            new = shape[:axis] + (1,) + shape[axis:]
            return self.call_op("expand_dims", (x.expr,), {"axis": axis, "num_newaxis": 1},
                                TensorType(new, x.ty.dtype), x.bounds,
                                lambda env: value_of(x, env).reshape(new))
        partner = self.choose([e for e in scope.tensors() if e.ty == x.ty])
        axis = self.draw(st.integers(0, ndim - 1))
        new = shape[:axis] + (2 * shape[axis],) + shape[axis + 1:]
        bounds = x.bounds if x.ty.dtype == "bool" else G.union(x.bounds, partner.bounds)
        return self.call_op("concatenate", (E.Tuple((x.expr, partner.expr)),), {"axis": axis},
                            TensorType(new, x.ty.dtype), bounds,
                            lambda env: np.concatenate(
                                (value_of(x, env), value_of(partner, env)), axis=axis))

    def step_where(self, scope):
        conds = scope.tensors(numeric=False)
        values = scope.tensors(numeric=True)
        if not conds or not values:
            return None
        cond, lhs = self.choose(conds), self.choose(values)
        rhs = self.choose([e for e in values if e.ty.dtype == lhs.ty.dtype])
        shape = G.broadcast(cond.ty.shape, lhs.ty.shape)
        if shape is not None:
            shape = G.broadcast(shape, rhs.ty.shape)
        if shape is None:
            return None
        return self.call_op("where", (cond.expr, lhs.expr, rhs.expr), {},
                            TensorType(shape, lhs.ty.dtype), G.union(lhs.bounds, rhs.bounds),
                            lambda env: np.where(value_of(cond, env), value_of(lhs, env),
                                                 value_of(rhs, env)))

    def step_cast(self, scope):
        conds = scope.tensors(numeric=False)
        if not conds:
            return None
        cond, dtype = self.choose(conds), self.dtype
        return self.call_op("cast", (cond.expr,), {"dtype": dtype},
                            TensorType(cond.ty.shape, dtype), (0.0, 1.0),
                            lambda env: value_of(cond, env).astype(dtype))

    def step_dense(self, scope):
        operands = [e for e in scope.tensors(numeric=True) if e.ty.ndim >= 1]
        if not operands:
            return None
        x = self.choose(operands)
        units, depth = self.draw(st.integers(1, 4)), x.ty.shape[-1]
        weight = self.make_constant((units, depth), (-1.0, 1.0))
        magnitude = depth * max(abs(x.bounds[0]), abs(x.bounds[1]))
        dtype = x.ty.dtype
        return self.call_op("nn.dense", (x.expr, weight.expr), {"units": units},
                            TensorType(x.ty.shape[:-1] + (units,), dtype),
                            (-magnitude, magnitude),
                            lambda env: as_array(value_of(x, env) @ value_of(weight, env).T,
                                                  dtype))

    def step_softmax(self, scope):
        operands = [e for e in scope.tensors(numeric=True) if e.ty.ndim >= 1]
        if not operands:
            return None
        x = self.choose(operands)
        axis = self.draw(st.sampled_from((-1,) + tuple(range(x.ty.ndim))))
        return self.call_op("nn.softmax", (x.expr,), {"axis": axis}, x.ty, (0.0, 1.0),
                            lambda env: G.softmax_reference(value_of(x, env), axis))


def _configure(config: Optional[ProgramConfig], overrides: dict,
               default: ProgramConfig) -> ProgramConfig:
    return dataclasses.replace(config or default, **overrides)


_CONTROL_DEFAULTS = ProgramConfig(allow_if=True, allow_lambdas=True, allow_higher_order=True,
                                  allow_globals=True, allow_recursion=True)


def _generate(draw, config: ProgramConfig, force_scalar_input: bool) -> GeneratedProgram:
    gen = _Generator(draw, config)
    count = draw(st.integers(config.min_inputs, config.max_inputs))
    params, bounds_list, entries = [], [], []
    for index in range(count):
        shape = () if (force_scalar_input and index == 0) else gen.variant_shape()
        var = E.Var(f"x{index}", TensorType(shape, gen.dtype))
        bounds = gen.input_bounds()
        params.append(var)
        bounds_list.append(bounds)
        entries.append(gen.var_entry(var, var.type_annotation, bounds))
    scope = _Scope(entries, depth=0)
    gen.grow(scope, draw(st.integers(1, config.max_steps)))
    result = gen.pick_result(scope, count)
    expr, compute = gen.finish(scope, result)
    # NOTE: the program may not use every input; params still lists them all (a function of
    # unused parameters is well formed), but expr's free vars must be among them.
    return GeneratedProgram(expr, tuple(params), tuple(bounds_list), result.ty, gen.types,
                            dict(gen.globals), compute)


@st.composite
def tensor_exprs(draw, config: Optional[ProgramConfig] = None, **overrides) -> GeneratedProgram:
    """Strategy for well-typed dataflow expressions over static-shape tensor inputs.

    Args:
        config: a :class:`ProgramConfig`; keyword arguments override its fields.

    Returns:
        A strategy of :class:`GeneratedProgram`.
    """
    return _generate(draw, _configure(config, overrides, ProgramConfig()),
                     force_scalar_input=False)


@st.composite
def programs(draw, config: Optional[ProgramConfig] = None, **overrides) -> GeneratedProgram:
    """Strategy for well-typed programs with control flow, closures and global functions.

    Like :func:`tensor_exprs` with ``allow_if``, ``allow_lambdas``, ``allow_higher_order``,
    ``allow_globals`` and ``allow_recursion`` on (when no ``config`` is given). The first
    input is a scalar so that ``if`` conditions depend on the inputs.

    Args:
        config: a :class:`ProgramConfig`; keyword arguments override its fields.
    """
    cfg = _configure(config, overrides, _CONTROL_DEFAULTS)
    return _generate(draw, cfg, force_scalar_input=True)


# Higher-order programs over the Prelude's ADTs live in their own module; re-exported here.
from .adt_strategies import AdtProgram, adt_programs, plain_adt_values  # noqa: E402,F401
