"""The evaluation report from per-instance records, run-folder resume rules and settings validation (pure)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swe_srl.errors import ConfigError
from swe_srl.eval.report import build_report
from swe_srl.eval.run import RunDir, policy_name
from swe_srl.eval.settings import EvalSettings


def _rec(
    iid: str, status: str, *, repo: str = "o/a", steps: int = 2, fe: int = 0, why: str = "submitted"
) -> dict:
    return {"instance_id": iid, "repo": repo, "status": status, "steps": steps, "format_errors": fe,
            "exit_reason": why, "model_patch": "", "error": "boom" if status == "error" else None}  # fmt: skip


@pytest.mark.parametrize(
    ("records", "expected"),
    [
        # nothing finished: every rate is 0, not a division error
        ([], {"total": 0, "resolved_rate": 0.0, "mean_steps": 0.0, "format_error_rate": 0.0}),
        # all resolved
        ([_rec("a", "resolved"), _rec("b", "resolved")], {"resolved": 2, "resolved_rate": 1.0}),
        # an infra error counts as unresolved overall but not in the graded rate
        ([_rec("a", "resolved"), _rec("b", "error", steps=0, why="infra_error")],
         {"resolved_rate": 0.5, "resolved_rate_graded": 1.0}),
        # mean steps and format-error rate are over episodes / policy calls
        ([_rec("a", "unresolved", steps=3, fe=3, why="max_steps"), _rec("b", "resolved", steps=1)],
         {"mean_steps": 2.0, "format_errors": 3, "format_error_rate": 0.75}),
        # direct patch grading has no episodes: no steps
        ([_rec("a", "resolved", steps=0, why="direct")], {"mean_steps": 0.0, "exit_reasons": {"direct": 1}}),
    ],
)  # fmt: skip
def test_report_figures(records: list[dict], expected: dict) -> None:
    report = build_report(records, policy="p")
    assert {k: report[k] for k in expected} == expected


def test_report_per_repo_errors_and_instances() -> None:
    records = [
        _rec("a", "resolved", repo="o/x"),
        _rec("b", "unresolved", repo="o/y"),
        _rec("c", "error", repo="o/y"),
    ]
    report = build_report(records, policy="p", meta={"dataset": "d"})
    assert report["per_repo"] == {
        "o/x": {"total": 1, "resolved": 1, "resolved_rate": 1.0},
        "o/y": {"total": 2, "resolved": 0, "resolved_rate": 0.0},
    }
    assert report["errors"] == [{"instance_id": "c", "exit_reason": "submitted", "error": "boom"}]
    assert report["per_instance"] == {"a": "resolved", "b": "unresolved", "c": "error"}
    assert report["instances"]["a"] == {
        "status": "resolved",
        "exit_reason": "submitted",
        "steps": 2,
        "format_errors": 0,
    }
    assert report["dataset"] == "d" and report["resolved_ids"] == ["a"]


def test_run_dir_resumes_finished_instances_and_reruns_errors(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    traj = {"instance_id": "a", "problem": "p", "steps": [{"thought": "t", "action": "submit"}]}
    run.write(_rec("a", "resolved") | {"log": "LOG", "trajectory": traj})
    run.write(_rec("b", "error") | {"log": "", "trajectory": None})
    assert sorted(run.finished()) == ["a"]  # the infra error is run again
    assert (tmp_path / "logs" / "a.log").read_text() == "LOG"
    assert json.loads((tmp_path / "trajectories" / "a.jsonl").read_text())["steps"][0]["action"] == "submit"
    assert not (tmp_path / "trajectories" / "b.jsonl").exists()
    run.publish([_rec("a", "resolved"), _rec("b", "error")], "gold", {})
    lines = (tmp_path / "predictions.jsonl").read_text().splitlines()
    assert [json.loads(line)["instance_id"] for line in lines] == ["a"]  # errors are not predictions


@pytest.mark.parametrize(
    ("settings", "name"),
    [
        (EvalSettings("gold"), "gold"),  # scripted: the spec
        (EvalSettings("openai", base_url="http://h/v1", model="qwen"), "qwen"),  # served: the model name
        (EvalSettings("hf:/ckpt/srl"), "/ckpt/srl"),  # local: the path or hub id
        (EvalSettings("replay:t.jsonl"), "replay:t.jsonl"),  # replay: the spec
    ],
)
def test_policy_name(settings: EvalSettings, name: str) -> None:
    assert policy_name(settings) == name


@pytest.mark.parametrize(
    "kwargs",
    [
        {"policy": "openai", "direct": True},  # direct patch grading is gold/empty only
        {"policy": "gold", "max_steps": 0},  # an episode needs a step
    ],
)
def test_bad_settings_raise(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        EvalSettings(**kwargs)
