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
``tensor_array_read``, ``tensor_array_write``, ``tensor_expand_dims``,
``tensor_array_scatter`` (+ ``_helper``), ``tensor_array_stack``, ``tensor_array_gather``
(+ ``_helper``), and for rank >= 1 also ``tensor_take``, ``tensor_concatenate``,
``tensor_array_concat``, ``tensor_array_unstack`` (+ ``_helper``) and ``tensor_array_split``
(+ ``ta_split_helper``). :meth:`StaticTensorArrayOps.define_tensor_array_scatter` adds a
scatter for a static indices shape (named with ``_indices_{dims}``).
:func:`get_tensor_array_shape` reads the element shape back out of a tensor array's type.
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
        templates = dict(_FUNCTIONS)
        if self.shape:
            templates.update(_RANKED_FUNCTIONS)
        self._define(templates, self._names(templates))

    def define_tensor_array_scatter(self, indices_shape=None) -> None:
        """Define ``tensor_array_scatter`` (+ helper) for indices of ``indices_shape``.

        Args:
            indices_shape: None for ``Tensor[(?), int32]`` indices (the names
                :meth:`register` uses), or a rank-1 shape; then the names end in
                ``_indices_{dims}`` (``tensor_array_scatter_float32_2_indices_3``) and a
                static first dim is the loop bound.

        Raises:
            ValueError: if ``indices_shape`` is not of rank 1.
        """
        templates = {key: _FUNCTIONS[key] for key in
                     ("tensor_array_scatter_helper", "tensor_array_scatter")}
        if indices_shape is None:
            self._define(templates, self._names(templates))
            return
        indices_shape = tuple(normalize_dim(d) for d in indices_shape)
        if len(indices_shape) != 1:
            raise ValueError(f"scatter indices must have rank 1, got shape {indices_shape}")
        extra = {"indices": indices_shape}
        names = self._names(templates)
        for canonical in templates:
            names[canonical] = self.get_name(canonical, extra)
        names["indices_data"] = _type_text(indices_shape, "int32")
        if not isinstance(indices_shape[0], AnyDim):
            names["indices_limit"] = str(int(indices_shape[0]))
        self._define(templates, names)

    def _names(self, templates) -> dict:
        """Template substitutions: ADT names of every derived shape and function names."""
        shape, dtype = self.shape, self.dtype
        names = {}
        for prefix, for_shape in self._shapes().items():
            names[prefix + "t"] = self._name("tensor_t", for_shape)
            names[prefix + "nil"] = self._name("tensor_nil", for_shape)
            names[prefix + "ctor"] = self._name("tensor_constructor", for_shape)
            names[prefix + "data"] = _type_text(for_shape, dtype)
            names[prefix + "ta"] = f"List[{names[prefix + 't']}]"
        names["indices_data"] = _type_text((Any,), "int32")
        names["indices_limit"] = "take(shape_of(%indices), 0)"
        for canonical in list(_FUNCTIONS) + (list(_RANKED_FUNCTIONS) if shape else []):
            names[canonical] = self.get_name(canonical)
        for canonical in templates:
            names.setdefault(canonical, self.get_name(canonical))
        return names

    def _shapes(self) -> dict:
        """The element shapes the ops use, by template prefix (see the module docstring)."""
        shape = self.shape
        lead = 1 if self.batch_dim == 1 else Any
        shapes = {"": shape, "grown_": (Any,) + shape, "lead_": (lead,) + shape}
        if shape:
            shapes.update({"rest_": (Any,) + shape[1:], "elem_": shape[1:]})
        return shapes

    def _define(self, templates: dict, names: dict) -> None:
        """Parse the ADTs and the ``templates`` whose names the module does not have yet."""
        mod = self.prelude.mod
        chunks, defined = [], set()
        for prefix in self._shapes():
            type_name = names[prefix + "t"]
            if type_name not in defined and type_name not in mod:
                defined.add(type_name)
                fields = {key: names[prefix + key] for key in ("t", "nil", "ctor", "data")}
                chunks.append(_ADT.substitute(fields))
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


def get_tensor_array_shape(expr, dtype: str, prelude):
    """The static element shape of the tensor array ``expr`` evaluates to.

    Type-checks ``expr`` against the prelude's module (the module is not changed) and reads
    the shape out of the name of its element ADT, ``static_tensor_{dtype}_{dims}_t``.

    Args:
        expr: an expression whose type is ``List[static_tensor_..._t]``.
        dtype: the element dtype.
        prelude: the :class:`~irlib.prelude.Prelude` whose module defines the ADT.

    Returns:
        The shape as a tuple of ints and Any (``()`` for scalars), or None if the elements
        are not a static tensor ADT of ``dtype``.

    Raises:
        TypeInferenceError: if ``expr`` is ill-typed.
        ValueError: if ``expr`` is not a tensor array (a List of an ADT).
    """
    from .ir.types import TypeCall
    from .transform.infer_type import infer_type
    ty = infer_type(expr, prelude.mod).checked_type
    list_type = prelude.mod.get_global_type_var("List")
    if not (isinstance(ty, TypeCall) and ty.func == list_type and len(ty.args) == 1
            and isinstance(ty.args[0], TypeCall)):
        raise ValueError(f"expected a tensor array (List of a tensor ADT), got type {ty}")
    name = ty.args[0].func.name_hint
    prefix, suffix = f"static_tensor_{dtype}_", "_t"
    if not (name.startswith(prefix) and name.endswith(suffix)):
        return None
    shape_str = name[len(prefix):-len(suffix)]
    if shape_str == "scalar":
        return ()
    shape = []
    for dim in shape_str.split("_"):
        if dim in ("any", "?"):
            shape.append(Any)
        elif dim.isdigit():
            shape.append(int(dim))
        else:
            return None
    return tuple(shape)


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
    "tensor_array_scatter_helper": Template(
        """def @$tensor_array_scatter_helper(%ta: $ta, %current: int32, %limit: int32,
    %indices: $indices_data, %values: $ta) -> $ta {
  if (%current == %limit) {
    %ta
  } else {
    let %ta1 = @update(%ta, take(%indices, %current), @nth(%values, %current));
    @$tensor_array_scatter_helper(%ta1, %current + 1, %limit, %indices, %values)
  }
}"""),
    "tensor_array_scatter": Template(
        """def @$tensor_array_scatter(%ta: $ta, %indices: $indices_data, %values: $ta) -> $ta {
  @$tensor_array_scatter_helper(%ta, 0, $indices_limit, %indices, %values)
}"""),
    # NOTE: accu collects the picked elements back to front, so the stack keeps index order.
    "tensor_array_gather_helper": Template(
        """def @$tensor_array_gather_helper(%ta: $ta, %accu: $ta, %current: int32, %limit: int32,
    %indices: Tensor[(?), int32]) -> $grown_t {
  if (%current == 0) {
    @$tensor_array_stack(%accu)
  } else {
    let %i = %current - 1;
    @$tensor_array_gather_helper(%ta, Cons(@nth(%ta, take(%indices, %i)), %accu), %i, %limit,
      %indices)
  }
}"""),
    "tensor_array_gather": Template(
        """def @$tensor_array_gather(%ta: $ta, %indices: Tensor[(?), int32]) -> $grown_t {
  let %limit = take(shape_of(%indices), 0);
  @$tensor_array_gather_helper(%ta, Nil, %limit, %limit, %indices)
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
  match (%ta) {
    Nil => $rest_nil,
    Cons(%h, %tl) => $rest_ctor(@foldl(%join, %data(%h), @map(%data, %tl))),
  }
}"""),
    # the slices have lengths[k] rows, so the array holds the [?] + shape[1:] ADT
    "ta_split_helper": Template(
        """def @$ta_split_helper(%ta: $rest_ta, %value: $t, %offset: int32, %current: int32,
    %limit: int32, %lengths: Tensor[(?), int32]) -> $rest_ta {
  if (%current == %limit) {
    %ta
  } else {
    let %length = take(%lengths, %current);
    let %ta1 = @update(%ta, %current, @$tensor_take(%value, %offset, %offset + %length));
    @$ta_split_helper(%ta1, %value, %offset + %length, %current + 1, %limit, %lengths)
  }
}"""),
    "tensor_array_split": Template(
        """def @$tensor_array_split(%ta: $rest_ta, %value: $t,
    %lengths: Tensor[(?), int32]) -> $rest_ta {
  @$ta_split_helper(%ta, %value, 0, 0, take(shape_of(%lengths), 0), %lengths)
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
