"""Our reporters' interpreter and test-identity checks (issue #62) in real runs on the host: pytest, a django-style
unittest runner and sympy's runner each run a small project whose package carries one of the attacks of
tests/interp_attacks.py (the bug left in place); every attack must be reported as tampering, and the honest run
must report none."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from interp_attacks import ATTACKS, EXPECTED, PYTEST_ONLY
from test_grading_reporters import RUNTESTS, run_with_channel

from swe_srl.benchmark.logparse import PYTEST_REPORT_PLUGIN
from swe_srl.benchmark.report_unittest import UNITTEST_REPORTER

FIRST = "import unittest\n\nimport pkg\n\n\nclass A(unittest.TestCase):\n    def test_first(self):\n        self.assertEqual(pkg.add(0, 0), 0)\n"
PYTEST_TESTS = """\
from unittest import mock

import pytest

import pkg


def test_ok():
    assert pkg.add(1, 0) == 1


def test_add():
    assert pkg.add(1, 2) == 3


@pytest.mark.parametrize("a", [1, 2])
def test_param(a):
    assert pkg.add(a, 0) == a


@mock.patch("os.getcwd")
def test_mocked(getcwd):
    assert getcwd is not None


class TestClass:
    def test_method(self):
        assert pkg.add(2, 0) == 2
"""
UNITTEST_TESTS = """\
import unittest
from unittest import mock

import pkg


class T(unittest.TestCase):
    def test_ok(self):
        self.assertEqual(pkg.add(1, 0), 1)

    def test_add(self):
        self.assertEqual(pkg.add(1, 2), 3)

    @mock.patch("os.getcwd")
    def test_mocked(self, getcwd):
        self.assertIsNotNone(getcwd)
"""
SYMPY_TESTS = """\
from sympy.testing.pytest import XFAIL

import pkg


def test_ok():
    assert pkg.add(1, 0) == 1


def test_add():
    assert pkg.add(1, 2) == 3


@XFAIL
def test_known():
    assert pkg.add(1, 2) == 3
"""
SYMPY_BIN = """\
import os, sys
sys.path.insert(0, os.getcwd())
from sympy.testing.runtests import PyTestReporter, SymPyTests
tests = SymPyTests(PyTestReporter(verbose=True))
tests._testfiles.extend(os.path.abspath(a) for a in sys.argv[1:] if a.endswith(".py"))
sys.exit(not tests.test())
"""
VENDORED = """\
import sys


class _SixMetaPathImporter:  # a vendored six's: it answers only for its own names
    def find_spec(self, fullname, path, target=None):
        return None

    def find_module(self, fullname, path=None):
        return None


sys.meta_path.append(_SixMetaPathImporter())
"""
"""What an honest package may do at import: add a finder of its own, as vendored copies of six do."""
# the failing test and a passing one, as each runner names them
IDS = {
    "pytest": ("test_x.py::test_add", "test_x.py::test_ok"),
    "unittest": (
        ("test_add (test_x.T.test_add)", "test_ok (test_x.T.test_ok)")
        if sys.version_info >= (3, 11)
        else ("test_add (test_x.T)", "test_ok (test_x.T)")
    ),
    "sympy": ("test_add", "test_ok"),
}


def project(tmp_path: Path, runner: str, attack: str, tests: str | None = None) -> list[str]:
    """The project for ``runner`` with ``attack`` appended to its package (``tests``: its test_x.py, else the
    runner's default); the command that runs it."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text(
        ATTACKS.get(attack, VENDORED) + "\n\ndef add(a, b):\n    return a - b\n"
    )
    if runner == "pytest":
        (tmp_path / "swe_srl_report_t.py").write_text(PYTEST_REPORT_PLUGIN)
        (tmp_path / "test_a.py").write_text(FIRST)
        (tmp_path / "test_x.py").write_text(tests or PYTEST_TESTS)
        return [sys.executable, "-m", "pytest", "-p", "swe_srl_report_t", "-p", "no:cacheprovider", "-rA", "test_a.py", "test_x.py"]  # fmt: skip
    (tmp_path / "reporter.py").write_text(UNITTEST_REPORTER)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text(FIRST)
    if runner == "unittest":
        (tmp_path / "tests" / "runtests.py").write_text(RUNTESTS)
        (tmp_path / "tests" / "test_x.py").write_text(tests or UNITTEST_TESTS)
        return [sys.executable, "reporter.py", "tests/runtests.py"]
    pytest.importorskip("sympy.testing.runtests")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "test").write_text(SYMPY_BIN)
    (tmp_path / "tests" / "test_x.py").write_text(tests or SYMPY_TESTS)
    return [
        sys.executable,
        "reporter.py",
        "bin/test",
        "tests/test_x.py",
    ]  # one file: its tests run as it loads


def run(tmp_path: Path, runner: str, attack: str, tests: str | None = None):
    env = {"PYTHONPATH": str(tmp_path), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return run_with_channel(project(tmp_path, runner, attack, tests), tmp_path, env)


@pytest.mark.parametrize("runner", ["pytest", "unittest", "sympy"])
def test_an_honest_run_reports_no_tampering(tmp_path: Path, runner: str) -> None:
    channel, out = run(tmp_path, runner, "honest")  # the package adds a vendored finder
    failing, passing = IDS[runner]
    assert channel.ended and channel.tampered == [], out[-2000:]
    assert channel.statuses[failing] == "FAILED" and channel.statuses[passing] == "PASSED", out[-2000:]


CASES = [
    (runner, attack)
    for runner in ("pytest", "unittest", "sympy")
    for attack in ATTACKS
    # sympy's runner compiles its test files itself, and calls each test function itself
    if not (runner == "sympy" and ("import hook" in attack or "test runs" in attack))
    and not (runner != "pytest" and attack in PYTEST_ONLY)
]


@pytest.mark.parametrize("runner, attack", CASES)
def test_an_attack_from_the_package_is_reported(tmp_path: Path, runner: str, attack: str) -> None:
    channel, out = run(tmp_path, runner, attack)
    failing, _ = IDS[runner]
    expected = (
        EXPECTED[attack] if isinstance(EXPECTED[attack], str) else EXPECTED[attack][runner == "unittest"]
    )
    if "import hook" in attack:  # a test module is imported after the package here
        expected = "test replaced"
    assert any(t.startswith(expected) for t in channel.tampered), (channel.tampered, out[-2000:])
    swapped = (
        "tests swapped by a profile hook",
        "test code replaced",
        "test runs replaced through a profile hook",
    )
    if attack in swapped and (runner, attack) != (
        "unittest",
        swapped[2],
    ):  # there the success is not recorded
        assert channel.statuses.get(failing) == "PASSED"  # the attack works: only the check sees it


HELPER_TESTS = {
    "pytest": "import unittest\n\nimport pytest\n\nimport pkg\n\n\ndef test_raises():\n    with pytest.raises(ValueError):\n"
    "        pkg.add(1, 2)\n\n\ndef test_approx():\n    assert pkg.add(1, 2) == pytest.approx(3)\n\n\n"
    "class T(unittest.TestCase):\n    def test_equal(self):\n        self.assertEqual(pkg.add(1, 2), 3)\n",
    "unittest": "import unittest\n\nimport pkg\n\n\nclass T(unittest.TestCase):\n    def test_raises(self):\n"
    "        with self.assertRaises(ValueError):\n            pkg.add(1, 2)\n\n    def test_equal(self):\n"
    "        self.assertEqual(pkg.add(1, 2), 3)\n",
}
HELPED = {  # the tests each attack passes (the bug in place: add subtracts, and raises nothing)
    ("pytest", "pytest's raises and approx replaced"): ("test_x.py::test_raises", "test_x.py::test_approx"),
    ("pytest", "TestCase's assert methods replaced"): ("test_x.py::T::test_equal",),
    ("unittest", "TestCase's assert methods replaced"): ("test_raises (test_x.T.test_raises)", "test_equal (test_x.T.test_equal)"),
    ("pytest", "helpers' code replaced"): ("test_x.py::test_raises", "test_x.py::T::test_equal"),
}  # fmt: skip


@pytest.mark.parametrize("runner, attack", list(HELPED))
def test_replaced_test_helpers_pass_failing_tests_and_are_reported(
    tmp_path: Path, runner: str, attack: str
) -> None:
    if runner == "unittest" and sys.version_info < (3, 11):
        pytest.skip("unittest's ids name the class only before 3.11")
    tests = HELPED[(runner, attack)]
    (tmp_path / "honest").mkdir(), (tmp_path / "attacked").mkdir()
    honest, out = run(tmp_path / "honest", runner, "honest", HELPER_TESTS[runner])
    assert honest.tampered == [] and [honest.statuses[t] for t in tests] == ["FAILED"] * len(tests), out[
        -2000:
    ]
    channel, out = run(tmp_path / "attacked", runner, attack, HELPER_TESTS[runner])
    assert [channel.statuses[t] for t in tests] == ["PASSED"] * len(tests), out[-2000:]  # the attack works
    assert any(t.startswith(EXPECTED[attack]) for t in channel.tampered), channel.tampered  # and is reported


def test_a_test_that_sets_a_trace_hook_and_restores_it_is_honest(tmp_path: Path) -> None:
    # coverage-like tracing inside a test, undone before the test ends, a builtin patched by monkeypatch, an os
    # function patched by a module-scoped fixture for several tests, and a decorator of the test file that wraps
    # without functools.wraps
    tests = (
        "import sys\n\n\ndef plain(f):\n    def inner():\n        return f()\n    return inner\n\n\n"
        "@plain\ndef test_wrapped():\n    assert True\n\n\n"
        "import os, pytest\n\n\n@pytest.fixture(scope='module')\ndef cwd():\n    saved = os.getcwd\n"
        "    os.getcwd = lambda: '/'\n    yield\n    os.getcwd = saved\n\n\n"
        "def test_cwd(cwd):\n    assert os.getcwd() == '/'\n\n\n"
        "def test_traced(monkeypatch):\n    seen = []\n"
        "    sys.settrace(lambda f, e, a: seen.append(e))\n    sum([1])\n    sys.settrace(None)\n"
        "    monkeypatch.setattr('builtins.input', lambda *a: 'y')\n    assert input() == 'y'\n"
    )
    (tmp_path / "swe_srl_report_t.py").write_text(PYTEST_REPORT_PLUGIN)
    (tmp_path / "test_t.py").write_text(tests)
    cmd = [sys.executable, "-m", "pytest", "-p", "swe_srl_report_t", "-p", "no:cacheprovider", "test_t.py"]
    channel, out = run_with_channel(
        cmd, tmp_path, {"PYTHONPATH": str(tmp_path), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    )
    wanted = {
        "test_t.py::test_wrapped": "PASSED",
        "test_t.py::test_cwd": "PASSED",
        "test_t.py::test_traced": "PASSED",
    }
    assert channel.tampered == [] and channel.statuses == wanted, out[-2000:]


@pytest.mark.parametrize("source", [PYTEST_REPORT_PLUGIN, UNITTEST_REPORTER])
def test_the_reporters_parse_as_python_3_5_and_define_each_name_once(source: str) -> None:
    # they run in the instance's Python (3.5 and up in Verified images), and both include report_integrity's text
    tree = ast.parse(source, feature_version=(3, 5))
    names = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    assert sorted(names) == sorted(set(names))
