"""`swe-srl expert generate --shell per-action` as a user runs it: the scripted expert's trajectory records
`per-action`; its inspect step reads the file from its folder (`cd toolz && …`, mini-swe-agent's idiom), and the fix
after it names the file relative to /testbed, which holds only because each action ran as a fresh bash. `swe-srl
replay` reproduces every recorded exit code; the same actions in one persistent shell do not."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from swe_srl.core.shells import PER_ACTION, PERSISTENT
from swe_srl.trajectories.schema import Trajectory, read_jsonl

pytestmark = pytest.mark.docker
INSTANCE = (
    "toolz__toolz-m012"  # seed 0: locate, `cd toolz && sed -n …`, `sed -i … toolz/dicttoolz.py`, test, submit
)


def _cli(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "swe_srl.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def test_generated_per_action_trajectory_replays_as_recorded(docker_engine, tmp_path) -> None:
    from swe_srl.benchmark.instances import load_instances
    from swe_srl.eval.replay import replay

    out = tmp_path / "expert.jsonl"
    proc = _cli("expert", "generate", "--instances", INSTANCE, "--shell", "per-action", "-o", str(out))
    assert proc.returncode == 0 and "1/1 tasks resolved" in proc.stdout, proc.stdout + proc.stderr
    (traj,) = read_jsonl(out)
    assert (traj.shell, traj.resolved) == (PER_ACTION, True)
    actions = [s.action for s in traj.steps]
    cd = next(k for k, action in enumerate(actions) if action.startswith("cd toolz && "))
    assert "toolz/dicttoolz.py" in actions[cd + 1] and traj.steps[cd + 1].exit_code == 0

    rows_file = tmp_path / "replay.jsonl"
    proc = _cli("replay", str(out), "--out", str(rows_file))
    assert proc.returncode == 0 and "per-action" in proc.stdout, proc.stdout + proc.stderr
    rows = [json.loads(line) for line in rows_file.read_text().splitlines()]
    assert len(rows) == len(actions) and all(r["exit_code"] == r["recorded_exit_code"] for r in rows), rows

    twin = Trajectory.from_dict({**traj.to_dict(), "shell": PERSISTENT})  # as if the cd had carried over
    instance = next(i for i in load_instances("bundled:train") if i.instance_id == INSTANCE)
    stale = replay(twin, instance)[cd + 1]
    assert stale.exit_code != 0 and "No such file" in stale.observation
