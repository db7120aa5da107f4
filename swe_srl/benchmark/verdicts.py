"""Pure grading rules: which paths are test files, which model-patch edits are dropped, resolved or not.

Statuses: ``resolved`` / ``unresolved`` (the patch is wrong), ``patch_failed`` (it does not apply), ``error``
(infrastructure: image build or install, daemon, harness timeout, a test run where none of the patch, the empty
patch and the gold patch runs any FAIL_TO_PASS/PASS_TO_PASS test — never counted as a wrong patch; ``reason``
says which).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.logparse import PASSING, parser_for
from swe_srl.benchmark.specs import test_files
from swe_srl.core.patches import drop_sections, patch_paths

Status = Literal["resolved", "unresolved", "patch_failed", "error"]
ENV_BUILD = "environment: the image cannot be built or installed"
ENV_NO_TESTS = "environment: none of FAIL_TO_PASS/PASS_TO_PASS runs, with the empty or the gold patch either"
BROKE_RUN = "none of FAIL_TO_PASS/PASS_TO_PASS ran with this patch (they run with the empty patch)"
BROKE_RUN_GOLD = (
    "none of FAIL_TO_PASS/PASS_TO_PASS ran with this patch (they run with the gold patch on this image)"
)
NO_REFERENCE = (
    "environment or patch: none of FAIL_TO_PASS/PASS_TO_PASS ran, and there is no other patch (empty or gold) "
    "to run them on this image and tell the harness's fault from the patch's"
)
TAMPERED = "runner tampered"
"""The reason of a run whose reporter saw the test runner changed under it (never resolved)."""
DISAGREE = "channel and runner output disagree"
"""The reason of a run in which a target test the channel passed is failed or errored in the runner's own output."""
FLAGGED = "flagged by the patch screen (strict grading)"
STRICT_ENV = "SWE_SRL_STRICT_GRADING"
"""Set (non-empty, not ``0``) by ``swe-srl eval --strict-grading``: ``grade``'s default for ``strict``."""
TEST_PATH = re.compile(
    r"(^|/)(tests?|testing)/|(^|/)test_[^/]*\.py$|_tests?\.py$|(^|/)conftest\.py$|(^|/)(pytest|tox)\.ini$"
    r"|(^|/)runtests\.py$|^bin/test$"
)
"""Test files, and the test runners that live in a repository (django's ``tests/runtests.py``, sympy's
``bin/test`` and ``sympy/utilities/runtests.py``; ``sympy/testing/runtests.py`` is under ``testing/``)."""
RUNNER_IS_CODE = frozenset({"pytest-dev/pytest"})
"""Repositories whose code under test is the test runner (``src/_pytest`` installed from ``/testbed``): its edits to
the runner are not flagged, and the reporter counts the runner's own package as the runner's (docs/grading.md)."""


@dataclass
class GradeResult:
    """The verdict on one model patch, with per-test statuses and the test log."""

    instance_id: str
    status: Status
    tests: dict[str, str] = field(default_factory=dict)
    log: str = ""
    reverted_test_files: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds spent in ``start`` (image + container), ``apply`` and ``tests``."""
    reason: str = ""
    """Why the verdict: ``timeout`` (tests ran over the timeout), ``environment: …``, or which tests did not pass."""
    flags: list[dict] = field(default_factory=list)
    """What the patch screen flagged (``grading/screen.py``): path, rule and the added line, for each."""
    cross_check: list[str] = field(default_factory=list)
    """FAIL_TO_PASS/PASS_TO_PASS ids on which the stdout parser and our reporter's channel disagree."""
    image: dict = field(default_factory=dict)
    """Provenance of the image graded on: tag, image id, digests, base source, Python (``recipes.image_provenance``),
    and ``cpus``, the CPUs the grading container had (the spec's ``nano_cpus`` capped at the host's, else 1)."""

    @property
    def resolved(self) -> bool:
        return self.status == "resolved"

    def to_dict(self) -> dict:
        return {"instance_id": self.instance_id, "status": self.status, "tests": self.tests,
                "reverted_test_files": self.reverted_test_files, "timings": self.timings,
                "reason": self.reason, "flags": self.flags, "cross_check": self.cross_check,
                "image": self.image}  # fmt: skip


def is_test_file(path: str, instance: Instance) -> bool:
    """Whether a model patch may not touch ``path`` (a test file of the instance or any test-looking path)."""
    return path in patch_paths(instance.test_patch) or bool(TEST_PATH.search(path))


def strip_test_edits(instance: Instance, patch: str) -> tuple[str, list[str]]:
    """``patch`` without the file diffs that touch test files, and the paths dropped."""
    return drop_sections(patch, lambda path: is_test_file(path, instance))


def stray_statuses(instance: Instance, tests: dict[str, str], log: str) -> dict[str, str]:
    """Statuses from the log for FAIL_TO_PASS/PASS_TO_PASS ids no test of this run can have.

    SWE-bench's stdout parser picked such ids up from nested pytest output (``[100%]``, pytester runs' own
    ``test_x.py::test_y`` printed in captured output; e.g. pytest-dev__pytest-7521), so only the log can vouch
    for them there too. Ids under the run's test files always come from the plugin report (anti-hacking).
    """
    files = set(test_files(instance))
    stray = [
        t
        for t in (*instance.FAIL_TO_PASS, *instance.PASS_TO_PASS)
        if t not in tests and t.split("::")[0] not in files
    ]
    if not stray:
        return {}
    parsed = parser_for(instance.repo)(log)
    return {t: parsed[t] for t in stray if t in parsed}


def ran_any(instance: Instance, tests: dict[str, str]) -> bool:
    """Whether any FAIL_TO_PASS/PASS_TO_PASS test has a status in ``tests`` (ran, whatever its outcome)."""
    return any(t in tests for t in (*instance.FAIL_TO_PASS, *instance.PASS_TO_PASS))


def verdict(instance: Instance, tests: dict[str, str]) -> Status:
    """``resolved`` iff every FAIL_TO_PASS and PASS_TO_PASS test passed."""
    wanted = [*instance.FAIL_TO_PASS, *instance.PASS_TO_PASS]
    return "resolved" if wanted and all(tests.get(t) in PASSING for t in wanted) else "unresolved"
