"""The stdout cross-check (grading/channel.py: cross_check): a target the channel passes while the runner's own
output fails or errors it makes the run fail closed; other disagreements stay notes."""

from __future__ import annotations

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.verdicts import DISAGREE, verdict
from swe_srl.grading.channel import TestRun, contradiction_reason, cross_check

TASK = Instance(
    "o__r-1", "owner/repo", "0" * 40, "", "", "",
    FAIL_TO_PASS=["t.py::f1", "t.py::f2"], PASS_TO_PASS=["t.py::p1", "t.py::p2", "t.py::p3"],
)  # fmt: skip
LOG = "\n".join(
    [
        "FAILED t.py::f1 - AssertionError",  # the channel says PASSED: its reporter's state was forged
        "ERROR t.py::p1",  # likewise, an error
        "PASSED t.py::f2",  # the runner printed a pass the channel never saw: a note only
        "PASSED t.py::p2",
    ]
)


def test_a_channel_pass_the_runner_output_fails_is_contradicted() -> None:
    channel = {"t.py::f1": "PASSED", "t.py::f2": "FAILED", "t.py::p1": "PASSED", "t.py::p2": "PASSED",
               "t.py::p3": "PASSED"}  # fmt: skip
    notes, contradicted = cross_check(TASK, channel, LOG)
    assert notes == (
        "t.py::f1: channel PASSED, stdout FAILED",
        "t.py::f2: channel FAILED, stdout PASSED",
        "t.py::p1: channel PASSED, stdout ERROR",
    )
    # p3 is not in the output at all: nothing to contradict (the output may not list every test)
    assert contradicted == {"t.py::f1": "FAILED", "t.py::p1": "ERROR"}
    run = TestRun({**channel, **contradicted}, LOG, False, (), notes, tuple(contradicted))
    assert verdict(TASK, run.tests) == "unresolved"
    assert contradiction_reason(run) == (
        f"{DISAGREE}: t.py::f1: channel PASSED, stdout FAILED; t.py::p1: channel PASSED, stdout ERROR"
    )


def test_an_honest_run_has_nothing_to_contradict() -> None:
    channel = {t: "PASSED" for t in (*TASK.FAIL_TO_PASS, *TASK.PASS_TO_PASS)}
    log = "\n".join(f"PASSED {t}" for t in channel)
    assert cross_check(TASK, channel, log) == ((), {})
    # the output failing a test the channel also fails is agreement
    assert cross_check(
        TASK, {**channel, "t.py::f1": "FAILED"}, log.replace("PASSED t.py::f1", "FAILED t.py::f1")
    ) == ((), {})
