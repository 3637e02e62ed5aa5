"""Progress displays for long steps: compiling a model's kernels on a cold cache, the ONNX
node suite, long hypothesis runs.

A step opens a :class:`ProgressTask` with :func:`task` and reports each item::

    with task("compiling kernels", total=len(items)) as bar:
        for name, item in items:
            bar.start(name)             # shown beside the bar while it runs
            compile(item)
            bar.advance()               # or bar.advance(passed=3, failed=1): shown counts

What appears depends on ``IRLIB_PROGRESS`` and on where stderr goes:

* ``IRLIB_PROGRESS`` unset: a live ``rich`` bar on stderr when stderr is a terminal,
  nothing otherwise (piped output, logs and tests stay clean);
* ``IRLIB_PROGRESS=0`` (or ``false``/``no``/``off``): nothing, even on a terminal;
* ``IRLIB_PROGRESS=1`` (or ``true``/``yes``/``on``): always; on a stream that is not a
  terminal, plain lines (``compiling kernels 3/12 fused_nn_conv2d_add``), at most about
  ten per task plus the last one, so logs and tests can read them.

A caller that already has a live display (``irlib run``'s stage spinner) takes the updates
itself with :func:`redirect`: tasks opened inside ``with redirect(callback):`` call
``callback(text)`` with their one-line state instead of drawing. ``rich`` is imported only
when a bar is drawn.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager, nullcontext

__all__ = ["ProgressTask", "task", "redirect", "mode", "ENV"]

ENV = "IRLIB_PROGRESS"
"""The environment variable that turns progress displays off (``0``) or forces them (``1``)."""

_OFF = {"0", "false", "no", "off"}
_ON = {"1", "true", "yes", "on"}
_REDIRECTS: list = []
_MIN_REDRAW_S = 0.1


def mode(stream=None) -> str:
    """How a task on ``stream`` (stderr by default) is shown: ``"off"``, ``"bar"`` (a live
    ``rich`` bar: the stream is a terminal) or ``"lines"`` (forced with
    ``IRLIB_PROGRESS=1`` on a stream that is not a terminal).

    Args:
        stream: the text stream the display would write to.
    """
    if _switched_off():
        return "off"
    stream = stream if stream is not None else sys.stderr
    try:
        tty = bool(stream.isatty())
    except (AttributeError, ValueError):        # a closed or odd stream
        tty = False
    if tty:
        return "bar"
    return "lines" if os.environ.get(ENV, "").strip().lower() in _ON else "off"


def _switched_off() -> bool:
    return os.environ.get(ENV, "").strip().lower() in _OFF


@contextmanager
def redirect(callback):
    """Send the state of every task opened inside the block to ``callback(text)`` instead
    of drawing it (for a caller whose own live display shows it), whatever the streams are;
    ``IRLIB_PROGRESS=0`` still silences them.

    Args:
        callback: called with the task's one-line state at each change, and with ``""``
            when the task closes.
    """
    _REDIRECTS.append(callback)
    try:
        yield
    finally:
        _REDIRECTS.remove(callback)


class ProgressTask:
    """One long step's display (made by :func:`task`); a no-op when progress is off.

    Args:
        description: what the step does (``"compiling kernels"``).
        total: how many items it has.
        completed: items already done when the display opens.
        stream: where to draw (stderr by default).
        guard: a function returning a context manager entered around each draw (the
            pytest plugin passes one that suspends pytest's output capture), or None.
        transient: remove the bar from a terminal when the task closes.
    """

    def __init__(self, description: str, total: int, completed: int = 0, stream=None,
                 guard=None, transient: bool = False):
        self.description = description
        self.total = max(int(total), 0)
        self.completed = int(completed)
        self.current = ""
        self.counts: dict = {}
        self._guard = guard or nullcontext
        self._stream = stream
        self._callback = _REDIRECTS[-1] if _REDIRECTS else None
        self._progress = self._task_id = None
        self._last_draw = 0.0
        self._last_line_step = -1
        if self._callback is not None:
            self.mode = "off" if _switched_off() else "callback"
        else:
            with self._guard():
                self.mode = mode(stream)
        if self.mode == "bar":
            self._open_bar(transient)
        self._draw(force=True)

    def _open_bar(self, transient: bool) -> None:
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn,
                                   TextColumn, TimeElapsedColumn)
        with self._guard():     # the console looks at the stream (a terminal?) when made
            console = Console(file=self._stream, stderr=self._stream is None)
            self._progress = Progress(SpinnerColumn(), TextColumn("{task.description}"),
                                      BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                      TextColumn("{task.fields[detail]}"), console=console,
                                      transient=transient,
                                      auto_refresh=self._guard is nullcontext,
                                      redirect_stdout=self._guard is nullcontext,
                                      redirect_stderr=self._guard is nullcontext)
            self._progress.start()
        self._task_id = self._progress.add_task(self.description, total=self.total or None,
                                                completed=self.completed, detail="")

    def detail(self) -> str:
        """The current item and the counts, as shown beside the bar."""
        parts = [self.current] if self.current else []
        if self.counts:
            parts.append("(" + ", ".join(f"{v} {k}" for k, v in self.counts.items()) + ")")
        return " ".join(parts)

    def text(self) -> str:
        """The task's state in one line: ``compiling kernels 3/12 fused_add (2 passed)``."""
        done = f"{self.completed}/{self.total}" if self.total else str(self.completed)
        detail = self.detail()
        return f"{self.description} {done}" + (f" {detail}" if detail else "")

    def start(self, name: str) -> None:
        """Name the item now running (shown until the next :meth:`start`)."""
        self.current = str(name)
        self._draw()

    def advance(self, step: int = 1, **counts) -> None:
        """Count ``step`` more items done; ``counts`` (``passed=3``) replace shown counts."""
        self.completed += int(step)
        self.counts.update(counts)
        self._draw(line=True)

    def _draw(self, force: bool = False, line: bool = False) -> None:
        if self.mode == "off":
            return
        if self.mode == "callback":
            self._callback(self.text())
            return
        if self.mode == "lines":
            if line and self._line_due():
                with self._guard():
                    print(self.text(), file=self._stream or sys.stderr, flush=True)
            return
        now = time.perf_counter()
        if not force and self._guard is not nullcontext and now - self._last_draw < _MIN_REDRAW_S:
            self._progress.update(self._task_id, completed=self.completed,
                                  detail=self.detail())
            return
        self._last_draw = now
        with self._guard():
            self._progress.update(self._task_id, completed=self.completed,
                                  detail=self.detail())
            if self._guard is not nullcontext:
                self._progress.refresh()

    def _line_due(self) -> bool:
        """Whether an advance prints its line: each one for up to 20 items, else each
        tenth of the total (and always the last)."""
        if not self.total or self.total <= 20 or self.completed >= self.total:
            return True
        step = 10 * self.completed // self.total
        if step != self._last_line_step:
            self._last_line_step = step
            return True
        return False

    def close(self) -> None:
        """End the display (the bar's last state stays unless it is transient)."""
        if self.mode == "callback":
            self._callback("")
        elif self.mode == "bar" and self._progress is not None:
            with self._guard():
                self._progress.update(self._task_id, completed=self.completed,
                                      detail=self.detail())
                self._progress.stop()
            self._progress = None
        self.mode = "off"

    def __enter__(self) -> "ProgressTask":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def task(description: str, total: int, completed: int = 0, stream=None, guard=None,
         transient: bool = False) -> ProgressTask:
    """Open a progress display for a long step (see the module docstring for when it is
    drawn); use it as a context manager, or call :meth:`ProgressTask.close`.

    Args:
        description: what the step does (``"compiling kernels"``).
        total: how many items it has.
        completed: items already done.
        stream: where to draw (stderr by default).
        guard: a context-manager factory entered around each draw, or None.
        transient: remove the bar from a terminal when the task closes.
    """
    return ProgressTask(description, total, completed, stream, guard, transient)
