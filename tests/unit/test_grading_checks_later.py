"""The reporters' per-test interpreter checks compare the objects they read with those of the last check that found
no change, and fall back to the full comparison only when one differs (report_integrity.py's ``_own_unchanged``,
the builtins and helpers, report_pytest.py's ``_machinery_unchanged``). Here the change is made by the code under
test during the second test, after checks that found nothing: each must still be reported, at that test."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_grading_reporters import RUNTESTS, run_with_channel

from swe_srl.benchmark.logparse import PYTEST_REPORT_PLUGIN
from swe_srl.benchmark.report_unittest import UNITTEST_REPORTER

FIND_REPORTER = (  # the reporter's globals, through its _Probe class (it is not among sys.modules)
    "reporter = [getattr(c, 'method').__globals__ for c in object.__subclasses__()\n"
    "            if '_NONCE' in getattr(getattr(c, 'method', None), '__globals__', {})][0]\n"
)
# what the package's change() does, called from the second test; the words the tamper report must hold
CHANGES = {
    "machinery": (
        "import _pytest.runner as r\nfirst = r.call_and_report\n"
        "def wrapped(*args, **kwargs):\n    return first(*args, **kwargs)\nr.call_and_report = wrapped\n",
        "runner ('_pytest.runner', None) changed",
    ),
    "machinery code": (
        "import _pytest.runner as r\n"
        "r.check_interactive_exception.__code__ = (lambda call, report: False).__code__\n",
        "runner ('_pytest.runner', None) changed",
    ),
    "machinery method added": (
        "import _pytest.reports as r\nr.TestReport.__getattr__ = lambda self, name: None\n",
        "runner ('_pytest.reports', 'TestReport') changed",
    ),
    "reporter global": (FIND_REPORTER + "reporter['_results'] = {}\n", "reporter _results changed"),
    "reporter code": (
        FIND_REPORTER + "reporter['_describe'].__code__ = (lambda obj: 'x').__code__\n",
        "reporter _describe changed",
    ),
    "builtins": (
        "import builtins\nfirst = builtins.sorted\n"
        "def mine(*args, **kwargs):\n    return first(*args, **kwargs)\nbuiltins.sorted = mine\n",
        "builtins.sorted replaced",
    ),
    "helpers": (
        "import unittest\nfirst = unittest.TestCase.assertEqual\n"
        "def mine(self, *args, **kwargs):\n    return first(self, *args, **kwargs)\n"
        "unittest.TestCase.assertEqual = mine\n",
        "unittest.case.TestCase.assertEqual replaced",
    ),
}
TESTS = (
    "import unittest\n\nimport pkg\n\n\nclass T(unittest.TestCase):\n"
    "    def test_1(self):\n        self.assertEqual(pkg.add(1, 0), 1)\n\n"
    "    def test_2(self):\n        pkg.change()\n        self.assertEqual(pkg.add(2, 0), 2)\n\n"
    "    def test_3(self):\n        self.assertEqual(pkg.add(3, 0), 3)\n"
)


def project(tmp_path: Path, runner: str, change: str) -> list[str]:
    body = CHANGES[change][0] if change else "pass\n"
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text(
        "def add(a, b):\n    return a + b\n\n\ndef change():\n"
        + "".join(f"    {line}\n" for line in body.splitlines())
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text(TESTS)
    if runner == "pytest":
        (tmp_path / "swe_srl_report_t.py").write_text(PYTEST_REPORT_PLUGIN)
        return [sys.executable, "-m", "pytest", "-p", "swe_srl_report_t", "-p", "no:cacheprovider", "tests/test_x.py"]  # fmt: skip
    (tmp_path / "reporter.py").write_text(UNITTEST_REPORTER)
    (tmp_path / "tests" / "runtests.py").write_text(RUNTESTS)
    return [sys.executable, "reporter.py", "tests/runtests.py"]


CASES = [("pytest", c) for c in CHANGES] + [
    ("unittest", c) for c in ("reporter global", "reporter code", "builtins")
]


@pytest.mark.parametrize(("runner", "change"), CASES + [("pytest", ""), ("unittest", "")])
def test_a_change_after_quiet_checks_is_reported(tmp_path: Path, runner: str, change: str) -> None:
    cmd = project(tmp_path, runner, change)
    env = {"PYTHONPATH": str(tmp_path), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    channel, out = run_with_channel(cmd, tmp_path, env)
    first = [k for k, v in channel.statuses.items() if "test_1" in k]
    assert first and all(channel.statuses[k] == "PASSED" for k in first), out[-2000:]
    if not change:
        assert channel.tampered == [] and len(channel.statuses) >= 3, out[-2000:]
        return
    wanted = CHANGES[change][1]
    found = [t for t in channel.tampered if wanted in t]
    assert found, (channel.tampered, out[-2000:])
    assert "test_1" not in found[0] and "test_2" in found[0], (
        found
    )  # seen at the test that made it, not before


EDITS_A_LATER_TEST_FILE = """\
import os


def add(a, b):
    return a - b


_path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "test_x.py")
with open(_path) as _f:
    _text = _f.read()
with open(_path, "w") as _f:
    _f.write(_text.replace("assert add(1, 2) == 3", "assert True"))
"""


def test_a_test_file_edited_on_disk_before_its_import_runs_as_first_read(tmp_path: Path) -> None:
    # pytest imports test files through the reporter's _rewrite_test: compiled from the text read before any code
    # under test ran, so an edit made since (here by the package, imported by the first test file) does not run
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text(EDITS_A_LATER_TEST_FILE)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text(
        "import pkg\n\n\ndef test_a():\n    assert pkg.add(0, 0) == 0\n"
    )
    (tmp_path / "tests" / "test_x.py").write_text(
        "from pkg import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    )
    (tmp_path / "swe_srl_report_t.py").write_text(PYTEST_REPORT_PLUGIN)
    cmd = [sys.executable, "-m", "pytest", "-p", "swe_srl_report_t", "-p", "no:cacheprovider", "tests/test_a.py", "tests/test_x.py"]  # fmt: skip
    env = {"PYTHONPATH": str(tmp_path), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    channel, out = run_with_channel(cmd, tmp_path, env)
    assert "assert True" in (tmp_path / "tests" / "test_x.py").read_text()  # the edit was made
    assert channel.statuses["tests/test_x.py::test_add"] == "FAILED" and channel.tampered == [], out[-2000:]
