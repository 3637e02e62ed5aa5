"""The metadata of a pass (:class:`PassInfo`) and the settings passes run under
(:class:`PassContext`, a context manager kept on a per-thread stack; ``build_config`` is
Relay's old alias). :mod:`irlib.transform.pass_infra` runs passes under them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class PassInfo:
    """A pass's metadata (Relay's ``PassInfo(opt_level, name, required)``).

    Args:
        opt_level: the lowest ``PassContext`` opt level at which the pass is enabled.
        name: the pass name (what ``required_pass`` / ``disabled_pass`` match).
        required: names of passes that must run before this one.
    """

    opt_level: int
    name: str
    required: tuple | None = None  # normalised to a tuple by __post_init__

    def __post_init__(self):
        required = self.required
        if required is None:
            required = ()
        if isinstance(required, str) or not isinstance(required, (list, tuple)):
            raise TypeError(f"PassInfo.required must be a list or tuple of pass names, "
                            f"got {required!r}")
        object.__setattr__(self, "required", tuple(required))
        object.__setattr__(self, "opt_level", int(self.opt_level))


# -- the pass context ------------------------------------------------------------------------------

_context_stack = threading.local()


class PassContext:
    """The settings passes run under; use it as a context manager.

    Args:
        opt_level: passes whose opt level is above this are skipped by :class:`Sequential`.
        fallback_device: the default device for unannotated code (kept for Relay
            compatibility; no pass here reads it).
        required_pass: names of passes enabled whatever their opt level (any iterable).
        disabled_pass: names of passes never run by :class:`Sequential` (any iterable).
        trace: ``trace(mod, pass_info, is_before)``, called before and after each module or
            function pass (not around a Sequential itself).
        config: option dict; ``{"irlib.verify": True}`` turns on verify mode.
        instruments: objects with any of ``enter_pass_ctx()``, ``exit_pass_ctx()``,
            ``should_run(mod, info)``, ``run_before_pass(mod, info)``,
            ``run_after_pass(mod, info)``.

    Raises:
        TypeError: if ``required_pass`` or ``disabled_pass`` is not iterable.
    """

    def __init__(self, opt_level=2, fallback_device=None, required_pass=None,
                 disabled_pass=None, trace=None, config=None, instruments=None):
        self.opt_level = int(opt_level)
        self.fallback_device = fallback_device
        # NOTE: list() as in Relay, so a bare string becomes its characters (a known quirk).
        self.required_pass = list(required_pass) if required_pass is not None else []
        self.disabled_pass = list(disabled_pass) if disabled_pass is not None else []
        self.trace = trace
        self.config = dict(config or {})
        self.instruments = list(instruments or [])

    @staticmethod
    def current() -> "PassContext":
        """The innermost active context, or a default one (opt level 2)."""
        stack = getattr(_context_stack, "stack", None)
        if stack:
            return stack[-1]
        return PassContext()

    @property
    def verify(self) -> bool:
        """Whether verify mode is on."""
        return bool(self.config.get("irlib.verify", False))

    def pass_enabled(self, info: PassInfo) -> bool:
        """Relay's ``PassEnabled``: disabled wins, then required, then the opt level.

        Args:
            info: the pass's :class:`PassInfo`.
        """
        if info.name in self.disabled_pass:
            return False
        if info.name in self.required_pass:
            return True
        return self.opt_level >= info.opt_level

    def __enter__(self) -> "PassContext":
        if not hasattr(_context_stack, "stack"):
            _context_stack.stack = []
        _context_stack.stack.append(self)
        for instrument in self.instruments:
            _call_hook(instrument, "enter_pass_ctx")
        return self

    def __exit__(self, *exc_info):
        for instrument in self.instruments:
            _call_hook(instrument, "exit_pass_ctx")
        _context_stack.stack.pop()
        return False

    def __repr__(self):
        return (f"PassContext(opt_level={self.opt_level}, required_pass={self.required_pass}, "
                f"disabled_pass={self.disabled_pass})")


def build_config(opt_level=2, fallback_device=None, required_pass=None, disabled_pass=None,
                 trace=None) -> PassContext:
    """A :class:`PassContext` (Relay's deprecated alias ``build_config``).

    Args:
        opt_level: the optimisation level.
        fallback_device: the fallback device.
        required_pass: pass names enabled regardless of level.
        disabled_pass: pass names never run.
        trace: the tracing callback ``trace(mod, info, is_before)``.

    Returns:
        The new context (use it with ``with``).
    """
    return PassContext(opt_level, fallback_device, required_pass, disabled_pass, trace)


def _call_hook(instrument, name, *args):
    hook = getattr(instrument, name, None)
    return hook(*args) if hook is not None else None
