"""`swe-srl eval --no-grade` where no Docker engine answers (DOCKER_HOST at a dead socket): the predictions and the
protocol records are written; the agent protocol is refused in one line; and `eval --help` reads on 80 columns."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e
NO_ENGINE = {"DOCKER_HOST": "unix:///tmp/swe-srl-no-engine.sock"}


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "swe_srl.cli", *args], capture_output=True, text=True,
                          timeout=300, env=os.environ | (env or {}))  # fmt: skip


def test_no_grade_writes_predictions_and_records_without_a_docker_engine(tmp_path: Path) -> None:
    from swe_srl.benchmark.instances import load_instances

    instances = load_instances("bundled:test")[:2]
    ids = [i.instance_id for i in instances]
    proc = _cli("eval", "--policy", "gold", "--protocol", "agentless", "--no-grade", "--instances", ",".join(ids),
                "-o", str(tmp_path), env=NO_ENGINE)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    said = proc.stdout.replace("\n", "")
    assert (
        "2 prediction(s), not graded" in said
        and f"--policy predictions:{tmp_path / 'predictions.jsonl'}" in said
    )
    predictions = [json.loads(line) for line in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    assert [p["instance_id"] for p in predictions] == ids
    assert all(
        p["model_patch"].startswith("diff --git") and p["model_name_or_path"] == "gold" for p in predictions
    )
    for iid, instance in zip(ids, instances, strict=True):
        record = json.loads((tmp_path / "results" / f"{iid}.json").read_text())
        assert record["status"] == "generated" and record["error"] is None
        generations = record["protocol"]["candidates"][0]["generations"]
        assert len(generations) == 2 and all(g["output"] for g in generations)
        # Each generation keeps its prompt as the policy got it: localization, then repair with the problem.
        assert all(g["messages"][-1]["role"] == "user" for g in generations)
        assert instance.problem_statement[:40] in generations[1]["messages"][-1]["content"]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["statuses"] == {"generated": 2} and report["settings"]["no_grade"] is True


def test_no_grade_with_the_agent_protocol_is_refused_in_one_line(tmp_path: Path) -> None:
    proc = _cli("eval", "--policy", "gold", "--no-grade", "-o", str(tmp_path), env=NO_ENGINE)
    assert proc.returncode == 2 and not (tmp_path / "predictions.jsonl").exists()
    assert (
        proc.stderr.strip().count("\n") == 0
        and "--no-grade is for --protocol oracle-edit|agentless" in proc.stderr
    )


def test_eval_help_reads_on_80_columns() -> None:
    proc = _cli("eval", "--help", env={"COLUMNS": "80", "TERMINAL_WIDTH": "80"})
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    panels = [m.group(1) for line in lines if (m := re.match(r"╭─ (\w+) ─", line))]
    assert panels == ["Options", "Model", "Data", "Protocol", "Grading", "Run"]
    rows: dict[str, int] = {}
    option = None
    for line in lines:
        if not line.startswith("│"):
            option = None
            continue
        if found := re.match(r"│ (?:\*\s+)?\s*(--[\w-]+)", line):
            option = found.group(1)
            rows[option] = 0
        if option:
            rows[option] += 1
    assert len(rows) >= 20 and "--no-grade" in rows and "--edit-rules" in rows
    assert {o: n for o, n in rows.items() if n > 3} == {}
    assert "--no-" not in proc.stdout.replace(
        "--no-grade", ""
    )  # one flag where one does, no --x/--no-x pairs


def test_no_grade_with_unlimited_sandboxes_allowed_still_needs_no_engine(tmp_path: Path) -> None:
    from swe_srl.benchmark.instances import load_instances

    iid = load_instances("bundled:test")[0].instance_id
    proc = _cli("--allow-unlimited-sandboxes", "eval", "--policy", "gold", "--protocol", "oracle-edit", "--no-grade",
                "--instances", iid, "-o", str(tmp_path), env=NO_ENGINE)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    record = json.loads((tmp_path / "results" / f"{iid}.json").read_text())
    assert record["status"] == "generated" and "unlimited_sandboxes" not in record
