"""Services the IR offers whose implementation lives in a higher layer.

The IR core may not import the text format or the Prelude (the layer rule of docs/index.md,
checked by tests/test_layers.py), yet ``expr.astext()``, ``str(mod)`` and ``mod.import_from_std(name)``
are part of its API, as in TVM. The higher layer installs its implementation here when it is
imported (``irlib.text`` installs the printer, ``irlib.prelude`` the std-library loader), and
the IR methods call through :func:`call`. Importing ``irlib`` (which importing any ``irlib.ir``
module does first) imports both, so the hooks are always installed in practice.

The hook names are:

* ``"astext"``: ``astext(node, show_meta_data, annotate) -> str`` (the text format);
* ``"pretty_print"``: ``pretty_print(node) -> str`` (``str()`` of a node or module);
* ``"import_std"``: ``import_std(mod, name) -> None`` (load a std file into ``mod``).
"""

from __future__ import annotations

from typing import Callable

from ..errors import IRError

__all__ = ["HOOKS", "install", "call"]

#: The hook names and the module that installs each.
HOOKS = {"astext": "irlib.text", "pretty_print": "irlib.text", "import_std": "irlib.prelude"}

_installed: dict[str, Callable] = {}


def install(name: str, function: Callable) -> None:
    """Install the implementation of hook ``name`` (called by the layer that provides it).

    Args:
        name: one of :data:`HOOKS`.
        function: the implementation; a later install replaces an earlier one.

    Raises:
        IRError: if ``name`` is not a hook name.
    """
    if name not in HOOKS:
        raise IRError(f"irlib.ir.hooks: no hook named {name!r}; the hooks are {sorted(HOOKS)}")
    _installed[name] = function


def call(name: str, *args, **kwargs):
    """Call the implementation installed for hook ``name`` with the given arguments.

    Raises:
        IRError: if no implementation is installed (the providing module, named in the
            message, has not been imported).
    """
    function = _installed.get(name)
    if function is None:
        if name not in HOOKS:
            raise IRError(f"irlib.ir.hooks: no hook named {name!r}; the hooks are "
                          f"{sorted(HOOKS)}")
        raise IRError(f"irlib.ir.hooks: {name!r} is provided by {HOOKS[name]}, which is not "
                      f"imported; import it (or irlib) first")
    return function(*args, **kwargs)
