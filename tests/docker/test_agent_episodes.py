"""The agent loop over SWEEnv in real containers: gold resolves, malformed output hits max steps, replay, HF model."""

from __future__ import annotations

from pathlib import Path

import pytest

from swe_srl.agent.loop import AgentConfig, run_episode
from swe_srl.agent.policies import EmptyPolicy, GoldPolicy, ReplayPolicy, ScriptedPolicy, make_policy
from swe_srl.benchmark.instances import Instance, load_instances
from swe_srl.core.actions import format_output
from swe_srl.trajectories.schema import Step, Trajectory

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def instances(docker_engine, tmp_path_factory: pytest.TempPathFactory) -> list[Instance]:
    from agent_tasks import make_tiny_dataset

    from swe_srl.infra.recipes import instance_image

    loaded = load_instances(str(make_tiny_dataset(tmp_path_factory.mktemp("tiny-tasks"))))
    for instance in loaded:
        instance_image(instance)  # build once, outside the tests' timing
    return loaded


@pytest.fixture
def env(instances: list[Instance]):
    from swe_srl.env.swe_env import SWEEnv

    env = SWEEnv(instances=instances, oracle_files=True)
    yield env
    env.close()


def test_gold_policy_resolves_and_empty_does_not(env, instances: list[Instance]) -> None:
    from swe_srl.grading.runner import grade

    gold = run_episode(env, GoldPolicy(), instances[0])
    assert (gold.exit_reason, gold.calls, gold.format_errors) == ("submitted", 2, 0)
    assert gold.patch == instances[0].patch
    assert env.sandbox is None  # the episode's container is gone
    assert gold.trajectory.metadata["oracle_files"] == ["calc.py"]
    assert grade(instances[0], gold.patch).status == "resolved"
    empty = run_episode(env, EmptyPolicy(), instances[0])
    assert (empty.exit_reason, empty.patch) == ("submitted", "")
    assert grade(instances[0], empty.patch).status == "unresolved"


def test_malformed_output_ends_at_max_steps_with_format_errors(env, instances: list[Instance]) -> None:
    policy = ScriptedPolicy(["I think I should run ls"] * 3 + [format_output("t", "ls")])
    result = run_episode(env, policy, instances[0], AgentConfig(max_steps=3))
    assert (result.exit_reason, result.calls, result.format_errors, result.patch) == ("max_steps", 3, 3, "")
    assert result.trajectory.metadata["format_errors"] == 3


def test_replay_reproduces_an_expert_trajectory_patch(env, instances: list[Instance]) -> None:
    instance = instances[1]
    old, new = "return a + b\n\n\ndef neg", "return a * b\n\n\ndef neg"
    expert = Trajectory(
        instance.instance_id,
        instance.problem_statement,
        [
            Step("Find mul.", "grep -n 'def mul' -A1 calc.py"),
            Step(
                "Fix it.",
                f"str_replace_editor str_replace /testbed/calc.py --old_str '{old}' --new_str '{new}'",
            ),
            Step("Check.", "python -c 'from calc import mul; print(mul(2, 3))'"),
            Step("Done.", "submit"),
        ],
        patch=instance.patch,
    )
    result = run_episode(env, ReplayPolicy([expert]), instance)
    assert result.exit_reason == "submitted"
    assert result.patch == expert.patch
    assert [s.action for s in result.trajectory.steps] == [s.action for s in expert.steps]
    assert result.trajectory.steps[2].observation.startswith("6")


def test_hf_policy_completes_an_episode(env, instances: list[Instance], tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from swe_srl.core.prompts import build_messages
    from swe_srl.train.tiny.model import make_tiny_policy

    texts = [m["content"] for m in build_messages(instances[0].problem_statement, [("ls", "calc.py")])]
    model = make_tiny_policy(texts, tmp_path / "tiny")
    policy = make_policy(f"hf:{model}", max_new_tokens=12)
    result = run_episode(env, policy, instances[0], AgentConfig(max_steps=2))
    assert result.exit_reason in ("max_steps", "submitted") and not result.is_error
    assert 1 <= result.calls <= 2 and result.format_errors <= result.calls


def test_run_episodes_in_parallel_reports_each_instance(instances: list[Instance]) -> None:
    from swe_srl.agent.loop import run_episodes

    seen: list[str] = []
    results = run_episodes(instances, GoldPolicy, workers=2, on_result=lambda r: seen.append(r.instance_id))
    assert [r.instance_id for r in results] == [i.instance_id for i in instances]
    assert sorted(seen) == sorted(i.instance_id for i in instances)
    assert [r.patch for r in results] == [i.patch for i in instances]
