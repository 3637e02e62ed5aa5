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
