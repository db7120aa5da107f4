"""Which run tells the harness's fault from the patch's when no target test runs, on real containers.

The task: the bundled tabulate instance (its image) with a test_patch adding a test module that imports a name
only the gold patch defines (pylint-dev__pylint-4551's shape): with the empty patch no target test runs (the
collection error interrupts pytest), yet the environment works.
"""

from __future__ import annotations

import copy

import pytest

from swe_srl.benchmark.instances import load_instances
from swe_srl.benchmark.verdicts import BROKE_RUN_GOLD, ENV_NO_TESTS, NO_REFERENCE
from swe_srl.grading.runner import grade
from swe_srl.grading.validate import validate

pytestmark = pytest.mark.docker

NEW_TEST = "test/test_fixed_name.py"
NEW_MODULE = "tabulate/fixed_name.py"


def new_file_diff(path: str, lines: list[str]) -> str:
    body = "".join(f"+{line}\n" for line in lines)
    return f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n{body}"


@pytest.fixture(scope="module")
def needs_name(docker_engine):
    """The bundled instance (same id, so same image) whose new test module imports what only gold adds."""
    task = copy.deepcopy(load_instances("bundled:test")[0])
    task.patch += new_file_diff(NEW_MODULE, ["FIXED = 'by gold'"])
    task.test_patch = new_file_diff(
        NEW_TEST,
        ["from tabulate.fixed_name import FIXED", "", "def test_fixed():", "    assert FIXED == 'by gold'"],
    )
    task.FAIL_TO_PASS = [f"{NEW_TEST}::test_fixed", *task.FAIL_TO_PASS]
    task.extra["env"] = {**task.extra["env"], "test_files": [NEW_TEST, *task.extra["env"]["test_files"]]}
    return task


def test_empty_patch_is_unresolved_when_gold_runs_the_tests(needs_name) -> None:
    empty = grade(needs_name, "")
    assert empty.status == "unresolved" and empty.reason == BROKE_RUN_GOLD, empty.log[-1500:]
    assert "fixed_name" in empty.log  # the import error the empty patch's run stopped at
    gold = grade(needs_name, needs_name.patch)
    assert gold.status == "resolved", gold.log[-1500:]
    assert gold.tests[f"{NEW_TEST}::test_fixed"] == "PASSED"


def test_a_patch_without_the_name_is_unresolved_not_an_environment_error(needs_name) -> None:
    result = grade(needs_name, load_instances("bundled:test")[0].patch)  # the fix, not the new module
    assert result.status == "unresolved" and result.reason == BROKE_RUN_GOLD, result.log[-1500:]


def test_validate_grades_the_task_valid(needs_name, tmp_path) -> None:
    entry = validate([needs_name], tmp_path / "val")[needs_name.instance_id]
    assert (entry["gold"], entry["empty"], entry["valid"]) == ("resolved", "unresolved", True), entry
    assert entry["empty_cause"] == BROKE_RUN_GOLD


def test_a_missing_test_runner_is_still_an_environment_error(needs_name) -> None:
    broken = copy.deepcopy(needs_name)
    broken.extra["env"] = {**broken.extra["env"], "test_cmd": "no_such_test_runner_zq"}
    for patch in ("", broken.patch):
        result = grade(broken, patch)
        assert result.status == "error" and result.reason == ENV_NO_TESTS, result.log[-1500:]
        assert "no_such_test_runner_zq" in result.log  # the reference's log tail says why


def test_no_gold_patch_means_no_reference_and_says_so(needs_name) -> None:
    bare = copy.deepcopy(needs_name)
    bare.patch = ""
    result = grade(bare, "")
    assert result.status == "error" and result.reason == NO_REFERENCE, result.log[-1500:]
    assert NO_REFERENCE in result.log
