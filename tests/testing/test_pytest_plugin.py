"""The pytest plugin: --irlib-thorough multiplies the example budgets, for a user's project
that enables it with ``-p irlib.testing.pytest_plugin`` and for irlib's own suite."""

import subprocess
import sys
import textwrap

from irlib.testing.budget import THOROUGH_FACTOR

USER_TEST = textwrap.dedent('''
    from irlib.testing.budget import examples

    def test_budget(irlib_examples, pytestconfig):
        expected = 7 * {factor} if pytestconfig.getoption("irlib_thorough") else 7
        assert irlib_examples(7) == examples(7) == expected
''').format(factor=THOROUGH_FACTOR)


def run_pytest(tmp_path, *options):
    (tmp_path / "test_user.py").write_text(USER_TEST)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "-p", "irlib.testing.pytest_plugin", *options, "test_user.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)


def test_a_user_project_gets_the_option_and_the_fixture(tmp_path):
    thorough = run_pytest(tmp_path, "--irlib-thorough")
    assert thorough.returncode == 0, thorough.stdout + thorough.stderr
    assert "irlib: --irlib-thorough" in thorough.stdout


def test_this_suite_enables_the_plugin(pytestconfig, irlib_examples):
    thorough = pytestconfig.getoption("irlib_thorough")
    assert irlib_examples(3) == (3 * THOROUGH_FACTOR if thorough else 3)


PROPERTY_TEST = textwrap.dedent('''
    from hypothesis import given, settings, strategies as st
    from irlib.testing.budget import examples

    @settings(max_examples=examples(3), database=None)
    @given(st.integers(0, 10**9))
    def test_property(n):
        assert n >= 0
''')


def _property_run(tmp_path, *options):
    import os
    import pathlib
    root = pathlib.Path(__file__).resolve().parents[2]
    (tmp_path / "test_prop.py").write_text(PROPERTY_TEST)
    env = dict(os.environ, IRLIB_PROGRESS="1")
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-p", "irlib.testing.pytest_plugin", *options, "test_prop.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    return [line for line in (out.stdout + out.stderr).splitlines()
            if "test_prop.py::test_property examples" in line]


def test_thorough_profile_shows_examples_run_against_the_budget(tmp_path):
    lines = _property_run(tmp_path, "--irlib-thorough")
    budget = 3 * THOROUGH_FACTOR
    counts = [line.rsplit(" ", 1)[1] for line in lines]
    # one line per tenth of the budget, and the last: all examples ran
    assert counts[0] == f"1/{budget}" and counts[-1] == f"{budget}/{budget}", lines
    assert len(lines) == 11, lines
    assert _property_run(tmp_path) == []       # the default profile stays silent


def test_thorough_profile_draws_a_bar_on_a_terminal(tmp_path):
    """pytest on a pseudo-terminal (its output capture on): the bar reaches the terminal."""
    import os
    import pathlib
    pty = __import__("pytest").importorskip("pty")
    root = pathlib.Path(__file__).resolve().parents[2]
    (tmp_path / "test_prop.py").write_text(PROPERTY_TEST)
    env = {k: v for k, v in os.environ.items() if k != "IRLIB_PROGRESS"}
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("TERM", "xterm")
    master, slave = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                "-p", "irlib.testing.pytest_plugin", "--irlib-thorough",
                                "test_prop.py"], stdout=slave, stderr=slave, cwd=tmp_path,
                               env=env)
    os.close(slave)
    output = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:             # the child closed the terminal
            break
        if not chunk:
            break
        output += chunk
    os.close(master)
    assert process.wait(timeout=120) == 0, output
    text = output.decode(errors="replace")
    budget = 3 * THOROUGH_FACTOR
    assert "test_prop.py::test_property examples" in text and f"{budget}/{budget}" in text
