"""The output folder of one evaluation (layout in ``swe_srl.eval.run``): atomic per-instance records, the resume
rule (records without a verdict are run again), ``predictions.jsonl`` and ``report.json``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from swe_srl.errors import ConfigError
from swe_srl.eval.predictions import prediction
from swe_srl.eval.report import UNGRADED, build_report
from swe_srl.paths import atomic_write_text
from swe_srl.trajectories.schema import Trajectory, write_jsonl


class RunDir:
    """The output folder of one evaluation: finished records, atomic per-instance writes, predictions, report."""

    def __init__(self, out: Path) -> None:
        self.out = Path(out)
        existing = next(p for p in (self.out, *self.out.parents) if p.exists())
        if not existing.is_dir():
            raise ConfigError(f"output {str(self.out)!r}: {str(existing)!r} is a file; give a folder (-o)")
        if not os.access(existing, os.W_OK | os.X_OK):
            raise ConfigError(
                f"output {str(self.out)!r}: cannot write in {str(existing)!r}; give another folder"
            )

    def finished(self) -> dict[str, dict]:
        """Records of finished instances (infra errors and interrupted instances excluded: they are run again)."""
        done = {}
        for path in sorted((self.out / "results").glob("*.json")):
            record = json.loads(path.read_text())
            if record.get("status") not in UNGRADED:
                done[record["instance_id"]] = record
        return done

    def write(self, record: dict[str, Any]) -> dict[str, Any]:
        """Trajectory, log, then the result (the finished marker); returns the record without log/trajectory."""

        iid, record = record["instance_id"], dict(record)
        trajectory, log = record.pop("trajectory", None), record.pop("log", "")
        if trajectory is not None:
            write_jsonl(self.out / "trajectories" / f"{iid}.jsonl", [Trajectory.from_dict(trajectory)])
        atomic_write_text(self.out / "logs" / f"{iid}.log", log)
        record["log_path"] = f"logs/{iid}.log"
        atomic_write_text(self.out / "results" / f"{iid}.json", json.dumps(record, indent=1))
        return record

    def publish(self, records: list[dict], name: str, meta: dict[str, Any]) -> dict[str, Any]:
        """Rewrite predictions.jsonl (finished instances) and report.json from ``records`` (dataset order)."""

        predictions = [prediction(r["instance_id"], r.get("model_name_or_path") or name, r["model_patch"])
                       for r in records if r["status"] not in UNGRADED]  # fmt: skip
        atomic_write_text(self.out / "predictions.jsonl", "".join(json.dumps(p) + "\n" for p in predictions))
        report = build_report(records, policy=name, meta=meta)
        atomic_write_text(self.out / "report.json", json.dumps(report, indent=2))
        return report
