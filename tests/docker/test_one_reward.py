"""One action, one reward: with the effect layer off, the trainer's reward (``train.run.build_reward``) and SWEEnv
give an action at an expert step the same score, its syntax layer judged against the same executables — the
instance image's, here an image that lacks ``rg`` (which the default executable set has) and has ``dpkg`` (which it
has not), so a trainer judging against the default set would disagree with the env."""

from __future__ import annotations

from pathlib import Path

import pytest

from swe_srl.core.actions import format_output
from swe_srl.env.swe_env import SWEEnv
from swe_srl.rewards import SRLReward
from swe_srl.rewards.commands import DEFAULT_EXECUTABLES
from swe_srl.trajectories.schema import Step, Trajectory

pytestmark = pytest.mark.docker
EXPERT = "grep -n 'a - b' calc.py"
ACTIONS = [EXPERT, "rg -n 'a - b' calc.py", "dpkg -S /bin/ls", "./check.sh", "cat calc.py | grep add"]


@pytest.fixture(scope="module")
def calc_add(docker_engine, tmp_path_factory: pytest.TempPathFactory):
    from agent_tasks import make_tiny_dataset

    from swe_srl.benchmark.instances import load_instances
    from swe_srl.infra.recipes import instance_image

    instance = load_instances(str(make_tiny_dataset(tmp_path_factory.mktemp("one-reward"))))[0]
    instance_image(instance)
    return instance


def _env_scores(instance, traj: Trajectory) -> list[tuple[float, dict]]:
    env = SWEEnv(instances=[instance], reward_mode="layered", effect_mode="off")
    out = []
    try:
        for action in ACTIONS:
            env.reset(options={"instance_id": instance.instance_id, "trajectory": traj, "step": 0})
            _, reward, _, _, info = env.step(format_output("look", action))
            out.append((reward, info["reward_components"]))
    finally:
        env.close()
    return out


def test_the_trainer_and_the_env_give_one_action_one_reward(calc_add, tmp_path: Path) -> None:
    from swe_srl.infra.recipes import instance_executables
    from swe_srl.train.config import load_config
    from swe_srl.train.run import build_reward
    from swe_srl.train.samples import SampleSet

    image = instance_executables(calc_add)
    assert "rg" in DEFAULT_EXECUTABLES and "rg" not in image, "the test needs an image without rg"
    assert "dpkg" not in DEFAULT_EXECUTABLES and "dpkg" in image, "the test needs an image with dpkg"
    traj = Trajectory(
        calc_add.instance_id,
        calc_add.problem_statement,
        [Step("look", EXPERT), Step("fix", "sed -i 's/a - b/a + b/' calc.py"), Step("done", "submit")],
    )
    env = _env_scores(calc_add, traj)
    config = load_config(None, ["reward=layered"])
    assert config.effect == "off"
    reward = build_reward(config, None, SampleSet(tmp_path / "samples.jsonl", [traj], [calc_add]))
    n = len(ACTIONS)
    totals = reward(
        [""] * n,
        [format_output("look", a) for a in ACTIONS],
        [EXPERT] * n,
        instance_id=[calc_add.instance_id] * n,
        trajectory_hash=[traj.content_hash()] * n,
        step=[0] * n,
    )
    assert reward.syntax_fallback is None
    assert totals == pytest.approx([r for r, _ in env])
    assert reward.last_components == [c for _, c in env]
    syntax = [c["syntax"] for _, c in env]
    assert syntax == [1.0, 0.0, 1.0, 0.0, 1.0]  # rg is not in the image, dpkg is; no step created check.sh
    default = SRLReward(mode="layered")  # the default executable set, created files unknown: another score
    default([""] * n, [format_output("look", a) for a in ACTIONS], [EXPERT] * n)
    assert [c["syntax"] for c in default.last_components] == [1.0, 1.0, 0.0, 1.0, 1.0]
