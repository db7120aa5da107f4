"""`swe-srl eval --policy predictions:FILE` on the bundled suite: another system's SWE-bench predictions graded
offline without an episode (gold patch → resolved, empty → unresolved, a broken patch → patch_failed, no prediction
→ reported as no_prediction), resumable (nothing is graded twice; a changed prediction is graded again)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.docker]

BROKEN = "diff --git a/no_such_file.py b/no_such_file.py\n--- a/no_such_file.py\n+++ b/no_such_file.py\n@@ -1 +1 @@\n-a\n+b\n"


def _eval(preds: Path, ids: list[str], out: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "swe_srl.cli", "eval", "--policy", f"predictions:{preds}"]
    cmd += ["--dataset", "bundled:test", "--instances", ",".join(ids), "--workers", "2", "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def _write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_predictions_file_is_graded_offline_and_resumes(docker_engine, tmp_path: Path) -> None:
    from swe_srl.benchmark.instances import load_instances

    gold, empty, broken, missing = sorted(load_instances("bundled:test"), key=lambda i: i.instance_id)[:4]
    ids = [i.instance_id for i in (gold, empty, broken, missing)]
    rows = [
        {"instance_id": gold.instance_id, "model_name_or_path": "other-system", "model_patch": gold.patch},
        {"instance_id": empty.instance_id, "model_name_or_path": "other-system", "model_patch": ""},
        {"instance_id": broken.instance_id, "model_name_or_path": "other-system", "model_patch": BROKEN},
    ]
    preds, out = tmp_path / "preds.jsonl", tmp_path / "out"
    _write(preds, rows)
    proc = _eval(preds, ids, out)
    assert "no prediction for 1 instance(s)" in proc.stdout

    report = json.loads((out / "report.json").read_text())
    assert report["per_instance"] == {
        gold.instance_id: "resolved",
        empty.instance_id: "unresolved",
        broken.instance_id: "patch_failed",
        missing.instance_id: "no_prediction",  # reported, not dropped
    }
    assert (report["total"], report["resolved_rate"], report["resolved_rate_graded"]) == (4, 0.25, 1 / 3)
    assert report["no_prediction_ids"] == [missing.instance_id] and report["errors"] == []
    assert report["policy"] == "other-system" and set(report["exit_reasons"]) == {"direct", "no_prediction"}
    assert not (out / "trajectories").exists()  # no episode ran
    written = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert written == rows  # the graded predictions, as given, in dataset order
    assert "FAILED" in (out / "logs" / f"{empty.instance_id}.log").read_text()  # the tests really ran

    results = {i: (out / "results" / f"{i}.json").stat().st_mtime_ns for i in ids[:3]}
    _eval(preds, ids, out)  # resume: nothing graded again
    assert {i: (out / "results" / f"{i}.json").stat().st_mtime_ns for i in ids[:3]} == results

    rows[2]["model_patch"] = broken.patch  # a changed prediction is graded again; the others are kept
    _write(preds, rows)
    _eval(preds, ids, out)
    report = json.loads((out / "report.json").read_text())
    assert report["per_instance"][broken.instance_id] == "resolved" and report["resolved"] == 2
    assert report["resumed"] == 2
    for iid in ids[:2]:
        assert (out / "results" / f"{iid}.json").stat().st_mtime_ns == results[iid]
