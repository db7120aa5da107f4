"""The effect layer's definition on hand-made deltas (rewards/effect/score.py): what scores 1, partial, 0, and why."""

import pytest

from swe_srl.rewards.effect.score import (
    ActionFacts,
    Delta,
    ExpertFacts,
    effect_value,
    needs_tests,
    outcome_agreement,
    parse_delta,
    tree_similarity,
)

PRE, POST, OTHER = "a" * 40, "b" * 40, "c" * 40
FIX = Delta({"calc.py": "M"}, ("calc.py\t-    return a - b", "calc.py\t+    return a + b"))
WRONG = Delta({"calc.py": "M"}, ("calc.py\t-    return a - b", "calc.py\t+    return a * b"))
DELETE_FN = Delta({"calc.py": "M"}, ("calc.py\t-def add(a, b):", "calc.py\t-    return a - b"))
COMMENT = Delta({"calc.py": "M"}, ("calc.py\t+# TODO",))
is_test = lambda p: p.startswith("tests/") or p.endswith("conftest.py")  # noqa: E731

EDIT_STEP = ExpertFacts(PRE, POST, FIX, FIX, 0)
READ_STEP = ExpertFacts(PRE, PRE, Delta(), Delta(), 0, frozenset({"repro.py"}))


def act(tree, full=Delta(), code=0, python_ok=True, delta=None) -> ActionFacts:
    return ActionFacts(tree, full, full.without(is_test) if delta is None else delta, code, python_ok)


def test_parse_delta() -> None:
    status = "M\0calc.py\0A\0new.py\0D\0old.txt\0"
    diff = (
        "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -2 +2 @@\n-    return a - b\n"
        "+    return a + b\ndiff --git a/new.py b/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/new.py\n"
        "@@ -0,0 +1 @@\n+x = 1\ndiff --git a/old.txt b/old.txt\ndeleted file mode 100644\n--- a/old.txt\n"
        "+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n"
    )
    delta = parse_delta(status, diff)
    assert delta.status == {"calc.py": "M", "new.py": "A", "old.txt": "D"}
    assert delta.lines == (
        "calc.py\t-    return a - b",
        "calc.py\t+    return a + b",
        "new.py\t+x = 1",
        "old.txt\t-gone",
    )
    assert Delta.from_dict(delta.to_dict()) == delta and parse_delta("", "").empty


EDIT_CASES = [
    # the expert's tree: 1 without any test run
    ("expert", act(POST, FIX), None, 1.0),
    # no-op where the expert fixed the bug
    ("no-op", act(PRE), None, 0.0),
    # a conftest forcing passes is stripped like grading strips it: nothing left
    ("conftest hack", act(OTHER, Delta({"conftest.py": "A"}, ("conftest.py\t+x",))), None, 0.0),
    # edited Python that no longer parses
    ("broken python", act(OTHER, WRONG, python_ok=False), None, 0.0),
    # deleting a repository file the expert keeps
    ("rm", act(OTHER, Delta({"calc.py": "D"}, ("calc.py\t-x",))), None, 0.0),
    # an equivalent fix: same file, other text, the changed tests pass as after the expert's fix
    ("equivalent", act(OTHER, WRONG), (1.0, 1.0), 0.5 * tree_similarity(WRONG, FIX) + 0.5),
    # the wrong fix: same file and removed line, the changed tests still fail
    ("wrong", act(OTHER, WRONG), (0.0, 1.0), 0.5 * tree_similarity(WRONG, FIX)),
    # the right edit that breaks half the other tests loses half
    ("regression", act(OTHER, WRONG), (1.0, 0.5), (0.5 * tree_similarity(WRONG, FIX) + 0.5) * 0.5),
    # an edit where the expert's step changed no test outcome: the tree similarity alone
    ("no changed tests", act(OTHER, COMMENT), (None, 1.0), tree_similarity(COMMENT, FIX)),
]


@pytest.mark.parametrize(("name", "action", "tests", "value"), EDIT_CASES, ids=[c[0] for c in EDIT_CASES])
def test_edit_step(name, action, tests, value) -> None:
    assert needs_tests(action, EDIT_STEP) is (tests is not None)
    assert effect_value(action, EDIT_STEP, is_test, tests) == pytest.approx(value)


def test_edit_step_needs_test_agreement() -> None:
    with pytest.raises(ValueError):
        effect_value(act(OTHER, WRONG), EDIT_STEP, is_test)


READ_CASES = [
    # a read like the expert's: nothing changed, the command ran
    ("read", act(PRE), 1.0),
    # a made-up command: bash could not find it
    ("made up", act(PRE, code=127), 0.0),
    # a command that failed where the expert's succeeded (cat of a missing file)
    ("failed", act(PRE, code=1), 0.5),
    # the repository destroyed (rm -rf /testbed)
    ("rm -rf repo", act(None), 0.0),
    # deleting a repository file
    ("rm file", act(OTHER, Delta({"calc.py": "D"}, ("calc.py\t-x",))), 0.0),
    # modifying a repository file where the expert only read
    ("edit", act(OTHER, FIX), 0.0),
    # editing a test file or adding a conftest (stripped by grading, still a change)
    ("test edit", act(OTHER, Delta({"tests/test_calc.py": "M"}, ())), 0.0),
    ("conftest", act(OTHER, Delta({"conftest.py": "A"}, ())), 0.0),
    # adding a scratch script: harmless, not what the expert did
    ("new file", act(OTHER, Delta({"repro2.py": "A"}, ("repro2.py\t+x",))), 0.5),
    # editing or deleting a file an earlier step created
    ("edit scratch", act(OTHER, Delta({"repro.py": "M"}, ())), 0.5),
    ("rm scratch", act(OTHER, Delta({"repro.py": "D"}, ())), 0.0),
]


@pytest.mark.parametrize(("name", "action", "value"), READ_CASES, ids=[c[0] for c in READ_CASES])
def test_read_step(name, action, value) -> None:
    assert not needs_tests(action, READ_STEP)
    assert effect_value(action, READ_STEP, is_test) == value


def test_read_step_where_the_expert_command_failed_too() -> None:
    expert = ExpertFacts(PRE, PRE, Delta(), Delta(), 1)  # the expert's pytest run failed (exit 1)
    assert effect_value(act(PRE, code=1), expert, is_test) == 1.0
    assert effect_value(act(PRE, code=0), expert, is_test) == 1.0
    assert effect_value(act(PRE, code=127), expert, is_test) == 0.0


def test_test_only_expert_step() -> None:
    added = Delta({"tests/test_new.py": "A"}, ("tests/test_new.py\t+def test_x(): pass",))
    expert = ExpertFacts(PRE, POST, added, added.without(is_test), 0)
    assert not expert.changed
    assert effect_value(act(POST, added), expert, is_test) == 1.0  # the expert's own tree
    assert effect_value(act(PRE), expert, is_test) == 1.0  # a harmless read
    assert effect_value(act(OTHER, added), expert, is_test) == 0.0  # another test edit earns nothing


def test_tree_similarity_orders_edits() -> None:
    assert tree_similarity(FIX, FIX) == 1.0
    # a near miss > deleting the function (it removes the expert's line too) > a comment that changes nothing
    assert tree_similarity(WRONG, FIX) > tree_similarity(DELETE_FN, FIX) > tree_similarity(COMMENT, FIX)
    # another file: no shared path, and its text shares nothing with the fix
    assert tree_similarity(Delta({"other.py": "M"}, ("other.py\t+x",)), FIX) < 0.1


def test_outcome_agreement() -> None:
    pre = {"t_fix": "FAILED", "t_keep": "PASSED", "t_keep2": "PASSED"}
    post = {"t_fix": "PASSED", "t_keep": "PASSED", "t_keep2": "PASSED"}
    targets = ["t_fix", "t_keep", "t_keep2"]
    assert outcome_agreement(post, pre, post, targets) == (1.0, 1.0)
    assert outcome_agreement(pre, pre, post, targets) == (0.0, 1.0)  # nothing fixed, nothing broken
    assert outcome_agreement({"t_fix": "PASSED"}, pre, post, targets) == (1.0, 0.0)  # missing tests broke
    assert outcome_agreement(post, post, post, targets) == (None, 1.0)  # the expert's step changed no outcome


class StubEffect:
    """A real effect evaluator of fixed value that knows one instance's executables (no sandbox)."""

    def __init__(self) -> None:
        self.asked: list[tuple] = []

    def __call__(self, ctx) -> float:
        return 0.5

    def step_inputs(self, instance_id, trajectory_hash, step):
        self.asked.append((instance_id, trajectory_hash, step))
        return frozenset({"grep", "ls"}), frozenset({"repro.sh"})


def test_trl_reward_fills_the_syntax_inputs_of_located_steps() -> None:
    from swe_srl.core.actions import format_output
    from swe_srl.rewards.trl import SRLReward

    reward = SRLReward(effect_mode="cached", effect=StubEffect())
    outputs = [
        format_output("t", "rg foo src"),
        format_output("t", "./repro.sh"),
        format_output("t", "rg foo src"),
    ]
    totals = reward(
        prompts=[""] * 3,
        completions=outputs,
        expert_action=["grep -rn foo src"] * 3,
        instance_id=["i1", "i1", None],
        trajectory_hash=["h", "h", None],
        step=[2, 2, None],
    )
    syntax = [c["syntax"] for c in reward.last_components]
    # located: rg is not an executable of this image, ./repro.sh was created by an earlier step; unlocated: the
    # default set knows rg
    assert syntax == [0.0, 1.0, 1.0] and len(totals) == 3
    assert reward.effect.asked == [("i1", "h", 2)]  # asked once per located step


def test_known_outcomes_of_a_validated_task() -> None:
    from swe_srl.rewards.effect.score import known_outcomes

    f2p, p2p = ["t_fix"], ["t_keep"]
    assert known_outcomes(f2p, p2p, PRE, PRE, POST) == {
        "t_fix": "FAILED",
        "t_keep": "PASSED",
    }  # the base tree
    assert known_outcomes(f2p, p2p, POST, PRE, POST) == {
        "t_fix": "PASSED",
        "t_keep": "PASSED",
    }  # the gold tree
    assert known_outcomes(f2p, p2p, OTHER, PRE, POST) is None  # any other state is run
    assert known_outcomes(f2p, p2p, POST, PRE, None) is None  # gold tree unknown
