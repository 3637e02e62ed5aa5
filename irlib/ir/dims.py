"""Tensor dimensions: static ints, symbolic size expressions, and ``Any``.

A dimension of a :class:`~irlib.ir.types.TensorType` is one of

* a Python ``int`` (a static size),
* a :class:`DimExpr`: an integer polynomial over named size variables, closed under
  ``+``, ``-``, ``*`` and ``//`` (floor division). ``size_var("n") * 2 + 1`` is one;
* :data:`Any` (printed ``?``): a size unknown until run time, compatible with every size.

``DimExpr`` keeps a canonical form (a sorted map from monomials to integer coefficients, with
floor divisions that cannot be simplified kept as opaque atoms), so ``n + n == 2 * n`` and
``(n + 1) - 1 == n`` compare equal and hash alike. A ``DimExpr`` that folds to a constant is
returned as a plain ``int``.

The text format prints a symbolic dim as an arithmetic expression in the size variables:
``Tensor[(n, n + 1, 2*n, floordiv(n, 2)), float32]``.
"""

from __future__ import annotations

from typing import Union

# A monomial is a sorted tuple of atoms; an atom is a variable name (str) or a floordiv
# atom ("floordiv", numerator_terms, denominator_terms).
_Atom = Union[str, tuple]
_Terms = tuple  # tuple of (monomial, coefficient), sorted, no zero coefficients


def _atom_sort_key(atom: _Atom) -> str:
    return atom if isinstance(atom, str) else "~" + repr(atom)


def _monomial_key(monomial: tuple) -> tuple:
    return (-len(monomial), tuple(_atom_sort_key(a) for a in monomial))


def _canonical(terms: dict) -> _Terms:
    return tuple(sorted(((m, c) for m, c in terms.items() if c != 0),
                        key=lambda item: _monomial_key(item[0])))


class AnyDim:
    """A dimension unknown until run time (``relay.Any()``); printed ``?``."""

    __slots__ = ()

    def __eq__(self, other):
        return isinstance(other, AnyDim)

    def __hash__(self):
        return hash("irlib.Any")

    def __call__(self) -> "AnyDim":
        """``Any()`` is ``Any``: Relay code writes the dimension as a call."""
        return self

    def __repr__(self):
        return "?"

    __str__ = __repr__


Any = AnyDim()


class DimExpr:
    """A symbolic dimension: an integer polynomial over named size variables.

    Build one with :func:`size_var` and ordinary arithmetic; never call the constructor with
    hand-made terms. Instances are immutable values: ``==`` and ``hash`` are structural.
    """

    __slots__ = ("terms", "_hash")

    def __init__(self, terms: _Terms):
        self.terms = terms
        self._hash = hash(("DimExpr", terms))

    # -- construction helpers -------------------------------------------------------------
    @staticmethod
    def _from_terms(terms: dict) -> "Dim":
        canon = _canonical(terms)
        if not canon:
            return 0
        if len(canon) == 1 and canon[0][0] == ():
            return canon[0][1]
        return DimExpr(canon)

    @staticmethod
    def _terms_of(value) -> dict:
        if isinstance(value, DimExpr):
            return dict(value.terms)
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"cannot do dimension arithmetic with {value!r}")
        return {(): value} if value else {}

    # -- arithmetic -------------------------------------------------------------------------
    def __add__(self, other):
        if isinstance(other, AnyDim):
            return Any
        terms = self._terms_of(self)
        for monomial, coeff in self._terms_of(other).items():
            terms[monomial] = terms.get(monomial, 0) + coeff
        return self._from_terms(terms)

    __radd__ = __add__

    def __neg__(self):
        return self._from_terms({m: -c for m, c in self.terms})

    def __sub__(self, other):
        if isinstance(other, AnyDim):
            return Any
        return self + (-other if isinstance(other, DimExpr) else -int(other))

    def __rsub__(self, other):
        return (-self) + other

    def __mul__(self, other):
        if isinstance(other, AnyDim):
            return Any
        result: dict = {}
        for m1, c1 in self._terms_of(self).items():
            for m2, c2 in self._terms_of(other).items():
                monomial = tuple(sorted(m1 + m2, key=_atom_sort_key))
                result[monomial] = result.get(monomial, 0) + c1 * c2
        return self._from_terms(result)

    __rmul__ = __mul__

    def __floordiv__(self, other):
        return floordiv(self, other)

    def __rfloordiv__(self, other):
        return floordiv(other, self)

    # -- queries ----------------------------------------------------------------------------
    @property
    def name(self) -> str | None:
        """The variable name if this is a plain size variable, else None."""
        if len(self.terms) == 1:
            monomial, coeff = self.terms[0]
            if coeff == 1 and len(monomial) == 1 and isinstance(monomial[0], str):
                return monomial[0]
        return None

    def free_vars(self) -> set:
        """Names of the size variables this expression mentions."""
        names: set = set()
        stack = [self.terms]
        while stack:
            for monomial, _ in stack.pop():
                for atom in monomial:
                    if isinstance(atom, str):
                        names.add(atom)
                    else:
                        stack.append(atom[1])
                        stack.append(atom[2])
        return names

    def substitute(self, bindings: dict) -> "Dim":
        """Replace size variables by dims: ``bindings`` maps a name to an int or a dim."""
        result: "Dim" = 0
        for monomial, coeff in self.terms:
            product: "Dim" = coeff
            for atom in monomial:
                if isinstance(atom, str):
                    factor = bindings.get(atom, size_var(atom))
                else:
                    numerator = DimExpr._from_terms(dict(atom[1]))
                    denominator = DimExpr._from_terms(dict(atom[2]))
                    factor = floordiv(substitute_dim(numerator, bindings),
                                      substitute_dim(denominator, bindings))
                if isinstance(factor, AnyDim):
                    return Any
                product = product * factor
            result = result + product
        return result

    def __eq__(self, other):
        return isinstance(other, DimExpr) and self.terms == other.terms

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return format_dim(self)

    __str__ = __repr__


Dim = Union[int, DimExpr, AnyDim]


def size_var(name: str) -> DimExpr:
    """A named symbolic size, e.g. ``size_var("n")``, usable as a tensor dimension.

    Args:
        name: an identifier (letters, digits, ``_``; not starting with a digit).
    """
    if not isinstance(name, str) or not name or not (name[0].isalpha() or name[0] == "_") \
            or not all(ch.isalnum() or ch == "_" for ch in name):
        raise ValueError(f"size variable name must be an identifier, got {name!r}")
    return DimExpr((((name,), 1),))


def floordiv(numerator, denominator) -> Dim:
    """Floor division of dims, simplified where the result is exact or constant.

    Args:
        numerator: an int or a dim.
        denominator: an int or a dim (a zero int raises ZeroDivisionError).
    """
    if isinstance(numerator, AnyDim) or isinstance(denominator, AnyDim):
        return Any
    if isinstance(numerator, int) and isinstance(denominator, int):
        return numerator // denominator
    if isinstance(numerator, int) and numerator == 0:
        return 0
    if isinstance(denominator, int):
        if denominator == 0:
            raise ZeroDivisionError("dimension floordiv by zero")
        if denominator == 1:
            return numerator
        if all(coeff % denominator == 0 for _, coeff in numerator.terms):
            return DimExpr._from_terms({m: c // denominator for m, c in numerator.terms})
    if isinstance(numerator, DimExpr) and numerator == denominator:
        return 1
    if isinstance(numerator, DimExpr) and isinstance(denominator, DimExpr):
        exact = _divide_by_monomial(numerator, denominator)
        if exact is not None:
            return exact
    atom = ("floordiv", _canonical(DimExpr._terms_of(numerator)),
            _canonical(DimExpr._terms_of(denominator)))
    return DimExpr((((atom,), 1),))


def _divide_by_monomial(numerator: DimExpr, denominator: DimExpr):
    """``numerator / denominator`` when the denominator is one positive-coefficient term
    (``c * a * b``) that divides every term of the numerator exactly; else None.

    Size variables are positive, so ``floordiv(64*n, n)`` is ``64`` and
    ``floordiv(6*n*m + 3*n, 3*n)`` is ``2*m + 1``.
    """
    if len(denominator.terms) != 1:
        return None
    divisor, divisor_coeff = denominator.terms[0]
    if divisor_coeff <= 0 or not divisor:
        return None
    quotient = {}
    for monomial, coeff in numerator.terms:
        if coeff % divisor_coeff:
            return None
        remaining = list(monomial)
        for atom in divisor:
            if atom not in remaining:
                return None
            remaining.remove(atom)
        quotient[tuple(remaining)] = coeff // divisor_coeff
    return DimExpr._from_terms(quotient)


def substitute_dim(dim: Dim, bindings: dict) -> Dim:
    """``dim`` with size variables replaced per ``bindings`` (ints and Any pass through)."""
    return dim.substitute(bindings) if isinstance(dim, DimExpr) else dim


def is_static(dim: Dim) -> bool:
    """True for a plain int dimension.

    Args:
        dim: the dimension.
    """
    return isinstance(dim, int) and not isinstance(dim, bool)


def normalize_dim(value) -> Dim:
    """Turn user input (int, numpy integer, DimExpr, Any, None or "?") into a canonical dim.

    Args:
        value: the user's dimension.
    """
    if isinstance(value, (DimExpr, AnyDim)):
        return value
    if value is None or (isinstance(value, str) and value == "?"):
        return Any
    if isinstance(value, str):
        return size_var(value)
    if isinstance(value, bool):
        raise TypeError(f"a tensor dimension cannot be a bool ({value!r})")
    try:
        import operator
        as_int = operator.index(value)
    except TypeError:
        raise TypeError(f"a tensor dimension must be an int, a size variable or Any, "
                        f"got {value!r}") from None
    if as_int < 0:
        raise ValueError(f"a tensor dimension cannot be negative ({as_int})")
    return as_int


def _format_atom(atom: _Atom) -> str:
    if isinstance(atom, str):
        return atom
    numerator = DimExpr._from_terms(dict(atom[1]))
    denominator = DimExpr._from_terms(dict(atom[2]))
    return f"floordiv({format_dim(numerator)}, {format_dim(denominator)})"


def format_dim(dim: Dim) -> str:
    """Text-format spelling of a dim: ``3``, ``?``, ``n``, ``2*n + 1``, ``floordiv(n, 2)``."""
    if isinstance(dim, AnyDim):
        return "?"
    if not isinstance(dim, DimExpr):
        return str(dim)
    pieces = []
    for monomial, coeff in dim.terms:
        factors = [_format_atom(a) for a in monomial]
        magnitude = abs(coeff)
        if not factors:
            body = str(magnitude)
        elif magnitude == 1:
            body = "*".join(factors)
        else:
            body = "*".join([str(magnitude)] + factors)
        if not pieces:
            pieces.append(body if coeff > 0 else f"0 - {body}")
        else:
            pieces.append(("+ " if coeff > 0 else "- ") + body)
    return " ".join(pieces)
