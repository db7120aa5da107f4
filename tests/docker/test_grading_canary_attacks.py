"""Canaries and the fail-closed cross-check on real containers (docs/grading.md): patches that leave the bug in
place and change what the tests do or what the reporter records, each unresolved.

* the issue's no-op swap (a profile hook that replaces each test module's test functions, and its test classes'
  methods, with no-ops once the module has run, before the runner collects them), on pytest and on a unittest
  runner: the must-fail canaries pass too, ``runner tampered: canary …``;
* the reporter's state swapped (its results dict answers ``PASSED`` for every key): the runner's own output says
  the target tests failed, so the run fails closed (``channel and runner output disagree``), canaries or not.
"""

from __future__ import annotations

import copy

import pytest
from test_grading_attacks import PACKAGE, make_patch, task  # noqa: F401  (the module fixture)
from test_grading_unittest import FAILING, PASSING, unittest_task  # noqa: F401

from swe_srl.benchmark.verdicts import DISAGREE, TAMPERED
from swe_srl.grading.runner import grade, run_tests_logged
from swe_srl.infra.sandbox.factory import open_sandbox

pytestmark = pytest.mark.docker

NO_OP_SWAP = """
import functools as _functools
import sys as _sys


def _no_op(function):
    @_functools.wraps(function)
    def run(*args, **kwargs):
        return None

    return run


def _swap(frame, event, arg):
    if event != "return" or frame.f_code.co_name != "<module>":
        return
    names = frame.f_globals
    if not str(names.get("__name__", "")).rpartition(".")[2].startswith("test"):
        return
    for name, value in list(names.items()):
        if name.startswith("test") and callable(value) and not isinstance(value, type):
            names[name] = _no_op(value)
        elif isinstance(value, type) and value.__module__ == names.get("__name__"):
            for attr, method in list(vars(value).items()):
                if attr.startswith("test") and callable(method):
                    setattr(value, attr, _no_op(method))


_sys.setprofile(_swap)
"""
FORGED_STATE = """
import gc as _gc


class _Passed(dict):
    def __getitem__(self, key):
        return "PASSED"

    def get(self, key, default=None):
        return "PASSED"


for _space in _gc.get_objects():  # the reporter's globals (its module is out of sys.modules once registered)
    if type(_space) is dict and "_results" in _space and "_NONCE" in _space:
        _space["_results"] = _Passed()
"""


def canary_verdicts(inst, patch: str) -> tuple[str, ...]:
    """What the canaries of a run of ``patch`` said (the reporter's own checks may say more: not asked here)."""
    with open_sandbox(inst, profile="grading") as sandbox:
        assert sandbox.apply_patch(patch).exit_code == 0
        run = run_tests_logged(sandbox, inst, canaries=True)
    return tuple(t for t in run.tampered if t.startswith("canary "))


def test_tests_swapped_for_no_ops_are_caught_by_the_canaries(task) -> None:  # noqa: F811
    inst, base = task
    patch = make_patch(base, {PACKAGE: base[PACKAGE] + NO_OP_SWAP})
    said = canary_verdicts(inst, patch)
    assert any("(must fail) reported PASSED" in s for s in said), said
    result = grade(inst, patch, strict=False)
    assert result.status == "unresolved" and result.reason.startswith(TAMPERED), result.reason
    assert set(result.tests) == set(grade(inst, inst.patch).tests)  # the canaries are never among the tests
    assert {f["rule"] for f in result.flags} >= {"profile or trace hook", "reaches into frames"}


def test_a_command_that_runs_a_folder_plants_in_each_test_file_under_it(task) -> None:  # noqa: F811
    """``pytest -rA test``: every test file under the folder gets canaries; the gold patch's grade stays resolved
    with no report, the no-op swap is caught in each file."""
    inst, base = task
    folder = copy.deepcopy(inst)
    folder.extra["env"]["test_files"] = ["test"]
    gold = grade(folder, inst.patch)
    assert gold.status == "resolved" and "runner tampered" not in gold.log, gold.log[-1500:]
    said = canary_verdicts(folder, make_patch(base, {PACKAGE: base[PACKAGE] + NO_OP_SWAP}))
    files = {s.split("::")[0].removeprefix("canary ") for s in said if "(must fail) reported PASSED" in s}
    assert files > set(inst.extra["env"]["test_files"]), said  # the folder holds test files the list does not


def test_tests_swapped_for_no_ops_under_unittest_are_caught_by_the_canaries(unittest_task) -> None:  # noqa: F811
    unit, base = unittest_task
    patch = make_patch(base, {PACKAGE: base[PACKAGE] + NO_OP_SWAP})
    said = canary_verdicts(unit, patch)
    assert said and all(s.startswith("canary tests/test_unit.py::") for s in said), said
    assert any("(must fail) reported PASSED" in s for s in said), said
    result = grade(unit, patch, strict=False)
    assert result.status == "unresolved" and result.reason.startswith(TAMPERED), result.reason
    assert set(result.tests) <= {FAILING, PASSING, "test_plain (test_unit.AsciidocTest.test_plain)"}


def test_a_forged_reporter_state_fails_closed_on_the_runner_s_output(task) -> None:  # noqa: F811
    inst, base = task
    patch = make_patch(base, {PACKAGE: base[PACKAGE] + FORGED_STATE})
    with open_sandbox(
        inst, profile="grading"
    ) as sandbox:  # without canaries: the reporter and the cross-check
        assert sandbox.apply_patch(patch).exit_code == 0
        run = run_tests_logged(sandbox, inst)
    if run.tampered:  # the reporter's checks of its own state saw the swap: nothing passes
        assert all(status == "ERROR" for status in run.tests.values()), run.tampered
    else:  # its own code wrote the forged records: the runner's output fails the targets it passed
        assert run.contradicted and set(run.contradicted) <= set(inst.FAIL_TO_PASS)
        assert all(
            run.tests[t] == "FAILED" for t in run.contradicted
        )  # the output's status, not the channel's
        assert any(f"{t}: channel PASSED, stdout FAILED" in run.disagreements for t in inst.FAIL_TO_PASS)
    result = grade(inst, patch, strict=False)  # with canaries too
    assert result.status == "unresolved", result.log[-1500:]
    assert result.reason.startswith((TAMPERED, DISAGREE)), result.reason
    assert result.flags  # the module lookup by attributes


def test_a_command_that_names_a_class_runs_its_canaries_too(unittest_task) -> None:  # noqa: F811
    # `python -m unittest tests.test_unit.AsciidocTest`: the canaries' class is named on the command line as well
    unit, base = unittest_task
    unit = copy.deepcopy(unit)
    unit.extra["env"] = {**unit.extra["env"], "test_cmd": "python -m unittest -v",
                         "test_files": ["tests.test_unit.AsciidocTest"]}  # fmt: skip
    ids = {t: t.replace("(test_unit.", "(tests.test_unit.") for t in (FAILING,)}
    unit.FAIL_TO_PASS, unit.PASS_TO_PASS = [ids[FAILING]], [PASSING]
    with open_sandbox(unit, profile="grading") as sandbox:
        run = run_tests_logged(
            sandbox, unit, canaries=True
        )  # the empty patch: the target fails, canaries as drawn
    assert not run.tampered and run.tests[ids[FAILING]] == "FAILED", run.log[-1500:]
    assert run.log.count(" ... FAIL") >= 2  # the target and a must-fail canary: the canaries' class ran
    assert " ... ok" in run.log
    gold = grade(unit, unit.patch)  # a must-pass canary missing where its file ran would be tampering
    assert gold.status == "resolved" and not gold.cross_check, gold.log[-1500:]
    swapped = grade(unit, make_patch(base, {PACKAGE: base[PACKAGE] + NO_OP_SWAP}), strict=False)
    assert swapped.status == "unresolved" and swapped.reason.startswith(TAMPERED), swapped.reason
