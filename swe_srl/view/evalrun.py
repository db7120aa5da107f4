"""An eval run folder as pages: the summary and instance table (``index.html``) and one page per instance
(``instance/<id>.html``): problem, steps, per-step rewards (with ``--replay``), patch, grading, generations."""

from __future__ import annotations

import contextlib
import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from swe_srl.benchmark.instances import Instance, load_instances
from swe_srl.errors import SweSrlError
from swe_srl.eval.report import wilson_interval
from swe_srl.trajectories.schema import Trajectory
from swe_srl.view.index import loads
from swe_srl.view.text import diff_lines, slug, steps_of

ROW_KEYS = ("status", "repo", "exit_reason", "steps", "format_errors", "wall_s")


class EvalRun:
    """The pages of an eval run folder (``swe-srl eval -o``)."""

    kind = "eval"

    def __init__(self, path: Path, dataset: str | None = None, replay: dict[str, list] | None = None) -> None:
        self.path = Path(path)
        self.replay = replay or {}
        report = self.path / "report.json"
        self.report = loads(report.read_bytes(), str(report)) if report.is_file() else {}
        self.rows = [self._row(p) for p in sorted((self.path / "results").glob("*.json"))]
        self.by_slug = {slug(r["instance_id"]): r for r in self.rows}
        self.dataset = dataset or _local(self.report.get("dataset"))
        self._instances: dict[str, Instance] | None = None
        self._lock = threading.Lock()
        self.title = f"eval run {self.path.name}"

    def _row(self, path: Path) -> dict[str, Any]:
        record = loads(path.read_bytes(), str(path))
        row = {"instance_id": record.get("instance_id", path.stem), "file": path.name}
        row |= {key: record.get(key) for key in ROW_KEYS}
        row["page"] = f"instance/{slug(row['instance_id'])}.html"
        protocol = record.get("protocol") or {}
        tokens = [protocol.get("prompt_tokens"), protocol.get("completion_tokens")]
        row["tokens"] = sum(tokens) if None not in tokens else None
        return row

    # -- pages ----------------------------------------------------------------------------------------------------
    def pages(self) -> list[str]:
        return ["index.html", *(f"instance/{slug(r['instance_id'])}.html" for r in self.rows)]

    def ids(self) -> set[str]:
        return {r["instance_id"] for r in self.rows}

    def instance_page(self, instance_id: str) -> str | None:
        return f"instance/{slug(instance_id)}.html" if instance_id in self.ids() else None

    def render(self, page: str, query: dict[str, str]) -> tuple[str, dict[str, Any]] | None:
        if page == "index.html":
            return "eval_index.html", {"summary": self.summary(), "rows": self.rows}
        name = page.removeprefix("instance/").removesuffix(".html")
        if page.startswith("instance/") and name in self.by_slug:
            return "eval_instance.html", self.instance(self.by_slug[name])
        return None

    def summary(self) -> dict[str, Any]:
        """Resolve rate and its 95% Wilson interval, protocol, published rows, counts by status and exit reason."""
        statuses = Counter(r["status"] for r in self.rows)
        total, resolved = len(self.rows), statuses.get("resolved", 0)
        low, high = wilson_interval(resolved, total)
        return {
            "policy": self.report.get("policy", "?"),
            "dataset": self.report.get("dataset", "?"),
            "protocol": self.report.get("protocol", "agent"),
            "total": total,
            "resolved": resolved,
            "rate": resolved / total if total else 0.0,
            "ci": (low, high),
            "statuses": statuses.most_common(),
            "exit_reasons": Counter(str(r["exit_reason"]) for r in self.rows).most_common(),
            "repos": sorted({str(r["repo"]) for r in self.rows}),
            "published": self.report.get("published"),
            "protocol_summary": self.report.get("protocol_summary"),
        }

    def instance(self, row: dict[str, Any]) -> dict[str, Any]:
        record = loads((self.path / "results" / row["file"]).read_bytes(), row["file"])
        iid = record["instance_id"]
        trajectory = self._trajectory(iid)
        instance = self.instances().get(iid)
        problem = instance.problem_statement if instance else (trajectory.problem if trajectory else None)
        tests = record.get("tests") or {}
        groups = []
        if instance:
            for name in ("FAIL_TO_PASS", "PASS_TO_PASS"):
                groups.append((name, [(t, tests.get(t, "not run")) for t in getattr(instance, name)]))
        listed = {t for _, pairs in groups for t, _ in pairs}
        others = sorted((t, s) for t, s in tests.items() if t not in listed)
        return {
            "record": record,
            "problem": problem,
            "steps": steps_of(trajectory, self.replay.get(iid)),
            "patch": diff_lines(record.get("model_patch") or ""),
            "test_groups": groups,
            "other_tests": others,
            "protocol": record.get("protocol"),
            "log_tail": self._log_tail(record),
        }

    def _trajectory(self, instance_id: str) -> Trajectory | None:
        path = self.path / "trajectories" / f"{instance_id}.jsonl"
        if not path.is_file():
            return None
        line = path.read_text(encoding="utf-8").strip().splitlines()[:1]
        return Trajectory.from_dict(json.loads(line[0]), str(path)) if line else None

    def _log_tail(self, record: dict[str, Any], lines: int = 40) -> str:
        log = self.path / str(record.get("log_path") or "")
        if not record.get("log_path") or not log.is_file():
            return ""
        return "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])

    def instances(self) -> dict[str, Instance]:
        """The run's dataset by id (its FAIL_TO_PASS/PASS_TO_PASS lists, problem statements), loaded once; empty
        when the dataset cannot be loaded here."""
        with self._lock:
            if self._instances is None:
                self._instances = {}
                # not readable here: the page says the test lists are unknown
                with contextlib.suppress(SweSrlError, OSError, ValueError):
                    if self.dataset:
                        self._instances = {i.instance_id: i for i in load_instances(self.dataset)}
            return self._instances


def _local(dataset: str | None) -> str | None:
    """The run's dataset when it loads without the network (the bundled suite, a file); a hub id is read only when
    ``--dataset`` names it, so an instance page never waits on a download."""
    if not dataset:
        return None
    name, _, rest = dataset.partition(":")
    local = name == "bundled" or Path(dataset).expanduser().is_file() or Path(rest).expanduser().is_file()
    return dataset if local else None
