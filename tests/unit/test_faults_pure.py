"""Pure parts of the fault model: disk limits, the diff script's output, whose fault a timeout is, unresolved reasons."""

from __future__ import annotations

import pytest

from swe_srl.benchmark import verdicts
from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.verdicts import GradeResult
from swe_srl.env.text import format_observation
from swe_srl.errors import ConfigError, SandboxError
from swe_srl.grading import timeouts
from swe_srl.infra.sandbox.base import ExecResult, Limits
from swe_srl.infra.sandbox.patching import diff_script, parse_output


def _instance(iid: str = "x__y-1") -> Instance:
    return Instance(
        instance_id=iid, repo="x/y", base_commit="abc", problem_statement="p", patch="", test_patch="",
        FAIL_TO_PASS=["t::a", "t::b"], PASS_TO_PASS=["t::c"],
    )  # fmt: skip


@pytest.mark.parametrize(
    "kwargs", [{"disk": "lots"}, {"disk": 0}, {"patch_file_bytes": 0}, {"patch_timeout_s": -1}]
)
def test_bad_disk_and_patch_limits_name_the_field(kwargs: dict) -> None:
    ((name, _),) = kwargs.items()
    with pytest.raises(ConfigError, match=f"Limits.{name}="):
        Limits(**kwargs)


def test_disk_budget_parses_sizes() -> None:
    assert Limits(disk="64m").disk_bytes == 64 << 20 and Limits().disk_bytes == 2 << 30


def test_parse_output_splits_notes_from_the_diff() -> None:
    data = b"LEFT-OUT\tbinary\tdata.bin\nLEFT-OUT\tover 10 bytes\tbig file.txt\n__SWESRL_DIFF__\ndiff --git a/x b/x\n"
    patch = parse_output(data)
    assert patch.text == "diff --git a/x b/x\n"
    assert patch.left_out == ("data.bin (binary)", "big file.txt (over 10 bytes)")
    with pytest.raises(SandboxError, match="no diff"):
        parse_output(b"fatal: something\n")


def test_diff_script_is_a_subshell_with_safe_flags() -> None:
    text = diff_script("abc", "/testbed", "/testbed/.git", binary=False, file_cap=1024)
    assert text.startswith("(\n") and text.endswith("\n)")  # `exit` cannot end the control shell
    assert "--no-ext-diff" in text and "--src-prefix=a/" in text and "-size +1024c" in text
    assert "--binary" not in text and "--binary" in diff_script(
        "abc", "/t", "/t/.git", binary=True, file_cap=1
    )


def test_timeout_is_the_patch_fault_unless_the_empty_patch_times_out_too() -> None:
    calls: list[str] = []

    def finishes() -> GradeResult:
        calls.append("empty")
        return GradeResult("x__y-1", "unresolved")

    status, reason, note = timeouts.timeout_verdict(_instance("a-1"), "diff", 20, finishes)
    assert (status, reason) == ("unresolved", "timeout") and "unresolved (timeout)" in note
    timeouts.timeout_verdict(_instance("a-1"), "diff", 20, finishes)
    assert calls == ["empty"], "the empty patch is graded once per instance and timeout"

    def hangs() -> GradeResult:
        return GradeResult("b-1", "error", reason="timeout")

    status, reason, note = timeouts.timeout_verdict(_instance("b-1"), "diff", 20, hangs)
    assert (status, reason) == ("error", "timeout") and "environment" in note
    assert timeouts.timeout_verdict(_instance("c-1"), "", 20, hangs)[0] == "error"  # the empty patch itself


def test_unresolved_reason_counts_the_failing_tests() -> None:
    instance = _instance()
    assert timeouts.unresolved_reason(instance, {}).startswith("no test results")
    reason = timeouts.unresolved_reason(instance, {"t::a": "PASSED", "t::b": "FAILED", "t::c": "FAILED"})
    assert reason == "1/2 FAIL_TO_PASS and 1/1 PASS_TO_PASS not passing"


@pytest.mark.parametrize(
    ("result", "must_contain"),
    [
        (ExecResult("x: File size limit exceeded\nrc=153\n", 0), "file-size limit (disk budget 2g)"),
        (ExecResult("", 137, session_restarted=True), "a new one was started in the same directory"),
    ],
)
def test_fault_observations(result: ExecResult, must_contain: str) -> None:
    assert must_contain in format_observation(result, Limits())


def test_the_empty_patch_is_judged_by_the_gold_run_and_each_reference_runs_once() -> None:
    instance = _instance("refs-1")
    instance.patch, instance.extra["env"] = (
        "diff --git a/m b/m\n",
        {"test_cmd": "pytest", "test_files": ["t"]},
    )
    graded: list[str] = []

    def grade(ran: bool):
        def run(patch: str) -> GradeResult:
            graded.append(patch)
            result = GradeResult(instance.instance_id, "unresolved", tests={"t::a": "PASSED"} if ran else {})
            timeouts.remember_run(instance, "img", timeouts.patch_role(instance, patch, patch), result)
            return result

        return run

    assert (
        timeouts.patch_role(instance, "", "") == "empty" and timeouts.patch_role(instance, "x", "") == "empty"
    )
    assert timeouts.patch_role(instance, instance.patch, instance.patch) == "gold"
    status, reason, _ = timeouts.no_tests_verdict(instance, "img", "empty", grade(True))
    assert (status, reason) == ("unresolved", verdicts.BROKE_RUN_GOLD) and graded == [instance.patch]
    timeouts.no_tests_verdict(instance, "img", "empty", grade(True))
    assert graded == [instance.patch], "a reference is graded once per image"
    status, reason, note = timeouts.no_tests_verdict(instance, "other", "model", grade(False))
    assert (status, reason) == ("error", verdicts.ENV_NO_TESTS) and "gold patch's test log" in note
    assert graded[1:] == ["", instance.patch]  # the empty patch first, then gold
    instance.patch = ""
    status, reason, _ = timeouts.no_tests_verdict(instance, "third", "empty", grade(True))
    assert (status, reason) == ("error", verdicts.NO_REFERENCE), "no gold patch: nothing to compare with"
