"""SweSrl-v0 against real containers: check_env, a full scripted episode, wall clock, a killed container, rewards."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import docker
import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

import swe_srl.env  # noqa: F401 - registers SweSrl-v0
from swe_srl.agent.loop import AgentConfig, run_episode
from swe_srl.agent.policies import ScriptedPolicy, gold_patch_outputs
from swe_srl.benchmark.instances import Instance
from swe_srl.core.actions import format_output, parse_output
from swe_srl.env.swe_env import SWEEnv
from swe_srl.errors import ContainerDied
from swe_srl.infra.sandbox.base import Limits
from swe_srl.trajectories.schema import Step, Trajectory

pytestmark = pytest.mark.docker


def _container_exists(container_id: str) -> bool:
    try:
        docker.from_env().containers.get(container_id)
    except docker.errors.NotFound:
        return False
    return True


@pytest.fixture(scope="module")
def instance(docker_engine) -> Instance:
    """The bundled task with the smallest gold patch, its image built once."""
    from swe_srl.benchmark.instances import load_instances
    from swe_srl.infra.recipes import instance_image

    picked = sorted(load_instances("bundled"), key=lambda i: len(i.patch))[0]
    instance_image(picked)  # build once, outside any test's timing
    return picked


@pytest.fixture
def make_env(instance: Instance) -> Iterator:
    """Creates envs on the module's instance and closes them after the test (conftest checks for leaks)."""
    made: list[gymnasium.Env] = []

    def make(**kwargs) -> gymnasium.Env:
        env = gymnasium.make("SweSrl-v0", instances=[instance], **kwargs)
        made.append(env)
        return env

    yield make
    for env in made:
        env.close()


def _reset(env: gymnasium.Env, instance: Instance, **options) -> str:
    env.reset(seed=0, options={"instance_id": instance.instance_id, **options})
    container_id = env.unwrapped.sandbox.container_id
    assert container_id and _container_exists(container_id)
    return container_id


def test_check_env_passes_against_a_real_container(instance: Instance) -> None:
    env = SWEEnv(instances=[instance])
    try:
        check_env(env, skip_render_check=True)
        assert env.sandbox is not None
        container_id = env.sandbox.container_id
    finally:
        env.close()
    assert env.sandbox is None and not _container_exists(container_id)


def test_gold_patch_episode_resolves_with_outcome_reward_1(make_env, instance: Instance) -> None:
    env = make_env(reward_mode="outcome")
    policy, config = ScriptedPolicy(gold_patch_outputs(instance.patch)), AgentConfig(submit_to_env=True)
    episode = run_episode(env, policy, config=config, seed=0)
    assert episode.instance_id == instance.instance_id
    assert episode.terminated and not episode.truncated
    look, apply, test, submit = episode.steps
    assert look.info["exit_code"] == 0 and look.reward == 0.0
    assert apply.info["exit_code"] == 0, apply.observation
    assert "patch" not in apply.info, "steps never diff: the patch is computed at submit"
    assert submit.info["patch"].strip(), "the applied gold patch shows in the submit's info['patch']"
    assert "[exit code: " in test.observation
    assert submit.info["grade_status"] == "resolved", submit.observation
    assert submit.reward == 1.0 and episode.total_reward == 1.0
    for record in episode.steps:
        assert record.observation in env.observation_space


def test_format_error_costs_minus_one_and_runs_nothing(make_env, instance: Instance) -> None:
    env = make_env()
    _reset(env, instance)
    obs, reward, terminated, truncated, info = env.step("touch should_not_exist.txt")
    assert reward == -1.0 and not terminated and not truncated
    assert "missing_think" in info["format_error"] and "missing_think" in obs
    obs, *_ = env.step(format_output("check", "ls should_not_exist.txt"))
    assert "No such file" in obs and "[exit code: 2]" in obs


def test_wall_clock_truncates_the_episode(make_env, instance: Instance) -> None:
    env = make_env(limits=Limits(episode_timeout_s=3, command_timeout_s=60))
    _reset(env, instance)
    start = time.monotonic()
    obs, reward, terminated, truncated, info = env.step(format_output("wait", "sleep 30"))
    assert truncated and not terminated and info["truncation"] == "wall_clock"
    assert info["timed_out"] and time.monotonic() - start < 15
    with pytest.raises(gymnasium.error.ResetNeeded):
        env.step(format_output("again", "ls"))


def test_killed_container_raises_container_died_and_leaks_nothing(make_env, instance: Instance) -> None:
    env = make_env()
    container_id = _reset(env, instance)
    subprocess.run(["docker", "kill", container_id], check=True, capture_output=True, timeout=60)
    with pytest.raises(ContainerDied) as err:
        env.step(format_output("still there?", "echo hello"))
    assert instance.instance_id in "".join(getattr(err.value, "__notes__", []))
    assert env.unwrapped.sandbox is None
    assert not _container_exists(container_id)
    env.close()  # idempotent after the failure


def _gold_trajectory(instance: Instance) -> Trajectory:
    steps = [
        Step(thought=p.thought, action=p.action)
        for p in map(parse_output, gold_patch_outputs(instance.patch))
    ]
    return Trajectory(instance_id=instance.instance_id, problem=instance.problem_statement, steps=steps)


def test_srl_reward_of_the_expert_action_is_1_from_a_restored_state(make_env, instance: Instance) -> None:
    traj = _gold_trajectory(instance)
    env = make_env(reward_mode="srl")
    obs, info = env.reset(options={"instance_id": instance.instance_id, "trajectory": traj, "step": 2})
    assert len(info["messages"]) == 2 + 2 * 2, "system, problem, then two expert (action, observation) turns"
    assert env.unwrapped.sandbox.diff().strip(), "the sandbox starts with the expert's patch applied"
    expert = traj.steps[2]
    _, reward, _, _, info = env.step(format_output(expert.thought, expert.action))
    assert reward == pytest.approx(1.0) and info["expert_action"] == expert.action
    _, reward, terminated, _, info = env.step(format_output("done", "ls -la"))  # expert submits here
    assert 0.0 <= reward < 1.0 and not terminated
