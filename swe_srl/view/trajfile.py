"""A trajectories file (any format ``swe-srl trajectories import`` reads) as pages: the list (``index.html``) and
one page per trajectory (``trajectory/<n>.html``) with its steps and, given ``swe-srl replay --out``'s rows, each
step's replay: exit code, rewards and whether the observation matched."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from swe_srl.trajectories.importers import import_trajectories
from swe_srl.view.index import loads
from swe_srl.view.text import diff_lines, steps_of


class Trajectories:
    """The pages of a trajectories file; ``replay``: rows of ``swe-srl replay --out`` by instance id."""

    kind = "trajectories"

    def __init__(self, path: Path, replay: dict[str, list[dict[str, Any]]] | None = None) -> None:
        self.path = Path(path)
        self.trajectories = import_trajectories(str(self.path))
        self.replay = replay or {}
        self.title = f"trajectories {self.path.name}"

    def pages(self) -> list[str]:
        return ["index.html", *(f"trajectory/{n}.html" for n in range(len(self.trajectories)))]

    def ids(self) -> set[str]:
        return {t.instance_id for t in self.trajectories}

    def instance_page(self, instance_id: str) -> str | None:
        n = next((n for n, t in enumerate(self.trajectories) if t.instance_id == instance_id), None)
        return None if n is None else f"trajectory/{n}.html"

    def render(self, page: str, query: dict[str, str]) -> tuple[str, dict[str, Any]] | None:
        if page == "index.html":
            rows = [{"number": n, "instance_id": t.instance_id, "source": t.source, "steps": len(t.steps),
                     "resolved": t.resolved, "replayed": t.instance_id in self.replay}
                    for n, t in enumerate(self.trajectories)]  # fmt: skip
            return "trajectories.html", {"rows": rows}
        name = page.removeprefix("trajectory/").removesuffix(".html")
        if not (page.startswith("trajectory/") and name.isdigit() and int(name) < len(self.trajectories)):
            return None
        traj = self.trajectories[int(name)]
        return "trajectory.html", {
            "trajectory": traj,
            "number": int(name),
            "steps": steps_of(traj, self.replay.get(traj.instance_id)),
            "patch": diff_lines(traj.patch),
            "metadata": json.dumps(traj.metadata, indent=1, default=str)[:5000],
        }


def read_replay(path: Path) -> dict[str, list[dict[str, Any]]]:
    """``swe-srl replay --out FILE``'s rows (one JSON line per replayed step) by instance id."""
    rows: dict[str, list[dict[str, Any]]] = {}
    for number, line in enumerate(Path(path).read_bytes().splitlines(), 1):
        if line.strip():
            row = loads(line, f"{path}:{number}")
            rows.setdefault(str(row.get("instance_id")), []).append(row)
    return rows
