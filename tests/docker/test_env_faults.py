"""Faults: a policy cannot turn its own failure into an infra error, and steps cost no ``docker exec``.

Each attack runs in a real episode (SweSrl-v0 on a bundled task): the episode goes on with an observation, its patch
is still computed, and grading says ``unresolved`` with a reason, never ``error``.
"""

from __future__ import annotations

import time

import pytest

from swe_srl.agent.loop import AgentConfig, run_episode
from swe_srl.agent.policies import ScriptedPolicy
from swe_srl.benchmark.instances import Instance
from swe_srl.core.actions import SUBMIT, format_output
from swe_srl.env.swe_env import SWEEnv
from swe_srl.grading.runner import grade
from swe_srl.infra.sandbox.base import Limits

pytestmark = pytest.mark.docker

BREAK_FILE = "inflection/__init__.py"
ATTACKS = {
    "kill_all": "kill -9 -1",
    "pkill_bash": "pkill -9 bash",
    "delete_git": f"rm -rf .git && git init -q && echo '# edited after rm -rf .git' >> {BREAK_FILE}",
    "fork_bomb": ":(){ :|:& };:; sleep 30",
    "fork_bomb_background": "(:(){ :|:& };:) & sleep 2; echo started",
    "break_imports": f"echo 'raise ImportError(\"broken by the policy\")' > {BREAK_FILE}",
}


@pytest.fixture(scope="module")
def instance(docker_engine) -> Instance:
    from swe_srl.benchmark.instances import load_instances
    from swe_srl.infra.recipes import instance_image

    picked = next(i for i in load_instances("bundled") if i.instance_id == "inflection__inflection-m011")
    instance_image(picked)
    return picked


def _env(instance: Instance, **limits) -> SWEEnv:
    return SWEEnv(instances=[instance], limits=Limits(**{"command_timeout_s": 8, "pids": 128, **limits}))


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_policy_attack_is_an_observation_and_unresolved(instance: Instance, attack: str) -> None:
    outputs = [
        format_output("attack", ATTACKS[attack]),
        format_output("still here?", "echo alive && git status --short | head -3"),
        format_output("done", SUBMIT),
    ]
    env = _env(instance)
    try:
        result = run_episode(env, ScriptedPolicy(outputs), instance, AgentConfig(max_steps=5))
    finally:
        env.close()
    assert result.exit_reason == "submitted", result.error
    hit, after = result.steps[0], result.steps[1]
    assert "alive" in after.observation, after.observation
    if attack in ("kill_all", "pkill_bash"):
        assert "[exit code:" in hit.observation
    if attack == "fork_bomb_background":  # cleared when a command ends at the pids limit
        assert "process limit" in hit.observation + after.observation
    if attack == "delete_git":
        assert "+# edited after rm -rf .git" in result.patch, "the patch survives a deleted .git"
        assert any("pristine" in note for note in result.patch_notes)
    if attack == "break_imports":
        assert "broken by the policy" in result.patch
    graded = grade(instance, result.patch)
    assert graded.status == "unresolved", (graded.status, graded.log[-1500:])
    assert "FAIL_TO_PASS" in graded.reason or "no test results" in graded.reason, graded.reason


def test_tests_that_hang_are_unresolved_timeout(instance: Instance) -> None:
    hang = (
        f"diff --git a/{BREAK_FILE} b/{BREAK_FILE}\n--- a/{BREAK_FILE}\n+++ b/{BREAK_FILE}\n"
        "@@ -1,0 +1,2 @@\n+import time\n+time.sleep(3600)\n"
    )
    graded = grade(instance, hang, timeout=20)
    assert (graded.status, graded.reason) == ("unresolved", "timeout"), graded.log[-1500:]
    assert "unresolved (timeout)" in graded.log


def test_steps_make_no_docker_exec_and_no_diff(instance: Instance) -> None:
    env = _env(instance)
    try:
        env.reset(options={"instance_id": instance.instance_id})
        box = env.sandbox
        assert box is not None
        before = box.exec_count
        for k in range(20):
            obs, *_, info = env.step(format_output("t", f"echo step{k} >> notes.txt"))
            assert "[exit code: 0]" in obs and "patch" not in info
        assert box.exec_count == before, "a step made a docker exec"
        assert "+step19" in env.patch() and box.exec_count == before, "the patch needs no docker exec either"
    finally:
        env.close()


def test_a_100mb_file_step_returns_and_is_left_out_of_the_patch(instance: Instance) -> None:
    env = _env(instance, command_timeout_s=30)
    try:
        env.reset(options={"instance_id": instance.instance_id})
        started = time.monotonic()
        obs, *_ = env.step(format_output("big", "head -c 100000000 /dev/urandom > big.bin && echo wrote"))
        assert "wrote" in obs and time.monotonic() - started < 30
        obs, *_ = env.step(format_output("edit", f"echo '# small edit' >> {BREAK_FILE}"))
        patch = env.patch()
        assert "+# small edit" in patch and "big.bin" not in patch
        assert any(note.startswith("big.bin (over") for note in env.patch_notes), env.patch_notes
    finally:
        env.close()


def test_disk_budget_stops_the_command_with_an_observation(instance: Instance) -> None:
    env = _env(instance, disk="64m", command_timeout_s=60)
    try:
        env.reset(options={"instance_id": instance.instance_id})
        obs, *_ = env.step(format_output("one big file", "head -c 200000000 /dev/zero > big; echo rc=$?"))
        assert "rc=153" in obs and "file-size limit" in obs, obs
        many = "for i in $(seq 20); do head -c 30000000 /dev/zero > f$i; sleep 0.2; done; echo finished"
        obs, _, _, _, info = env.step(format_output("many files", many))
        assert "disk budget of 64m is exceeded" in obs and "finished" not in obs, obs
        obs, *_ = env.step(format_output("clean", "rm -f big f*; echo cleaned"))
        assert "cleaned" in obs
    finally:
        env.close()


def test_a_truncated_episode_still_yields_its_patch(instance: Instance) -> None:
    outputs = [format_output("edit", f"echo '# edit before the limit' >> {BREAK_FILE}")] * 3
    env = _env(instance)
    try:
        result = run_episode(env, ScriptedPolicy(outputs), instance, AgentConfig(max_steps=2))
    finally:
        env.close()
    assert result.exit_reason == "max_steps" and result.truncated
    assert result.patch.count("+# edit before the limit") == 2, result.patch
