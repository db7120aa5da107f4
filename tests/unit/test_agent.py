"""The agent loop on a real tiny git repo (commands run with bash on the host), and patch cleaning."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from swe_srl.agent.loop import AgentConfig, run_episode
from swe_srl.agent.policies import EmptyPolicy, GoldPolicy, ScriptedPolicy
from swe_srl.benchmark.instances import Instance
from swe_srl.core.actions import format_output, parse_output
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

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict]:
        return "prompt", {"instance_id": options["instance_id"], "problem": "x is wrong", "oracle_files": {}}

    def step(self, text: str) -> tuple[str, float, bool, bool, dict]:
        self.steps += 1
        try:
            action = parse_output(text).action
        except ActionFormatError as exc:
            return f"Format error: {exc}", -1.0, False, False, {"format_error": exc.rule}
        proc = subprocess.run(
            ["bash", "-c", action], cwd=self.repo, capture_output=True, text=True, timeout=30
        )
        info = {"format_error": None, "exit_code": proc.returncode}
        truncated = self.steps >= self.truncate_after  # the env's wall clock ran out
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
    assert (result.exit_reason, result.steps, result.format_errors) == ("submitted", 2, 0)
    assert result.patch == _git(env.repo, "diff", "HEAD") and "+x = 2" in result.patch
    # The native trajectory holds the apply step and the submit step, thoughts kept.
    assert result.trajectory.steps[-1].action == "submit"
    assert result.trajectory.steps[0].exit_code == 0
    assert result.trajectory.patch == result.patch and result.trajectory.metadata["policy"] == "gold"
    assert env.closed


def test_empty_policy_submits_nothing(env: LocalEnv) -> None:
    result = run_episode(env, EmptyPolicy(), INSTANCE)
    assert (result.exit_reason, result.patch, result.steps, env.steps) == ("submitted", "", 1, 0)


def test_malformed_outputs_end_at_max_steps_with_format_errors_counted(env: LocalEnv) -> None:
    policy = ScriptedPolicy(["no think block at all"] * 5)
    result = run_episode(env, policy, INSTANCE, AgentConfig(max_steps=4))
    assert (result.exit_reason, result.steps, result.format_errors) == ("max_steps", 4, 4)
    assert result.trajectory.steps == [] and result.error is None


def test_policy_running_out_of_script_is_a_policy_error(env: LocalEnv) -> None:
    result = run_episode(env, ScriptedPolicy([format_output("t", "ls")]), INSTANCE)
    assert result.exit_reason == "policy_error" and result.is_error
    assert "ran out of script" in result.error


def test_wall_clock_ends_the_episode(env: LocalEnv) -> None:
    result = run_episode(env, EmptyPolicy(), INSTANCE, AgentConfig(episode_timeout_s=1e-9))
    assert (result.exit_reason, result.steps) == ("time_limit", 0)


def test_env_truncation_ends_the_episode_with_the_patch_so_far(env: LocalEnv) -> None:
    env.truncate_after = 1
    policy = ScriptedPolicy([format_output("t", "echo x = 9 > x.py"), format_output("t", "ls")])
    result = run_episode(env, policy, INSTANCE)
    assert (result.exit_reason, result.steps, len(result.trajectory.steps)) == ("time_limit", 1, 1)
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
