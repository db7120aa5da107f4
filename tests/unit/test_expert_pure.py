"""Pure helpers of the expert layer: observation normalization, expert state (the effect scoring: test_rewards_effect_score.py)."""

import pytest

from swe_srl.eval.replay import observations_match
from swe_srl.trajectories.expert_state import ExpertState, tree_hash
from swe_srl.trajectories.scripted import steady

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


def test_expert_state_before() -> None:
    state = ExpertState(diffs=["", DIFF_A], cwds=["/testbed", "/testbed/pkg"])
    assert state.before(0) == ("", "/testbed")  # step 0 starts at the base commit
    assert state.before(2) == (DIFF_A, "/testbed/pkg")
    with pytest.raises(IndexError):
        state.before(3)
    assert tree_hash("") != tree_hash(DIFF_A) and tree_hash(DIFF_A) == tree_hash(DIFF_A)


def test_created_files() -> None:
    from swe_srl.trajectories.expert_state import created_files

    new = "diff --git a/repro.py b/repro.py\nnew file mode 100644\n--- /dev/null\n+++ b/repro.py\n@@ -0,0 +1 @@\n+x\n"
    state = ExpertState(diffs=[DIFF_A, DIFF_A + new, DIFF_A], cwds=["/testbed"] * 3)
    assert created_files(state, 0) == frozenset() and created_files(state, 1) == frozenset()  # m.py is edited
    assert created_files(state, 2) == {"repro.py"}  # made by step 1, there before step 2
    assert created_files(state, 3) == frozenset()  # deleted again by step 2


def test_steady_observations_keep_their_look_and_drop_what_each_run_changes() -> None:
    """The scripted expert records ``steady`` observations: two runs of a command read the same, byte for byte."""
    run1 = (
        "self = <f at 0x7f86d9cfc4a0>, g = <g at 0x7f86d9cfc4b8> == <f at 0x7f86d9cfc4a0>\n1 failed in 0.10s"
    )
    run2 = (
        "self = <f at 0x7f5721060000>, g = <g at 0x7f57210604a0> == <f at 0x7f5721060000>\n1 failed in 1.93s"
    )
    assert steady(run1) == steady(run2)
    assert steady(run1) == (
        "self = <f at 0x7f0000000001>, g = <g at 0x7f0000000002> == <f at 0x7f0000000001>\n1 failed in 0.01s"
    )
    assert steady("==== 2 failed, 3 passed, 1 warning in 65.21s (0:01:05) ====") == (
        "==== 2 failed, 3 passed, 1 warning in 0.01s ===="
    )
    # only pytest's summary line and object addresses: code and other output stay as printed
    for text in ("sleep(0.5)  # wait in 0.5s steps", "x = 0x7f86d9cfc4a0", "1 passed in 0.5s, then 2"):
        assert steady(text) == text
