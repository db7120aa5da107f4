"""The warm effect box really goes back to the expert state between evaluations: files (untracked, deleted,
modified), git refs and stash, cwd, shell environment, background processes, scratch; a write outside the
repository replaces the container; and a warm box gives the values of a fresh container per evaluation."""

from __future__ import annotations

import pytest

from swe_srl.trajectories.decompose import executed_steps
from swe_srl.trajectories.schema import Trajectory, read_jsonl

pytestmark = pytest.mark.docker
MESS = (
    "echo junk > untracked.txt; mkdir -p newdir && echo x > newdir/f.py; rm -f README.md; "
    "echo '# edit' >> {path}; git stash -u -q; echo y > stashed-after.txt; git checkout -q -b other; "
    "git add -A; git -c user.name=a -c user.email=a@b commit -qm wip; git tag v-mess; "
    "export MESS_VAR=1; mess_fn() {{ :; }}; set -o noclobber; cd /; "
    "(while true; do echo z >> /testbed/bg.txt; sleep 0.05; done) & python -c 'import time; time.sleep(300)' & "
    "echo t > /tmp/leftover; echo u > /tmp/.hidden"
)


@pytest.fixture(scope="module")
def task(docker_engine):
    from swe_srl.benchmark.instances import load_instances
    from swe_srl.trajectories.expert_state import expert_states
    from swe_srl.trajectories.scripted import default_trajectories

    raw = next(iter(read_jsonl(default_trajectories(split="test"))))
    traj = Trajectory(raw.instance_id, raw.problem, executed_steps(raw), raw.patch)
    instance = {i.instance_id: i for i in load_instances("bundled:test")}[traj.instance_id]
    state = expert_states(traj, instance)
    fix = next(k for k in range(len(state.diffs)) if state.diffs[k] != state.before(k)[0])
    return instance, traj, state, fix


def test_reset_restores_everything(task) -> None:
    from swe_srl.rewards.effect.container import EffectBox

    instance, traj, state, fix = task
    post, cwd = state.diffs[fix], "/testbed/tabulate"
    box = EffectBox(instance)
    try:
        tree = box.reset(post, cwd)
        clean = box.sandbox.run(
            "git status --porcelain; git stash list; git branch; git tag; ls -A /tmp"
        ).output
        box.act(MESS.format(path=instance.oracle_files[0]), tree, lambda p: False)
        assert box.reset(post, cwd) == tree and box.worktree_tree() == tree
        probe = box.sandbox.run(
            "pwd; echo var=${MESS_VAR-unset}; type mess_fn 2>&1 | head -1; set -o | grep noclobber; "
            "ps -eo comm= | sort | uniq -c | grep -c -E ' (sleep|bash)$'; "
            "ls /testbed/untracked.txt /testbed/newdir /testbed/stashed-after.txt 2>&1 | grep -c 'No such'"
        ).output.split("\n")
        assert probe[0] == cwd and probe[1] == "var=unset" and "not found" in probe[2]
        assert probe[3].split() == ["noclobber", "off"]
        assert probe[5] == "3"  # none of the untracked files is left
        again = box.sandbox.run(
            "git status --porcelain; git stash list; git branch; git tag; ls -A /tmp"
        ).output
        assert (
            again == clean
        )  # same status (the state's changes unstaged), no stash, branch or tag, empty /tmp
        procs = box.sandbox.run("ps -eo args=").output
        assert "time.sleep(300)" not in procs and procs.count("bash") == 3  # pid 1, control shell, session
        box.sandbox.run("sleep 0.3")
        assert box.worktree_tree() == tree  # the background writer is gone: nothing changes the tree any more
    finally:
        box.close()


def test_writes_outside_the_repository_replace_the_box(task, tmp_path) -> None:
    from swe_srl.rewards.effect.evaluator import SandboxEffect

    instance, traj, _, fix = task
    with SandboxEffect("cached", root=tmp_path / "a", expert_root=tmp_path / "e") as effect:
        effect.evaluate(instance, traj, fix - 1, "ls")
        assert effect.sandbox_starts == 1
        effect.evaluate(instance, traj, fix - 1, "echo x > /opt/venv/bin/pytest-shadow; ls")
        effect.evaluate(instance, traj, fix - 1, "which pytest-shadow || true")
        assert effect.sandbox_starts == 2  # tainted by the write under /opt/venv: a fresh container
        probe = effect._boxes[instance.instance_id].sandbox.run("ls /opt/venv/bin/pytest-shadow").exit_code
        assert probe != 0


def test_warm_box_equals_fresh_containers(task, tmp_path) -> None:
    from swe_srl.rewards.effect.evaluator import SandboxEffect

    instance, traj, _, fix = task
    path = instance.oracle_files[0]
    read = next(k for k in range(fix) if traj.steps[k].exit_code == 0)  # a read that succeeded
    actions = [
        (fix, MESS.format(path=path)),  # leaves everything dirty for the next evaluation
        (fix, traj.steps[fix].action),
        (fix, "true"),
        (fix, f"echo '# not a fix' >> {path}"),
        (read, "cat untracked.txt"),  # fails (exit 1) where the expert's read succeeded: the mess is gone
        (read, traj.steps[read].action),
        (read, "echo $MESS_VAR > /testbed/var.txt"),  # a new file, empty: the variable is gone
    ]
    expert = tmp_path / "expert"
    with SandboxEffect("cached", root=tmp_path / "warm", expert_root=expert) as warm:
        warm_values = [warm.evaluate(instance, traj, k, a).value for k, a in actions]
    with SandboxEffect("cached", root=tmp_path / "fresh", expert_root=expert, warm=False) as fresh:
        fresh_values = [fresh.evaluate(instance, traj, k, a).value for k, a in actions]
    assert warm_values == fresh_values
    assert warm_values[1] == 1.0 and warm_values[2] == 0.0 and warm_values[4] == 0.5 and warm_values[6] == 0.5
    ran = [a for k, a in actions if a != traj.steps[k].action]  # the expert's own action is not re-run
    assert warm.sandbox_starts == 1 and fresh.sandbox_starts == len(ran)
