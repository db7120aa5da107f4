"""Pure helpers of the expert layer: observation normalization, diff sections, test agreement, expert state."""

import pytest

from swe_srl.eval.replay import observations_match
from swe_srl.rewards.effect_sandbox import agreement, changed_python_files, diff_sections
from swe_srl.trajectories.expert_state import ExpertState, tree_hash

DIFF_A = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x\n+y\n"
DIFF_B = "diff --git a/n.txt b/n.txt\n--- a/n.txt\n+++ b/n.txt\n@@ -1 +1 @@\n-a\n+b\n"

MATCHES = [
    # pytest timings differ between runs
    ("1 passed in 0.12s", "1 passed in 1.03s", True),
    # object addresses differ between runs
    ("<Foo object at 0x7f3a2b1c9d00>", "<Foo object at 0x7f99aa01bb10>", True),
    # temp paths differ between runs
    ("wrote /tmp/tmpab12cd/x.py", "wrote /tmp/tmpzz99yy/x.py", True),
    # trailing whitespace is not content
    ("ok   \nline", "ok\nline", True),
    # a different count of passing tests is a real difference
    ("2 passed in 0.1s", "1 passed, 1 failed in 0.1s", False),
]


@pytest.mark.parametrize(("recorded", "replayed", "same"), MATCHES)
def test_observations_match(recorded: str, replayed: str, same: bool) -> None:
    assert observations_match(recorded, replayed) is same


def test_diff_sections_and_changed_python() -> None:
    assert diff_sections("") == {}
    assert set(diff_sections(DIFF_A + DIFF_B)) == {"m.py", "n.txt"}
    # an action that edited m.py (present after, absent before) touches m.py; n.txt is not Python
    assert changed_python_files(DIFF_B, DIFF_A + DIFF_B) == ["m.py"]
    # the same cumulative diff before and after: nothing touched
    assert changed_python_files(DIFF_A, DIFF_A) == []


AGREEMENT = [
    # all outcomes equal
    ({"t1": "PASSED", "t2": "FAILED"}, {"t1": "PASSED", "t2": "FAILED"}, ["t1", "t2"], 1.0),
    # one of two differs
    ({"t1": "FAILED", "t2": "PASSED"}, {"t1": "PASSED", "t2": "PASSED"}, ["t1", "t2"], 0.5),
    # a test that did not run at all differs from one that passed
    ({}, {"t1": "PASSED"}, ["t1"], 0.0),
    # no target tests: no evidence of an effect
    ({}, {}, [], 0.0),
]


@pytest.mark.parametrize(("tests", "expert", "targets", "value"), AGREEMENT)
def test_agreement(tests, expert, targets, value) -> None:
    assert agreement(tests, expert, targets) == value


def test_expert_state_before() -> None:
    state = ExpertState(diffs=["", DIFF_A], cwds=["/testbed", "/testbed/pkg"])
    assert state.before(0) == ("", "/testbed")  # step 0 starts at the base commit
    assert state.before(2) == (DIFF_A, "/testbed/pkg")
    with pytest.raises(IndexError):
        state.before(3)
    assert tree_hash("") != tree_hash(DIFF_A) and tree_hash(DIFF_A) == tree_hash(DIFF_A)
