"""The native trajectory form: dataclasses with a JSONL representation that round-trips."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swe_srl.core.shells import PERSISTENT, SHELL_MODES
from swe_srl.errors import TrajectoryFormatError
from swe_srl.paths import atomic_write_text


@dataclass
class Step:
    """One expert turn: the reasoning, the bash action it chose, and what the action printed."""

    thought: str
    action: str
    observation: str = ""
    exit_code: int | None = None


@dataclass
class Trajectory:
    """An expert's attempt at one instance."""

    instance_id: str
    problem: str
    steps: list[Step] = field(default_factory=list)
    patch: str = ""
    resolved: bool | None = None
    source: str = "native"
    """Where it came from: ``native``, ``scripted``, ``swe-agent``, ``openhands``, ``swe-smith``, ``nebius``..."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Free-form, round-tripped as is. Importers set ``source_instance_id`` (the id as the source wrote it) and
    ``where`` (file and record), and, where the source records them, ``model`` (the expert model's name),
    ``exit_status`` (how the run ended: ``submitted``, ``Submitted``, ``exit_cost``...), ``run_id``, ``traj_id``,
    ``id``."""
    shell: str = PERSISTENT
    """How the agent ran the actions (``core/shells.py``): ``persistent`` (one shell) or ``per-action`` (a fresh
    process from the initial working directory and environment: mini-swe-agent). Replays, expert states, the effect
    layer and episodes against this trajectory run its actions the same way."""

    def to_dict(self) -> dict[str, Any]:
        """``dataclasses.asdict`` of the trajectory (same keys, same order), without its deep copy of every step."""
        steps = [
            {"thought": s.thought, "action": s.action, "observation": s.observation, "exit_code": s.exit_code}
            for s in self.steps
        ]
        return {
            "instance_id": self.instance_id,
            "problem": self.problem,
            "steps": steps,
            "patch": self.patch,
            "resolved": self.resolved,
            "source": self.source,
            "metadata": copy.deepcopy(self.metadata),
            "shell": self.shell,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "<record>") -> Trajectory:
        try:
            steps = [Step(**s) for s in data.get("steps", [])]
            return cls(
                instance_id=data["instance_id"],
                problem=data.get("problem", ""),
                steps=steps,
                patch=data.get("patch", ""),
                resolved=data.get("resolved"),
                source=data.get("source", "native"),
                metadata=dict(data.get("metadata") or {}),
                shell=data.get("shell", PERSISTENT),
            )
        except (KeyError, TypeError) as exc:
            raise TrajectoryFormatError(f"{where}: not a native trajectory record ({exc})") from None
        except TrajectoryFormatError as exc:
            raise TrajectoryFormatError(f"{where}: {exc}") from None

    def __post_init__(self) -> None:
        if self.shell not in SHELL_MODES:
            raise TrajectoryFormatError(
                f"trajectory {self.instance_id!r}: shell={self.shell!r}; choose one of {', '.join(SHELL_MODES)}"
            )

    def content_hash(self) -> str:
        """Stable hash of what replay depends on (instance, actions and a shell other than the default), used as a
        cache key."""
        parts: list[Any] = [self.instance_id, [s.action for s in self.steps]]
        if self.shell != PERSISTENT:
            parts.append(self.shell)
        payload = json.dumps(parts, ensure_ascii=False)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


def write_jsonl(path: Path, trajectories: Iterable[Trajectory]) -> None:
    """Write trajectories atomically, one JSON object per line."""
    lines = [json.dumps(t.to_dict(), ensure_ascii=False) for t in trajectories]
    atomic_write_text(Path(path), "".join(line + "\n" for line in lines))


def read_jsonl(path: Path) -> Iterator[Trajectory]:
    """Read native trajectories; errors name the file and line."""
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TrajectoryFormatError(f"{where}: invalid JSON ({exc})") from None
            yield Trajectory.from_dict(data, where)
