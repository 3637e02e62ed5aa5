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

from .ir.dims import Any, AnyDim, normalize_dim

_ADT_NAMES = ("tensor_t",)


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
        chunks: list = []
        defined: set = set()
        shape, dtype = self.shape, self.dtype

        def name_for(canonical, for_shape=shape):
            return get_name_static(canonical, dtype, for_shape, self.batch_dim)

        def have(name: str) -> bool:
            return name in defined or name in mod

        def add(name: str, text: str) -> None:
            if not have(name):
                defined.add(name)
                chunks.append(text)

        def adt(for_shape) -> str:
            type_name = name_for("tensor_t", for_shape)
            add(type_name, f"type {type_name} {{\n  {name_for('tensor_nil', for_shape)},\n"
                           f"  {name_for('tensor_constructor', for_shape)}"
                           f"({_type_text(for_shape, dtype)}),\n}}")
            return type_name

        t = adt(shape)
        ta = f"List[{t}]"
        ctor = name_for("tensor_constructor")
        add(name_for("tensor_get_data"), f"""def @{name_for('tensor_get_data')}(%t: {t}) -> {_type_text(shape, dtype)} {{
  match? (%t) {{ {ctor}(%x) => %x, }}
}}""")
        add(name_for("tensor_array"), f"""def @{name_for('tensor_array')}(%n: int32) -> {ta} {{
  if (%n == 0) {{ Nil }} else {{ Cons({name_for('tensor_nil')}, @{name_for('tensor_array')}(%n - 1)) }}
}}""")
        add(name_for("tensor_array_read"),
            f"def @{name_for('tensor_array_read')}(%ta: {ta}, %i: int32) -> {t} "
            f"{{ @nth(%ta, %i) }}")
        add(name_for("tensor_array_write"),
            f"def @{name_for('tensor_array_write')}(%ta: {ta}, %i: int32, %v: {t}) -> {ta} "
            f"{{ @update(%ta, %i, %v) }}")
        lead = 1 if self.batch_dim == 1 else Any
        expanded_shape = (lead,) + shape
        expanded = adt(expanded_shape)
        add(name_for("tensor_expand_dims"), f"""def @{name_for('tensor_expand_dims')}(%t: {t}) -> {expanded} {{
  match? (%t) {{ {ctor}(%x) => {name_for('tensor_constructor', expanded_shape)}(expand_dims(%x, axis=0)), }}
}}""")
        stacked_shape = (Any,) + shape
        stacked = adt(stacked_shape)
        stacked_tensor = _type_text(stacked_shape, dtype)
        add(name_for("tensor_array_stack"), f"""def @{name_for('tensor_array_stack')}(%ta: {ta}) -> {stacked} {{
  let %data = fn (%e: {expanded}) -> {stacked_tensor} {{
    match? (%e) {{ {name_for('tensor_constructor', expanded_shape)}(%x) => %x, }}
  }};
  let %join = fn (%a: {stacked_tensor}, %b: {stacked_tensor}) -> {stacked_tensor} {{
    concatenate((%a, %b), axis=0)
  }};
  let %parts = @map(%data, @map(@{name_for('tensor_expand_dims')}, %ta));
  {name_for('tensor_constructor', stacked_shape)}(@foldl(%join, @hd(%parts), @tl(%parts)))
}}""")
        if shape:
            self._register_ranked(add, adt, name_for, t, ta, ctor)
        if chunks:
            from .text.parser import parse
            text = '#[version = "0.0.5"]\n' + "\n".join(chunks) + "\n"
            merged = parse(text, source_name=f"static_tensor_array_{self.get_name('ops')}",
                           init_module=mod)
            mod.update(merged)

    def _register_ranked(self, add, adt, name_for, t, ta, ctor) -> None:
        shape, dtype = self.shape, self.dtype
        rest_shape = (Any,) + shape[1:]
        rest = adt(rest_shape)
        rest_ctor = name_for("tensor_constructor", rest_shape)
        add(name_for("tensor_take"), f"""def @{name_for('tensor_take')}(%t: {t}, %lower: int32, %upper: int32) -> {rest} {{
  match? (%t) {{
    {ctor}(%x) => {rest_ctor}(take(%x, arange(%lower, %upper, 1, dtype="int32"), axis=0)),
  }}
}}""")
        add(name_for("tensor_concatenate"), f"""def @{name_for('tensor_concatenate')}(%a: {t}, %b: {t}) -> {rest} {{
  match? ((%a, %b)) {{
    ({ctor}(%x), {ctor}(%y)) => {rest_ctor}(concatenate((%x, %y), axis=0)),
  }}
}}""")
        add(name_for("tensor_array_concat"), f"""def @{name_for('tensor_array_concat')}(%ta: {ta}) -> {rest} {{
  let %data = fn (%e: {t}) -> {_type_text(rest_shape, dtype)} {{
    match? (%e) {{ {ctor}(%x) => %x, }}
  }};
  let %join = fn (%acc: {_type_text(rest_shape, dtype)}, %x: {_type_text(rest_shape, dtype)}) -> {_type_text(rest_shape, dtype)} {{
    concatenate((%acc, %x), axis=0)
  }};
  let %parts = @map(%data, %ta);
  {rest_ctor}(@foldl(%join, @hd(%parts), @tl(%parts)))
}}""")
        element_shape = shape[1:]
        element = adt(element_shape)
        helper = name_for("tensor_array_unstack_helper")
        add(helper, f"""def @{helper}(%i: int32, %up: int32, %t: {_type_text(shape, dtype)}) -> List[{element}] {{
  if (%i < %up) {{
    Cons({name_for('tensor_constructor', element_shape)}(take(%t, %i, axis=0)), @{helper}(%i + 1, %up, %t))
  }} else {{
    Nil
  }}
}}""")
        add(name_for("tensor_array_unstack"), f"""def @{name_for('tensor_array_unstack')}(%t: {_type_text(shape, dtype)}) -> List[{element}] {{
  @{helper}(0, take(shape_of(%t), 0), %t)
}}""")
