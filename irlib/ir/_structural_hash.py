"""The hashing half of :mod:`irlib.ir.structural`.

NOTE: [Hashing bound variables] A hash must be equal for alpha-equivalent programs and should
still tell ``x - y`` from ``y - x``. Hashing a use of a bound variable by its binder's
position (de Bruijn style) depends on the context a subterm sits in, which would defeat
memoising shared subterms. Instead each binder gets a *signature* that depends only on the
binder's own subterm: hashing runs twice over the nodes in post order. The first pass
computes a *skeleton* hash where every variable counts only by its type annotation (context
free). A let variable's signature is then the skeleton of its ``let`` node, a parameter's is
its index plus the skeleton of its function, and a pattern variable's is its clause and
position plus the skeleton of its ``match``. The second pass hashes each variable occurrence by
its binder's signature. Both passes memoise per node, so hashing is linear on DAGs; since
every variable has exactly one binder in a well-formed program, the signatures do not depend
on where a shared subterm appears. Equal programs get equal skeletons, hence equal
signatures, hence equal hashes.

Hashes are built from Python's tuple hash over ints only (strings and bytes go through
``zlib.crc32``), so they are the same in every process.
"""

from __future__ import annotations

import math
import zlib

import numpy as np

from ..ndarray import NDArray
from . import expr as E
from . import types as T
from .attrs import Attrs
from .dims import AnyDim, DimExpr, format_dim
from .functor import pattern_children, pattern_vars, post_order
from .module import IRModule
from .type_functor import type_children

_STRINGS: dict = {}


def _text(value: str) -> int:
    code = _STRINGS.get(value)
    if code is None:
        code = zlib.crc32(value.encode("utf-8"))
        if len(_STRINGS) < 100_000:
            _STRINGS[value] = code
    return code


def _mix(*parts) -> int:
    return hash(parts)


# One tag per kind of node, so that different kinds with equal contents hash apart.
_TAG = {name: _text(name) for name in (
    "var", "free_var", "global_var", "op", "constructor", "constant", "tuple", "get_item",
    "call", "let", "if", "function", "ref_create", "ref_read", "ref_write", "match", "clause",
    "p_wild", "p_var", "p_ctor", "p_tuple", "let_sig", "param_sig", "pattern_sig",
    "tensor", "tuple_type", "func_type", "type_var", "free_type_var", "hole", "global_type",
    "type_call", "ref_type", "relation", "type_data", "fn_tparam", "ft_tparam", "td_tparam",
    "none", "bool", "int", "float", "nan", "str", "seq", "attrs", "dict", "array", "dim",
    "sym_dim", "any_dim", "module", "other")}


# Leaves whose hash never involves a variable: the second pass reuses their skeleton hash.
_VARIABLE_FREE_LEAVES = frozenset({E.Constant, E.Op, E.GlobalVar, E.Constructor})
_DTYPES: dict = {}


class Hasher:
    """Computes structural hashes; one instance per :func:`structural_hash` call.

    Args:
        map_free_vars: hash free variables by their order of appearance (so alpha-equivalent free
            variables hash alike) instead of by identity.
    """

    def __init__(self, map_free_vars: bool):
        self.map_free_vars = map_free_vars
        self.type_var_sigs: dict = {}
        self.type_memo: dict = {}

    def hash(self, node) -> int:
        """The structural hash of any supported value.

        Args:
            node: an expression, type, pattern, constructor, module, array or attribute value.
        """
        if isinstance(node, E.Expr):
            return self.expr_hash(node)
        if isinstance(node, E.Clause):
            # Hashed as a one-clause match so that its pattern variables count as bound.
            return self.expr_hash(E.Match(E.Tuple(()), (node,)))
        if isinstance(node, E.Pattern):
            variables = {v: _mix(_TAG["var"], self.type_hash(_annotation(v)))
                         for v in pattern_vars(node)}
            return self.pattern_hash(node, variables)
        if isinstance(node, IRModule):
            return self.module_hash(node)
        if isinstance(node, T.Type):
            return self.type_hash(node)
        return self.value_hash(node)

    # -- expressions ---------------------------------------------------------------------------
    def expr_hash(self, root) -> int:
        """The structural hash of the expression ``root``, computed over a post-order walk (no
        recursion).

        Args:
            root: the expression.
        """
        order = post_order(root)
        for node in order:
            if type(node) is E.Function:
                for index, param in enumerate(node.type_params):
                    self.type_var_sigs.setdefault(
                        param, _mix(_TAG["fn_tparam"], index, int(param.kind)))
        skeleton: dict = {}
        for node in order:
            skeleton[node] = self.node_hash(node, skeleton, None)
        signatures: dict = {}
        for node in order:
            kind = type(node)
            if kind is E.Let:
                signatures[node.var] = _mix(_TAG["let_sig"], skeleton[node])
            elif kind is E.Function:
                for index, param in enumerate(node.params):
                    signatures[param] = _mix(_TAG["param_sig"], index, skeleton[node])
            elif kind is E.Match:
                for clause_index, clause in enumerate(node.clauses):
                    for position, var in enumerate(pattern_vars(clause.lhs)):
                        signatures[var] = _mix(_TAG["pattern_sig"], clause_index, position,
                                               skeleton[node])
        full: dict = {}
        for node in order:
            if type(node) in _VARIABLE_FREE_LEAVES:
                full[node] = skeleton[node]
            else:
                full[node] = self.node_hash(node, full, signatures)
        return full[root]

    def node_hash(self, node, done: dict, signatures) -> int:
        """Hash of one node given its children's hashes in ``done``.

        ``signatures`` is None in the skeleton pass (variables count by type only).
        """
        kind = type(node)
        if kind is E.Var:
            annotation = self.type_hash(_annotation(node))
            if signatures is None:
                return _mix(_TAG["var"], annotation)
            signature = signatures.get(node)
            if signature is not None:
                return signature
            if self.map_free_vars:
                return _mix(_TAG["free_var"], annotation)
            return _mix(_TAG["free_var"], _text(node.name_hint), annotation)
        if kind is E.Call:
            return _mix(_TAG["call"], done[node.op], tuple(done[a] for a in node.args),
                        self.value_hash(node.attrs),
                        tuple(self.type_hash(t) for t in node.type_args))
        if kind is E.Let:
            return _mix(_TAG["let"], done[node.var], done[node.value], done[node.body])
        if kind is E.Constant:
            array = node.data.numpy()
            return _mix(_TAG["constant"], self.array_hash(array))
        if kind is E.Op:
            return _mix(_TAG["op"], _text(node.name))
        if kind is E.Tuple:
            return _mix(_TAG["tuple"], tuple(done[f] for f in node.fields))
        if kind is E.TupleGetItem:
            return _mix(_TAG["get_item"], node.index, done[node.tuple_value])
        if kind is E.Function:
            return _mix(_TAG["function"], tuple(int(p.kind) for p in node.type_params),
                        tuple(done[p] for p in node.params), self.type_hash(node.ret_type),
                        self.value_hash(node.attrs), done[node.body])
        if kind is E.If:
            return _mix(_TAG["if"], done[node.cond], done[node.true_branch],
                        done[node.false_branch])
        if kind is E.GlobalVar:
            return _mix(_TAG["global_var"], _text(node.name_hint))
        if kind is E.Constructor:
            return self.constructor_hash(node)
        if kind is E.RefCreate:
            return _mix(_TAG["ref_create"], done[node.value])
        if kind is E.RefRead:
            return _mix(_TAG["ref_read"], done[node.ref])
        if kind is E.RefWrite:
            return _mix(_TAG["ref_write"], done[node.ref], done[node.value])
        if kind is E.Match:
            clauses = tuple(_mix(_TAG["clause"], self.pattern_hash(c.lhs, done), done[c.rhs])
                            for c in node.clauses)
            return _mix(_TAG["match"], done[node.data], node.complete, clauses)
        raise TypeError(f"structural_hash: unknown expression node {kind.__name__}")

    def constructor_hash(self, ctor) -> int:
        """The hash of an ADT constructor: its name, its type's name and its arity.

        Args:
            ctor: the constructor.
        """
        return _mix(_TAG["constructor"], _text(ctor.name_hint),
                    _text(getattr(ctor.belong_to, "name_hint", "")), len(ctor.inputs))

    def pattern_hash(self, pattern, done: dict) -> int:
        """The hash of a match pattern, bottom-up over its sub-patterns.

        Args:
            pattern: the pattern.
            done: the hashes computed so far, keyed by node (a pattern variable hashes as its Var's
                entry).
        """
        hashes: dict = {}
        for current in post_order(pattern, pattern_children):
            if isinstance(current, E.PatternVar):
                hashes[current] = _mix(_TAG["p_var"], done[current.var])
            elif isinstance(current, E.PatternConstructor):
                hashes[current] = _mix(_TAG["p_ctor"], self.constructor_hash(current.constructor),
                                       tuple(hashes[p] for p in current.patterns))
            elif isinstance(current, E.PatternTuple):
                hashes[current] = _mix(_TAG["p_tuple"], tuple(hashes[p] for p in current.patterns))
            else:
                hashes[current] = _TAG["p_wild"]
        return hashes[pattern]

    # -- types ------------------------------------------------------------------------------------
    def type_hash(self, ty) -> int:
        """Hash of a type (None allowed), iterative and memoised per type object.

        Args:
            ty: the type, or None.
        """
        if ty is None:
            return _TAG["none"]
        memo = self.type_memo
        hit = memo.get(id(ty))
        if hit is not None:
            return hit[1]
        stack = [(ty, False)]
        while stack:
            current, expanded = stack.pop()
            if id(current) in memo:
                continue
            if not expanded:
                self._bind_type_params(current)
                stack.append((current, True))
                stack.extend((k, False) for k in _type_kids(current) if id(k) not in memo)
                continue
            kids = tuple(memo[id(k)][1] for k in _type_kids(current))
            # NOTE: the type object is kept in the memo so that its id cannot be reused.
            memo[id(current)] = (current, self._type_node_hash(current, kids))
        return memo[id(ty)][1]

    def _bind_type_params(self, ty) -> None:
        if isinstance(ty, T.FuncType):
            params, tag = ty.type_params, _TAG["ft_tparam"]
        elif isinstance(ty, T.TypeData):
            params, tag = ty.type_vars, _TAG["td_tparam"]
        else:
            return
        for index, param in enumerate(params):
            self.type_var_sigs.setdefault(param, _mix(tag, index, int(param.kind)))

    def _type_node_hash(self, ty, kids: tuple) -> int:
        if isinstance(ty, T.TensorType):
            return _mix(_TAG["tensor"], _text(ty.dtype), tuple(_dim_hash(d) for d in ty.shape))
        if isinstance(ty, T.TupleType):
            return _mix(_TAG["tuple_type"], kids)
        if isinstance(ty, T.FuncType):
            return _mix(_TAG["func_type"], tuple(int(p.kind) for p in ty.type_params), kids,
                        len(ty.arg_types))
        if isinstance(ty, T.TypeVar):
            signature = self.type_var_sigs.get(ty)
            if signature is not None:
                return signature
            if self.map_free_vars:
                return _mix(_TAG["free_type_var"], int(ty.kind))
            return _mix(_TAG["free_type_var"], _text(ty.name_hint), int(ty.kind))
        if isinstance(ty, T.IncompleteType):
            return _mix(_TAG["hole"], int(ty.kind))
        if isinstance(ty, T.GlobalTypeVar):
            return _mix(_TAG["global_type"], _text(ty.name_hint), int(ty.kind))
        if isinstance(ty, T.TypeCall):
            return _mix(_TAG["type_call"], kids)
        if isinstance(ty, T.RefType):
            return _mix(_TAG["ref_type"], kids)
        if isinstance(ty, T.TypeRelation):
            return _mix(_TAG["relation"], _text(getattr(ty.func, "__name__", "")),
                        ty.num_inputs, kids, self.value_hash(ty.attrs))
        if isinstance(ty, T.TypeData):
            names = tuple((_text(c.name_hint), len(c.inputs)) for c in ty.constructors)
            return _mix(_TAG["type_data"], _text(ty.header.name_hint), len(ty.type_vars),
                        names, kids)
        return _mix(_TAG["other"], _text(type(ty).__name__))

    # -- modules and plain values ------------------------------------------------------------------
    def module_hash(self, mod: IRModule) -> int:
        """The hash of a module: its functions (by global name) and its type definitions.

        Args:
            mod: the module.
        """
        functions = tuple((_text(g.name_hint), self.expr_hash(mod[g]))
                          for g in mod.get_global_vars())
        types = tuple((_text(g.name_hint), self.type_hash(mod[g]))
                      for g in mod.get_global_type_vars())
        return _mix(_TAG["module"], functions, types)

    def array_hash(self, array) -> int:
        """The hash of a constant's data: dtype, shape and bytes.

        Args:
            array: the numpy array or NDArray.
        """
        dtype_code = _DTYPES.get(array.dtype)
        if dtype_code is None:
            dtype_code = _DTYPES[array.dtype] = _text(array.dtype.name)
        return _mix(_TAG["array"], dtype_code, array.shape, zlib.crc32(array.tobytes()))

    def value_hash(self, value) -> int:
        """Hash of an attribute value (nested tuples, scalars, strings, types, exprs)."""
        if value is None:
            return _TAG["none"]
        if isinstance(value, bool):
            return _mix(_TAG["bool"], int(value))
        if isinstance(value, int):
            return _mix(_TAG["int"], value)
        if isinstance(value, float):
            return _TAG["nan"] if math.isnan(value) else _mix(_TAG["float"], hash(value))
        if isinstance(value, str):
            return _mix(_TAG["str"], _text(value))
        if isinstance(value, (tuple, list)):
            return _mix(_TAG["seq"], tuple(self.value_hash(v) for v in value))
        if isinstance(value, Attrs):
            return _mix(_TAG["attrs"], _text(value.type_key),
                        tuple((_text(k), self.value_hash(value[k])) for k in sorted(value)))
        if isinstance(value, dict):
            return _mix(_TAG["dict"], tuple(sorted(
                (self.value_hash(k), self.value_hash(v)) for k, v in value.items())))
        if isinstance(value, (DimExpr, AnyDim)):
            return _dim_hash(value)
        if isinstance(value, NDArray):
            return self.array_hash(value.numpy())
        if isinstance(value, np.ndarray):
            return self.array_hash(value)
        if isinstance(value, (E.Expr, T.Type, IRModule)):
            return self.hash(value)
        try:
            return _mix(_TAG["other"], hash(value))
        except TypeError:
            return _mix(_TAG["other"], _text(type(value).__name__))


def _type_kids(ty) -> tuple:
    """The sub-types a type's hash mixes in: :func:`type_children`, except that a function
    type's type parameters are bound by position beforehand (so left out) and its constraints
    are in, and a type definition's constructor inputs are in."""
    if isinstance(ty, T.FuncType):
        return ty.arg_types + (ty.ret_type,) + ty.type_constraints
    if isinstance(ty, T.TypeData):
        return tuple(t for ctor in ty.constructors for t in ctor.inputs)
    return type_children(ty)


def _dim_hash(dim) -> int:
    if isinstance(dim, AnyDim):
        return _TAG["any_dim"]
    if isinstance(dim, DimExpr):
        return _mix(_TAG["sym_dim"], _text(format_dim(dim)))
    return _mix(_TAG["dim"], int(dim))


def _annotation(var):
    # `%x : _` and `%x` hash alike, as structural equality treats them alike
    annotation = var.type_annotation
    return None if isinstance(annotation, T.IncompleteType) else annotation
