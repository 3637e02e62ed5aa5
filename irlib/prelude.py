"""The Prelude: Relay's standard list/option/tree library and the dynamic tensor arrays.

``Prelude(mod)`` loads ``prelude.rly`` (written in the text format, next to this file) into
``mod`` with :meth:`IRModule.import_from_std`, then the dynamic tensor-array ADTs and
functions for nine dtypes, whose text is generated here (one template instead of nine
hand-written copies). Loading twice into the same module is idempotent::

    >>> p = Prelude()
    >>> p.mod.get_type("List")[1].name_hint
    'Cons'
    >>> p.get_name("tensor_array_read", "float32")
    'tensor_array_read_float32'

Static tensor arrays (fixed shapes) are made on request by :class:`StaticTensorArrayOps`
(see :mod:`irlib.prelude_static`). docs/prelude.md lists every definition with its type.
"""

from __future__ import annotations

from pathlib import Path
from string import Template

from .errors import UnknownNameError
from .ir import hooks
from .ir.module import IRModule
from .text.parser import parse

STD_FILES = ("prelude.rly", "nat.rly", "gradient.rly", "core.rly")
TENSOR_ARRAY_DTYPES = ("float32", "float16", "float64", "int32", "uint8", "int8", "int16",
                       "uint16", "int64")
# the import key of the generated dynamic tensor arrays (not a file)
TENSOR_ARRAY_KEY = "tensor_array.rly"

GLOBAL_FUNCTIONS = ("id", "compose", "flip", "hd", "tl", "nth", "update", "map", "foldl",
                    "foldr", "foldr1", "concat", "filter", "zip", "rev", "map_accuml",
                    "map_accumr", "unfoldl", "unfoldr", "sum", "length", "tmap", "size",
                    "iterate")

_MAX_RANK = 6

# Legacy (Relay <= 0.7) attribute names of the nat definitions, once nat.rly is imported.
_LEGACY_NAT_GLOBALS = {"double": "nat_double", "add": "nat_add"}
_LEGACY_NAT_TYPE = {"nat": 0, "z": 1, "s": 2}


def std_source(name: str) -> str:
    """The text of std file ``name`` (or of the generated tensor arrays).

    Raises:
        UnknownNameError: if ``name`` is not a std file.
    """
    if name == TENSOR_ARRAY_KEY:
        return dynamic_tensor_array_text(TENSOR_ARRAY_DTYPES)
    if name not in STD_FILES:
        raise UnknownNameError(f"no std file {name!r}; the std files are {list(STD_FILES)}")
    return (Path(__file__).parent / name).read_text()


def import_std(mod: IRModule, name: str) -> None:
    """Load the std file ``name`` into ``mod`` in place (what ``mod.import_from_std(name)``
    does: the IR core may not import the parser, so it calls this through a hook).

    The text is parsed with ``mod`` as the initial module (its globals, types and
    constructors are visible), merged in, and the whole module is type-checked. Importing
    the same name again does nothing.

    Args:
        mod: the module to extend.
        name: a name of :data:`STD_FILES` or :data:`TENSOR_ARRAY_KEY`.

    Raises:
        UnknownNameError: if there is no such std file.
    """
    if name in mod.imported_paths:
        return
    merged = parse(std_source(name), source_name=name, init_module=mod)
    mod.update(merged)
    mod.imported_paths.add(name)


hooks.install("import_std", import_std)


def get_name(canonical: str, dtype: str) -> str:
    """The name of a dynamic tensor-array definition for ``dtype``.

    ``tensor_t`` gives ``tensor_{dtype}_t``; anything else ``{canonical}_{dtype}``.
    """
    if canonical == "tensor_t":
        return f"tensor_{dtype}_t"
    return f"{canonical}_{dtype}"


class Prelude:
    """The Prelude loaded into a module.

    Args:
        mod: the module to load into (a new one if None); kept as ``self.mod``.

    Attributes:
        mod: the module.
        id, compose, ..., iterate: the GlobalVars of the Prelude's functions.
        l, cons, nil, optional, some, none, tree, rose: legacy aliases of the List, Option
            and Tree types (GlobalTypeVars) and their constructors.
        nat, z, s, double, add: legacy aliases of the nat type, its constructors and
            ``@nat_double`` / ``@nat_add`` (after ``mod.import_from_std("nat.rly")``).
    """

    def __init__(self, mod: IRModule | None = None):
        if mod is None:
            mod = IRModule()
        self.mod = mod
        self.load_prelude()

    def load_prelude(self) -> None:
        """Parse the Prelude (and the tensor-array definitions) into ``self.mod``.

        Idempotent: definitions already in the module are kept. ``__init__`` calls it.
        """
        mod = self.mod
        mod.import_from_std("prelude.rly")
        mod.import_from_std(TENSOR_ARRAY_KEY)
        for name in GLOBAL_FUNCTIONS:
            setattr(self, name, mod.get_global_var(name))
        self.l, self.cons, self.nil = mod.get_type("List")
        self.optional, self.some, self.none = mod.get_type("Option")
        self.tree, self.rose = mod.get_type("Tree")

    def __getattr__(self, name: str):
        # Relay's ops set every generated definition as a Prelude attribute; irlib looks the
        # name up in the module instead, so ``p.tensor_array_read_float32`` still works.
        if name.startswith("_") or name == "mod":
            raise AttributeError(name)
        try:
            if name in _LEGACY_NAT_GLOBALS:
                # Relay <= 0.7 named the nat.rly definitions p.double, p.add, p.nat, p.z, p.s
                return self.mod.get_global_var(_LEGACY_NAT_GLOBALS[name])
            if name in _LEGACY_NAT_TYPE:
                return self.mod.get_type("nat")[_LEGACY_NAT_TYPE[name]]
            return self.mod.get_global_var(name)
        except UnknownNameError:
            raise AttributeError(f"Prelude has no attribute or global function {name!r}") \
                from None

    # -- dynamic tensor arrays --------------------------------------------------------------
    @staticmethod
    def get_name(canonical: str, dtype: str) -> str:
        """The name of dynamic tensor-array definition ``canonical`` for ``dtype``."""
        return get_name(canonical, dtype)

    def get_global_var(self, canonical: str, dtype: str):
        """The GlobalVar of tensor-array function ``canonical`` for ``dtype``."""
        return self.mod.get_global_var(get_name(canonical, dtype))

    def get_type(self, canonical: str, dtype: str):
        """The GlobalTypeVar of tensor-array type ``canonical`` for ``dtype``."""
        return self.mod.get_global_type_var(get_name(canonical, dtype))

    def get_ctor(self, ty_name: str, canonical: str, dtype: str):
        """The constructor ``get_name(canonical, dtype)`` of ADT ``ty_name``.

        Raises:
            UnknownNameError: if the type has no such constructor.
        """
        name = get_name(canonical, dtype)
        for ctor in self.mod.get_type(ty_name)[1:]:
            if ctor.name_hint == name:
                return ctor
        raise UnknownNameError(f"could not find {name}")

    def get_tensor_ctor(self, canonical: str, dtype: str):
        """The constructor ``canonical`` of the tensor ADT of ``dtype``."""
        return self.get_ctor(get_name("tensor_t", dtype), canonical, dtype)

    def get_var(self, canonical: str, dtype: str):
        """Legacy: the GlobalVar of ``canonical`` for ``dtype`` (as :meth:`get_global_var`)."""
        return self.get_global_var(canonical, dtype)

    # -- static tensor arrays -------------------------------------------------------------------
    @staticmethod
    def get_name_static(canonical, dtype, shape, batch_dim=None, extra_shapes=None) -> str:
        """The name of a static tensor-array definition (see :mod:`irlib.prelude_static`)."""
        from .prelude_static import get_name_static
        return get_name_static(canonical, dtype, shape, batch_dim, extra_shapes)

    def get_global_var_static(self, canonical, dtype, shape, batch_dim=None):
        """The GlobalVar of a static tensor-array function."""
        return self.mod.get_global_var(self.get_name_static(canonical, dtype, shape, batch_dim))

    def get_type_static(self, canonical, dtype, shape):
        """The GlobalTypeVar of a static tensor-array type."""
        return self.mod.get_global_type_var(self.get_name_static(canonical, dtype, shape))

    def get_ctor_static(self, ty_name, name, dtype, shape):
        """A constructor of the static tensor ADT ``ty_name`` for ``dtype`` and ``shape``.

        Raises:
            UnknownNameError: if there is none.
        """
        ty_full = self.get_name_static(ty_name, dtype, shape)
        name_full = self.get_name_static(name, dtype, shape)
        for ctor in self.mod.get_type(ty_full)[1:]:
            if ctor.name_hint == name_full:
                return ctor
        raise UnknownNameError(f"could not find {name_full}")

    def get_tensor_ctor_static(self, name, dtype, shape):
        """Constructor ``name`` of the static tensor ADT of ``dtype`` and ``shape``."""
        return self.get_ctor_static("tensor_t", name, dtype, shape)


def _any_shape(rank: int) -> str:
    if rank == 0:
        return "()"
    return "(" + ", ".join(["?"] * rank) + ")"


def dynamic_tensor_array_text(dtypes) -> str:
    """The text-format definitions of the dynamic tensor arrays of ``dtypes``."""
    parts = ['#[version = "0.0.5"]']
    for dtype in dtypes:
        parts.append(_tensor_array_for(dtype))
    return "\n".join(parts) + "\n"


def _tensor_array_for(dtype: str) -> str:
    names = {"D": dtype, "t": get_name("tensor_t", dtype), "nil": get_name("tensor_nil", dtype)}
    names["ta"] = f"List[{names['t']}]"
    ctors = [get_name(f"tensor{rank}", dtype) for rank in range(_MAX_RANK + 1)]
    lines = [f"type {names['t']} {{", f"  {names['nil']},"]
    lines += [f"  {ctor}(Tensor[{_any_shape(rank)}, {dtype}]),"
              for rank, ctor in enumerate(ctors)]
    lines.append("}")
    names["take_clauses"] = "\n".join(
        f"    {ctors[r]}(%x) => {ctors[r]}(take(%x, arange(%lower, %upper, 1, "
        f'dtype="int32"), axis=0)),' for r in range(1, _MAX_RANK + 1))
    names["expand_clauses"] = "\n".join(
        f"    {ctors[r]}(%x) => {ctors[r + 1]}(expand_dims(%x, axis=0)),"
        for r in range(_MAX_RANK))
    names["concat_clauses"] = "\n".join(
        f"    {ctors[r]}(%a) => {{ match? (%y) {{ {ctors[r]}(%b) => "
        f"{ctors[r]}(concatenate((%a, %b), axis=0)), }} }}," for r in range(1, 5))
    lines.append(_DYNAMIC_FUNCTIONS.substitute(names))
    for rank in range(1, _MAX_RANK + 1):
        lines.append(_DYNAMIC_UNSTACK.substitute(
            names, R=rank, elem_ctor=ctors[rank - 1],
            tensor=f"Tensor[{_any_shape(rank)}, {dtype}]"))
    return "\n".join(lines)


# NOTE: string.Template ($name) keeps the text format's braces literal.
_DYNAMIC_FUNCTIONS = Template("""\
def @tensor_take_$D(%tensor: $t, %lower: int32, %upper: int32) -> $t {
  match? (%tensor) {
$take_clauses
  }
}
def @tensor_expand_dims_$D(%t: $t) -> $t {
  match? (%t) {
$expand_clauses
  }
}
def @tensor_concatenate_$D(%x: $t, %y: $t) -> $t {
  match? (%x) {
$concat_clauses
  }
}
def @tensor_array_$D(%n: int32) -> $ta {
  if (%n == 0) { Nil } else { Cons($nil, @tensor_array_$D(%n - 1)) }
}
def @tensor_array_read_$D(%ta: $ta, %i: int32) -> $t {
  @nth(%ta, %i)
}
def @tensor_array_write_$D(%ta: $ta, %i: int32, %v: $t) -> $ta {
  @update(%ta, %i, %v)
}
def @tensor_array_scatter_helper_$D(%ta: $ta, %current: int32, %limit: int32,
    %indices: Tensor[(?), int32], %values: $ta) -> $ta {
  if (%current == %limit) {
    %ta
  } else {
    let %ta1 = @update(%ta, take(%indices, %current), @nth(%values, %current));
    @tensor_array_scatter_helper_$D(%ta1, %current + 1, %limit, %indices, %values)
  }
}
def @tensor_array_scatter_$D(%ta: $ta, %indices: Tensor[(?), int32], %values: $ta) -> $ta {
  @tensor_array_scatter_helper_$D(%ta, 0, take(shape_of(%indices), 0), %indices, %values)
}
def @ta_split_helper_$D(%ta: $ta, %value: $t, %offset: int32, %current: int32, %limit: int32,
    %lengths: Tensor[(?), int32]) -> $ta {
  if (%current == %limit) {
    %ta
  } else {
    let %length = take(%lengths, %current);
    let %ta1 = @update(%ta, %current, @tensor_take_$D(%value, %offset, %offset + %length));
    @ta_split_helper_$D(%ta1, %value, %offset + %length, %current + 1, %limit, %lengths)
  }
}
def @tensor_array_split_$D(%ta: $ta, %value: $t, %lengths: Tensor[(?), int32]) -> $ta {
  @ta_split_helper_$D(%ta, %value, 0, 0, take(shape_of(%lengths), 0), %lengths)
}
def @tensor_array_concat_$D(%ta: $ta) -> $t {
  match (%ta) {
    Nil => $nil,
    Cons(%h, Nil) => %h,
    Cons(%h, %rest) => @tensor_concatenate_$D(%h, @tensor_array_concat_$D(%rest)),
  }
}
def @tensor_array_stack_$D(%ta: $ta) -> $t {
  let %expanded = @map(@tensor_expand_dims_$D, %ta);
  @foldl(@tensor_concatenate_$D, @hd(%expanded), @tl(%expanded))
}""")

_DYNAMIC_UNSTACK = Template("""\
def @tensor_array_unstack_tensor${R}_helper_$D(%i: int32, %up: int32, %t: $tensor) -> $ta {
  if (%i < %up) {
    let %rest = @tensor_array_unstack_tensor${R}_helper_$D(%i + 1, %up, %t);
    Cons($elem_ctor(take(%t, %i, axis=0)), %rest)
  } else {
    Nil
  }
}
def @tensor_array_unstack_tensor${R}_$D(%t: $tensor) -> $ta {
  @tensor_array_unstack_tensor${R}_helper_$D(0, take(shape_of(%t), 0), %t)
}""")
