"""The scripted expert stores the expert state as it runs: the reward's inputs then start no container."""

import os
import time

import pytest

from swe_srl.trajectories.schema import write_jsonl

pytestmark = pytest.mark.docker


def _containers_created(client, since: float, until: float) -> int:
    """Containers this process created between ``since`` and ``until`` (the engine's own event log)."""
    events = client.events(
        since=int(since),
        until=int(until) + 1,
        decode=True,
        filters={"type": "container", "event": "create", "label": f"swe-srl.pid={os.getpid()}"},
    )
    return sum(1 for _ in events)


def test_scripted_run_stores_the_expert_state(docker_engine, tmp_path) -> None:
    from swe_srl.benchmark.instances import load_instances
    from swe_srl.rewards.syntax_inputs import StepInputs
    from swe_srl.trajectories import import_trajectories
    from swe_srl.trajectories.decompose import executed_steps
    from swe_srl.trajectories.expert_state import _state_path, created_files, expert_states
    from swe_srl.trajectories.schema import Trajectory
    from swe_srl.trajectories.scripted import scripted_trajectories

    instance = load_instances("bundled:test")[0]
    started = time.time()
    (generated,) = scripted_trajectories([instance], seed=3, progress=False)
    write_jsonl(tmp_path / "scripted.jsonl", [generated])
    (traj,) = import_trajectories(str(tmp_path / "scripted.jsonl"))  # as the samples and the reward read it
    seen = Trajectory(traj.instance_id, traj.problem, executed_steps(traj), traj.patch)
    path = _state_path(seen, instance)
    assert path.is_file() and path.stat().st_mtime >= started - 1, "the generation stored no expert state"
    stored = path.stat().st_mtime_ns

    inputs = StepInputs([traj], [instance])
    inputs(instance.instance_id, traj.content_hash(), 0)  # lists the image's executables (may start one)
    before = time.time()
    created = [inputs(instance.instance_id, traj.content_hash(), k)[1] for k in range(len(traj.steps))]
    state = expert_states(seen, instance)
    assert _containers_created(docker_engine, before, time.time()) == 0
    assert path.stat().st_mtime_ns == stored, "expert_states replayed the trajectory"
    assert inputs.fallback is None

    replayed = expert_states(seen, instance, refresh=True)
    assert _containers_created(docker_engine, before, time.time()) == 1  # the replay's own container
    assert state.diffs == replayed.diffs and state.cwds == replayed.cwds
    assert created == [created_files(replayed, k) for k in range(len(traj.steps))]
    assert len(state.diffs) == len(traj.steps) and state.diffs[-1] == traj.patch
