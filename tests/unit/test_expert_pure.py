"""Pure helpers of the expert layer: observation normalization, expert state (the effect scoring: test_rewards_effect_score.py)."""

import pytest

from swe_srl.eval.replay import observations_match
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
