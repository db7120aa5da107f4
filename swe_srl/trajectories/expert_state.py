"""The expert's repository state after every step: replay once, store cumulative diffs and cwds, restore any step.

Restoring the state before step k is a fresh container from the instance image + ``git apply`` of the diff after
step k-1 + ``cd`` to its cwd, so no sample ever replays the k-1 earlier actions. Two more things belong to a state:
the worktree's changes before step 0 (``start``: an image may hold uncommitted edits, as astropy's spec pins
setuptools in ``pyproject.toml``), and the files the steps left outside the repository in the scratch places
(``SCRATCH_ROOTS``: OpenHands writes its reproduction scripts to ``/workspace``, SWE-agent's tools keep their open
file in ``/tmp``), so that running such a script at a later step finds it.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
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
STATE_FORMAT = "2"
"""Part of the stored states' key: bump when what a state holds changes (2: ``start`` and ``scratch``)."""
SCRATCH_ROOTS = ("workspace", "tmp")
"""Places outside the repository (relative to ``/``) whose files belong to a state."""
SCRATCH_FILE_LIMIT = "-256k"
"""Files of the scratch places kept in a state: under 256 KiB (``find -size``); larger ones are left out."""
_SNAPSHOT = (
    "( cd / && L=$(find " + " ".join(SCRATCH_ROOTS) + " -xdev -mindepth 1 \\( -name 'pytest-of-*' -o -name "
    "'.swe-srl*' -o -name 'swe-srl-*' \\) -prune -o \\( -type d -o -type l -o -type f -size "
    f'{SCRATCH_FILE_LIMIT} \\) -print 2>/dev/null | sort); [ -z "$L" ] || printf \'%s\\n\' "$L" | '
    "tar --no-recursion -czf - -T - 2>/dev/null | base64 -w0 )"
)
"""Print the scratch places' files (pytest's temporary folders and our own left out) as a base64 tar.gz."""


def tree_hash(diff: str) -> str:
    """Hash of a worktree state, as its diff against the base commit."""
    return hashlib.sha256(diff.encode("utf-8", errors="surrogateescape")).hexdigest()[:20]


@dataclass
class ExpertState:
    """Cumulative ``git diff --binary`` and cwd after each step (index i = after step i); before step 0 = base."""

    diffs: list[str]
    cwds: list[str]
    start: str = ""
    """The worktree's diff before step 0 (uncommitted changes the image holds); "" for a clean worktree."""
    scratch: list[str] = field(default_factory=list)
    """After each step: the files of the scratch places (``SCRATCH_ROOTS``) as a base64 tar.gz; "" for none."""

    def before(self, step: int) -> tuple[str, str]:
        """(diff, cwd) of the state the expert was in when it chose step ``step``."""
        if step < 0 or step > len(self.diffs):
            raise IndexError(f"step {step} out of range: the trajectory has {len(self.diffs)} steps")
        if step == 0:
            return self.start, WORKDIR
        return self.diffs[step - 1], self.cwds[step - 1]

    def scratch_before(self, step: int) -> str:
        """The scratch files of the state before step ``step`` (see :attr:`scratch`)."""
        return self.scratch[step - 1] if 0 < step <= len(self.scratch) else ""


def created_files(state: ExpertState, step: int) -> frozenset[str]:
    """Repository paths the expert's steps before ``step`` created (new files in its diff then)."""
    return frozenset(f.path for f in file_diffs(state.before(step)[0]) if f.added)


def cwd_of(sandbox) -> str:
    """The persistent shell's current directory."""
    result = sandbox.run("pwd")
    return result.output.strip().splitlines()[-1] if result.output.strip() else WORKDIR


def scratch_of(sandbox) -> str:
    """The files of the scratch places in ``sandbox`` as a base64 tar.gz ("" for none)."""
    return "".join(sandbox.run(_SNAPSHOT).output.split())


def restore_scratch_script(scratch: str) -> str:
    """A shell command that puts ``scratch`` (:func:`scratch_of`) back in place ("true" for none)."""
    return f"( printf '%s' {shlex.quote(scratch)} | base64 -d | tar -C / -xzf - )" if scratch else "true"


def replay_steps(
    sandbox, traj: Trajectory, start: str = ""
) -> Iterator[tuple[int, ExecResult | None, str, str, str]]:
    """Run each action of ``traj`` in ``sandbox`` (its worktree's diff now: ``start``); yield (index, result or None
    for submit, diff, cwd, scratch) after it."""
    cwd, diff, scratch = WORKDIR, start, ""
    for index, step in enumerate(traj.steps):
        result = None
        if not is_submit(step.action):
            result = sandbox.run(step.action)
            diff, cwd, scratch = sandbox.diff(), cwd_of(sandbox), scratch_of(sandbox)
        yield index, result, diff, cwd, scratch


def _state_path(traj: Trajectory, instance: Instance) -> Path:
    key = f"{instance.base_commit}\0{instance.patch}\0{STATE_FORMAT}"
    base = hashlib.sha256(key.encode()).hexdigest()[:8]
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
        return ExpertState(data["diffs"], data["cwds"], data.get("start", ""), data.get("scratch", []))
    with open_sandbox(instance, profile="expert", repos_dir=repos_dir, shell=traj.shell) as sandbox:
        state = ExpertState(diffs=[], cwds=[], start=sandbox.diff())
        for _, _, diff, cwd, scratch in replay_steps(sandbox, traj, state.start):
            state.diffs.append(diff)
            state.cwds.append(cwd)
            state.scratch.append(scratch)
    save_state(traj, instance, state)
    return state


def restore(sandbox, state: ExpertState, step: int) -> None:
    """Put a fresh ``sandbox`` (its worktree as the image holds it: ``state.start``) into the expert's state before
    ``step``."""
    diff, cwd = state.before(step)
    if state.start and diff != state.start:  # the diff is against the base commit: the image's edits go first
        sandbox.run(f"cd {WORKDIR} && git checkout -q -- . && git clean -qfd")
    if diff and diff != state.start:
        result = sandbox.apply_patch(diff)
        if result.exit_code != 0:
            raise SandboxError(
                f"cannot restore the expert state before step {step}: git apply failed: {result.output}"
            )
    sandbox.run(restore_scratch_script(state.scratch_before(step)))
    result = sandbox.run(f"cd {shlex.quote(cwd)}")
    if result.exit_code != 0:
        raise SandboxError(f"cannot restore the expert cwd {cwd!r} before step {step}: {result.output}")
