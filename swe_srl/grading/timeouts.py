"""Whose fault a verdict is: tests over the timeout, and the reason an unresolved patch is unresolved.

Tests that run over the grading timeout are the patch's doing (``unresolved``, reason ``timeout``) unless the empty
patch times out too on the same instance: then it is the environment (``error``). The empty patch's outcome is
remembered per instance and timeout for the process, so a run pays for that check once.
"""

from __future__ import annotations

from collections.abc import Callable

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.logparse import PASSING
from swe_srl.benchmark.verdicts import GradeResult

TIMEOUT = "timeout"
_EMPTY_TIMES_OUT: dict[tuple[str, float], bool] = {}


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
