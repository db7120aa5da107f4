"""Shell semantics on real containers: a mini-swe-agent run that ``cd``s away and then edits by a path relative to
/testbed (the shape of sphinx-doc__sphinx-10449's step 4) replays, restores, scores and re-runs as mini ran it —
each action a fresh process from /testbed — while the persistent default keeps today's behaviour."""

from __future__ import annotations

import json
import subprocess

import pytest

from swe_srl.core.prompts import PER_ACTION_NOTE
from swe_srl.core.shells import PER_ACTION, PERSISTENT

pytestmark = pytest.mark.docker
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"


def _one_line_fix(instance) -> tuple[str, str, str] | None:
    """(path, old line, new line) of a gold patch that changes one line in a subfolder; None for another patch."""
    lines = instance.patch.splitlines()
    removed = [ln[1:] for ln in lines if ln.startswith("-") and not ln.startswith("---")]
    added = [ln[1:] for ln in lines if ln.startswith("+") and not ln.startswith("+++")]
    if len(removed) != 1 or len(added) != 1 or "/" not in instance.oracle_files[0]:
        return None
    return instance.oracle_files[0], removed[0], added[0]


def _mini_record(instance, commands: list[str]) -> dict:
    """A mini-swe-agent 1.x run (``.traj.json``) whose assistant turns are ``commands``, then the submission."""
    messages = [
        {"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
        {"role": "user", "content": f"<pr_description>\n{instance.problem_statement}\n</pr_description>"},
    ]
    for command in commands:
        messages.append({"role": "assistant", "content": f"THOUGHT: next.\n\n```bash\n{command}\n```"})
        messages.append({"role": "user", "content": "<returncode>0</returncode>\n<output>\n</output>"})
    messages.append({"role": "assistant", "content": f"THOUGHT: done.\n\n```bash\n{SUBMIT}\n```"})
    messages.append({"role": "user", "content": instance.patch})
    info = {"exit_status": "Submitted", "submission": instance.patch, "mini_version": "1.15.0"}
    return {"instance_id": instance.instance_id, "info": info, "messages": messages,
            "trajectory_format": "mini-swe-agent-1"}  # fmt: skip


@pytest.fixture(scope="module")
def mini_run(docker_engine, tmp_path_factory):
    """(instance, the imported per-action trajectory, its persistent twin, the edit action)."""
    from swe_srl.benchmark.instances import load_instances
    from swe_srl.trajectories.importers import import_trajectories

    instance = next(i for i in load_instances("bundled:train") if _one_line_fix(i))
    path, old, new = _one_line_fix(instance)
    fix = f"p = pathlib.Path({path!r})\np.write_text(p.read_text().replace({old!r}, {new!r}, 1))"
    edit = f"python - <<'EOF'\nimport pathlib\n{fix}\nEOF"  # a path relative to /testbed, as mini's step 4
    subdir = path.rsplit("/", 1)[0]
    record = _mini_record(instance, [f"cd {subdir} && ls | head -3", "export FIXING=1 && cd /tmp", edit])
    file = tmp_path_factory.mktemp("mini") / f"{instance.instance_id}.traj.json"
    file.write_text(json.dumps(record))
    (traj,) = import_trajectories(str(file))
    twin = type(traj).from_dict({**traj.to_dict(), "shell": PERSISTENT})
    return instance, traj, twin, edit


def test_sandbox_runs_each_action_fresh(mini_run) -> None:
    """Nothing carries over (cwd, exports, variables, functions); timeouts, `exit` and the file-size limit behave."""
    from swe_srl.infra.sandbox.factory import open_sandbox

    instance = mini_run[0]
    with open_sandbox(instance, profile="expert", shell=PER_ACTION) as sandbox:
        first = sandbox.run("cd /tmp && export A=1 && B=2 && f() { :; } && pwd")
        assert (first.output.strip(), first.exit_code) == ("/tmp", 0)
        after = sandbox.run('echo "$PWD A=$A B=$B"; type f >/dev/null 2>&1 || echo no-f')
        assert after.output.split("\n")[:2] == ["/testbed A= B=", "no-f"]
        exited = sandbox.run("exit 3")
        assert (exited.exit_code, exited.session_restarted) == (3, False)
        slow = sandbox.run("sleep 30", timeout=1)
        assert slow.timed_out and slow.exit_code == 124
        assert sandbox.run("ulimit -f").output.strip() == str(sandbox.spec.limits.disk_bytes // 1024)
        assert sandbox.run("pwd").output.strip() == "/testbed"


def test_replay_and_expert_states_follow_the_trajectory(mini_run) -> None:
    """`swe-srl replay` and the expert states: the relative edit after the `cd` applies (per-action); the same
    actions in one persistent shell fail there, as before."""
    from swe_srl.eval.replay import replay
    from swe_srl.trajectories.expert_state import expert_states

    instance, traj, twin, _ = mini_run
    assert traj.shell == PER_ACTION and [s.action for s in traj.steps][-1] == "submit"
    rows = replay(traj, instance)
    assert [r.exit_code for r in rows[:3]] == [0, 0, 0]
    state = expert_states(traj, instance)
    assert set(state.cwds) == {"/testbed"} and state.diffs[2].strip() and state.diffs[2] == state.diffs[-1]
    assert instance.patch.splitlines()[-4:] == state.diffs[2].splitlines()[-4:]
    twin_rows = replay(twin, instance)
    assert twin_rows[2].exit_code != 0 and "No such file" in twin_rows[2].observation
    assert not expert_states(twin, instance).diffs[2].strip()


def test_replay_policy_episode_runs_as_the_trajectory_ran(mini_run) -> None:
    """`--policy replay:` through the env: the episode's shell is the trajectory's; its patch is the fix."""
    from swe_srl.agent.loop import AgentConfig, run_episode
    from swe_srl.agent.policies import ReplayPolicy
    from swe_srl.env.swe_env import SWEEnv

    instance, traj, _, _ = mini_run
    env = SWEEnv(instances=[instance])  # the env's own default stays persistent
    result = run_episode(env, ReplayPolicy([traj]), instance, AgentConfig(max_steps=10))
    assert result.exit_reason == "submitted" and result.trajectory.shell == PER_ACTION
    assert result.patch.strip() and result.patch.splitlines()[-4:] == instance.patch.splitlines()[-4:]


def test_effect_of_an_action_runs_fresh(mini_run, tmp_path) -> None:
    """The effect layer at the edit step: the action re-run in the per-action trajectory's state runs from
    /testbed (exit 0, the expert's tree); in the persistent twin's state it runs in /tmp, where the path fails."""
    from swe_srl.rewards.effect.evaluator import SandboxEffect

    instance, traj, twin, edit = mini_run
    with SandboxEffect("full", root=tmp_path / "a", expert_root=tmp_path / "e") as effect:
        fresh = effect.evaluate(instance, traj, 2, edit, rerun=True)
        stale = effect.evaluate(instance, twin, 2, edit, rerun=True)
    assert (fresh.identical, fresh.value, fresh.exit_code) == (True, 1.0, 0)
    assert stale.exit_code != 0 and stale.tree != fresh.tree


def test_effect_reward_of_a_located_step_keeps_the_shell(mini_run, tmp_path) -> None:
    """As training calls it (a StepContext naming the trajectory by hash): the located trajectory is still
    per-action, so another action with the expert's effect at the edit step is identical to it."""
    from swe_srl.rewards.context import StepContext
    from swe_srl.rewards.effect.evaluator import SandboxEffect

    instance, traj, _, edit = mini_run
    with SandboxEffect(
        "full", trajectories=[traj], instances=[instance], root=tmp_path, expert_root=tmp_path
    ) as ev:
        ctx = StepContext(edit, f"true && {edit}", instance_id=instance.instance_id,
                          trajectory_hash=traj.content_hash(), step=2)  # fmt: skip
        assert ev(ctx) == 1.0 and ev.last.identical


def test_env_option_and_prompt(mini_run) -> None:
    """SweSrl-v0's `shell` option: the prompt says so, `cd` does not carry over; the default is unchanged."""
    import gymnasium

    import swe_srl.env  # noqa: F401 - registers SweSrl-v0

    instance = mini_run[0]
    env = gymnasium.make("SweSrl-v0", instances=[instance], shell=PER_ACTION)
    try:
        _, info = env.reset(options={"instance_id": instance.instance_id})
        assert info["shell"] == PER_ACTION and PER_ACTION_NOTE in info["messages"][0]["content"]
        env.step("<think>go</think>\n```bash\ncd /tmp\n```")
        obs, *_ = env.step("<think>where</think>\n```bash\npwd\n```")
        assert obs.splitlines()[0] == "/testbed"
        _, info = env.reset(options={"instance_id": instance.instance_id, "shell": PERSISTENT})
        assert info["shell"] == PERSISTENT and PER_ACTION_NOTE not in info["messages"][0]["content"]
        env.step("<think>go</think>\n```bash\ncd /tmp\n```")
        obs, *_ = env.step("<think>where</think>\n```bash\npwd\n```")
        assert obs.splitlines()[0] == "/tmp"
    finally:
        env.close()


def test_debug_shell_per_action(mini_run) -> None:
    """`swe-srl shell --step` of a per-action trajectory: each line typed runs fresh from /testbed."""
    from swe_srl.env.debug_shell import exec_command
    from swe_srl.infra.sandbox.factory import open_sandbox

    instance = mini_run[0]
    with open_sandbox(instance, profile="shell", shell=PER_ACTION) as sandbox:
        argv = exec_command(sandbox.container_id, "/testbed", "(x) \\w\\$ ", tty=False, shell=PER_ACTION)
        lines = "cd /tmp && pwd\npwd\nexport A=1\necho A=$A\nexit\n"
        out = subprocess.run(argv, input=lines, capture_output=True, text=True, timeout=60).stdout
    assert out.split() == ["/tmp", "/testbed", "A="]
