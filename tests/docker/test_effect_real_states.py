"""What real trajectories need from an expert state, on a task shaped like them: an image whose worktree holds an
uncommitted edit (astropy's spec pins setuptools in pyproject.toml), and an agent that writes its reproduction
script outside the repository (OpenHands' /workspace), runs it from there, fixes the bug and runs it again.

Each expert action, run again in the effect sandbox in its own state (``rerun=True``), must score 1; the empty
action at a read must score 1 (before: step 0 counted the image's edit as the expert's); ``restore`` (SWEEnv's
step-wise resets) puts a fresh container into a later state, script and cwd included. A library's own config folder
written at import does not cost a new sandbox."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swe_srl.trajectories.schema import Step, Trajectory

pytestmark = pytest.mark.docker
SCRIPT = "import sys; sys.path.insert(0, '/testbed'); import calc; assert calc.add(2, 3) == 5, calc.add(2, 3)"
STEPS = [  # (action, its recorded exit code)
    ("cat calc.py", 0),
    (f'mkdir -p /workspace && echo "{SCRIPT}" > /workspace/check.py', 0),
    ("cd /workspace && python check.py", 1),  # fails: the bug; the cwd stays /workspace
    ("sed -i 's/return a - b/return a + b/' /testbed/calc.py", 0),
    ("python check.py", 0),  # passes now, run from /workspace
    ("submit", None),
]


@pytest.fixture(scope="module")
def task(docker_engine, tmp_path_factory: pytest.TempPathFactory):
    from agent_tasks import make_tiny_dataset

    from swe_srl.benchmark.instances import Instance

    record = json.loads(make_tiny_dataset(tmp_path_factory.mktemp("states")).read_text().splitlines()[0])
    pin = "sed -i '1i # pinned by the image' calc.py"  # uncommitted, as astropy's pre_install leaves pyproject.toml
    record |= {"instance_id": "tiny__calc-pinned", "env": {**record["env"], "pre_install": [pin]}}
    instance = Instance.from_record(record)
    return instance, Trajectory(
        instance.instance_id, "p", [Step("", a, exit_code=code) for a, code in STEPS], instance.patch
    )


def test_expert_actions_rerun_at_their_own_states_score_one(task, tmp_path: Path) -> None:
    from swe_srl.rewards.effect.evaluator import SandboxEffect
    from swe_srl.trajectories.expert_state import expert_states

    instance, traj = task
    state = expert_states(traj, instance, refresh=True)
    assert "+# pinned by the image" in state.start and state.before(0) == (state.start, "/testbed")
    assert state.cwds[2] == "/workspace" and state.scratch_before(2) and not state.scratch_before(1)
    with SandboxEffect("full", root=tmp_path / "r", expert_root=tmp_path / "e") as effect:
        reruns = [effect.evaluate(instance, traj, k, s.action, rerun=True) for k, s in enumerate(traj.steps)]
        empty = [effect.evaluate(instance, traj, k, "").value for k in range(len(traj.steps))]
        missing = effect.evaluate(instance, traj, 4, "python nowhere.py").value
        # a library's config written at import (astropy's ~/.astropy/config): no new sandbox for the next state
        cache = effect.evaluate(instance, traj, 0, "mkdir -p ~/.astropy/config && cat calc.py").value
        assert effect.evaluate(instance, traj, 2, "ls /workspace").value == 1.0 and cache == 1.0
        assert effect.sandbox_starts == 1
    assert [r.value for r in reruns] == [1.0] * len(STEPS)
    # each rerun exits as the run recorded (the failing check included): what bench/effect_real.py counts
    assert [r.exit_code for r in reruns[:-1]] == [code for _, code in STEPS[:-1]]
    # a read: the image's edit is no step of the expert's; creating the script: a change outside the repository
    # only (nothing in the tree); the fix: doing nothing → 0
    assert empty == [1.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    assert missing == 0.5  # a failure where the expert's run succeeded: check.py is there, nowhere.py is not


def test_restore_puts_a_fresh_container_into_a_later_state(task) -> None:
    from swe_srl.infra.sandbox.factory import open_sandbox
    from swe_srl.trajectories.expert_state import expert_states, restore

    instance, traj = task
    state = expert_states(traj, instance)
    with open_sandbox(instance, profile="expert") as sandbox:
        restore(sandbox, state, 4)  # after the fix, in /workspace
        result = sandbox.run("pwd && python check.py && head -1 /testbed/calc.py")
    assert result.exit_code == 0 and result.output.split() == [
        "/workspace",
        "#",
        "pinned",
        "by",
        "the",
        "image",
    ]
