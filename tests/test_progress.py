"""irlib.progress: when a long step's progress is drawn, and what it says."""

from __future__ import annotations

import io

from irlib import progress


class _Terminal(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self):
        return True


def _run(stream, total=3, **counts):
    with progress.task("checking cases", total=total, stream=stream) as bar:
        for i in range(total):
            bar.start(f"case{i}")
            bar.advance(**{k: v * (i + 1) for k, v in counts.items()})


def test_silent_without_a_terminal_unless_forced(monkeypatch):
    monkeypatch.delenv(progress.ENV, raising=False)
    stream = io.StringIO()
    _run(stream)
    assert stream.getvalue() == ""
    assert progress.mode(stream) == "off"


def test_progress_off_silences_a_terminal(monkeypatch):
    monkeypatch.setenv(progress.ENV, "0")
    stream = _Terminal()
    _run(stream)
    assert stream.getvalue() == ""


def test_forced_lines_are_throttled_to_tenths(monkeypatch):
    monkeypatch.setenv(progress.ENV, "1")
    stream = io.StringIO()
    _run(stream, total=3, passed=1)
    assert stream.getvalue().splitlines() == [
        "checking cases 1/3 case0 (1 passed)", "checking cases 2/3 case1 (2 passed)",
        "checking cases 3/3 case2 (3 passed)"]
    stream = io.StringIO()
    _run(stream, total=95, failed=0)
    lines = stream.getvalue().splitlines()
    # one line per tenth of 95 items (10 of them: 0-9 tenths) plus the last one
    assert len(lines) == 11, lines
    assert lines[-1] == "checking cases 95/95 case94 (0 failed)"


def test_terminal_gets_a_bar(monkeypatch):
    monkeypatch.delenv(progress.ENV, raising=False)
    stream = _Terminal()
    _run(stream, total=4, passed=1)
    text = stream.getvalue()
    assert "checking cases" in text and "4/4" in text and "(4 passed)" in text


def test_redirect_hands_the_state_to_the_caller(monkeypatch):
    monkeypatch.setenv(progress.ENV, "1")
    seen = []
    stream = io.StringIO()
    with progress.redirect(seen.append):
        _run(stream, total=2)
    assert stream.getvalue() == ""
    assert seen == ["checking cases 0/2", "checking cases 0/2 case0", "checking cases 1/2 case0",
                    "checking cases 1/2 case1", "checking cases 2/2 case1", ""]
    monkeypatch.setenv(progress.ENV, "0")
    seen.clear()
    with progress.redirect(seen.append):
        _run(stream, total=2)
    assert seen == []


def test_guard_is_entered_around_every_draw(monkeypatch):
    """As under pytest: stderr is captured except inside the guard, which hands the real
    terminal back; the bar must be made and drawn inside it."""
    import contextlib
    import sys
    monkeypatch.delenv(progress.ENV, raising=False)
    terminal, captured = _Terminal(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", captured)

    @contextlib.contextmanager
    def guard():
        monkeypatch.setattr(sys, "stderr", terminal)
        try:
            yield
        finally:
            monkeypatch.setattr(sys, "stderr", captured)

    with progress.task("examples", total=3, guard=guard) as bar:
        for _ in range(3):
            bar.advance()
    assert captured.getvalue() == ""
    assert "examples" in terminal.getvalue() and "3/3" in terminal.getvalue()
