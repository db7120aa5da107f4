"""grading.stray_statuses: FAIL_TO_PASS/PASS_TO_PASS ids that SWE-bench's log parser took from nested pytest output
are read from the log; ids of the run's own test files never are (the plugin report is the only source)."""

from __future__ import annotations

import pytest

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.verdicts import stray_statuses, verdict

TEST_PATCH = "diff --git a/testing/test_capture.py b/testing/test_capture.py\n--- a/testing/test_capture.py\n"


def make(f2p: list[str], p2p: list[str]) -> Instance:
    return Instance(
        instance_id="pytest-dev__pytest-1", repo="pytest-dev/pytest", base_commit="0" * 40, patch="",
        test_patch=TEST_PATCH, problem_statement="", version="6.0", FAIL_TO_PASS=f2p, PASS_TO_PASS=p2p,
    )  # fmt: skip


LOG = """\
PASSED testing/test_capture.py::test_real
PASSED test_capsysbinary.py::test_hello
PASSED [100%]
PASSED testing/test_capture.py::test_broken
"""


@pytest.mark.parametrize(
    "wanted, report, expected",
    [
        # a pytester run's own test id printed in captured output: taken from the log
        (["test_capsysbinary.py::test_hello"], {}, {"test_capsysbinary.py::test_hello": "PASSED"}),
        # SWE-bench's parser artefact "[100%]": taken from the log
        (["[100%]"], {}, {"[100%]": "PASSED"}),
        # an id of the run's test file missing from the report: a printed PASSED line does not count
        (["testing/test_capture.py::test_broken"], {}, {}),
        # already in the plugin report: the report wins, nothing from the log
        (["testing/test_capture.py::test_real"], {"testing/test_capture.py::test_real": "FAILED"}, {}),
        # stray id absent from the log too: stays missing
        (["other.py::test_gone"], {}, {}),
    ],
)
def test_stray_statuses(wanted: list[str], report: dict[str, str], expected: dict[str, str]) -> None:
    assert stray_statuses(make([], wanted), report, LOG) == expected


def test_verdict_with_stray_ids() -> None:
    inst = make(["testing/test_capture.py::test_real"], ["[100%]", "test_capsysbinary.py::test_hello"])
    report = {"testing/test_capture.py::test_real": "PASSED"}
    assert verdict(inst, {**report, **stray_statuses(inst, report, LOG)}) == "resolved"
    failed = {"testing/test_capture.py::test_real": "FAILED"}
    assert verdict(inst, {**failed, **stray_statuses(inst, failed, LOG)}) == "unresolved"


def test_node_ids_cut_alike_at_their_first_space_give_the_cut_id_the_worse_status() -> None:
    """pylint-dev__pylint-8898's empty patch: `…[foo, bar-expected2]` passed and `…[foo, bar{1,3}-expected3]`
    failed; both are `…[foo,` in SWE-bench's lists, whose parser keeps the failure (listed last by `-rA`). The
    first node id's status was taken, and the stdout cross-check then disagreed."""
    from swe_srl.benchmark.instances import Instance
    from swe_srl.benchmark.logparse import Channel
    from swe_srl.grading.channel import statuses

    test = "tests/config/test_config.py::test_csv_regex_comma_in_quantifier"
    channel = Channel(
        {f"{test}[foo, bar-expected2]": "PASSED", f"{test}[foo, bar{{1,3}}-expected3]": "FAILED"}, True
    )
    inst = Instance("pylint-dev__pylint-8898", "pylint-dev/pylint", "0" * 40, "", "", "")
    assert statuses(channel, inst, aliases=True)[f"{test}[foo,"] == "FAILED"
    assert statuses(channel, inst, aliases=False).get(f"{test}[foo,") is None
