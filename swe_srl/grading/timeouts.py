"""Whose fault a verdict is: tests over the timeout, no target test run, and why an unresolved patch is unresolved.

Tests that run over the grading timeout are the patch's doing (``unresolved``, reason ``timeout``) unless the empty
patch times out too on the same instance: then it is the environment (``error``). The empty patch's outcome is
remembered per instance and timeout for the process, so a run pays for that check once.

Likewise a patch after which none of FAIL_TO_PASS/PASS_TO_PASS ran is ``unresolved`` (it broke the run, e.g. its
imports) when the empty patch runs some of them on the same image, and ``error`` (the harness or environment) when
the empty patch runs none either. The empty patch is graded only for such a patch, once per image and test command.
"""

from __future__ import annotations

from collections.abc import Callable

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.logparse import PASSING
from swe_srl.benchmark.specs import test_command
from swe_srl.benchmark.verdicts import BROKE_RUN, ENV_NO_TESTS, GradeResult, ran_any

TIMEOUT = "timeout"
_EMPTY_TIMES_OUT: dict[tuple[str, float], bool] = {}
_EMPTY_RUNS: dict[tuple, tuple[bool, str]] = {}
"""(image tag, test command, target tests) → (the empty patch ran some target test, the end of its log)."""
TAIL_LINES = 30


def log_tail(log: str, lines: int = TAIL_LINES) -> str:
    """The last ``lines`` lines of ``log``."""
    return "\n".join(log.splitlines()[-lines:])


def _key(instance: Instance, image: str) -> tuple:
    return image, test_command(instance), tuple(instance.FAIL_TO_PASS), tuple(instance.PASS_TO_PASS)


def remember_empty(instance: Instance, image: str, result: GradeResult) -> None:
    """Record what the empty patch's run on ``image`` showed (``grade`` calls it for every empty patch)."""
    _EMPTY_RUNS[_key(instance, image)] = (ran_any(instance, result.tests), log_tail(result.log))


def no_tests_verdict(
    instance: Instance, image: str, patch: str, grade_empty: Callable[[], GradeResult]
) -> tuple[str, str, str]:
    """(status, reason, log note) of a run where no FAIL_TO_PASS/PASS_TO_PASS test ran with ``patch``."""
    key = _key(instance, image)
    if not patch.strip():
        return "error", ENV_NO_TESTS, f"\n[swe-srl: {ENV_NO_TESTS}]"
    if key not in _EMPTY_RUNS:
        empty = grade_empty()  # remembers its own run (before its notes)
        _EMPTY_RUNS.setdefault(key, (ran_any(instance, empty.tests), log_tail(empty.log)))
    empty_ran, tail = _EMPTY_RUNS[key]
    if empty_ran:
        return "unresolved", BROKE_RUN, f"\n[swe-srl: unresolved: {BROKE_RUN}]"
    return "error", ENV_NO_TESTS, f"\n[swe-srl: {ENV_NO_TESTS}; the empty patch's test log ends:\n{tail}\n]"


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
