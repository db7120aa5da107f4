"""Replay a trajectory in a real sandbox: per step, the exit code, the reward of the expert action vs itself, and
whether the observation matches the recorded one (after normalizing timings, addresses and temp paths).
Replaying also stores the expert state (cumulative diffs and cwds) so later restores need no replay.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rich.table import Table
from rich.text import Text

from swe_srl.benchmark.instances import Instance
from swe_srl.core.actions import format_output
from swe_srl.core.shells import PERSISTENT
from swe_srl.infra.sandbox.enforcement import unlimited_note
from swe_srl.infra.sandbox.factory import open_sandbox
from swe_srl.infra.sandbox.placement import sandbox_address
from swe_srl.rewards import score_output
from swe_srl.trajectories.expert_state import ExpertState, replay_steps, save_state
from swe_srl.trajectories.schema import Trajectory

_NORMALIZERS = [
    (re.compile(r"\b\d+(?:\.\d+)?\s*(?:s|sec|seconds|ms)\b"), "<time>"),  # "in 0.12s", "1.5 seconds", "3ms"
    (re.compile(r"0x[0-9a-fA-F]{6,}"), "0x<addr>"),  # object reprs
    (re.compile(r"/tmp/[\w.\-/]+"), "/tmp/<path>"),  # tmp dirs and files
    (re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?\b"), "<datetime>"),
    (re.compile(r"\bpid[ =:]\s*\d+", re.IGNORECASE), "pid <n>"),
    (re.compile(r"[ \t]+$", re.MULTILINE), ""),
]


def normalize_observation(text: str) -> str:
    """Drop what legitimately changes between two runs of the same command."""
    for pattern, replacement in _NORMALIZERS:
        text = pattern.sub(replacement, text)
    return text.strip()


def observations_match(recorded: str, replayed: str) -> bool:
    """True when the two observations are equal after :func:`normalize_observation`."""
    return normalize_observation(recorded) == normalize_observation(replayed)


@dataclass
class ReplayRow:
    """One replayed step."""

    step: int
    action: str
    exit_code: int | None
    recorded_exit_code: int | None
    rewards: dict[str, float] = field(default_factory=dict)
    match: bool | None = None
    """Observation equal to the recorded one (normalized); None for ``submit`` or when nothing was recorded."""
    observation: str = ""


def self_reward(thought: str, action: str) -> dict[str, float]:
    """Reward components of the expert's own output scored against its action (a sanity check: ~1.0)."""

    result = score_output(format_output(thought or "expert step", action), action, mode="layered")
    return {"total": result.total, **result.components}


def replay(
    traj: Trajectory,
    instance: Instance,
    *,
    repos_dir: Path | None = None,
    on_row: Callable[[ReplayRow], None] | None = None,
) -> list[ReplayRow]:
    """Replay every step of ``traj`` in a fresh sandbox on ``instance``; also saves the expert state."""

    rows: list[ReplayRow] = []
    with open_sandbox(instance, profile="expert", repos_dir=repos_dir, shell=traj.shell) as sandbox:
        state = ExpertState(diffs=[], cwds=[], start=sandbox.diff())
        for index, result, diff, cwd, scratch in replay_steps(sandbox, traj, state.start):
            step = traj.steps[index]
            state.diffs.append(diff)
            state.cwds.append(cwd)
            state.scratch.append(scratch)
            recorded = step.observation or ""
            row = ReplayRow(
                step=index,
                action=step.action,
                exit_code=result.exit_code if result else None,
                recorded_exit_code=step.exit_code,
                rewards=self_reward(step.thought, step.action),
                match=observations_match(recorded, result.output) if result and recorded else None,
                observation=result.output if result else "",
            )
            rows.append(row)
            if on_row:
                on_row(row)
    save_state(traj, instance, state)
    return rows


def replay_rows_text(traj: Trajectory, rows: list[ReplayRow]) -> str:
    """``swe-srl replay --out``'s JSONL lines of one trajectory: each replayed step with its instance id (without
    the replayed observation), what ``swe-srl view --replay`` shows beside the steps."""
    lines = []
    for row in rows:
        record = {"instance_id": traj.instance_id, **asdict(row)}
        del record["observation"]
        if sandbox_address() is None and (note := unlimited_note()):  # remote: its node checked its limits
            record["unlimited_sandboxes"] = note
        lines.append(json.dumps(record) + "\n")
    return "".join(lines)


def shorten(action: str, width: int = 60) -> str:
    """One line, at most ``width`` characters."""
    line = " ".join(action.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def render_table(traj: Trajectory, rows: list[ReplayRow], width: int = 100):
    """A rich table of replayed rows fitting ``width`` columns (the action is cut with an ellipsis)."""

    shell = "" if traj.shell == PERSISTENT else f", {traj.shell}"  # how the actions ran: core/shells.py
    table = Table(title=f"replay of {traj.instance_id} ({traj.source}, {len(traj.steps)} steps{shell})")
    table.add_column("#", justify="right", no_wrap=True, min_width=2)
    table.add_column("action", no_wrap=True, overflow="ellipsis", max_width=max(16, width - 57))
    for name in ("exit", "tot", "syn", "sem", "sim", "obs"):  # reward total, syntax, semantic, similarity
        table.add_column(name, justify="right", no_wrap=True, min_width=4)
    marks = {True: "[green]ok[/]", False: "[red]diff[/]", None: "-"}
    for row in rows:
        r = row.rewards
        table.add_row(
            str(row.step),
            Text(shorten(row.action)),
            "-" if row.exit_code is None else str(row.exit_code),
            *(f"{r[k]:.2f}" if k in r else "-" for k in ("total", "syntax", "semantic", "similarity")),
            marks[row.match],
        )
    return table
