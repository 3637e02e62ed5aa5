"""Static tensor arrays: tensor-array ADTs and functions for one fixed dtype and shape.

``StaticTensorArrayOps(prelude, "float32", (2, 3)).register()`` defines, in the prelude's
module, the ADT ``static_tensor_float32_2_3_t`` (constructors ``tensor_nil_float32_2_3`` and
``tensor_constructor_float32_2_3(Tensor[(2, 3), float32])``) and the functions below, each
named by :func:`get_name_static`. Definitions are generated in the text format and parsed
into the module; names that already exist are not redefined, so registering twice is
harmless. Ops whose result has another shape define that shape's ADT too (take and
concatenate give ``[?] + shape[1:]``, expand_dims ``[?] + shape``, or ``[1] + shape`` when
``batch_dim == 1``).

Registered: ``tensor_t`` (the ADT), ``tensor_get_data``, ``tensor_array``,
``tensor_array_read``, ``tensor_array_write``, ``tensor_expand_dims``, ``tensor_take``,
``tensor_concatenate``, ``tensor_array_unstack`` (+ ``_helper``), ``tensor_array_stack`` and
``tensor_array_concat``. Not yet: scatter, split and gather.
"""

from __future__ import annotations

from string import Template

from .ir.dims import Any, AnyDim, normalize_dim


def _shape_str(shape) -> str:
    return "_".join("any" if isinstance(d, AnyDim) else str(d) for d in shape) or "scalar"


def get_name_static(canonical: str, dtype: str, shape, batch_dim=None,
                    extra_shapes=None) -> str:
    """The canonical name of a static tensor-array definition.

    Args:
        canonical: ``"tensor_t"``, ``"tensor_constructor"``, ``"tensor_array_read"``, ...
        dtype: the element dtype.
        shape: the element shape (ints and Any, written ``any``; ``()`` is ``scalar``).
        batch_dim: 1 adds ``batch1_`` before the shape (except for the ADT and its
            constructors).
        extra_shapes: optional ``{name: shape}`` appended as ``_{name}_{dims}``.

    Returns:
        E.g. ``static_tensor_float32_2_3_t``, ``tensor_array_read_float32_any_3``.
    """
    shape_str = _shape_str([normalize_dim(d) for d in shape])
    for name, extra in (extra_shapes or {}).items():
        shape_str += f"_{name}_" + _shape_str([normalize_dim(d) for d in extra])
    if canonical == "tensor_t":
        return f"static_tensor_{dtype}_{shape_str}_t"
    if batch_dim is None or canonical in ("tensor_constructor", "tensor_nil") or batch_dim != 1:
        return f"{canonical}_{dtype}_{shape_str}"
    return f"{canonical}_{dtype}_batch{batch_dim}_{shape_str}"


def _type_text(shape, dtype: str) -> str:
    dims = ", ".join("?" if isinstance(d, AnyDim) else str(d) for d in shape)
    return f"Tensor[({dims}), {dtype}]"


class StaticTensorArrayOps:
    """Tensor-array definitions for one dtype and static element shape.

    Args:
        prelude: the :class:`~irlib.prelude.Prelude` whose module receives them.
        dtype: the element dtype.
        shape: the element shape (ints or Any).
        batch_dim: None, or 1 to name definitions ``..._batch1_...`` and give expand_dims a
            leading 1 instead of Any.
    """

    def __init__(self, prelude, dtype: str, shape, batch_dim=None):
        self.prelude = prelude
        self.dtype = dtype
        self.shape = tuple(normalize_dim(d) for d in shape)
        self.batch_dim = batch_dim

    # -- names ----------------------------------------------------------------------------------
    def get_name(self, canonical: str, extra_shapes=None) -> str:
        """The name of ``canonical`` for this dtype and shape."""
        return get_name_static(canonical, self.dtype, self.shape, self.batch_dim, extra_shapes)

    def get_global_var(self, canonical: str):
        """The GlobalVar of function ``canonical``."""
        return self.prelude.mod.get_global_var(self.get_name(canonical))

    def get_type(self, canonical: str = "tensor_t"):
        """The GlobalTypeVar of the tensor ADT."""
        return self.prelude.mod.get_global_type_var(self.get_name(canonical))

    def get_ctor(self, canonical: str):
        """Constructor ``canonical`` (``tensor_nil`` or ``tensor_constructor``)."""
        return self.prelude.get_ctor_static("tensor_t", canonical, self.dtype, self.shape)

    # -- registration -------------------------------------------------------------------------
    def register(self) -> None:
        """Define the ADT and the functions listed in the module docstring (once)."""
        mod = self.prelude.mod
        shape, dtype = self.shape, self.dtype
        lead = 1 if self.batch_dim == 1 else Any
        shapes = {"": shape, "grown_": (Any,) + shape, "lead_": (lead,) + shape}
        if shape:
            shapes.update({"rest_": (Any,) + shape[1:], "elem_": shape[1:]})
        names = {}
        for prefix, for_shape in shapes.items():
            names[prefix + "t"] = self._name("tensor_t", for_shape)
            names[prefix + "nil"] = self._name("tensor_nil", for_shape)
            names[prefix + "ctor"] = self._name("tensor_constructor", for_shape)
            names[prefix + "data"] = _type_text(for_shape, dtype)
        names["ta"] = f"List[{names['t']}]"
        chunks, defined = [], set()
        for prefix in shapes:
            type_name = names[prefix + "t"]
            if type_name not in defined and type_name not in mod:
                defined.add(type_name)
                fields = {key: names[prefix + key] for key in ("t", "nil", "ctor", "data")}
                chunks.append(_ADT.substitute(fields))
        templates = dict(_FUNCTIONS)
        if shape:
            templates.update(_RANKED_FUNCTIONS)
        for canonical in templates:
            names[canonical] = self.get_name(canonical)
        for canonical, template in templates.items():
            if names[canonical] not in mod:
                chunks.append(template.substitute(names))
        if chunks:
            from .text.parser import parse
            text = '#[version = "0.0.5"]\n' + "\n".join(chunks) + "\n"
            source_name = f"static_tensor_array_{self.get_name('ops')}"
            mod.update(parse(text, source_name=source_name, init_module=mod))

    def _name(self, canonical: str, shape) -> str:
        return get_name_static(canonical, self.dtype, shape, self.batch_dim)


# NOTE: templates use string.Template ($name) so that the text format's braces stay literal.
_ADT = Template("type $t {\n  $nil,\n  $ctor($data),\n}")

_FUNCTIONS = {
    "tensor_get_data": Template("""def @$tensor_get_data(%t: $t) -> $data {
  match? (%t) { $ctor(%x) => %x, }
}"""),
    "tensor_array": Template("""def @$tensor_array(%n: int32) -> $ta {
  if (%n == 0) { Nil } else { Cons($nil, @$tensor_array(%n - 1)) }
}"""),
    "tensor_array_read": Template("""def @$tensor_array_read(%ta: $ta, %i: int32) -> $t {
  @nth(%ta, %i)
}"""),
    "tensor_array_write": Template("""def @$tensor_array_write(%ta: $ta, %i: int32, %v: $t) -> $ta {
  @update(%ta, %i, %v)
}"""),
    "tensor_expand_dims": Template("""def @$tensor_expand_dims(%t: $t) -> $lead_t {
  match? (%t) { $ctor(%x) => $lead_ctor(expand_dims(%x, axis=0)), }
}"""),
    "tensor_array_stack": Template("""def @$tensor_array_stack(%ta: $ta) -> $grown_t {
  let %data = fn (%e: $lead_t) -> $grown_data {
    match? (%e) { $lead_ctor(%x) => %x, }
  };
  let %join = fn (%a: $grown_data, %b: $grown_data) -> $grown_data {
    concatenate((%a, %b), axis=0)
  };
  let %parts = @map(%data, @map(@$tensor_expand_dims, %ta));
  $grown_ctor(@foldl(%join, @hd(%parts), @tl(%parts)))
}"""),
}

# only for rank >= 1
_RANKED_FUNCTIONS = {
    "tensor_take": Template("""def @$tensor_take(%t: $t, %lower: int32, %upper: int32) -> $rest_t {
  match? (%t) {
    $ctor(%x) => $rest_ctor(take(%x, arange(%lower, %upper, 1, dtype="int32"), axis=0)),
  }
}"""),
    "tensor_concatenate": Template("""def @$tensor_concatenate(%a: $t, %b: $t) -> $rest_t {
  match? ((%a, %b)) {
    ($ctor(%x), $ctor(%y)) => $rest_ctor(concatenate((%x, %y), axis=0)),
  }
}"""),
    "tensor_array_concat": Template("""def @$tensor_array_concat(%ta: $ta) -> $rest_t {
  let %data = fn (%e: $t) -> $rest_data {
    match? (%e) { $ctor(%x) => %x, }
  };
  let %join = fn (%acc: $rest_data, %x: $rest_data) -> $rest_data {
    concatenate((%acc, %x), axis=0)
  };
  let %parts = @map(%data, %ta);
  $rest_ctor(@foldl(%join, @hd(%parts), @tl(%parts)))
}"""),
    "tensor_array_unstack_helper": Template(
        """def @$tensor_array_unstack_helper(%i: int32, %up: int32, %t: $data) -> List[$elem_t] {
  if (%i < %up) {
    Cons($elem_ctor(take(%t, %i, axis=0)), @$tensor_array_unstack_helper(%i + 1, %up, %t))
  } else {
    Nil
  }
}"""),
    "tensor_array_unstack": Template("""def @$tensor_array_unstack(%t: $data) -> List[$elem_t] {
  @$tensor_array_unstack_helper(0, take(shape_of(%t), 0), %t)
}"""),
}
