"""Whose fault a verdict is: tests over the timeout, no target test run, and why an unresolved patch is unresolved.

Tests that run over the grading timeout are the patch's doing (``unresolved``, reason ``timeout``) unless the empty
patch times out too on the same instance: then it is the environment (``error``). The empty patch's outcome is
remembered per instance and timeout for the process, so a run pays for that check once.

Likewise a patch after which none of FAIL_TO_PASS/PASS_TO_PASS ran is ``unresolved`` (it broke the run, e.g. its
imports) when another patch runs some of them on the same image — the empty patch, else the gold patch — and
``error`` (the harness or environment) when neither does. The empty patch is never its own reference: with it, the
gold patch tells (pylint-dev__pylint-4551: the test_patch's new module imports a name only the fix adds, so no
target test runs with the empty patch, yet the environment works). Each reference's run is remembered per image,
test command and test_patch for the process (``tasks validate`` grades gold first, so its run is the empty patch's
reference without a rerun); a reference is graded only for a patch that runs none of the target tests.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.logparse import PASSING
from swe_srl.benchmark.specs import test_command
from swe_srl.benchmark.verdicts import (
    BROKE_RUN,
    BROKE_RUN_GOLD,
    ENV_NO_TESTS,
    NO_REFERENCE,
    GradeResult,
    ran_any,
)

TIMEOUT = "timeout"
_EMPTY_TIMES_OUT: dict[tuple[str, float], bool] = {}
_RUNS: dict[tuple, tuple[bool, str]] = {}
"""(role, image tag, test command, test_patch, target tests) → (that run ran some target test, the end of its log);
role ``empty`` or ``gold``."""
TAIL_LINES = 30
Role = Literal["empty", "gold", "model"]


def log_tail(log: str, lines: int = TAIL_LINES) -> str:
    """The last ``lines`` lines of ``log``."""
    return "\n".join(log.splitlines()[-lines:])


def _key(role: str, instance: Instance, image: str) -> tuple:
    targets = (tuple(instance.FAIL_TO_PASS), tuple(instance.PASS_TO_PASS))
    return role, image, test_command(instance), instance.test_patch, targets


def patch_role(instance: Instance, model_patch: str, cleaned: str) -> Role:
    """Whether ``model_patch`` is the empty patch (``cleaned``, what is applied of it, changes nothing), the
    instance's gold patch, or another one."""
    if not cleaned.strip():
        return "empty"
    return "gold" if model_patch.strip() == instance.patch.strip() else "model"


def remember_run(instance: Instance, image: str, role: Role, result: GradeResult) -> None:
    """Record what an empty or gold patch's run on ``image`` showed (``grade`` calls it for each such run)."""
    if role != "model":
        _RUNS[_key(role, instance, image)] = (ran_any(instance, result.tests), log_tail(result.log))


def no_tests_verdict(
    instance: Instance, image: str, role: Role, grade_patch: Callable[[str], GradeResult]
) -> tuple[str, str, str]:
    """(status, reason, log note) of a run where no FAIL_TO_PASS/PASS_TO_PASS test ran with a patch of ``role``;
    ``grade_patch(patch)`` grades a reference patch on the same image."""
    references = {"empty": "", "gold": instance.patch}
    tails = []
    for ref, patch in references.items():
        if ref == role or (ref == "gold" and not patch.strip()):
            continue
        key = _key(ref, instance, image)
        if key not in _RUNS:
            reference = grade_patch(patch)  # remembers its own run (before its notes)
            _RUNS.setdefault(key, (ran_any(instance, reference.tests), log_tail(reference.log)))
        ran, tail = _RUNS[key]
        if ran:
            reason = BROKE_RUN if ref == "empty" else BROKE_RUN_GOLD
            return "unresolved", reason, f"\n[swe-srl: unresolved: {reason}]"
        tails.append(f"the {ref} patch's test log ends:\n{tail}")
    if not tails:
        return "error", NO_REFERENCE, f"\n[swe-srl: {NO_REFERENCE}]"
    return "error", ENV_NO_TESTS, f"\n[swe-srl: {ENV_NO_TESTS}; " + "\n".join(tails) + "\n]"


def timeout_verdict(
    instance: Instance, patch: str, timeout: float, grade_empty: Callable[[], GradeResult]
) -> tuple[str, str, str]:
    """(status, reason, log note) of a test run that timed out with ``patch``; ``grade_empty`` grades ``""``."""
    key = (instance.instance_id, timeout)
    if patch.strip() and key not in _EMPTY_TIMES_OUT:
        empty = grade_empty()
        _EMPTY_TIMES_OUT[key] = empty.status == "error" and getattr(empty, "reason", "") == TIMEOUT
    if patch.strip() and not _EMPTY_TIMES_OUT[key]:
        note = f"\n[swe-srl: unresolved (timeout): the tests ran over {timeout:.0f}s with this patch, not without it]"
        return "unresolved", TIMEOUT, note
    note = (
        f"\n[swe-srl: the test command timed out after {timeout:.0f}s without a patch too: the environment]"
    )
    return "error", TIMEOUT, note


def unresolved_reason(instance: Instance, tests: dict[str, str]) -> str:
    """Why a patch is unresolved: how many FAIL_TO_PASS / PASS_TO_PASS tests did not pass (or none ran)."""
    if not tests:
        return "no test results (the test run crashed or collected nothing)"
    f2p = [t for t in instance.FAIL_TO_PASS if tests.get(t) not in PASSING]
    p2p = [t for t in instance.PASS_TO_PASS if tests.get(t) not in PASSING]
    parts = [f"{len(f2p)}/{len(instance.FAIL_TO_PASS)} FAIL_TO_PASS"] if f2p else []
    parts += [f"{len(p2p)}/{len(instance.PASS_TO_PASS)} PASS_TO_PASS"] if p2p else []
    return " and ".join(parts) + " not passing" if parts else "no FAIL_TO_PASS/PASS_TO_PASS tests"
