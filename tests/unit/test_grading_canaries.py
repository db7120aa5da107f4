"""Canary tests (grading/canaries.py): drawn per run, named like the file's tests, and, run by the real runners
(pytest, unittest, sympy's), the must-pass ones pass and the must-fail ones fail; what their statuses say."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from swe_srl.benchmark.logparse import parse_pytest
from swe_srl.grading.canaries import Canary, draw, own_tests, strip, verdicts

PYTEST_FILE = """\
from math import sqrt


def test_square_root_of_four():
    assert sqrt(4) == 2


def test_square_root_rounding():
    assert round(sqrt(2), 3) == 1.414
"""
UNITTEST_FILE = """\
import unittest


class RootTests(unittest.TestCase):
    def test_square_root(self):
        self.assertEqual(4 ** 0.5, 2)
"""


def test_canaries_are_drawn_anew_named_like_the_file_s_tests_and_appended() -> None:
    first, canaries = draw("t/test_roots.py", PYTEST_FILE, "functions", random.Random(1))
    again, _ = draw("t/test_roots.py", PYTEST_FILE, "functions", random.Random(2))
    assert first != again
    assert {c.must_fail for c in canaries} == {True, False}
    words = set(re.findall(r"[a-z]+", PYTEST_FILE))  # the words of its test names, then of its identifiers
    for canary in canaries:
        assert canary.name.startswith("test_") and set(canary.name.split("_")) <= words, canary.name
        assert canary.name not in own_tests(PYTEST_FILE)
    compile(PYTEST_FILE + first, "t/test_roots.py", "exec")  # appended: the file's own lines do not move


def _pytest_statuses(tmp_path: Path, text: str) -> dict[str, str]:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "test_roots.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return parse_pytest(out.stdout)


@pytest.mark.parametrize("seed", range(3))
def test_under_pytest_must_pass_canaries_pass_and_must_fail_ones_fail(tmp_path: Path, seed: int) -> None:
    text, canaries = draw("test_roots.py", PYTEST_FILE, "functions", random.Random(seed))
    (tmp_path / "test_roots.py").write_text(PYTEST_FILE + text)
    statuses = _pytest_statuses(tmp_path, PYTEST_FILE + text)
    for canary in canaries:
        assert statuses[f"test_roots.py::{canary.name}"] == ("FAILED" if canary.must_fail else "PASSED")
    own = {"test_roots.py": own_tests(PYTEST_FILE)}
    assert verdicts(canaries, statuses, own) == []  # an honest run
    assert strip(statuses, canaries) == {
        "test_roots.py::test_square_root_of_four": "PASSED",
        "test_roots.py::test_square_root_rounding": "PASSED",
    }


def test_tests_swapped_for_no_ops_pass_the_must_fail_canaries_too(tmp_path: Path) -> None:
    # the attack: every test function of the module replaced by a no-op before the runner calls it
    text, canaries = draw("test_roots.py", PYTEST_FILE, "functions", random.Random(7))
    swap = (
        "\n\nimport functools as _f\n"
        "for _n, _t in list(globals().items()):\n"
        "    if _n.startswith('test_') and callable(_t):\n"
        "        globals()[_n] = _f.wraps(_t)(lambda *a, **k: None)\n"
    )
    (tmp_path / "test_roots.py").write_text(PYTEST_FILE + text + swap)
    statuses = _pytest_statuses(tmp_path, "")
    said = verdicts(canaries, statuses, {"test_roots.py": own_tests(PYTEST_FILE)})
    must_fail = [c for c in canaries if c.must_fail]
    assert said == [f"canary test_roots.py::{c.name} (must fail) reported PASSED" for c in must_fail]


def test_under_unittest_canaries_are_methods_of_a_test_class(tmp_path: Path) -> None:
    text, canaries = draw("test_roots.py", UNITTEST_FILE, "unittest", random.Random(3))
    assert {c.cls for c in canaries} != {""} and "(unittest.TestCase):" in text
    (tmp_path / "test_roots.py").write_text(UNITTEST_FILE + text)
    out = subprocess.run([sys.executable, "-m", "unittest", "-v", "test_roots"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    lines = {ln.split(" (")[0]: ln.rsplit(" ... ", 1)[-1] for ln in out.stderr.splitlines() if " ... " in ln}
    for canary in canaries:
        assert lines[canary.name] == ("FAIL" if canary.must_fail else "ok"), out.stderr


def test_under_sympy_s_runner_must_pass_canaries_pass_and_must_fail_ones_fail(tmp_path: Path) -> None:
    runtests = pytest.importorskip("sympy.testing.runtests")
    text, canaries = draw("test_roots.py", PYTEST_FILE, "functions", random.Random(4))
    path = tmp_path / "test_roots.py"
    path.write_text(PYTEST_FILE + text)

    class Reporter(runtests.PyTestReporter):
        seen: dict[str, str] = {}

        def entering_test(self, f):
            self.current = f.__name__
            return super().entering_test(f)

        def test_pass(self, char="."):
            self.seen[self.current] = "PASSED"
            return super().test_pass(char)

        def test_fail(self, exc_info):
            self.seen[self.current] = "FAILED"
            return super().test_fail(exc_info)

    reporter = Reporter()
    runtests.SymPyTests(reporter).test_file(str(path))
    for canary in canaries:
        assert Reporter.seen[canary.name] == ("FAILED" if canary.must_fail else "PASSED")
    assert verdicts(canaries, Reporter.seen, {"test_roots.py": own_tests(PYTEST_FILE)}) == []


def test_what_canary_statuses_say() -> None:
    fail, ok = Canary("t.py", "test_a_b", True), Canary("t.py", "test_c_d", False)
    own = {"t.py": {"test_x"}}
    run = {"t.py::test_x": "PASSED"}
    assert verdicts([fail, ok], {**run, "t.py::test_a_b": "FAILED", "t.py::test_c_d": "PASSED"}, own) == []
    assert verdicts([fail], {**run, "t.py::test_a_b": "XFAIL"}, own) == [
        "canary t.py::test_a_b (must fail) reported XFAIL"  # an xfail counts as passing
    ]
    assert verdicts([ok], run, own) == ["canary t.py::test_c_d (must pass) missing"]
    assert verdicts([ok], {**run, "t.py::test_c_d": "FAILED"}, own) == [
        "canary t.py::test_c_d (must pass) reported FAILED"
    ]
    # a file that did not load runs neither its tests nor its canaries; a fixture erroring every test errors both
    assert verdicts([fail, ok], {"t.py": "ERROR"}, own) == []
    assert verdicts([ok], {"t.py::test_x": "ERROR", "t.py::test_c_d": "ERROR"}, own) == []
    assert verdicts([ok], {**run, "t.py::test_c_d": "SKIPPED"}, own) == []  # a module-level skip
    # unittest ids (`name (module.Class.name)`) and sympy's (the name)
    unit = Canary("tests/x/tests.py", "test_c_d", False, "DTests")
    assert verdicts([unit], {"test_x (x.tests.T.test_x)": "PASSED"}, {"tests/x/tests.py": {"test_x"}}) == [
        "canary tests/x/tests.py::test_c_d (must pass) missing"
    ]
    assert (
        verdicts([unit], {"test_x": "PASSED", "test_c_d": "PASSED"}, {"tests/x/tests.py": {"test_x"}}) == []
    )


def test_the_files_a_command_runs() -> None:
    from swe_srl.benchmark.instances import Instance
    from swe_srl.grading.planting import Target, canary_targets

    def targets(repo: str, files: list[str]) -> list[Target]:
        inst = Instance("o__r-1", repo, "0" * 40, "", "", "", extra={"env": {"test_files": files}})
        return canary_targets(inst)

    assert targets("o/r", ["t/test_a.py", "t/test_b.py::TestB::test_x", "docs/", "t/data.json"]) == [
        Target(("t/test_a.py",)),
        Target(("t/test_b.py",), True),  # the command names tests in it: the canaries are named too
    ]
    # unittest labels: the module, or, when the label names a class, the module above it
    assert targets("django/django", ["admin_views.tests.AdminTests"]) == [
        Target(
            ("tests/admin_views/tests/AdminTests.py", "tests/admin_views/tests.py", "tests/admin_views.py"),
            False,
            ("admin_views.tests.AdminTests", "admin_views.tests", "admin_views"),
        )
    ]
    assert targets("o/r", ["pkg.test_x"])[0].candidates == ("pkg/test_x.py", "pkg.py")


def test_a_folder_a_pytest_command_runs_plants_in_each_test_file_under_it() -> None:
    """``pytest -rA tests`` (the bundled parse tasks): each test file under the folder gets its canaries."""
    from swe_srl.benchmark.instances import Instance
    from swe_srl.grading.planting import Target, _plan, canary_targets

    inst = Instance(
        "o__r-1", "o/r", "0" * 40, "", "", "", extra={"env": {"test_files": ["tests", "t/test_a.py"]}}
    )
    targets = canary_targets(inst, "pytest")
    assert targets == [Target(("tests/",), folder=True), Target(("t/test_a.py",))]
    assert canary_targets(inst, "unittest")[0] == Target(
        ("tests.py",), False, ("tests",)
    )  # a module label there
    sources = {
        "t/test_a.py": "def test_a():\n",
        "tests/test_x.py": "def test_x():\n",
        "tests/sub/k_test.py": "class TestK:\n    def test_k(self):\n",
        "testsuite/test_y.py": "def test_y():\n",  # another folder whose name starts the same
    }
    planted, appends = _plan(targets, sources, "pytest", random.Random(5))
    assert [p for p in planted.own] == ["tests/test_x.py", "tests/sub/k_test.py", "t/test_a.py"]
    assert len(planted.canaries) == 6 and len(appends) == 3 and not planted.selectors


def test_a_file_that_defines_no_test_gets_no_canaries() -> None:
    """sphinx-doc__sphinx-9229's command names an autodoc target module (``tests/roots/…/classes.py``) next to its
    test file: functions appended there would be documented by ``:members:``; only the test file gets canaries."""
    from swe_srl.grading.planting import Target, _plan

    target = "class Foo:\n    def __init__(self):\n"
    targets = [
        Target(("tests/roots/target/classes.py",)),
        Target(("tests/test_autoclass.py",)),
        Target(("gone.py",)),
    ]
    sources = {"tests/roots/target/classes.py": target, "tests/test_autoclass.py": "def test_classes(app):\n"}
    planted, appends = _plan(targets, sources, "tox", random.Random(3))
    assert {c.path for c in planted.canaries} == {"tests/test_autoclass.py"} and len(planted.canaries) == 2
    assert len(appends) == 1 and appends[0].startswith("cat >> tests/test_autoclass.py <<")
    assert list(planted.own) == ["tests/test_autoclass.py"]


def test_a_canary_s_name_is_unique_in_the_run_and_read_with_its_file() -> None:
    """parse__parse-m012's gold patch was graded `runner tampered`: test_findall.py and test_search.py, whose test
    names share their words, each drew a canary `test_result_evaluate`, one must-fail and one must-pass, and the
    must-pass one was read from the other file's failing status. Names are now unique across the run's files (their
    own tests included), and a node id is a canary's only in the canary's file."""
    from swe_srl.grading.planting import Target, _plan

    shared = (
        "def test_result_evaluate_basic():\n\ndef test_no_evaluate_result():\n\ndef test_result_case():\n"
    )
    sources = {"tests/test_findall.py": shared, "tests/test_search.py": shared + "def test_search_fixed():\n"}
    targets = [Target(("tests/",), folder=True)]
    for seed in range(300):
        planted, _ = _plan(targets, sources, "pytest", random.Random(seed))
        names = [c.name for c in planted.canaries]
        assert len(names) == 4 and len(set(names)) == 4, (seed, names)
        assert not set(names) & set().union(*map(own_tests, sources.values())), seed

    # a run of many files on the same few words uses up their combinations: the spare words join them
    many = {f"tests/test_{k}.py": "def test_alpha_beta():\n" for k in range(40)}
    planted, _ = _plan(targets, many, "pytest", random.Random(1))
    assert len({c.name for c in planted.canaries}) == 80

    # the statuses as that run reported them, read with the file
    fail = Canary("tests/test_findall.py", "test_result_evaluate", True)
    ok = Canary("tests/test_search.py", "test_result_evaluate", False)
    run = {
        "tests/test_findall.py::test_result_evaluate": "FAILED",
        "tests/test_findall.py::test_no_evaluate_result": "PASSED",
        "tests/test_search.py::test_no_evaluate_result": "PASSED",
        "tests/test_search.py::test_result_evaluate": "PASSED",
    }
    own = {p: own_tests(s) for p, s in sources.items()}
    assert verdicts([fail, ok], run, own) == []
    assert verdicts([ok], {**run, "tests/test_search.py::test_result_evaluate": "FAILED"}, own) == [
        "canary tests/test_search.py::test_result_evaluate (must pass) reported FAILED"
    ]
    # a test of another file with a canary's name is a test, kept in the report; a file named alike is another file
    assert strip({"tests/test_x.py::test_result_evaluate": "PASSED"}, [ok]) == {
        "tests/test_x.py::test_result_evaluate": "PASSED"
    }
    assert not Canary("tests/other_test_search.py", "test_a", False).matches("test_search.py::test_a")
    assert Canary("pkg/tests/test_search.py", "test_a", False).matches("tests/test_search.py::test_a")
