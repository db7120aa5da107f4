"""SWEEnv in layered mode with the effect layer on: the action is run in a sandbox at the expert state and scored
against the expert's change (identical tree → 1.0, a no-op where the expert edited → 0; docs/rewards.md "Effect")."""

from __future__ import annotations

from pathlib import Path

import pytest

from swe_srl.core.actions import format_output
from swe_srl.env.swe_env import SWEEnv
from swe_srl.trajectories.schema import Step, Trajectory

pytestmark = pytest.mark.docker
FIX = "sed -i 's/return a - b/return a + b/' calc.py"


@pytest.fixture(scope="module")
def calc_add(docker_engine, tmp_path_factory: pytest.TempPathFactory):
    from agent_tasks import make_tiny_dataset

    from swe_srl.benchmark.instances import load_instances
    from swe_srl.infra.recipes import instance_image

    instance = load_instances(str(make_tiny_dataset(tmp_path_factory.mktemp("effect-tasks"))))[0]
    instance_image(instance)
    return instance


def test_layered_env_scores_the_effect_of_the_action(calc_add, tmp_path: Path):
    traj = Trajectory(
        calc_add.instance_id,
        calc_add.problem_statement,
        [Step("look", "cat calc.py"), Step("fix", FIX), Step("done", "submit")],
    )
    cases = [
        # the expert's own edit: same tree as the expert → 1.0
        (FIX, 1.0),
        # no edit where the expert fixed the bug: no effect
        ("echo nothing", 0.0),
    ]
    env = SWEEnv(instances=[calc_add], reward_mode="layered", effect_mode="full")
    try:
        for action, effect in cases:
            env.reset(options={"instance_id": calc_add.instance_id, "trajectory": traj, "step": 1})
            _, reward, _, _, info = env.step(format_output("fix it", action))
            assert info["reward_components"]["effect"] == pytest.approx(effect), action
            assert -1.0 <= reward <= 1.0
    finally:
        env.close()
    off = SWEEnv(instances=[calc_add], reward_mode="layered", effect_mode="off")
    try:
        off.reset(options={"instance_id": calc_add.instance_id, "trajectory": traj, "step": 1})
        _, _, _, _, info = off.step(format_output("fix it", FIX))
        assert "effect" not in info["reward_components"]
    finally:
        off.close()
