"""The sandbox effect layer: same tree → 1.0, otherwise target-test agreement; cache gives the same value
without rerunning tests."""

import pytest

from swe_srl.trajectories.schema import read_jsonl

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def fix_step(docker_engine):
    from swe_srl.benchmark.instances import load_instances
    from swe_srl.trajectories.expert_state import expert_states
    from swe_srl.trajectories.scripted import default_trajectories

    traj = next(iter(read_jsonl(default_trajectories(split="train"))))
    instance = {i.instance_id: i for i in load_instances("bundled:train")}[traj.instance_id]
    state = expert_states(traj, instance)
    k = state.diffs.index(state.diffs[-1])  # the expert's last edit: after it the target tests pass
    return traj, instance, k


def test_expert_action_is_identical(fix_step, tmp_path) -> None:
    from swe_srl.rewards.effect_sandbox import SandboxEffect

    traj, instance, k = fix_step
    effect = SandboxEffect("full", root=tmp_path)
    result = effect.evaluate(instance, traj, k, traj.steps[k].action)
    assert (result.value, result.identical, result.python_ok) == (1.0, True, True)
    assert effect.test_runs == 0  # an identical tree needs no tests


def test_cached_equals_full_and_skips_tests(fix_step, tmp_path) -> None:
    from swe_srl.rewards.effect_sandbox import SandboxEffect

    traj, instance, k = fix_step
    full = SandboxEffect("full", root=tmp_path)
    cold = full.evaluate(instance, traj, k, "ls")  # no edit: the bug is still there
    assert not cold.identical and full.test_runs >= 1
    # FAIL_TO_PASS tests still fail where the expert's fix made them pass, so agreement is below 1
    assert 0.0 <= cold.value < 1.0
    cached = SandboxEffect("cached", root=tmp_path)
    warm = cached.evaluate(instance, traj, k, "ls")
    assert warm.value == cold.value and warm.cached
    assert cached.test_runs == 0 and cached.sandbox_starts == 0


def test_broken_python_is_flagged(fix_step, tmp_path) -> None:
    from swe_srl.rewards.effect_sandbox import SandboxEffect

    traj, instance, k = fix_step
    path = instance.oracle_files[0]
    result = SandboxEffect("full", root=tmp_path).evaluate(
        instance, traj, k, f"echo 'def broken(:' >> {path}"
    )
    assert result.python_ok is False and not result.identical
