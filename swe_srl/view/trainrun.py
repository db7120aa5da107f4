"""A training run folder as pages: curves and the held-out table (``index.html``), GRPO groups (``groups.html``,
``groups/<step>.html``); a ``--seeds`` folder lists its seeds, each a training run under ``seed-K/``."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from swe_srl.rewards import score_output
from swe_srl.view.detect import seed_runs
from swe_srl.view.groups import completion_steps, read_groups
from swe_srl.view.index import loads
from swe_srl.view.text import slug

PROMPT_TAIL = 300
"""Characters of a held-out prompt's end shown in the table (the whole prompt folds out)."""
CURVES = ("reward", "eval/mean_reward", "kl", "entropy", "completions/mean_length", "format_error_rate",
          "dynamic_sampling/kept_ratio")  # fmt: skip


class TrainRun:
    """The pages of one training run folder (``swe-srl train -o``)."""

    kind = "train"

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.summary = _json(self.path / "summary.json")
        self.title = f"training run {self.path.name}"
        self._heldout: list[dict[str, Any]] | None = None
        self._lock = threading.Lock()

    def pages(self) -> list[str]:
        steps = completion_steps(self.path)
        return ["index.html", *(["groups.html"] if steps else []), *(f"groups/{s}.html" for s in steps)]

    def files(self) -> dict[str, Path]:
        png = self.path / "training_curves.png"
        return {"files/training_curves.png": png} if png.is_file() else {}

    def ids(self) -> set[str]:
        return {r["instance_id"] for r in self.heldout()}

    def instance_page(self, instance_id: str) -> str | None:
        return f"index.html#held-{slug(instance_id)}" if instance_id in self.ids() else None

    def render(self, page: str, query: dict[str, str]) -> tuple[str, dict[str, Any]] | None:
        if page == "index.html":
            rows = self.heldout()
            return "train_index.html", {
                "summary": self.summary,
                "curves": self.curves(),
                "png": "files/training_curves.png" if self.files() else None,
                "rows": rows,
                "split": (self.summary.get("heldout") or {}).get("split", "test"),
                "steps": sorted({r["step"] for r in rows}),
                "instances": sorted({r["instance_id"] for r in rows}),
                "has_groups": bool(completion_steps(self.path)),
            }
        if page == "groups.html":
            return "train_groups.html", {"steps": completion_steps(self.path), "groups": None}
        step = page.removeprefix("groups/").removesuffix(".html")
        if page.startswith("groups/") and step.isdigit() and int(step) in completion_steps(self.path):
            return "train_groups.html", {"steps": completion_steps(self.path), "step": int(step),
                                         "groups": read_groups(self.path, int(step))}  # fmt: skip
        return None

    def curves(self) -> list[dict[str, Any]]:
        """metrics.jsonl's logged steps, with the curve metrics each holds (the numbers beside the PNG)."""
        path = self.path / "metrics.jsonl"
        if not path.is_file():
            return []
        rows: dict[int, dict[str, Any]] = {}
        for number, line in enumerate(path.read_bytes().splitlines(), 1):
            if line.strip():
                record = loads(line, f"{path}:{number}")
                row = rows.setdefault(int(record.get("step", 0)), {"step": int(record.get("step", 0))})
                row.update({k: record[k] for k in CURVES if isinstance(record.get(k), int | float)})
        return [rows[s] for s in sorted(rows)]

    def heldout(self) -> list[dict[str, Any]]:
        """heldout.jsonl's rows with their gain (final − start, both rewards) and the layered reward's layers of
        both outputs (effect off, as the report scores them); computed once."""
        with self._lock:
            if self._heldout is None:
                self._heldout = _heldout_rows(self.path / "heldout.jsonl")
            return self._heldout


def _heldout_rows(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    rows, seen = [], set()
    for number, line in enumerate(path.read_bytes().splitlines(), 1):
        if not line.strip():
            continue
        record = loads(line, f"{path}:{number}")
        start, final = record.get("initial_reward") or {}, record.get("final_reward") or {}
        expert = str(record.get("expert_action", ""))
        layers = {who: score_output(str(record.get(f"{who}_output", "")), expert, mode="layered").components
                  for who in ("initial", "final")}  # fmt: skip
        prompt = str(record.get("prompt", ""))
        rows.append(record | {
            "gain": {m: final.get(m, 0.0) - start.get(m, 0.0) for m in ("srl", "layered")},
            "layers": layers,
            "layer_names": sorted(set(layers["initial"]) | set(layers["final"])),
            "prompt_tail": prompt[-PROMPT_TAIL:],
            "prompt_cut": len(prompt) > PROMPT_TAIL,
            "anchor": f"held-{slug(record.get('instance_id', ''))}" if record.get("instance_id") not in seen else "",
        })  # fmt: skip
        seen.add(record.get("instance_id"))
    return rows


def _json(path: Path) -> dict[str, Any]:
    return loads(path.read_bytes(), str(path)) if path.is_file() else {}


class SeedsRun:
    """A ``--seeds`` folder: ``seeds.json``'s table (``index.html``) and each seed's run under ``seed-K/``."""

    kind = "seeds"

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.record = _json(self.path / "seeds.json")
        self.runs = {p.name: TrainRun(p) for p in seed_runs(self.path)}
        self.title = f"training runs {self.path.name} ({len(self.runs)} seeds)"

    def pages(self) -> list[str]:
        return ["index.html", *(f"{name}/{page}" for name, run in self.runs.items() for page in run.pages())]

    def files(self) -> dict[str, Path]:
        return {f"{name}/{route}": p for name, run in self.runs.items() for route, p in run.files().items()}

    def ids(self) -> set[str]:
        return set().union(*(run.ids() for run in self.runs.values())) if self.runs else set()

    def instance_page(self, instance_id: str) -> str | None:
        for name, run in self.runs.items():
            page = run.instance_page(instance_id)
            if page:
                return f"{name}/{page}"
        return None

    def render(self, page: str, query: dict[str, str]) -> tuple[str, dict[str, Any]] | None:
        if page == "index.html":
            return "seeds_index.html", {"record": self.record, "runs": list(self.runs),
                                        "over_seeds": json.dumps(self.record.get("over_seeds"), indent=1)}  # fmt: skip
        name, _, rest = page.partition("/")
        if name in self.runs:
            return self.runs[name].render(rest, query)
        return None
