"""The torch converter table: one small function per torch op, registered by target.

A target is what a node of a ``torch.fx`` graph calls:

* ``call_function`` nodes: a Python callable (``torch.add``, ``operator.getitem``,
  ``torch.nn.functional.relu``) or, in ``torch.export`` programs, an ATen overload
  (``torch.ops.aten.add.Tensor``);
* ``call_method`` nodes: a tensor method, registered as the string ``"Tensor.<name>"``
  (``"Tensor.view"``);
* ``call_module`` nodes: a ``torch.nn.Module`` class (``torch.nn.Conv2d``).

Converters are registered with :func:`converter`::

    @converter(torch.relu, F.relu, "Tensor.relu", aten.relu.default)
    def _relu(ctx, args, kwargs): ...

A function/method/ATen converter is called ``fn(ctx, args, kwargs)``, a module converter
``fn(ctx, module, args, kwargs)``; ``args``/``kwargs`` are the node's arguments with every
node replaced by its converted value (an irlib expression, or a Python value for nodes that
compute sizes). It returns an expression, a Python value, or a tuple/list of them.
"""

from __future__ import annotations

_CONVERTERS: dict = {}


def target_key(target):
    """The registry key of an FX node target (the target itself; method names as given)."""
    return target


def target_name(target) -> str:
    """A readable name of a registered target: ``torch.nn.Conv2d``, ``aten.add.Tensor``,
    ``Tensor.view``, ``operator.getitem``, ``torch.nn.functional.relu``."""
    if isinstance(target, str):
        return target
    if isinstance(target, type):
        module = target.__module__
        if module.startswith("torch.nn.modules"):
            module = "torch.nn"
        return f"{module}.{target.__qualname__}"
    if type(target).__name__ == "OpOverload":
        return str(target)
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__name__", None) or str(target)
    if module in ("_operator", "operator"):
        module = "operator"
    elif module in ("torch._C._nn", "torch.nn.functional"):
        module = "torch.nn.functional"
    elif module.startswith("torch._C._") and module[10:] in ("linalg", "fft", "special"):
        sub = module[10:]
        module = f"torch.{sub}"
        name = name[len(sub) + 1:] if name.startswith(sub + "_") else name
    elif module.startswith("torch._C") or module == "torch.functional":
        module = "torch"
    if module == "builtins":
        return name
    return f"{module}.{name}" if module else name


def target_kind(target) -> str:
    """``"module"``, ``"method"``, ``"aten"`` or ``"function"``: how ``target`` is called."""
    if isinstance(target, type):
        return "module"
    if isinstance(target, str):
        return "method"
    if type(target).__name__ == "OpOverload":
        return "aten"
    return "function"


def converter(*targets):
    """Decorator registering a converter for every target in ``targets``.

    Args:
        targets: callables, ATen overloads, ``"Tensor.<method>"`` strings or module classes.
            A target that is None (an op missing from this torch build) is skipped.

    Returns:
        The decorator (it returns the function unchanged).
    """
    def register(function):
        for target in targets:
            if target is not None:
                _CONVERTERS[target_key(target)] = function
        return function
    return register


def lookup(target):
    """The converter registered for ``target``, or None."""
    try:
        return _CONVERTERS.get(target_key(target))
    except TypeError:  # an unhashable target
        return None


def registered_targets() -> list:
    """Every registered target, as ``(kind, name, target)`` sorted by kind and name."""
    rows = [(target_kind(t), target_name(t), t) for t in _CONVERTERS]
    return sorted(rows, key=lambda row: (row[0], row[1]))
