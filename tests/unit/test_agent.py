"""The agent loop on real tiny git repos (commands run with bash on the host): single episodes, lock-step batches,
parse-once, submit to the env; and patch cleaning."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from swe_srl.agent.loop import AgentConfig, run_episode, run_episodes_lockstep
from swe_srl.agent.policies import EmptyPolicy, GoldPolicy, ScriptedPolicy
from swe_srl.benchmark.instances import Instance
from swe_srl.core.actions import Completion, format_output, parse_output
from swe_srl.core.patches import clean_patch, patch_paths
from swe_srl.core.prompts import OBSERVATION_ELIDED
from swe_srl.errors import ActionFormatError


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


class LocalEnv:
    """The env surface the loop uses, over a git repo in a tmp dir (a stand-in for SWEEnv without Docker)."""

    def __init__(self, repo: Path) -> None:
        self.repo, self.sandbox, self.steps, self.closed = repo, self, 0, False
        self.truncate_after = 10**9
        self.received: list[str] = []

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict]:
        return "prompt", {"instance_id": options["instance_id"], "problem": "x is wrong", "oracle_files": {}}

    def step(self, text: str) -> tuple[str, float, bool, bool, dict]:
        self.steps += 1
        self.received.append(text)
        try:
            action = parse_output(text).action
        except ActionFormatError as exc:
            return f"Format error: {exc}", -1.0, False, False, {"format_error": exc.rule}
        if action == "submit":  # as SWEEnv: submit ends the episode with a reward
            return "Submitted.", 1.0, True, False, {"format_error": None, "exit_code": None}
        proc = subprocess.run(
            ["bash", "-c", action], cwd=self.repo, capture_output=True, text=True, timeout=30
        )
        truncated = self.steps >= self.truncate_after  # the env's wall clock ran out
        info = {"format_error": None, "exit_code": proc.returncode}
        info |= {"truncation": "wall_clock"} if truncated else {}
        return proc.stdout + proc.stderr + f"\n[exit code {proc.returncode}]", 0.0, False, truncated, info

    def close(self) -> None:
        self.closed = True

    def diff(self) -> str:
        _git(self.repo, "add", "-A", "-N")
        return _git(self.repo, "diff", "--binary", "HEAD")


GOLD = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
TEST_PATCH = (
    "diff --git a/test_x.py b/test_x.py\n--- a/test_x.py\n+++ b/test_x.py\n@@ -1 +1 @@\n-t = 1\n+t = 2\n"
)


@pytest.fixture
def env(tmp_path: Path) -> LocalEnv:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "x.py").write_text("x = 1\n")
    (repo / "test_x.py").write_text("t = 1\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    return LocalEnv(repo)


INSTANCE = Instance("demo__demo-1", "demo/demo", "HEAD", GOLD, TEST_PATCH, "x is wrong")


def test_gold_policy_submits_the_gold_patch(env: LocalEnv) -> None:
    result = run_episode(env, GoldPolicy(), INSTANCE)
    assert (result.exit_reason, result.calls, result.format_errors) == ("submitted", 2, 0)
    assert result.patch == _git(env.repo, "diff", "HEAD") and "+x = 2" in result.patch
    assert env.steps == 1, "submit is not sent to the env by default"
    # The native trajectory holds the apply step and the submit step, thoughts kept.
    assert result.trajectory.steps[-1].action == "submit"
    assert result.trajectory.steps[0].exit_code == 0
    assert result.trajectory.patch == result.patch and result.trajectory.metadata["policy"] == "gold"
    assert env.closed


def test_empty_policy_submits_nothing(env: LocalEnv) -> None:
    result = run_episode(env, EmptyPolicy(), INSTANCE)
    assert (result.exit_reason, result.patch, result.calls, env.steps) == ("submitted", "", 1, 0)


def test_malformed_outputs_end_at_max_steps_with_format_errors_counted(env: LocalEnv) -> None:
    policy = ScriptedPolicy(["no think block at all"] * 5)
    result = run_episode(env, policy, INSTANCE, AgentConfig(max_steps=4))
    assert (result.exit_reason, result.calls, result.format_errors) == ("max_steps", 4, 4)
    assert result.trajectory.steps == [] and result.error is None


def test_policy_running_out_of_script_is_a_policy_error(env: LocalEnv) -> None:
    result = run_episode(env, ScriptedPolicy([format_output("t", "ls")]), INSTANCE)
    assert result.exit_reason == "policy_error" and result.is_error
    assert "ran out of script" in result.error


def test_wall_clock_ends_the_episode(env: LocalEnv) -> None:
    result = run_episode(env, EmptyPolicy(), INSTANCE, AgentConfig(episode_timeout_s=1e-9))
    assert (result.exit_reason, result.calls) == ("time_limit", 0)


def test_env_truncation_ends_the_episode_with_the_patch_so_far(env: LocalEnv) -> None:
    env.truncate_after = 1
    policy = ScriptedPolicy([format_output("t", "echo x = 9 > x.py"), format_output("t", "ls")])
    result = run_episode(env, policy, INSTANCE)
    assert (result.exit_reason, result.calls, len(result.trajectory.steps)) == ("time_limit", 1, 1)
    assert "+x = 9" in result.patch


class RecordingPolicy(ScriptedPolicy):
    """Scripted outputs, remembering the messages of each call."""

    def generate(self, messages: list[dict[str, str]]) -> str:
        self.seen = [*getattr(self, "seen", []), messages]
        return super().generate(messages)


def test_history_strips_thoughts_and_elides_old_observations_to_the_budget(env: LocalEnv) -> None:
    outputs = [
        format_output("SECRET-THOUGHT", "seq 1 400"),
        format_output("t", "seq 1 3"),
        "<think>t</think>\nsubmit",
    ]
    policy = RecordingPolicy(outputs)
    run_episode(env, policy, INSTANCE, AgentConfig(token_budget=600))
    last = policy.seen[-1]
    assert all("SECRET-THOUGHT" not in m["content"] for m in last)
    assert OBSERVATION_ELIDED in last[3]["content"]  # the long first observation went first
    assert "1\n2\n3" in last[5]["content"]  # the last observation is kept


def test_junk_and_test_files_stay_out_of_the_patch(env: LocalEnv) -> None:
    junk = (
        "mkdir -p __pycache__ pkg.egg-info build && touch __pycache__/x.pyc pkg.egg-info/PKG-INFO build/lib"
    )
    edits = (
        "echo t = 3 > test_x.py && echo y = 1 > y.py && echo x = 5 > x.py && mkdir tests && touch tests/a.py"
    )
    actions = [junk, edits, "submit"]
    result = run_episode(env, ScriptedPolicy([format_output("t", a) for a in actions]), INSTANCE)
    assert patch_paths(result.patch) == {"x.py", "y.py"}


def test_each_output_is_parsed_once_and_the_env_gets_the_parse(env: LocalEnv) -> None:
    outputs = [format_output("look", "ls"), "no think", format_output("done", "submit")]
    result = run_episode(env, ScriptedPolicy(outputs), INSTANCE)
    assert [type(t) for t in env.received] == [Completion, Completion]
    # the env's parse_output returned the loop's parse: the very same object, no second parse
    assert parse_output(env.received[0]) is result.steps[0].parsed
    assert result.steps[1].parsed is None and result.steps[1].format_error
    assert result.format_errors == 1 and result.steps[2].parsed.action == "submit"


def test_submit_to_env_ends_on_the_envs_termination_with_its_reward(env: LocalEnv) -> None:
    outputs = [format_output("t", "echo x = 3 > x.py"), format_output("t", "submit")]
    result = run_episode(env, ScriptedPolicy(outputs), INSTANCE, AgentConfig(submit_to_env=True))
    assert (result.exit_reason, env.steps, result.total_reward) == ("submitted", 2, 1.0)
    assert result.terminated and not result.truncated and "+x = 3" in result.patch
    assert [s.action for s in result.trajectory.steps] == ["echo x = 3 > x.py", "submit"]


def _envs(tmp_path: Path, n: int) -> list[LocalEnv]:
    envs = []
    for i in range(n):
        repo = tmp_path / f"repo{i}"
        repo.mkdir()
        (repo / "x.py").write_text("x = 1\n")
        _git(repo, "init", "-q")
        _git(repo, "add", ".")
        _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
        envs.append(LocalEnv(repo))
    return envs


class BatchPolicy:
    """Stateless: edits x.py at the first turn, submits at the second; answers whole batches, recording sizes."""

    name = "batch"

    def __init__(self) -> None:
        self.batches: list[int] = []

    def reset(self, instance: Instance) -> None:
        pass

    def generate(self, messages: list[dict[str, str]]) -> str:
        turn = (len(messages) - 2) // 2
        return format_output("t", "echo x = 7 > x.py" if turn == 0 else "submit")

    def generate_batch(self, batch: list[list[dict[str, str]]]) -> list[str]:
        self.batches.append(len(batch))
        return [self.generate(messages) for messages in batch]


def test_lockstep_asks_a_shared_policy_for_one_batch_per_turn(tmp_path: Path) -> None:
    envs, policy = _envs(tmp_path, 3), BatchPolicy()
    results = run_episodes_lockstep(envs, policy, [INSTANCE] * 3)
    assert policy.batches == [3, 3]
    assert [(r.exit_reason, r.calls) for r in results] == [("submitted", 2)] * 3
    assert all("+x = 7" in r.patch for r in results) and all(e.closed for e in envs)


def test_lockstep_episodes_of_different_lengths_and_a_failing_policy(tmp_path: Path) -> None:
    envs = _envs(tmp_path, 3)
    policies = [
        ScriptedPolicy(
            [format_output("t", "echo x = 4 > x.py"), format_output("t", "ls"), format_output("t", "submit")]
        ),
        EmptyPolicy(),
        ScriptedPolicy([format_output("t", "ls")]),  # runs out of script at its second turn
    ]
    results = run_episodes_lockstep(envs, policies, [INSTANCE] * 3)
    assert [(r.exit_reason, r.calls) for r in results] == [
        ("submitted", 3),
        ("submitted", 1),
        ("policy_error", 1),
    ]
    assert "+x = 4" in results[0].patch and results[1].patch == ""
    assert "ran out of script" in results[2].error and [e.steps for e in envs] == [2, 0, 1]


SECTION_X = "diff --git a/src/x.py b/src/x.py\n+x\n"
SECTION_T = "diff --git a/tests/test_x.py b/tests/test_x.py\n+t\n"


@pytest.mark.parametrize(
    ("diff", "exclude", "expected"),
    [
        (SECTION_X + SECTION_T, {"tests/test_x.py"}, SECTION_X),  # test file touched by test_patch dropped
        (SECTION_T + SECTION_X, set(), SECTION_T + SECTION_X),  # nothing excluded: unchanged
        (
            "diff --git a/a/__pycache__/m.cpython-311.pyc b/a/__pycache__/m.cpython-311.pyc\n+b\n",
            set(),
            "",
        ),  # pyc
        (
            "diff --git a/p.egg-info/PKG-INFO b/p.egg-info/PKG-INFO\n+b\n" + SECTION_X,
            set(),
            SECTION_X,
        ),  # egg-info
        ("diff --git a/build/lib/x.py b/build/lib/x.py\n+b\n", set(), ""),  # build/ output
        ("diff --git a/src/rebuild/x.py b/src/rebuild/x.py\n+b\n", set(), None),  # 'rebuild/' is not build/
        ("", {"x"}, ""),  # empty diff
    ],
)
def test_clean_patch(diff: str, exclude: set[str], expected: str | None) -> None:
    assert clean_patch(diff, exclude) == (diff if expected is None else expected)
