"""The expert's repository state after every step: replay once, store cumulative diffs and cwds, restore any step.

Restoring the state before step k is a fresh container from the instance image + ``git apply`` of the diff after
step k-1 + ``cd`` to its cwd, so no sample ever replays the k-1 earlier actions.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from swe_srl.benchmark.instances import Instance
from swe_srl.core.actions import is_submit
from swe_srl.core.patches import file_diffs
from swe_srl.errors import SandboxError
from swe_srl.infra.sandbox.base import ExecResult
from swe_srl.infra.sandbox.factory import open_sandbox
from swe_srl.paths import atomic_write_text, cache_dir
from swe_srl.trajectories.schema import Trajectory

WORKDIR = "/testbed"


def tree_hash(diff: str) -> str:
    """Hash of a worktree state, as its diff against the base commit."""
    return hashlib.sha256(diff.encode("utf-8", errors="surrogateescape")).hexdigest()[:20]


@dataclass
class ExpertState:
    """Cumulative ``git diff --binary`` and cwd after each step (index i = after step i); before step 0 = base."""

    diffs: list[str]
    cwds: list[str]

    def before(self, step: int) -> tuple[str, str]:
        """(diff, cwd) of the state the expert was in when it chose step ``step``."""
        if step < 0 or step > len(self.diffs):
            raise IndexError(f"step {step} out of range: the trajectory has {len(self.diffs)} steps")
        if step == 0:
            return "", WORKDIR
        return self.diffs[step - 1], self.cwds[step - 1]


def created_files(state: ExpertState, step: int) -> frozenset[str]:
    """Repository paths the expert's steps before ``step`` created (new files in its diff then)."""
    return frozenset(f.path for f in file_diffs(state.before(step)[0]) if f.added)


def cwd_of(sandbox) -> str:
    """The persistent shell's current directory."""
    result = sandbox.run("pwd")
    return result.output.strip().splitlines()[-1] if result.output.strip() else WORKDIR


def replay_steps(sandbox, traj: Trajectory) -> Iterator[tuple[int, ExecResult | None, str, str]]:
    """Run each action of ``traj`` in ``sandbox``; yield (index, result or None for submit, diff, cwd) after it."""
    cwd = WORKDIR
    diff = ""
    for index, step in enumerate(traj.steps):
        result = None
        if not is_submit(step.action):
            result = sandbox.run(step.action)
            diff, cwd = sandbox.diff(), cwd_of(sandbox)
        yield index, result, diff, cwd


def _state_path(traj: Trajectory, instance: Instance) -> Path:
    base = hashlib.sha256(f"{instance.base_commit}\0{instance.patch}".encode()).hexdigest()[:8]
    return cache_dir("expert-state") / f"{traj.content_hash()}-{base}.json"


def save_state(traj: Trajectory, instance: Instance, state: ExpertState) -> None:
    """Store ``state`` for ``traj`` on ``instance`` (atomic write)."""
    atomic_write_text(_state_path(traj, instance), json.dumps(asdict(state)))


def expert_states(
    traj: Trajectory, instance: Instance, *, repos_dir: Path | None = None, refresh: bool = False
) -> ExpertState:
    """The expert state after every step of ``traj``: replayed once in a sandbox, then read from disk."""
    path = _state_path(traj, instance)
    if path.exists() and not refresh:
        data = json.loads(path.read_text(encoding="utf-8"))
        return ExpertState(diffs=data["diffs"], cwds=data["cwds"])
    diffs: list[str] = []
    cwds: list[str] = []
    with open_sandbox(instance, profile="expert", repos_dir=repos_dir) as sandbox:
        for _, _, diff, cwd in replay_steps(sandbox, traj):
            diffs.append(diff)
            cwds.append(cwd)
    state = ExpertState(diffs=diffs, cwds=cwds)
    save_state(traj, instance, state)
    return state


def restore(sandbox, state: ExpertState, step: int) -> None:
    """Put a fresh ``sandbox`` (at the base commit) into the expert's state before ``step``."""
    diff, cwd = state.before(step)
    if diff:
        result = sandbox.apply_patch(diff)
        if result.exit_code != 0:
            raise SandboxError(
                f"cannot restore the expert state before step {step}: git apply failed: {result.output}"
            )
    result = sandbox.run(f"cd {shlex.quote(cwd)}")
    if result.exit_code != 0:
        raise SandboxError(f"cannot restore the expert cwd {cwd!r} before step {step}: {result.output}")
