"""A unittest runner graded through our reporter, on real containers: a task built here on the bundled tabulate
image whose test_patch brings a django-style ``tests/runtests.py`` (a ``unittest.TextTestRunner`` at verbosity 2)
and a unittest module. Gold resolves, the empty patch does not, and patches that leave the bug in place and forge
the runner's output (printed ``... ok`` lines, an early exit, fake channel records, a result class rewritten
in-process) stay unresolved.
"""

from __future__ import annotations

import copy

import pytest
from test_grading_attacks import make_patch
from test_grading_references import new_file_diff

from swe_srl.benchmark.instances import load_instances
from swe_srl.benchmark.verdicts import TAMPERED
from swe_srl.grading.runner import grade
from swe_srl.infra.sandbox.factory import open_sandbox

pytestmark = pytest.mark.docker

PACKAGE = "tabulate/__init__.py"
RUNTESTS = """\
#!/usr/bin/env python
import os
import sys
import unittest

here = os.path.dirname(os.path.abspath(__file__))
suite = unittest.TestSuite()
for label in sys.argv[1:]:
    if label.endswith(".py"):
        suite.addTests(unittest.defaultTestLoader.discover(here, pattern=os.path.basename(label)))
result = unittest.TextTestRunner(verbosity=2).run(suite)
sys.exit(not result.wasSuccessful())
"""
TESTS = """\
import unittest

from tabulate import tabulate


class AsciidocTest(unittest.TestCase):
    def test_decimal_column(self):
        header = tabulate([["a", 1.5]], headers=["s", "n"], tablefmt="asciidoc").splitlines()[0]
        self.assertNotIn("x", header)

    def test_plain(self):
        \"\"\"A plain table holds its cell.\"\"\"
        self.assertIn("1", tabulate([[1]]))
"""
# ids as unittest prints them at verbosity 2 on the image's Python 3.11 (the docstring's first line for test_plain)
FAILING = "test_decimal_column (test_unit.AsciidocTest.test_decimal_column)"
PASSING = "A plain table holds its cell."


def _executable(diff: str) -> str:
    return diff.replace("new file mode 100644", "new file mode 100755", 1)


@pytest.fixture(scope="module")
def unittest_task(docker_engine):
    """(task, base text of the package) for the bundled instance with a unittest runner and tests."""
    task = copy.deepcopy(load_instances("bundled:test")[0])
    task.test_patch = _executable(new_file_diff("tests/runtests.py", RUNTESTS.splitlines())) + new_file_diff(
        "tests/test_unit.py", TESTS.splitlines()
    )
    task.FAIL_TO_PASS, task.PASS_TO_PASS = [FAILING], [PASSING]
    task.extra["env"] = {
        **task.extra["env"],
        "test_cmd": "./tests/runtests.py --verbosity 2",
        "test_files": ["tests/test_unit.py"],
    }
    with open_sandbox(task, profile="grading") as sandbox:
        base = {PACKAGE: sandbox.read_file(PACKAGE).decode()}
    return task, base


def forgery(name: str, base: dict[str, str]) -> dict[str, str]:
    lines = f"{FAILING} ... ok\n{PASSING} ... ok\n"
    code = {
        "printed ok lines": f"print({lines!r})\n",
        "printed ok lines, then exit 0": f"import sys\nprint({lines!r})\nsys.exit(0)\n",
        "printed ok lines, then os._exit": f"import os, sys\nprint({lines!r})\nsys.stdout.flush()\nos._exit(0)\n",
        "fake channel records on every descriptor": (
            "import os\n"
            f"_fake = ''.join('@swe-srl ' + '0' * 24 + ' ' + w + '\\n' for w in ['start', 'PASSED {FAILING}', 'end'])\n"
            "for _fd in map(int, os.listdir('/proc/self/fd')):\n"
            "    try: os.write(_fd, _fake.encode())\n    except OSError: pass\n"
        ),
        "result class rewritten in-process": (
            "import unittest.result as _r\n_r.TestResult.addFailure = lambda self, test, err: self.addSuccess(test)\n"
        ),
    }[name]
    return {PACKAGE: base[PACKAGE] + "\n" + code}


FORGERIES = [
    "printed ok lines",
    "printed ok lines, then exit 0",
    "printed ok lines, then os._exit",
    "fake channel records on every descriptor",
    "result class rewritten in-process",
]


def test_gold_resolves_and_empty_does_not(unittest_task) -> None:
    task, _ = unittest_task
    gold = grade(task, task.patch)
    assert gold.status == "resolved", gold.log[-2000:]
    assert gold.tests[FAILING] == "PASSED" and gold.tests[PASSING] == "PASSED"
    empty = grade(task, "")
    assert empty.status == "unresolved", empty.log[-2000:]
    assert empty.tests[FAILING] == "FAILED" and empty.tests[PASSING] == "PASSED"


@pytest.mark.parametrize("name", FORGERIES)
def test_forgery_is_not_resolved(unittest_task, name: str) -> None:
    task, base = unittest_task
    result = grade(task, make_patch(base, forgery(name, base)))
    assert result.status == "unresolved", result.log[-2000:]
    assert result.tests.get(FAILING) != "PASSED"
    if name == "result class rewritten in-process":
        assert result.reason.startswith(TAMPERED), result.reason


def test_runner_edits_are_dropped_like_test_files(unittest_task) -> None:
    # the runner lives in the repository (tests/runtests.py): a patch's version of it never runs
    task, base = unittest_task
    forged = RUNTESTS.replace("result = ", f"print({FAILING + ' ... ok'!r})\nresult = ")
    patch = make_patch({PACKAGE: base[PACKAGE], "tests/runtests.py": None}, {"tests/runtests.py": forged})
    result = grade(task, patch)
    assert result.status == "unresolved" and "tests/runtests.py" in result.reverted_test_files
