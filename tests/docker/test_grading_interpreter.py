"""Issue #62's attacks from inside the test process, graded on real containers: a patch that leaves the bug in
place and appends to the package (imported by the tests) code that swaps the tests for no-ops or the reporter's
state for a forged one (tests/interp_attacks.py). On pytest (the bundled task), a django-style unittest runner
(test_grading_unittest.py's task) and sympy's ``bin/test`` (test_grading_sympy.py's instance, skipped without a sympy
clone), each must grade ``unresolved`` with reason ``runner tampered: ...``; the honest gold patch still resolves
with no tamper report (test_grading_unittest.py and test_grading_sympy.py grade gold and empty)."""

from __future__ import annotations

import pytest
import test_grading_sympy
import test_grading_unittest
from interp_attacks import ATTACKS, EXPECTED
from test_grading_attacks import make_patch

from swe_srl.benchmark.instances import load_instances
from swe_srl.benchmark.verdicts import TAMPERED
from swe_srl.grading.runner import grade
from swe_srl.infra.sandbox.factory import open_sandbox

pytestmark = pytest.mark.docker

PACKAGE = "tabulate/__init__.py"
unittest_task = test_grading_unittest.unittest_task
sympy_task = test_grading_sympy.sympy_task
ON_THE_HOST = ("builtins replaced", "reporter function code replaced", "TestCase's assert methods replaced",
               "builtins rebound through __builtins__ and sys.modules", "reporter found through its class",
               "tests swapped by an audit hook", "reporter found by its name on the command line",
               "sys.modules['pytest'] replaced")  # fmt: skip
PYTEST_ATTACKS = [
    a for a in ATTACKS if a not in ON_THE_HOST
]  # the rest: tests/unit/test_grading_integrity.py
OTHER_ATTACKS = [  # the issue's two, and a third that replaces the tests' code in place
    "tests swapped by a profile hook",
    "reporter state swapped",
    "test code replaced",
]


@pytest.fixture(scope="module")
def pytest_task(docker_engine):
    """The first bundled test-split task and the base text of its package."""
    inst = load_instances("bundled:test")[0]
    with open_sandbox(inst, profile="grading") as sandbox:
        return inst, {PACKAGE: sandbox.read_file(PACKAGE).decode()}


def attacked(base: dict[str, str], path: str, attack: str) -> str:
    return make_patch(base, {path: base[path] + "\n" + ATTACKS[attack]})


def assert_tampered(result, attack: str) -> None:
    assert result.status == "unresolved", result.log[-2000:]
    expected = EXPECTED[attack] if isinstance(EXPECTED[attack], tuple) else (EXPECTED[attack],)
    assert result.reason.startswith(TAMPERED) and any(e in result.reason for e in expected), result.reason


def test_gold_resolves_with_no_tamper_report(pytest_task) -> None:
    inst, _ = pytest_task
    result = grade(inst, inst.patch)
    assert result.status == "resolved" and "runner tampered" not in result.log, result.log[-2000:]


@pytest.mark.parametrize("attack", PYTEST_ATTACKS)
def test_pytest_attack_is_caught(pytest_task, attack: str) -> None:
    inst, base = pytest_task
    assert_tampered(grade(inst, attacked(base, PACKAGE, attack)), attack)


@pytest.mark.parametrize("attack", OTHER_ATTACKS)
def test_unittest_attack_is_caught(unittest_task, attack: str) -> None:
    task, base = unittest_task
    assert_tampered(grade(task, attacked(base, test_grading_unittest.PACKAGE, attack)), attack)


@pytest.mark.slow
@pytest.mark.parametrize("attack", OTHER_ATTACKS)
def test_sympy_attack_is_caught(sympy_task, attack: str) -> None:
    instance, repos, base = sympy_task
    patch = attacked(base, test_grading_sympy.PACKAGE, attack)
    assert_tampered(grade(instance, patch, repos_dir=repos), attack)
