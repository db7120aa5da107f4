"""`swe-srl eval` end to end through the real CLI (subprocess): gold/empty on bundled test tasks; on a tiny dataset,
an OpenAI-compatible server (oracle-file prompt), malformed output, a tiny HF checkpoint, replay of an eval
trajectory, and resume after the run is killed midway."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from chat_stub import ChatStub, serving

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docker"))

pytestmark = [pytest.mark.e2e, pytest.mark.docker]


def _eval(*args: str, out: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "swe_srl.cli", "eval", *args, "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def _predictions(out: Path) -> dict[str, dict]:
    lines = (out / "predictions.jsonl").read_text().splitlines()
    return {r["instance_id"]: r for r in map(json.loads, lines)}


@pytest.mark.parametrize(("policy", "resolved"), [("gold", 1.0), ("empty", 0.0)])
def test_gold_resolves_and_empty_fails_on_bundled_test_tasks(
    policy: str, resolved: float, tmp_path: Path
) -> None:
    from swe_srl.benchmark.instances import load_instances

    ids = sorted(i.instance_id for i in load_instances("bundled:test"))[:2]
    assert ids, "the bundled suite has no test-split task (tasks/bundled.json: set a library's split to test)"
    _eval("--policy", policy, "--dataset", "bundled:test", "--instances", ",".join(ids), out=tmp_path)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["resolved_rate"] == resolved and report["errors"] == []
    assert sorted(_predictions(tmp_path)) == ids


@contextlib.contextmanager
def _serving(outputs: list[str]) -> Iterator[ChatStub]:
    """A chat server answering the requests with ``outputs`` in turn."""
    queue = list(outputs)
    with serving(lambda request: queue.pop(0)) as stub:
        yield stub


def test_openai_policy_resolves_with_oracle_files_in_the_prompt(tiny: Path, tmp_path: Path) -> None:
    from swe_srl.agent.policies import gold_script
    from swe_srl.benchmark.instances import load_instances

    instance = load_instances(str(tiny))[0]
    with _serving(gold_script(instance)) as server:
        args = ["--policy", "openai", "--base-url", server.url, "--model", "tiny", "--dataset", str(tiny)]
        _eval(*args, "--instances", instance.instance_id, "--oracle-files", out=tmp_path)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["resolved_rate"] == 1.0 and len(server.requests) == len(gold_script(instance))  # all used
    assert _predictions(tmp_path)[instance.instance_id]["model_name_or_path"] == "tiny"
    traj = json.loads((tmp_path / "trajectories" / f"{instance.instance_id}.jsonl").read_text())
    assert [s["action"].splitlines()[-1] for s in traj["steps"]][-1] == "submit"
    assert traj["metadata"]["oracle_files"] == ["calc.py"] and traj["resolved"] is True
    first_prompt = server.requests[0]["messages"][1]["content"]  # oracle setting: path + content at base
    assert "calc.py" in first_prompt and "return a - b" in first_prompt


def test_malformed_output_ends_at_max_steps_with_format_errors_counted(tiny: Path, tmp_path: Path) -> None:
    from swe_srl.benchmark.instances import load_instances

    instance = load_instances(str(tiny))[0]
    with _serving(["I think I should run ls"] * 3) as server:
        args = ["--policy", "openai", "--base-url", server.url, "--model", "m", "--dataset", str(tiny)]
        _eval(*args, "--instances", instance.instance_id, "--max-steps", "3", out=tmp_path)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["instances"][instance.instance_id] == {
        "status": "unresolved", "exit_reason": "max_steps", "steps": 3, "format_errors": 3
    }  # fmt: skip
    assert (report["format_errors"], report["format_error_rate"], report["mean_steps"]) == (3, 1.0, 3.0)
    assert report["errors"] == [] and len(server.requests) == 3


def test_tiny_hf_checkpoint_completes_and_reports(tiny: Path, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from swe_srl.benchmark.instances import load_instances
    from swe_srl.core.prompts import build_messages
    from swe_srl.train.tiny.model import make_tiny_policy

    instance = load_instances(str(tiny))[0]
    texts = [m["content"] for m in build_messages(instance.problem_statement, [("ls", "calc.py")])]
    model = make_tiny_policy(texts, tmp_path / "tiny-model")
    args = ["--policy", f"hf:{model}", "--dataset", str(tiny), "--instances", instance.instance_id]
    _eval(*args, "--max-steps", "2", "--max-new-tokens", "12", out=tmp_path / "out")
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    row = report["instances"][instance.instance_id]
    assert report["total"] == 1 and report["errors"] == [] and 1 <= row["steps"] <= 2
    assert row["status"] in ("resolved", "unresolved") and row["exit_reason"] in ("max_steps", "submitted")
    assert (tmp_path / "out" / "trajectories" / f"{instance.instance_id}.jsonl").is_file()


def test_replay_of_an_eval_trajectory_reproduces_its_patch(tiny: Path, tmp_path: Path) -> None:
    _eval("--policy", "gold", "--dataset", str(tiny), out=tmp_path / "gold")
    trajs = tmp_path / "trajs.jsonl"
    trajs.write_text(
        "".join(p.read_text() for p in sorted((tmp_path / "gold" / "trajectories").glob("*.jsonl")))
    )
    _eval("--policy", f"replay:{trajs}", "--dataset", str(tiny), out=tmp_path / "replay")
    gold, replay = _predictions(tmp_path / "gold"), _predictions(tmp_path / "replay")
    assert {k: v["model_patch"] for k, v in replay.items()} == {k: v["model_patch"] for k, v in gold.items()}
    assert json.loads((tmp_path / "replay" / "report.json").read_text())["resolved_rate"] == 1.0


def test_replay_longer_than_fifty_steps_runs_whole_by_default(tiny: Path, tmp_path: Path) -> None:
    from swe_srl.benchmark.instances import load_instances
    from swe_srl.trajectories.schema import Step, Trajectory, write_jsonl

    # tiny__calc-add: the fix comes after 52 reads; no submit recorded (the replay appends one)
    instance = load_instances(str(tiny))[0]
    steps = [Step("", f"echo {k}") for k in range(52)]
    steps.append(Step("", "sed -i 's/return a - b/return a + b/' calc.py"))
    trajs = tmp_path / "long.jsonl"
    write_jsonl(trajs, [Trajectory(instance.instance_id, "p", steps)])
    args = ["--policy", f"replay:{trajs}", "--dataset", str(tiny), "--instances", instance.instance_id]
    # no --max-steps: the 53 steps and the submit (before: cut at 50, unresolved with max_steps)
    _eval(*args, out=tmp_path / "out")
    row = json.loads((tmp_path / "out" / "report.json").read_text())["instances"][instance.instance_id]
    assert (row["status"], row["exit_reason"], row["steps"]) == ("resolved", "submitted", 54)


def test_killed_eval_resumes_without_redoing_finished_instances(tiny: Path, tmp_path: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "swe_srl.cli",
        "eval",
        "--policy",
        "gold",
        "--dataset",
        str(tiny),
        "-o",
        str(tmp_path),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    predictions, deadline = tmp_path / "predictions.jsonl", time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        if predictions.exists() and predictions.read_text().strip():
            proc.send_signal(signal.SIGINT)
            break
        time.sleep(0.2)
    proc.wait(timeout=120)
    first = _predictions(tmp_path)
    assert len(first) >= 1
    done_at = {iid: os.stat(tmp_path / "trajectories" / f"{iid}.jsonl").st_mtime_ns for iid in first}
    _eval("--policy", "gold", "--dataset", str(tiny), out=tmp_path)
    after = _predictions(tmp_path)
    assert len(after) == 2 and len((tmp_path / "predictions.jsonl").read_text().splitlines()) == 2
    for iid, mtime in done_at.items():  # finished instances were not run again
        assert os.stat(tmp_path / "trajectories" / f"{iid}.jsonl").st_mtime_ns == mtime
    assert json.loads((tmp_path / "report.json").read_text())["resolved_rate"] == 1.0
