"""Replaying scripted trajectories reproduces their observations; expert state restores the recorded trees."""

import pytest

from swe_srl.trajectories.schema import read_jsonl

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def expert(docker_engine):
    from swe_srl.benchmark.instances import load_instances
    from swe_srl.trajectories.scripted import default_trajectories

    trajs = list(read_jsonl(default_trajectories(split="train")))
    by_id = {i.instance_id: i for i in load_instances("bundled:train")}
    return trajs[0], by_id[trajs[0].instance_id]


def test_replay_reproduces_observations(expert) -> None:
    from swe_srl.eval.replay import render_table, replay

    traj, instance = expert
    rows = replay(traj, instance)
    assert [r.step for r in rows] == list(range(len(traj.steps)))
    for row, step in zip(rows, traj.steps, strict=True):
        assert row.exit_code == step.exit_code, (row.action, row.observation)
        assert row.match in (True, None), (row.action, row.observation, step.observation)
        # the expert's own action scored against itself is a perfect (non-format-error) reward
        assert row.rewards["format"] == 1.0 and row.rewards["total"] > 0.99
    assert rows[-1].match is None  # submit runs nothing
    assert render_table(traj, rows).row_count == len(rows)


def test_restore_gives_recorded_tree(expert) -> None:
    from swe_srl.infra.sandbox.factory import open_sandbox
    from swe_srl.trajectories.expert_state import expert_states, restore

    traj, instance = expert
    state = expert_states(traj, instance)
    assert len(state.diffs) == len(traj.steps) and state.diffs[-1] == traj.patch
    k = next(i for i, d in enumerate(state.diffs) if d)  # the first step that changed the tree
    with open_sandbox(instance, profile="expert") as sandbox:
        restore(sandbox, state, k + 1)
        assert sandbox.diff() == state.diffs[k]
        assert sandbox.run("pwd").output.strip() == state.cwds[k]
