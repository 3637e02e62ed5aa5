"""One namespace for every name ``to_python`` generates.

Names are valid identifiers made from the IR's name hints (``%x.1`` gives ``x_1``), unique
within the generated module, and clear of Python keywords, builtins and the names the
generated prologue imports. One namespace for the whole module means no generated function
ever shadows a name of an enclosing one, so Python's scoping rules cannot surprise it.
"""

from __future__ import annotations

import builtins
import keyword
import re


class Namespace:
    """Hands out unique identifiers.

    Args:
        reserved: names that must never be handed out (imports, helper names).
    """

    def __init__(self, reserved=()):
        self._used = set(reserved) | set(keyword.kwlist) | set(keyword.softkwlist) \
            | set(dir(builtins))
        self._counts: dict = {}
        self._by_object: dict = {}
        self._bases: dict = {}

    def fresh(self, hint: str) -> str:
        """A new identifier based on ``hint``."""
        base = self._bases.get(hint)
        if base is None:
            base = re.sub(r"\W", "_", hint or "v")
            if not base or base[0].isdigit():
                base = "v_" + base
            self._bases[hint] = base
        if base not in self._used:
            self._used.add(base)
            return base
        count = self._counts.get(base, 0)
        while True:
            count += 1
            candidate = f"{base}_{count}"
            if candidate not in self._used:
                self._counts[base] = count
                self._used.add(candidate)
                return candidate

    def name_of(self, obj, hint: str) -> str:
        """The identifier of ``obj`` (the same object always gets the same name)."""
        name = self._by_object.get(obj)
        if name is None:
            name = self._by_object[obj] = self.fresh(hint)
        return name
