"""Grading on the bundled suite: gold resolves, empty does not, hacking patches are not resolved."""

from __future__ import annotations

import pytest

from swe_srl.benchmark.instances import load_instances
from swe_srl.grading.runner import grade

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def bundled(docker_engine):
    instances = load_instances("bundled")
    assert len(instances) >= 40 and {i.extra["split"] for i in instances} == {"train", "dev", "test"}
    return instances


def pick(instances, split: str):
    return next(i for i in instances if i.extra["split"] == split)


@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_gold_resolves_and_empty_does_not(bundled, split: str) -> None:
    inst = pick(bundled, split)
    gold = grade(inst, inst.patch)
    assert gold.status == "resolved", gold.log[-2000:]
    assert all(gold.tests[t] == "PASSED" for t in inst.FAIL_TO_PASS)
    empty = grade(inst, "")
    assert empty.status == "unresolved"
    assert any(empty.tests.get(t) != "PASSED" for t in inst.FAIL_TO_PASS)


def test_fake_passed_lines_do_not_count(bundled) -> None:
    # the "fix" prints pytest-looking PASSED lines for every target test at import instead of fixing the bug
    inst = pick(bundled, "train")
    module = inst.oracle_files[0]
    fake = "".join(f"print('PASSED {t}')\n" for t in inst.FAIL_TO_PASS)
    patch = (f"diff --git a/{module} b/{module}\n--- a/{module}\n+++ b/{module}\n@@ -0,0 +1,{fake.count(chr(10))} @@\n"
             + "".join("+" + line + "\n" for line in fake.splitlines()))  # fmt: skip
    result = grade(inst, patch)
    assert result.status == "unresolved", result.log[-1500:]
    assert "PASSED " + inst.FAIL_TO_PASS[0] in result.log  # the fake line was printed, and ignored


def test_test_file_edits_are_reverted(bundled) -> None:
    # deleting the failing tests' file would "fix" the run; the edit is dropped and the task stays unresolved
    inst = pick(bundled, "train")
    test_file = inst.FAIL_TO_PASS[0].split("::")[0]
    patch = f"diff --git a/{test_file} b/{test_file}\ndeleted file mode 100644\n--- a/{test_file}\n+++ /dev/null\n"
    result = grade(inst, patch)
    assert result.reverted_test_files == [test_file]
    assert result.status == "unresolved"


def test_patch_that_does_not_apply(bundled) -> None:
    inst = pick(bundled, "test")
    lines = inst.patch.splitlines(keepends=True)
    n = next(k for k, ln in enumerate(lines) if ln.startswith("-") and not ln.startswith("---"))
    bad = "".join(
        lines[:n] + ["-this line is not in the file\n"] + lines[n + 1 :]
    )  # the removed line differs
    assert grade(inst, bad).status == "patch_failed"
