"""The sandbox effect layer: the expert's tree → 1.0 without tests, a no-op at the fix step → 0, a different edit
→ tree similarity and target-test agreement; the cache gives the same value without rerunning anything."""

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
    from swe_srl.rewards.effect.evaluator import SandboxEffect

    traj, instance, k = fix_step
    effect = SandboxEffect("full", root=tmp_path, expert_root=tmp_path / "e")
    result = effect.evaluate(instance, traj, k, traj.steps[k].action)
    effect.close()
    assert (result.value, result.identical, result.python_ok) == (1.0, True, True)
    assert effect.test_runs == 0  # an identical tree needs no tests


def test_cached_equals_full_and_skips_tests(fix_step, tmp_path) -> None:
    from swe_srl.rewards.effect.evaluator import SandboxEffect

    traj, instance, k = fix_step
    edit = f"echo '# not the fix' >> {instance.oracle_files[0]}"
    full = SandboxEffect("full", root=tmp_path / "a", expert_root=tmp_path / "e")
    assert full.evaluate(instance, traj, k, "ls").value == 0.0  # no change where the expert fixed the bug
    cold = full.evaluate(instance, traj, k, edit)  # a change that fixes nothing: the target tests run
    assert not cold.identical and full.test_runs >= 1 and cold.tests
    assert 0.0 < cold.value < 0.5  # some tree similarity (same file), no test the expert fixed passes
    full.close()
    cached = SandboxEffect("cached", root=tmp_path / "a", expert_root=tmp_path / "e")
    warm = cached.evaluate(instance, traj, k, edit)
    assert warm.value == cold.value and warm.cached
    assert cached.test_runs == 0 and cached.sandbox_starts == 0


def test_broken_python_is_flagged(fix_step, tmp_path) -> None:
    from swe_srl.rewards.effect.evaluator import SandboxEffect

    traj, instance, k = fix_step
    path = instance.oracle_files[0]
    with SandboxEffect("full", root=tmp_path, expert_root=tmp_path / "e") as effect:
        result = effect.evaluate(instance, traj, k, f"echo 'def broken(:' >> {path}")
    assert result.python_ok is False and not result.identical and result.value == 0.0
